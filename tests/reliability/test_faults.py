"""Workers and sinks killed with SIGKILL mid-run, then restarted: the chunk topic and MongoDB end with
exactly the chunks of a clean run (same ids and checksums, nothing missing; MongoDB holds each once).

Guarantees: the workers run at-least-once here, so a kill can re-publish a document's chunks under the
same ids (counted below); the sinks are idempotent, so stores never duplicate. faust's exactly-once mode
works on the embedded broker in a clean run, but after a SIGKILL mid-transaction the broker does not
abort the dangling transaction (it ignores transaction.timeout.ms), and read-committed consumers stall until
a producer re-initialises the same transactional.id: tests/ops/test_broker_transactions.py.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.records import build_records
from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.sinks.mongo import MongoSink
from tests.conftest import make_pages
from tests.integration.conftest import pipeline_settings

pytestmark = pytest.mark.integration

WORDS = ["tide", "harbour", "ledger", "sensor", "bridge", "clause", "invoice", "granite", "orchard", "lantern"]


def documents(count: int, page_range: tuple[int, int] = (1, 3)) -> list:
    docs = []
    for n in range(count):
        rng = random.Random(n)
        pages = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(80, 400))) + "."
            for _ in range(rng.randint(*page_range))
        ]
        docs.append(make_pages(f"fault-{n:03d}", pages))
    return docs


def test_sigkill_workers_and_sink_then_restart(tmp_path) -> None:
    docs = documents(60)
    chunker = get_chunker("window")
    expected = {}
    for pages in docs:
        doc = assemble(pages)
        for record in build_records(doc, chunker, chunker.chunk(doc)):
            expected[record.chunk_id] = record.checksum
    store = document_store(tmp_path).start()
    # Every role runs in a consumer group; noida-db never expires a SIGKILLed member, so the embedded
    # broker's group janitor does (streams/ops/groups.py) and each successor gets the partitions back.
    settings = pipeline_settings(tmp_path, mongo_url=f"mongodb://{store.address}", sink_assignment="group")
    try:
        with LocalPipeline(settings, ["window"], sinks=["mongo"], own_store=False) as pipeline:
            rng = random.Random(7)
            pages = [p for d in docs for p in d]
            publisher = threading.Thread(target=publish_pages, args=(pipeline.settings, pages))
            publisher.start()
            for role in ["chunker:window", "sink:mongo", "chunker:window", "assembler", "chunker:window"]:
                time.sleep(rng.uniform(1.0, 3.0))
                pipeline.stop_worker(role, kill=True)
                pipeline.start_worker(role)
            publisher.join()
            collector = Collector(pipeline.settings)
            result = collector.wait([(d[0].doc_id, 0) for d in docs], ["window"], timeout=600, settle=3.0)
            collector.close()
            sink = MongoSink(pipeline.settings.mongo_url)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and sink.count() < len(expected):
                time.sleep(1)
            stored = {d["_id"]: d["checksum"] for d in sink.collection.find({}, {"checksum": 1})}
            sink.close()
    finally:
        store.stop()
    got = {r.chunk_id: r.checksum for r in result.records()}
    assert got == expected  # no gaps, same ids, same checksums
    print(f"re-published chunk records after kills: {result.duplicates}")
    assert not result.dead
    assert stored == expected  # the store holds each chunk exactly once
