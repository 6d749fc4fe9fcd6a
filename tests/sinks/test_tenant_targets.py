"""Each tenant's vectors in its own Pinecone namespace (the real client on the double) or LanceDB table:
writes, flips and deletes steered by chunk id, queries on one tenant's target, a tenant's store dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.events import ChunkStatus
from streams.core.records import build_records
from streams.settings import ConfigError, Settings
from streams.sinks.factory import vector_target, vector_tenants
from streams.sinks.vectors import VectorSink
from tests.conftest import HashEmbedder, make_pages

TEXT = "The council met on Tuesday. It voted on the budget. The motion carried by seven votes to two."


def _records(tenant: str):
    chunker = get_chunker("window")
    pages = [p.model_copy(update={"doc_id": f"{tenant}#minutes", "tenant": tenant}) for p in make_pages("m", [TEXT])]
    doc = assemble(pages)
    return build_records(doc, chunker, chunker.chunk(doc))


@pytest.fixture(params=["lancedb", "pinecone"])
def settings(request, tmp_path: Path, pinecone_double) -> Settings:
    url, key, _state = pinecone_double
    store = {"vector_store": "pinecone", "pinecone_api_key": key, "pinecone_host": url}
    chosen = store if request.param == "pinecone" else {"lancedb_path": tmp_path / "lance"}
    return Settings(tenant_key="workspace", data_dir=tmp_path, **chosen)


def test_each_tenant_has_a_store_of_its_own(settings: Settings, tmp_path: Path, pinecone_double) -> None:
    sink = VectorSink(vector_target(settings), tmp_path / "state.sqlite", embedder=HashEmbedder())
    acme, globex = _records("acme"), _records("globex")
    sink.write_chunks(acme + globex)
    query = HashEmbedder().encode([TEXT])[0]
    seen = {t: {m.chunk_id for m in vector_target(settings, t).query(query, k=50)} for t in ("acme", "globex")}
    assert seen == {"acme": {r.chunk_id for r in acme}, "globex": {r.chunk_id for r in globex}}
    assert vector_tenants(settings) == ["acme", "globex"] and vector_target(settings, "").count() == 0
    if settings.vector_store == "pinecone":  # the namespaces as Pinecone itself keeps them
        assert set(pinecone_double[2].namespaces) >= {"streams--acme", "streams--globex"}
    with pytest.raises(ConfigError, match="names its tenant"):
        sink.target.query(query, k=5)
    flip = acme[0]
    status = ChunkStatus(
        chunk_id=flip.chunk_id, doc_id=flip.doc_id, strategy="window", amendment_number=0, is_latest_version=False
    )
    sink.apply_status([status])  # a flip reaches the one tenant's store
    assert vector_target(settings, "acme").flags([flip.chunk_id]) == {flip.chunk_id: False}
    assert sink.target.count() == len(acme) + len(globex)
    vector_target(settings, "acme").drop()  # a tenant's purge: its whole namespace or table
    assert vector_target(settings, "acme").count() == 0
    assert vector_target(settings, "globex").count() == len(globex)
