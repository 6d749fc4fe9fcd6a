"""A document's own metadata through the whole pipeline into MongoDB (SecantusDB) and LanceDB, on each broker:
every key on the rows, the allow-listed ones typed on the vectors, a metadata-only amendment updating both
without embedding anything, and a value no vector can carry dead-lettered by the vector sink alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.sinks.search import search
from tests.conftest import HashEmbedder, make_pages
from tests.integration.conftest import pipeline_settings, sinks_running, until

pytestmark = pytest.mark.integration

TEXT = "The harbour board met on Tuesday. It voted to repair the east pier before the winter storms. " * 12
V0 = {"source": "s3://minutes/0412.pdf", "year": 2025, "tags": ["pier", "budget"], "owner": "clerk"}
V1 = {"source": "s3://minutes/0412-final.pdf", "year": 2026, "tags": ["pier"], "owner": "board"}
KEYS = "source,year:int,tags:list"


def _pages(doc_id: str, amendment: int, metadata: dict) -> list:
    return [p.model_copy(update={"amendment_number": amendment}) for p in make_pages(doc_id, [TEXT], metadata=metadata)]


def test_metadata_reaches_rows_and_vectors_and_a_metadata_only_amendment_embeds_nothing(tmp_path: Path) -> None:
    store = document_store(tmp_path).start()
    settings = pipeline_settings(
        tmp_path, sink_assignment="manual", vector_metadata_keys=KEYS, mongo_url=f"mongodb://{store.address}"
    )
    embedder = HashEmbedder()
    try:
        with LocalPipeline(settings, ["window"]) as pipeline:
            settings = pipeline.settings
            with sinks_running(settings, embedder) as (mongo, vectors):
                collector = Collector(settings)
                try:
                    publish_pages(
                        settings,
                        _pages("minutes", 0, V0)
                        + _pages("odd", 0, {**V0, "year": "unknown"})
                        + _pages("private", 0, {**V1, "acl": ["board"]}),
                    )
                    collector.wait([("minutes", 0), ("odd", 0), ("private", 0)], ["window"], timeout=180)
                    first = {r.chunk_id for r in collector.result.records() if r.doc_id == "minutes"}
                    odd = {r.chunk_id for r in collector.result.records() if r.doc_id == "odd"}
                    private = {r.chunk_id for r in collector.result.records() if r.doc_id == "private"}
                    until(
                        lambda: (
                            mongo.count() == len(first) + len(odd) + len(private)
                            and vectors.target.count() == len(first) + len(private)
                        ),
                        lambda: f"mongo {mongo.count()}, vectors {vectors.target.count()}",
                    )
                    embedded = vectors.stats.embedded
                    assert embedded == len(first)  # the private copy has the same text: its vectors were known
                    publish_pages(settings, _pages("minutes", 1, V1))
                    collector.wait([("minutes", 1)], ["window"], timeout=180)
                    second = {r.chunk_id for r in collector.result.records() if r.doc_id == "minutes"} - first
                    until(
                        lambda: (
                            vectors.target.count() == len(first) + len(second) + len(private)
                            and mongo.count(latest_only=True) == len(second) + len(odd) + len(private)
                        ),
                        lambda: f"mongo latest {mongo.count(latest_only=True)}, vectors {vectors.target.count()}",
                    )
                    rows = {d["_id"]: d for d in mongo.collection.find({"doc_id": {"$in": ["minutes", "odd"]}})}
                    lance = {r["chunk_id"]: r for r in vectors.target.table.to_arrow().to_pylist()}
                    reembedded = vectors.stats.embedded - embedded

                    def found(*filters: str, principal: str | None = None) -> set[str]:
                        hits = search(settings, "the east pier", 50, None, list(filters), principal)
                        assert all(
                            h["doc_metadata"] == dict(sorted(V1.items())) for h in hits if h["doc_id"] == "minutes"
                        )
                        return {h["doc_id"] for h in hits}

                    searched = {
                        "everyone": found(),
                        "2025": found("year<=2025"),
                        "clerk": found(principal="clerk"),
                        "board": found("tags=pier", "year>=2026", principal="board"),
                    }
                    while collector.poll(1.0):
                        pass
                    dead = [d for d in collector.result.dead if d.doc_id == "odd"]
                finally:
                    collector.close()
    finally:
        store.stop()

    assert len(second) == len(first)  # the same text: the same chunks, under the new amendment's ids
    assert reembedded == 0  # only the metadata changed: every vector came from the embedding store
    for ids, meta in ((first, V0), (second, V1)):
        assert all(rows[i]["doc_metadata"] == dict(sorted(meta.items())) for i in ids)  # every key on the rows
        assert all(
            {k: lance[i][k] for k in ("source", "year", "tags")} == {k: meta[k] for k in ("source", "year", "tags")}
            for i in ids
        )  # the allow-listed ones on the vectors, typed; the others not at all
        assert "owner" not in next(iter(lance.values()))
    assert all(not rows[i]["is_latest_version"] for i in first) and all(rows[i]["is_latest_version"] for i in second)
    # "year": "unknown" is no int: the vector sink dead-letters those chunks, and MongoDB holds them all.
    assert odd <= set(rows) and not odd & set(lance)
    assert {d.reason_code for d in dead} == {"vector_metadata_invalid"} and len(dead) == len(odd)
    assert all(d.stage == "sink:vectors" and "'year' must be int" in d.reason for d in dead)
    # Search sees the latest versions only, filters on the typed keys, and keeps the private one from the clerk.
    assert searched == {
        "everyone": {"minutes", "private"},
        "2025": set(),
        "clerk": {"minutes"},
        "board": {"minutes", "private"},
    }
