"""`documents.indexed` never speaks for a document its store does not hold whole, also when the sink is
SIGKILLed mid-run: the sink asks the store, not its memory, before it reports.

While the sink is dead its store is frozen, so every event published up to then can be checked exactly
against what the store holds. After each restart the sink re-reads the manifests it had not reported and
every document is reported in the end (at least once: a kill can lose the commit of a report).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.records import build_records
from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.sinks.mongo import MongoSink
from tests.integration.conftest import pipeline_settings
from tests.reliability.test_faults import documents

# it kills or freezes its broker or store: services of its own
pytestmark = [pytest.mark.integration, pytest.mark.own_services]


def test_a_killed_sink_never_reports_an_incomplete_document(tmp_path) -> None:
    docs = documents(30, page_range=(4, 6))
    chunker = get_chunker("window")
    expected: dict[str, set[str]] = {}
    for pages in docs:
        doc = assemble(pages)
        expected[doc.doc_id] = {r.chunk_id for r in build_records(doc, chunker, chunker.chunk(doc))}
    store = document_store(tmp_path).start()
    # One record per sink batch: a document's chunks are stored over many writes, so the kills land mid-document.
    settings = pipeline_settings(
        tmp_path, mongo_url=f"mongodb://{store.address}", sink_assignment="group", sink_batch_size=1
    )
    checked, partial_at_kill = 0, 0
    try:
        with LocalPipeline(settings, ["window"], sinks=["mongo"], own_store=False) as pipeline:
            mongo = MongoSink.of(pipeline.settings)
            publisher = threading.Thread(target=publish_pages, args=(pipeline.settings, [p for d in docs for p in d]))
            publisher.start()
            total = sum(len(ids) for ids in expected.values())
            watcher = Collector(pipeline.settings, watch_indexed=True)
            for kill in range(3):
                # Kill while it writes: a quarter in, half way, and once it has reported some documents.
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    watcher.poll(0.02)
                    stored = mongo.count()
                    reported = any(name == "mongo" for *_, name in watcher.indexed)
                    if (total * (kill + 1) // 4 <= stored < total and (kill < 2 or reported)) or stored >= total:
                        break
                pipeline.stop_worker("sink:mongo", kill=True)
                held: dict[str, set[str]] = defaultdict(set)
                for row in mongo.collection.find({}, {"doc_id": 1}):
                    held[row["doc_id"]].add(row["_id"])
                partial_at_kill += sum(1 for d, ids in held.items() if ids and ids != expected[d])
                reader = Collector(pipeline.settings, watch_indexed=True)
                reader.poll(2.0)
                reader.close()
                for doc_id, amendment, strategy, name in reader.indexed:
                    if name != "mongo":
                        continue
                    assert (amendment, strategy) == (0, "window")
                    assert held[doc_id] == expected[doc_id], f"{doc_id} reported indexed with chunks missing"
                    checked += 1
                pipeline.start_worker("sink:mongo")
            publisher.join()
            watcher.close()
            reader = Collector(pipeline.settings, watch_indexed=True)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                reader.poll(1.0)
                if {d for d, _, _, name in reader.indexed if name == "mongo"} >= set(expected):
                    break
            reader.close()
            reported = {d for d, _, _, name in reader.indexed if name == "mongo"}
            held = defaultdict(set)
            for row in mongo.collection.find({}, {"doc_id": 1}):
                held[row["doc_id"]].add(row["_id"])
            mongo.close()
    finally:
        store.stop()
    assert reported == set(expected), f"never reported: {sorted(set(expected) - reported)}"
    assert dict(held) == expected
    print(f"events checked against a frozen store: {checked}; documents partly stored at a kill: {partial_at_kill}")
    assert partial_at_kill and checked, "the kills did not land mid-document and after a report"
