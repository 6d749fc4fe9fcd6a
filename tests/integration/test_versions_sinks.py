"""Amendments flip through the status topic into MongoDB (the real SecantusDB server) and the vector store."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from streams.ingest.files import page_events
from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages, sample_paths
from streams.ops.replay import reset_offsets
from streams.sinks.base import is_table
from streams.sinks.lance_target import LanceTarget
from streams.sinks.mongo import MongoSink
from streams.sinks.runner import SinkRunner
from streams.sinks.vectors import VectorSink
from tests.integration.conftest import pipeline_settings, until

pytestmark = pytest.mark.integration

STRATEGY = "section"  # unchanged sections keep their text, so the amendment shows re-embedding


def rfp_versions() -> tuple[list, list]:
    paths = {p.name: p for p in sample_paths()}
    return page_events(paths["rfp_harbor_bridge_issued.md"]), page_events(paths["rfp_harbor_bridge_amendment1.md"])


class Sinks:
    """Both sinks in this process (their own consumer groups), so the test can read their counters."""

    def __init__(self, settings, embedder) -> None:
        self.mongo = MongoSink.of(settings)
        self.mongo.ensure_indexes()
        self.lance = LanceTarget(settings.data_dir / "lance")
        self.vectors = VectorSink(self.lance, settings.data_dir / "vector-state.sqlite", embedder=embedder)
        self.stop = threading.Event()
        self.runners = [SinkRunner(settings, self.mongo), SinkRunner(settings, self.vectors)]
        self.threads = [threading.Thread(target=r.run, args=(self.stop,), daemon=True) for r in self.runners]
        for thread in self.threads:
            thread.start()

    def wait_for(self, condition, timeout: float = 300, context=None) -> None:
        """Poll `condition`; on timeout, fail with `context()` (where the pipeline stood) in the message."""
        until(condition, lambda: f"sinks did not reach the expected state; {context() if context else ''}", timeout)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)


@pytest.fixture(scope="module")
def embedder(bus: str):
    """One per broker pass: a worker that runs this file on both brokers must embed afresh on the second (a
    shared one served every vector from its cache, and the count of embedded chunks was 0)."""
    from streams.embedding.model import Embedder

    return Embedder()


#: A replay that only relabels the lineage, and one with new strategy options (a new lineage of new ids).
RELABEL = {"chunker_version": "9.9.9-replay"}
RETUNE = {STRATEGY: {"min_tokens": 150, "max_tokens": 250}}


def run_amendments(
    tmp: Path,
    order: list[int],
    embedder,
    redeliver: bool = False,
    replay: dict | None = None,
    inspect=None,
    **overrides: object,
) -> dict:
    """Publish the RFP's versions in `order` through a pipeline into both sinks (and replay, if asked);
    `inspect(settings)`, if given, runs while everything is still up and its result is returned too."""
    issued, amended = rfp_versions()
    versions = {0: issued, 1: amended}
    settings = pipeline_settings(tmp, sink_assignment="manual", **overrides)
    store = document_store(tmp).start()
    settings = settings.model_copy(update={"mongo_url": f"mongodb://{store.address}"})
    try:
        with LocalPipeline(settings, [STRATEGY]) as pipeline:
            settings = pipeline.settings
            sinks = Sinks(settings, embedder)
            collector = Collector(settings)
            try:
                for number in order:
                    publish_pages(settings, versions[number])
                    collector.wait([(issued[0].doc_id, number)], [STRATEGY], timeout=300)
                if redeliver:  # the same pages again: identical duplicates of finished documents are no-ops
                    publish_pages(settings, issued + amended)
                records = collector.result.records()
                expected = {
                    0: {r.chunk_id for r in records if r.amendment_number == 0},
                    1: {r.chunk_id for r in records if r.amendment_number == 1},
                }
                total = len(expected[0]) + len(expected[1])
                embeddable = {r.chunk_id for r in records if not is_table(r)}
                latest_vectors = len(expected[1] & embeddable)
                sinks.wait_for(
                    lambda: (
                        sinks.mongo.count() == total
                        and sinks.mongo.count(latest_only=True) == len(expected[1])
                        and sinks.lance.count() == len(embeddable)
                        and sinks.lance.count(latest_only=True) == latest_vectors
                    ),
                    context=lambda: (
                        f"mongo {sinks.mongo.count()}/{total} latest {sinks.mongo.count(latest_only=True)}/"
                        f"{len(expected[1])}; vectors {sinks.lance.count()}/{len(embeddable)} latest "
                        f"{sinks.lance.count(latest_only=True)}/{latest_vectors}; runners "
                        f"{[(r.progress, len(r.tracker.pending)) for r in sinks.runners]}"
                    ),
                )
                time.sleep(2)  # anything late (a duplicate) would land now
                replayed, fresh = None, []
                if replay:  # move the group back with new settings and re-chunk everything
                    role = f"chunker:{STRATEGY}"
                    pipeline.stop_worker(role)
                    reset_offsets(pipeline.settings, STRATEGY, "earliest")
                    pipeline.settings = pipeline.settings.model_copy(update=replay)
                    lineage = lineage_of(pipeline.settings)
                    pipeline.start_worker(role)
                    if lineage == RELABEL["chunker_version"]:  # same ids: every chunk relabelled in place
                        settled = lambda: sinks.mongo.count(chunker_version=lineage) == total  # noqa: E731
                    else:  # new ids: every old chunk retired, the new lineage stored
                        settled = lambda: sinks.mongo.count(retired=True) == total  # noqa: E731
                    sinks.wait_for(settled, context=lambda: replay_state(pipeline, sinks, total, lineage))
                    replayed = Collector(settings)
                    seen: dict[str, object] = {}  # the new lineage by id: old and new share positions
                    add = replayed.result.add_chunk

                    def keep(record, stamp, lineage=lineage):
                        if record.chunker_version == lineage:
                            seen[record.chunk_id] = record
                        add(record, stamp)

                    replayed.result.add_chunk = keep
                    replayed.poll(3.0)
                    replayed.close()
                    fresh = list(seen.values())
                    fresh_embeddable = [r for r in fresh if not is_table(r)]
                    sinks.wait_for(
                        lambda: (
                            sinks.mongo.count(chunker_version=lineage) == len(fresh)
                            and sinks.lance.count() == len(fresh_embeddable)
                        ),
                        context=lambda: (
                            f"{len(fresh)} records of {lineage} on the topic, {len(fresh_embeddable)} embeddable; "
                            f"vectors {sinks.lance.count()}; " + replay_state(pipeline, sinks, total, lineage)
                        ),
                    )
                docs = sinks.mongo.by_ids(sorted(expected[0] | expected[1]))
                fresh_ids = {r.chunk_id for r in fresh} - expected[0] - expected[1]
                docs += sinks.mongo.by_ids(sorted(fresh_ids))
                lance_rows = sinks.lance.table.to_arrow().to_pylist()
                return {
                    "expected": expected,
                    "embeddable": embeddable,
                    "records": records,
                    "mongo": {d["_id"]: d for d in docs},
                    "mongo_total": sinks.mongo.collection.count_documents({}),
                    "lance": {r["chunk_id"]: r for r in lance_rows},
                    "lance_total": len(lance_rows),
                    "stats": sinks.vectors.stats,
                    "duplicates": collector.result.duplicates,
                    "replayed": replayed.result if replayed else None,
                    "fresh": fresh,
                    "embedded_after": sinks.vectors.stats.embedded,
                    "inspected": inspect(pipeline.settings) if inspect else None,
                }
            finally:
                collector.close()
                sinks.close()
    finally:
        store.stop()


def lineage_of(settings) -> str:
    """The chunker_version the workers label records with under these settings."""
    from streams.ops.audit import lineage

    return lineage(settings, STRATEGY)


def replay_state(pipeline: LocalPipeline, sinks: Sinks, total: int, lineage: str) -> str:
    """Where a stalled replay stands: relabelled chunks stored, the chunker group's offsets, its log tail."""
    from streams.ops.groups import dead_members
    from streams.runtime.lag import group_lag

    settings = pipeline.settings
    rows = group_lag(settings, f"streams-chunker-{STRATEGY}", [settings.topics.documents], timeout=5)
    log = settings.data_dir / "logs" / f"chunker-{STRATEGY}.log"
    tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
    return (
        f"stored as {lineage}: {sinks.mongo.count(chunker_version=lineage)} (old chunks {total}, retired "
        f"{sinks.mongo.count(retired=True)}); chunker offsets "
        f"{[(r.partition, r.committed, r.end) for r in rows]}; dead members {dead_members(settings.broker)}; "
        f"worker alive {pipeline.workers[f'chunker:{STRATEGY}'].poll() is None}; log tail {tail}"
    )


@pytest.fixture(scope="module")
def forward(bus: str, tmp_path_factory, embedder) -> dict:  # bus: once per broker pass
    return run_amendments(tmp_path_factory.mktemp("forward"), [0, 1], embedder, redeliver=True)


@pytest.fixture(scope="module")
def replayed(bus: str, tmp_path_factory, embedder) -> dict:  # bus: once per broker pass
    return run_amendments(tmp_path_factory.mktemp("replay"), [0, 1], embedder, replay=RELABEL)


@pytest.fixture(scope="module")
def retuned(bus: str, tmp_path_factory, embedder) -> dict:  # bus: once per broker pass
    return run_amendments(tmp_path_factory.mktemp("retune"), [0, 1], embedder, replay=RETUNE)


def test_amendment_flips_every_older_chunk_in_both_stores(forward: dict) -> None:
    expected, mongo, lance = forward["expected"], forward["mongo"], forward["lance"]
    assert expected[0] and expected[1] and not expected[0] & expected[1]
    embeddable = forward["embeddable"]
    for chunk_id in expected[0]:
        assert mongo[chunk_id]["is_latest_version"] is False
    for chunk_id in expected[1]:
        assert mongo[chunk_id]["is_latest_version"] is True
    for chunk_id in embeddable:
        assert lance[chunk_id]["is_latest_version"] is (chunk_id in expected[1])
    # tables stay in MongoDB only (seed 002)
    tables = (expected[0] | expected[1]) - embeddable
    assert tables and all(mongo[c]["is_table"] for c in tables) and not tables & set(lance)
    # counts match the chunk topic, and nothing is duplicated after redelivery
    assert forward["mongo_total"] == len(expected[0]) + len(expected[1])
    assert forward["lance_total"] == len(embeddable)
    assert forward["duplicates"] == 0


def test_mongo_keeps_full_text_and_vectors_keep_minimal_metadata(forward: dict) -> None:
    record = forward["records"][0]
    stored = forward["mongo"][record.chunk_id]
    assert stored["text"] == record.text and stored["checksum"] == record.checksum
    row = forward["lance"][record.chunk_id]
    assert "text" not in row and set(row) >= {"doc_id", "strategy", "section_type", "amendment_number"}


def test_unchanged_chunks_are_not_re_embedded(forward: dict) -> None:
    records = [r for r in forward["records"] if r.chunk_id in forward["embeddable"]]
    hashes = {
        0: {r.content_hash for r in records if r.amendment_number == 0},
        1: {r.content_hash for r in records if r.amendment_number == 1},
    }
    unchanged = hashes[0] & hashes[1]
    assert unchanged and hashes[1] - hashes[0], "the amendment changes some chunks and leaves others as they were"
    stats = forward["stats"]
    assert stats.embedded == len(hashes[0] | hashes[1])
    assert stats.reused >= len(unchanged)


def test_reverse_order_reaches_the_same_end_state(forward: dict, tmp_path_factory, embedder) -> None:
    reverse = run_amendments(tmp_path_factory.mktemp("reverse"), [1, 0], embedder)
    assert reverse["expected"] == forward["expected"]

    def flags(run: dict) -> dict:
        return {
            cid: (d["is_latest_version"], run["lance"].get(cid, {}).get("is_latest_version"))
            for cid, d in run["mongo"].items()
        }

    assert flags(reverse) == flags(forward)
    assert sum(1 for mongo_flag, _ in flags(reverse).values() if mongo_flag) == len(forward["expected"][1])


def test_replay_rechunks_with_new_lineage_and_no_duplicates(replayed: dict) -> None:
    forward = replayed
    replayed = forward["replayed"]
    ids = forward["expected"][0] | forward["expected"][1]
    # the topic now holds every chunk twice (two chunker versions), under the same ids
    versions = {r.chunk_id: r.chunker_version for r in replayed.records()}
    assert set(versions) == ids and set(versions.values()) == {"9.9.9-replay"}
    # the stores hold each chunk once, relabelled, with flags unchanged, and nothing was re-embedded
    assert forward["mongo_total"] == len(ids)
    assert {d["chunker_version"] for d in forward["mongo"].values()} == {"9.9.9-replay"}
    assert sum(d["is_latest_version"] for d in forward["mongo"].values()) == len(forward["expected"][1])
    assert forward["embedded_after"] == forward["stats"].embedded


def test_replay_with_new_options_is_a_new_lineage_that_retires_the_old(retuned: dict) -> None:
    """Options are part of the lineage: new ids, a new chunker_version, the old lineage retired in both stores."""
    from streams.core.chunkers import make_options
    from streams.core.chunkers.section import SectionChunker

    old = retuned["expected"][0] | retuned["expected"][1]
    tag = make_options(STRATEGY, RETUNE[STRATEGY]).lineage_tag()
    fresh = retuned["fresh"]
    assert {r.chunker_version for r in fresh} == {f"{SectionChunker.version}+{tag}"}
    assert fresh and old.isdisjoint(r.chunk_id for r in fresh)
    assert max(r.token_count for r in fresh if not is_table(r)) <= 250
    mongo = retuned["mongo"]
    assert all(mongo[i]["retired"] and not mongo[i]["is_latest_version"] for i in old)
    latest = {r.chunk_id for r in fresh if r.amendment_number == 1}
    assert {i for i, d in mongo.items() if d["is_latest_version"] and not d["retired"]} == latest
    assert not old & set(retuned["lance"]), "retired vectors are gone"
    assert {i for i, row in retuned["lance"].items() if row["is_latest_version"]} == {
        r.chunk_id for r in fresh if r.amendment_number == 1 and not is_table(r)
    }
