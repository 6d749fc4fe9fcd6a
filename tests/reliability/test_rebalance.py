"""A consumer-group rebalance while documents are half-assembled: the first pages of many multi-page
documents sit in one assembler's tables when a second assembler replica joins; the rest of the pages
arrive after the rebalance, and then one replica is stopped (a second rebalance).

Why: the pages of a document live in the assembler's changelogged tables, keyed by document. A partition
that moves to another replica must take its half-assembled documents with it (table recovery from the
changelog), so every document is still assembled, none is lost, dead-lettered or timed out, and the store
holds each chunk once. At-least-once may re-publish chunks under the same ids (counted below).
"""

from __future__ import annotations

import time

import pytest

from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.runtime.clients import group_id
from streams.runtime.lag import group_lag
from streams.settings import Settings
from tests.integration.conftest import pipeline_settings
from tests.reliability.clean_run import documents, expected_chunks, stored_chunks, wait_split

pytestmark = pytest.mark.integration


def owned(split: dict[str, set[tuple[str, int]]]) -> list[list[int]]:
    return sorted(sorted(p for _, p in tps) for tps in split.values())


def wait_consumed(settings: Settings, timeout: float) -> None:
    """Until the assembler group has committed every page published so far."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = group_lag(settings, group_id(settings, "assembler"), [settings.topics.pages], timeout=5)
        if rows and all(r.committed == r.end for r in rows):
            return
        time.sleep(0.5)
    raise AssertionError(f"the assembler did not consume the first pages: {rows}")


@pytest.mark.parametrize("guarantee", ["at_least_once", pytest.param("exactly_once", marks=pytest.mark.kafka_only)])
def test_rebalance_with_half_assembled_documents_assembles_each_once(tmp_path, guarantee: str) -> None:
    """Under exactly-once too: there table recovery once took a partition's changelog for empty until it had
    been fetched, and the replica that joined forgot half the documents (transport.py, point 17)."""
    docs = documents(40, "rebalance", pages=(2, 4), page_words=(60, 200))
    expected = expected_chunks(docs)
    first = [d[0] for d in docs]
    rest = [p for d in docs for p in d[1:]]
    store = document_store(tmp_path).start()
    # No document may time out while it waits for its other pages across two rebalances.
    settings = pipeline_settings(
        tmp_path,
        mongo_url=f"mongodb://{store.address}",
        sink_assignment="group",
        assembly_timeout_s=300.0,
        processing_guarantee=guarantee,
    )
    try:
        with LocalPipeline(settings, ["window"], sinks=["mongo"], own_store=False) as pipeline:
            live = pipeline.settings
            publish_pages(live, first)
            wait_consumed(live, timeout=60)  # every document is now half-assembled in replica 1's tables
            before = wait_split(live, 1, timeout=10)

            pipeline.start_worker("assembler", replica=2)  # same command, same group: a rebalance
            started = time.monotonic()
            after = wait_split(live, 2, timeout=60)
            rebalanced_s = time.monotonic() - started

            publish_pages(live, rest)
            pipeline.stop_worker("assembler")  # SIGTERM to the first replica: a second rebalance
            collector = Collector(live)
            result = collector.wait([(d[0].doc_id, 0) for d in docs], ["window"], timeout=90, drain=True)
            collector.close()
            stored, rows = stored_chunks(live, len(expected), timeout=60)
            survivor = wait_split(live, 1, timeout=30)
            pipeline.check_workers()
    finally:
        store.stop()
    print(
        f"\nrebalance ({guarantee}): {len(docs)} docs, {len(first)} first pages then {len(rest)} more; "
        f"page partitions per assembler before {owned(before)}, after the join {owned(after)} "
        f"({rebalanced_s:.1f}s), after the stop {owned(survivor)}; "
        f"{len(expected)} chunks expected, {len(result.records())} on the topic, stored {len(stored)} ({rows} rows); "
        f"dead letters {len(result.dead)}; re-published {result.duplicates}"
    )
    assert not result.dead  # no document dead-lettered (timeout, capacity, conflicting page)
    assert {r.chunk_id: r.checksum for r in result.records()} == expected  # each document complete
    assert stored == expected and rows == len(expected)  # the store holds each chunk once


@pytest.mark.parametrize("guarantee", ["at_least_once", pytest.param("exactly_once", marks=pytest.mark.kafka_only)])
def test_a_restarted_assembler_restores_its_half_assembled_documents(tmp_path, guarantee: str) -> None:
    """The same state across a stop and a start of the only replica: its tables come back from the changelog
    before the rest of the pages arrive, so every document is assembled once."""
    docs = documents(12, "restart", pages=(2, 3), page_words=(40, 120))
    expected = expected_chunks(docs)
    settings = pipeline_settings(tmp_path, assembly_timeout_s=300.0, processing_guarantee=guarantee)
    with LocalPipeline(settings, ["window"], sinks=[]) as pipeline:
        live = pipeline.settings
        publish_pages(live, [d[0] for d in docs])
        wait_consumed(live, timeout=60)
        pipeline.stop_worker("assembler")
        pipeline.start_worker("assembler")
        publish_pages(live, [p for d in docs for p in d[1:]])
        collector = Collector(live)
        result = collector.wait([(d[0].doc_id, 0) for d in docs], ["window"], timeout=60, drain=True)
        collector.close()
        pipeline.check_workers()
    assert not result.dead  # no page refused as the first of a document it has already seen
    assert {r.chunk_id: r.checksum for r in result.records()} == expected


def test_recovery_asks_the_broker_for_a_fresh_changelogs_last_stable_offset(tmp_path) -> None:
    """Point 17: under exactly-once faust took a changelog's highwater from the last fetch of it, and a
    partition just assigned has had none: recovery read -1, restored nothing, and the worker went on with
    empty tables. Here the highwater is the broker's last stable offset: the committed records and marker."""
    import asyncio
    from types import SimpleNamespace

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread

    from streams.agents.transport import SeekingConsumerThread
    from streams.ops.embedded import broker

    topic = f"{group_id(Settings(), 'assembler')}-assembly-pages-changelog"  # under the test's deployment
    server = broker(tmp_path / "broker").start()

    async def highwaters() -> tuple[object, object]:
        admin = AIOKafkaAdminClient(bootstrap_servers=server.address)
        await admin.start()
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
        await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=server.address, transactional_id="changelog-writer")
        await producer.start()
        async with producer.transaction():
            for n in range(5):
                await producer.send(topic, key=b"doc-%d" % n, value=b"page", partition=0)
        await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=server.address, isolation_level="read_committed")
        await consumer.start()
        part = TopicPartition(topic, 0)
        consumer.assign([part])  # assigned, never fetched: what recovery sees right after a rebalance
        consumer.pause(part)  # and kept so while the test waits: a fetch would tell faust's answer too
        thread = SimpleNamespace(consumer=SimpleNamespace(in_transaction=True), _ensure_consumer=lambda: consumer)
        try:
            # The commit's answer comes before its markers are written: until then the stable offset is 0.
            deadline = time.monotonic() + 30
            while (ours := await SeekingConsumerThread._highwaters(thread, [part]))[part] != 6:  # type: ignore[arg-type]
                assert time.monotonic() < deadline, ours
                await asyncio.sleep(0.1)
            stock = await AIOKafkaConsumerThread._highwaters(thread, [part])  # type: ignore[arg-type]
        finally:
            await consumer.stop()
        return stock[part], ours[part]

    try:
        stock, ours = asyncio.run(highwaters())
    finally:
        server.stop()
    assert stock is None  # faust's answer: recovery takes it for an empty changelog
    assert ours == 6  # five committed records and the commit marker


def test_janitor_keeps_only_the_newest_membership_of_a_process() -> None:
    """The stale membership a rejoining consumer leaves behind is what stalls the rebalance above."""
    from streams.ops.groups import superseded

    one, two = "streams.assembler.p1.vm", "streams.assembler.p2.vm"
    ids = {one: [f"{one}-0f65fb18-36f7", f"{one}-0f65fb17-5a6d"], two: [f"{two}-0f65fb18-2dd1"]}
    assert [m.member_id for m in superseded("g", ids)] == [f"{one}-0f65fb17-5a6d"]
