"""Workers and sinks killed with SIGKILL mid-run, then restarted: the chunk topic and MongoDB end with
exactly the chunks of a clean run (same ids and checksums, nothing missing; MongoDB holds each once).

Each kill lands on work, at a point the test chooses rather than at a random time. The documents go out
in waves of six, one per kill: the role to kill is held (SIGSTOP) until the wave is on its input topic,
then let go and killed the moment its output (records on its output topic, rows stored) first grows, so
it dies processing a backlog. That it had work is measured, not assumed: its input's end offsets, read
while it was held, stand past the offsets its consumer group had committed, read after the kill and
before the restart, so its successor must read records again. A kill that finds the wave committed did not
land: the role is killed again on the next wave, and one never caught with work while waves remain fails
the test. The MongoDB sink writes batches of 2 records here, so a backlog takes it several commits.

Guarantees: the workers run at-least-once here, so a kill can re-publish a document's chunks under the
same ids (counted below); the sinks are idempotent, so stores never duplicate. Under
`STREAMS_PROCESSING_GUARANTEE=exactly_once` (Kafka alone: exactly-once refuses noida-db) a worker's output
counts from its first record in an open transaction, so the kill lands mid-transaction and its successor
aborts it.
"""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.records import build_records
from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.runtime.clients import client_config, end_offsets, group_id
from streams.runtime.lag import group_lag
from streams.settings import Settings
from streams.sinks.mongo import MongoSink
from tests.conftest import make_pages
from tests.integration.conftest import pipeline_settings

pytestmark = pytest.mark.integration

WORDS = ["tide", "harbour", "ledger", "sensor", "bridge", "clause", "invoice", "granite", "orchard", "lantern"]

#: The roles killed, in order. The first three go upstream, so each is fed by roles still running; the fourth
#: waits for one round of restarts (on Kafka a successor gets the partitions after the 10 s session timeout).
KILLS = ["sink:mongo", "chunker:window", "assembler", "sink:mongo", "chunker:window"]
WAVE = 6  # documents published before each kill attempt


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


@dataclass
class Kill:
    role: str
    output: int  # the role's output when it was caught growing (records published or rows stored)
    uncommitted: int  # input records past its group's committed offsets at the kill
    waited_s: float  # from the hold to the kill

    def __str__(self) -> str:
        return f"{self.role} at output {self.output} after {self.waited_s:.1f}s, {self.uncommitted} uncommitted"


def input_of(settings: Settings, role: str) -> tuple[str, str]:
    """The consumer group of a role and the input topic whose offsets it commits."""
    topics = settings.topics
    if role == "assembler":
        return group_id(settings, "assembler"), topics.pages
    if role.startswith("chunker:"):
        return group_id(settings, f"chunker-{role.split(':')[1]}"), topics.documents
    return group_id(settings, f"sink-{role.split(':')[1]}"), topics.chunks


class Written:
    """Records written to a topic, in open transactions too: its partitions' high watermarks as a
    read_uncommitted client reads them. The collector reads committed ones, and under exactly-once a
    worker's records and its input offsets commit at the same moment, so a worker killed when those grew
    had nothing uncommitted."""

    def __init__(self, settings: Settings) -> None:
        self.partitions = settings.partitions
        self.reader = Consumer(
            {**client_config(settings), "group.id": "fault-watermarks", "isolation.level": "read_uncommitted"}
        )

    def __call__(self, topic: str) -> int:
        return sum(end_offsets(self.reader, topic, range(self.partitions)).values())

    def close(self) -> None:
        self.reader.close()


def output_of(role: str, collector: Collector, mongo: MongoSink, written: Written) -> int:
    """What the role has written so far: records on its output topic (a faust worker's, read as end offsets,
    which answer at once where a consumer sees new records only after its fetch wait), or rows stored."""
    topics = collector.settings.topics
    if role == "assembler":
        return written(topics.documents)
    if role.startswith("chunker:"):
        return written(topics.chunks)
    return mongo.count()


def input_ready(role: str, wave: list, collector: Collector) -> bool:
    """Whether the role's input holds the whole wave: its pages (published before), its documents, or its
    chunks."""
    if role == "assembler":
        return True
    collector.poll(0.1)
    if role.startswith("chunker:"):
        return {(d[0].doc_id, 0) for d in wave} <= collector.documents_seen
    return collector.result.settled([(d[0].doc_id, 0) for d in wave], ["window"])


def kill_at_work(
    pipeline: LocalPipeline, role: str, wave: list, collector: Collector, mongo: MongoSink, written: Written
) -> Kill:
    """Hold `role` (SIGSTOP) while `wave` is published and reaches its input, read its input's end offsets,
    let it go (SIGCONT), SIGKILL it the moment its output grows, restart it, and measure what it left
    uncommitted. Held, it meets the wave as one backlog: a worker or sink let alone keeps pace with its
    input record by record, and the offsets it commits can pass the whole wave before the test sees any
    output (publishing one wave takes seconds on a loaded machine, longer than a worker's commit interval)."""
    settings = pipeline.settings
    group, topic = input_of(settings, role)
    started = time.monotonic()
    deadline = started + 180
    pid = pipeline.workers[role].pid
    os.killpg(pid, signal.SIGSTOP)
    try:
        start = output_of(role, collector, mongo, written)
        publish_pages(settings, [p for d in wave for p in d])
        while not input_ready(role, wave, collector):
            pipeline.check_workers()
            assert time.monotonic() < deadline, f"{[d[0].doc_id for d in wave]} never reached {role}"
        ends = end_offsets(collector.consumer, topic, range(collector.settings.partitions))  # what its group reads
    finally:
        os.killpg(pid, signal.SIGCONT)
    while (output := output_of(role, collector, mongo, written)) <= start:
        pipeline.check_workers()
        assert time.monotonic() < deadline, f"{role}'s output stayed at {start}"
        time.sleep(0.005)
    pipeline.stop_worker(role, kill=True)
    committed = {row.partition: row.end - row.lag for row in group_lag(settings, group, [topic])}
    pipeline.start_worker(role)
    uncommitted = sum(max(0, end - committed[p]) for p, end in ends.items())
    return Kill(role, output, uncommitted, time.monotonic() - started)


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
    # On Kafka the successor waits out the session timeout (10 s), and a rebalance can come between two
    # pages of a document: no assembly timeout (4 s in the integration defaults) may dead-letter it then.
    settings = pipeline_settings(
        tmp_path,
        mongo_url=f"mongodb://{store.address}",
        sink_assignment="group",
        sink_batch_size=2,
        assembly_timeout_s=120.0,
    )
    try:
        with LocalPipeline(settings, ["window"], sinks=["mongo"], own_store=False) as pipeline:
            live = pipeline.settings
            collector = Collector(live, watch_documents=True)
            mongo = MongoSink.of(live)
            written = Written(live)
            waves = [docs[n : n + WAVE] for n in range(0, len(docs), WAVE)]
            began = time.monotonic()
            landed: list[Kill] = []
            missed: list[Kill] = []
            try:
                for role in KILLS:
                    while True:
                        assert waves, f"{role} was never killed with work: missed {[str(k) for k in missed]}"
                        kill = kill_at_work(pipeline, role, waves.pop(0), collector, mongo, written)
                        if kill.uncommitted:
                            landed.append(kill)
                            break
                        missed.append(kill)
                publish_pages(live, [p for wave in waves for d in wave for p in d])
                killed_s = time.monotonic() - began
                result = collector.wait([(d[0].doc_id, 0) for d in docs], ["window"], timeout=600, drain=True)
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline and mongo.count() < len(expected):
                    pipeline.check_workers()
                    time.sleep(1)
                stored = {d["_id"]: d["checksum"] for d in mongo.collection.find({}, {"checksum": 1})}
            finally:
                collector.close()
                mongo.close()
                written.close()
    finally:
        store.stop()
    got = {r.chunk_id: r.checksum for r in result.records()}
    print(
        f"\nkills with work: {'; '.join(map(str, landed))}; without (killed again): "
        f"{'; '.join(map(str, missed)) or 'none'}; all killed in {killed_s:.1f}s; "
        f"re-published chunk records after kills: {result.duplicates}"
    )
    assert not result.dead, [(d.reason_code, d.doc_id) for d in result.dead]
    assert got == expected  # no gaps, same ids, same checksums
    assert stored == expected  # the store holds each chunk exactly once
    if live.processing_guarantee == "exactly_once":  # killed mid-transaction: nothing committed twice
        assert result.duplicates == 0
