"""Failover on Apache Kafka: three replicas of a chunker on six partitions and two of the assembler, under a
steady stream of documents; one chunker replica is killed with SIGKILL mid-stream, then the broker itself
(SIGKILL and restart on its port and data). Every document lands in MongoDB and the vector store exactly
once, and the audit finds nothing to repair: Kafka loses no acknowledged write to a process kill, and it
expires the dead member itself after `STREAMS_SESSION_TIMEOUT_S`.

Reported: the rebalance gap (from the kill to the first chunk the survivors produce on a partition the dead
replica owned) and the records re-published under the same ids (at-least-once)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.runtime.clients import client_config, group_id
from streams.settings import Settings
from tests.conftest import KAFKA_NEEDS
from tests.debian import ensure
from tests.integration.conftest import pipeline_settings
from tests.reliability.clean_run import documents, expected_chunks, stored_chunks, stored_vectors_and_audit

# Apache Kafka of its own (started here): in the Kafka pass alone
pytestmark = [pytest.mark.integration, pytest.mark.kafka_only, pytest.mark.own_services]


def owned_by(settings: Settings, pid: int) -> set[int]:
    """Partitions of `documents.assembled` the chunker member of process `pid` owns now."""
    admin = AdminClient(client_config(settings))
    name = group_id(settings, "chunker-window")
    group = admin.describe_consumer_groups([name], request_timeout=10)[name].result()
    return {
        tp.partition
        for member in group.members
        if f".p{pid}." in member.client_id
        for tp in member.assignment.topic_partitions
        if tp.topic == settings.topics.documents
    }


def first_chunk_after(settings: Settings, partitions: set[int], since_ms: int, timeout: float) -> float:
    """Broker time (s) of the first chunk record produced after `since_ms` from a document of `partitions`.

    Chunks are keyed by chunk id, not by document, so the document's partition is read from the record's
    `doc_id` and compared with the partition its key maps to (Kafka's default partitioner, murmur2)."""
    from streams.codec.avro import AvroCodec
    from streams.core.events import ChunkRecord

    codec = AvroCodec(settings.schema_registry_url)
    consumer = Consumer({**client_config(settings), "group.id": "failover-gap", "enable.auto.commit": False})
    starts = consumer.offsets_for_times(
        [TopicPartition(settings.topics.chunks, p, since_ms) for p in range(settings.partitions)], timeout=10
    )
    consumer.assign([tp for tp in starts if tp.offset >= 0] or starts)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            record = ChunkRecord(**codec.decode("chunk_record", message.value()))
            if murmur2_partition(record.doc_id.encode(), settings.partitions) in partitions:
                return message.timestamp()[1] / 1000
    finally:
        consumer.close()
    raise AssertionError("no survivor produced a chunk of the dead replica's partitions")


def murmur2_partition(key: bytes, partitions: int) -> int:
    """The partition aiokafka's default partitioner (the assembler's producer) gives `key`."""
    from aiokafka.partitioner import DefaultPartitioner

    return DefaultPartitioner()(key, list(range(partitions)), list(range(partitions)))


def test_a_killed_replica_and_a_killed_broker_lose_nothing_on_kafka(tmp_path: Path) -> None:
    if missing := ensure(KAFKA_NEEDS):
        pytest.fail(f"Apache Kafka cannot run here: {missing}")
    docs = documents(90, "failover", pages=(1, 3), page_words=(80, 300))
    warm = documents(1, "warm", pages=(1, 1))
    expected = expected_chunks(docs + warm)
    store = document_store(tmp_path).start()
    settings = pipeline_settings(
        tmp_path,
        partitions=6,
        broker_kind="kafka",
        mongo_url=f"mongodb://{store.address}",
        sink_assignment="group",
        assembly_timeout_s=300.0,
        lancedb_path=tmp_path / "lance",
    )
    try:
        with LocalPipeline(settings, ["window"], sinks=["mongo", "vectors"], own_store=False) as pipeline:
            live = pipeline.settings
            pipeline.start_worker("chunker:window", replica=2)
            pipeline.start_worker("chunker:window", replica=3)
            pipeline.start_worker("assembler", replica=2)
            pages = [p for d in docs for p in d]
            batches = [pages[i : i + 10] for i in range(0, len(pages), 10)]

            def steady() -> None:  # a steady stream: ten pages every half second
                for batch in batches:
                    publish_pages(live, batch)
                    time.sleep(0.5)

            collector = Collector(live)
            publish_pages(live, warm[0])  # every replica joined and the pipeline chunking
            collector.wait([(warm[0][0].doc_id, 0)], ["window"], timeout=180)
            publisher = threading.Thread(target=steady)
            publisher.start()
            time.sleep(6)
            victim = pipeline.workers["chunker:window#2"].pid
            partitions = owned_by(live, victim)
            assert partitions, "the replica to kill owned no partition"
            killed_ms = int(time.time() * 1000)
            pipeline.stop_worker("chunker:window#2", kill=True)
            gap = first_chunk_after(live, partitions, killed_ms, timeout=120) - killed_ms / 1000
            time.sleep(3)
            assert pipeline.broker is not None
            pipeline.broker.kill()  # SIGKILL, then the same port and data directory
            pipeline.broker.launch()
            pipeline.broker.ready()
            publisher.join()
            result = collector.wait([(d[0].doc_id, 0) for d in docs], ["window"], timeout=600, drain=True)
            collector.close()
            stored, rows = stored_chunks(live, len(expected), timeout=300)
            vectors, report = stored_vectors_and_audit(live, len(expected))
    finally:
        store.stop()
    print(
        f"\nfailover on Kafka: {len(docs)} docs, {len(expected)} chunks; rebalance gap after the kill {gap:.1f}s "
        f"(session timeout {settings.session_timeout_s:.0f}s); re-published {result.duplicates}; "
        f"stored {rows} rows, {len(vectors)} vectors; audit gaps {report.counts()}"
    )
    assert {r.chunk_id: r.checksum for r in result.records()} == expected
    assert stored == expected and rows == len(expected)  # MongoDB holds each chunk once
    assert sorted(vectors) == sorted(expected)  # the vector store too: window has no table chunks
    assert not report.gaps, [g.as_dict() for g in report.gaps[:5]]  # nothing for `--repair` to do
