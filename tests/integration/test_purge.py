"""Proof of deletion, on each broker. Two tenants publish documents through the whole pipeline into MongoDB
(SecantusDB), LanceDB and the embedding store, with document keys on; one document, then one whole tenant,
are purged. Then a sentence of each purged document is looked for everywhere: every collection of the
database, the vector tables, the embedding store, the receipts, the dead letters and every topic of the
broker (changelogs included), read raw and through the service's own readers. It is found nowhere, and the
purged records are ciphertext whose key is gone. The other tenant's document is untouched and searchable,
and the audit is clean, counting the purged documents as accounted for."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bson import json_util
from confluent_kafka.admin import AdminClient

from streams.core.sealed import MAGIC
from streams.embedding.stores import open_store
from streams.ops.audit import audit, read_ledger
from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, child_env, publish_pages
from streams.ops.purge import TOPICS_SHREDDED, Receipt, purge, receipts
from streams.ops.redrive import letters
from streams.ops.tail import read_topic
from streams.sinks.factory import vector_target
from streams.sinks.search import search
from tests.conftest import HashEmbedder, make_pages
from tests.integration.conftest import pipeline_settings, sinks_running, until

pytestmark = pytest.mark.integration

#: One sentence of each document, distinct from every other document's, on each of its two pages.
SENTENCES = {
    ("acme", "pier"): "The harbour board voted to rebuild the east pier with oak pilings from Norway.",
    ("acme", "ferry"): "The night ferry to Skerry Island will stop running after the spring equinox.",
    ("globex", "tender"): "Dredging of the inner basin goes to tender with a ceiling of nine million.",
    ("globex", "lights"): "Every lamp on the promenade is replaced by amber lights that spare the moths.",
}
PURGED = {("globex", "tender"), ("acme", "pier"), ("acme", "ferry")}


def _pages(tenant: str, doc: str) -> list:
    sentence = SENTENCES[(tenant, doc)]
    texts = [f"Page one. {sentence} " * 6, f"Page two. {sentence} " * 6]
    year = "unknown" if doc == "pier" else 2026  # not an int: the vector sink dead-letters its chunks
    return make_pages(doc, texts, metadata={"workspace": tenant, "year": year})


def _embedded(settings) -> set[str]:
    """The keys the embedding store holds a vector of (any model)."""
    with sqlite3.connect(str(settings.embed_cache_file)) as db:
        return {key for (key,) in db.execute("SELECT key FROM vectors")}


def _raw_topics(settings) -> dict[str, list[bytes]]:
    """Every record's key, value and headers on every topic of the broker, as bytes."""
    admin = AdminClient({"bootstrap.servers": settings.broker})
    found: dict[str, list[bytes]] = {}
    for topic in admin.list_topics(timeout=10).topics:
        blobs = found.setdefault(topic, [])
        for message in read_topic(settings, topic):
            blobs += [message.key() or b"", message.value() or b""]
            blobs += [v or b"" for _k, v in (message.headers() or [])]
    return found


def test_a_purged_document_and_tenant_are_found_nowhere(tmp_path: Path) -> None:
    store = document_store(tmp_path).start()
    settings = pipeline_settings(
        tmp_path,
        sink_assignment="manual",
        tenant_key="workspace",
        document_keys=True,
        key_cache_seconds=1,
        vector_metadata_keys="year:int",
        mongo_url=f"mongodb://{store.address}",
    )
    try:
        with LocalPipeline(settings, ["window"]) as pipeline:
            settings = pipeline.settings
            embeddings = open_store(settings)
            with sinks_running(settings, HashEmbedder(store=embeddings)) as (mongo, vectors):
                collector = Collector(settings)
                try:
                    publish_pages(settings, [p for tenant, doc in SENTENCES for p in _pages(tenant, doc)])
                    collector.wait([(f"{t}#{d}", 0) for t, d in SENTENCES], ["window"], timeout=180)
                    records = collector.result.records()
                    chunks = {(t, d): [r for r in records if r.doc_id == f"{t}#{d}"] for t, d in SENTENCES}
                    held = len(records) - len(chunks[("acme", "pier")])
                    until(
                        lambda: mongo.count() == len(records) and vectors.target.count() == held,
                        lambda: f"mongo {mongo.count()} of {len(records)}, vectors {vectors.target.count()} of {held}",
                    )
                    until(lambda: len(letters(settings)) == len(chunks[("acme", "pier")]), lambda: "dead letters")
                    hashes = {key: {r.content_hash for r in found} for key, found in chunks.items()}
                    embedded_before = {h for key, hs in hashes.items() if key != ("acme", "pier") for h in hs}
                    stored_before = _embedded(settings) & embedded_before
                    first = purge(settings, ["tender"], "globex")
                    done = subprocess.run(  # the whole tenant as an operator purges it: the CLI, its receipt as JSON
                        [sys.executable, "-m", "streams", "delete", "--purge", "--tenant", "acme", "--json"],
                        env=child_env(settings),
                        capture_output=True,
                        text=True,
                        timeout=120,
                    )
                    assert done.returncode == 0, done.stderr
                    whole = Receipt(**json.loads(done.stdout))
                    time.sleep(2)  # the tombstones' flips reach the sinks
                    # Through the service's own readers, after the purge.
                    after = Collector(settings)
                    try:
                        while after.poll(2.0):
                            pass
                        readable = {r.doc_id for r in after.result.records()}
                        shredded = set(after.result.purged)
                    finally:
                        after.close()
                    dead_readable = [item.letter.doc_id for item in letters(settings)]
                    hits = {t: search(settings, SENTENCES[(t, d)], 20, tenant=t) for t, d in SENTENCES}
                    ledger = read_ledger(settings)
                    report, _ = audit(settings, ["window"], [mongo, vectors], ledger=ledger)
                    kept = receipts(settings)
                    database = mongo.collection.database
                    collections = {
                        name: json_util.dumps(list(database[name].find())) for name in database.list_collection_names()
                    }
                    tables = {t: vector_target(settings, t) for t in ("acme", "globex")}
                    vector_ids = {
                        t: {m.chunk_id for m in target.query([0.0] * 383 + [1.0], 100)} for t, target in tables.items()
                    }
                    raw = _raw_topics(settings)
                    keys_left = {str(d["_id"]) for d in database["keys"].find()}
                finally:
                    collector.close()
            embedded = _embedded(settings)
    finally:
        store.stop()

    # Every chunk with a vector had it in the embedding store before the purge (the pier's were refused first).
    assert embedded_before and stored_before == embedded_before
    assert first.topics == whole.topics == TOPICS_SHREDDED
    assert (first.doc_ids, first.keys, first.whole_tenant) == (["globex#tender"], 1, False)
    assert (whole.doc_ids, whole.keys, whole.whole_tenant) == (["acme#ferry", "acme#pier"], 2, True)
    assert first.rows == len(chunks[("globex", "tender")]) and first.vectors == len(chunks[("globex", "tender")])
    assert whole.rows == len(chunks[("acme", "ferry")]) + len(chunks[("acme", "pier")])
    assert whole.vectors == len(chunks[("acme", "ferry")])  # the pier's chunks never had vectors
    assert first.embeddings + whole.embeddings == len(hashes[("globex", "tender")] | hashes[("acme", "ferry")])
    for tenant, doc in PURGED:
        sentence = SENTENCES[(tenant, doc)]
        needle, words = sentence.encode(), sentence.split()[3:7]
        # Nowhere in MongoDB: no row, no key, no receipt holds it (a retired stub holds an id and flags only).
        assert not any(sentence in text or " ".join(words) in text for text in collections.values())
        assert f"{tenant}#{doc}" not in keys_left
        # Nowhere in the vector store or the embedding store.
        assert not {r.chunk_id for r in chunks[(tenant, doc)]} & (vector_ids["acme"] | vector_ids["globex"])
        assert not hashes[(tenant, doc)] & embedded
        # On no topic, raw: every record of it is ciphertext, and its key is gone.
        assert not [t for t, blobs in raw.items() if any(needle in b for b in blobs)]
        # Through the service's readers: unreadable, not a record, not a dead letter, not a search hit.
        assert f"{tenant}#{doc}" in shredded and f"{tenant}#{doc}" not in readable
        assert f"{tenant}#{doc}" not in dead_readable
        assert not [h for h in hits[tenant] if h["doc_id"] == f"{tenant}#{doc}"]
    assert any(b.startswith(MAGIC) for b in raw[settings.topics.chunks])
    assert any(b.startswith(MAGIC) for t, blobs in raw.items() if "changelog" in t for b in blobs)
    # The other tenant's other document is untouched: readable, held, searchable, its key kept.
    assert "globex#lights" in readable and "globex#lights" in keys_left
    assert SENTENCES[("globex", "lights")] in collections[settings.mongo_collection]  # the search can find text
    assert vector_ids["globex"] == {r.chunk_id for r in chunks[("globex", "lights")]} and not vector_ids["acme"]
    assert hits["globex"][0]["doc_id"] == "globex#lights"
    assert SENTENCES[("globex", "lights")] in hits["globex"][0]["text"]
    # The audit is clean and counts the purged documents as accounted for; the receipts name them, no text.
    assert (report.versions, report.gaps, report.purged) == (1, [], 3)
    assert [(r["tenant"], r["doc_ids"]) for r in kept] == [("globex", ["globex#tender"]), ("acme", whole.doc_ids)]
    assert not any(SENTENCES[k] in json.dumps(kept) for k in PURGED)
