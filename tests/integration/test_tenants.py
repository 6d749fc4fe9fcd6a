"""Two tenants publish the same documents (same ids, same text) through the whole pipeline on each broker,
into MongoDB (SecantusDB) and LanceDB: neither ever sees the other's chunks, ids or counts; a page that names
no tenant, or one that is not a tenant name, is dead-lettered with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.ops.audit import audit, document_status, read_ledger
from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.settings import ConfigError
from streams.sinks.factory import vector_target, vector_tenants
from streams.sinks.search import search
from tests.conftest import HashEmbedder, make_pages
from tests.integration.conftest import pipeline_settings, sinks_running, until

pytestmark = pytest.mark.integration

TEXTS = {
    "minutes": ["The harbour board met on Tuesday and voted to repair the east pier before the winter storms. " * 8],
    "budget": ["The ferry budget grows by four percent; the dredging contract is put out to tender in March. " * 8],
}
TENANTS = ("acme", "globex")


def _tenant_console(settings, ids: dict[str, set[str]]) -> dict[str, object]:
    """What acme's own console answers: its documents, chunks, search and dead letters, and nothing of globex."""
    from urllib.parse import quote

    from starlette.testclient import TestClient

    from streams.ui.app import create_app

    with TestClient(create_app(settings)) as client:
        index = client.get("/").text
        return {
            "index": {t: f"{t}#minutes" in index for t in TENANTS},
            "doc": {t: client.get("/doc/" + quote(f"{t}#minutes", safe="")).status_code for t in TENANTS},
            "chunk": {t: client.get("/api/chunk/" + quote(min(ids[t]), safe="")).status_code for t in TENANTS},
            "search": client.get("/search", params={"q": "the east pier", "k": 20}).text,
            "letters": client.get("/api/dead-letters").json(),
            "lag": client.get("/api/lag").json()["partitions"],
        }


def test_two_tenants_with_the_same_documents_never_see_each_other(tmp_path: Path) -> None:
    store = document_store(tmp_path).start()
    settings = pipeline_settings(
        tmp_path, sink_assignment="manual", tenant_key="workspace", mongo_url=f"mongodb://{store.address}"
    )
    try:
        with LocalPipeline(settings, ["window"]) as pipeline:
            settings = pipeline.settings
            with sinks_running(settings, HashEmbedder()) as (mongo, vectors):
                collector = Collector(settings)
                try:
                    pages = [
                        page
                        for tenant in TENANTS
                        for doc_id, texts in TEXTS.items()
                        for page in make_pages(doc_id, texts, metadata={"workspace": tenant, "title": doc_id})
                    ]
                    pages += make_pages("orphan", TEXTS["minutes"], metadata={"title": "no tenant"})
                    pages += make_pages("numbered", TEXTS["minutes"], metadata={"workspace": 42})
                    publish_pages(settings, pages)
                    expected = [(f"{t}#{d}", 0) for t in TENANTS for d in TEXTS]
                    collector.wait(expected, ["window"], timeout=180)
                    records = collector.result.records()
                    ids = {t: {r.chunk_id for r in records if r.tenant == t} for t in TENANTS}
                    total = sum(len(v) for v in ids.values())
                    until(
                        lambda: mongo.count() == total and vectors.target.count() == total,
                        lambda: f"mongo {mongo.count()}, vectors {vectors.target.count()} of {total}",
                    )
                    hits = {t: search(settings, "the east pier", 50, tenant=t) for t in TENANTS}
                    with pytest.raises(ConfigError, match="name the tenant"):
                        search(settings, "the east pier")
                    counts = {t: mongo.count(tenant=t) for t in TENANTS}
                    tables = {t: vector_target(settings, t).count() for t in TENANTS}
                    untenanted = vector_target(settings, "").count()
                    listed = vector_tenants(settings)
                    ledger = read_ledger(settings)
                    reports = {
                        t: audit(settings, ["window"], [mongo, vectors], ledger=ledger.scoped(t))[0] for t in TENANTS
                    }
                    status = document_status(settings, "minutes", [mongo, vectors], ["window"], tenant="globex")
                    console = _tenant_console(settings.model_copy(update={"ui_tenant": "acme"}), ids)
                    while collector.poll(1.0):
                        pass
                    dead = {d.doc_id: d for d in collector.result.dead if d.stage == "assembly"}
                finally:
                    collector.close()
    finally:
        store.stop()

    # The same documents give the same number of chunks, under ids of each tenant's own.
    assert len(ids["acme"]) == len(ids["globex"]) > 0 and not ids["acme"] & ids["globex"]
    assert all(i.startswith(f"{t}#window-") for t in TENANTS for i in ids[t])
    assert {r.doc_id for r in records} == {doc for doc, _ in expected}
    # Rows carry the tenant; each tenant's vectors live in a table of their own, none in the shared one.
    assert counts == {t: len(ids[t]) for t in TENANTS} and untenanted == 0
    assert tables == {t: len(ids[t]) for t in TENANTS} and listed == sorted(TENANTS)
    # A search is one tenant's: its own chunks and documents only, and never without a tenant.
    for tenant in TENANTS:
        assert hits[tenant] and {h["chunk_id"] for h in hits[tenant]} <= ids[tenant]
        assert {h["doc_id"] for h in hits[tenant]} == {f"{tenant}#{d}" for d in TEXTS}
    # The audit and a document's status count one tenant's documents alone.
    assert {t: (r.versions, r.gaps) for t, r in reports.items()} == {t: (len(TEXTS), []) for t in TENANTS}
    assert status["doc_id"] == "globex#minutes"
    chunk_ids = {c for v in status["versions"] for row in v["strategies"].values() for c in [row["manifest"]["chunks"]]}
    assert chunk_ids == {len([r for r in records if r.doc_id == "globex#minutes"])}
    # acme's own console shows acme's documents, chunks and search hits, and nothing of globex's, not even lag.
    assert console["index"] == {"acme": True, "globex": False}
    assert console["doc"] == {"acme": 200, "globex": 404} and console["chunk"] == {"acme": 200, "globex": 404}
    assert "acme#" in console["search"] and "globex#" not in console["search"]
    assert console["letters"] == [] and console["lag"] == []  # the tenantless letters are the operator's
    # A page with no tenant, or a tenant that is no name, is dead-lettered with its reason.
    assert dead["orphan"].reason_code == "tenant_missing" and "'workspace'" in dead["orphan"].reason
    assert dead["numbered"].reason_code == "tenant_invalid" and "int" in dead["numbered"].reason
