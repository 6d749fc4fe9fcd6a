"""A partition's new owner under exactly-once starts from the offsets its predecessor's last transaction
committed, not older ones, on Apache Kafka.

Kafka answers a transaction's commit before it has written the commit markers, and offsets sent in a
transaction count only once the marker reaches `__consumer_offsets`. An offset fetch without `require_stable`
(aiokafka sends OffsetFetch v1 to v3, which has no such flag) reads the old offsets meanwhile: in a run of 300
commits on this machine (2026-11-30), 163 fetches made right after the commit returned read the old offset,
for 3 to 29 ms. A new owner that read them would process its predecessor's last inputs again and commit their
outputs twice. faust closes the window: its transactional ids are per input partition, and the new owner
starts that partition's producer (InitProducerId, which Kafka answers only once the predecessor's
transaction is complete) in the assignment callback, before the tables' recovery seeks to the committed
offsets. This pins both halves: the id format, and that a fetch after the successor's start reads the new
offsets every time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streams.ops.embedded import broker

pytestmark = [pytest.mark.integration, pytest.mark.kafka_only]  # exactly-once refuses noida-db

GROUP = "streams-chunker-window"
HANDOVERS = 25


def test_faust_keeps_a_transactional_id_per_input_partition() -> None:
    """The premise: the successor's producer has its predecessor's transactional id."""
    from faust.transport.consumer import TransactionManager

    assert TransactionManager.transactional_id_format == "{group_id}-{tpg.group}-{tpg.partition}"


async def handovers(address: str) -> list[tuple[int, int | None]]:
    """`HANDOVERS` times: the owner commits a transaction with its input offset, a successor starts the same
    transactional id, and the group's committed offset is fetched as aiokafka fetches it; (sent, read)."""
    tid = f"{GROUP}-0-0"
    source = AioPartition("in", 0)
    probe = AIOKafkaConsumer(bootstrap_servers=address, group_id=GROUP, enable_auto_commit=False)
    await probe.start()
    probe.assign([source])
    owner = AIOKafkaProducer(bootstrap_servers=address, transactional_id=tid)
    await owner.start()
    pairs = []
    try:
        for offset in range(1, HANDOVERS + 1):
            async with owner.transaction():
                await owner.send("out", b"chunk", partition=0)
                await owner.send_offsets_to_transaction({source: offset}, GROUP)
            successor = AIOKafkaProducer(bootstrap_servers=address, transactional_id=tid)
            await successor.start()  # as faust's transactions.on_rebalance does for an assigned partition
            pairs.append((offset, await probe.committed(source)))
            await owner.stop()
            owner = successor
    finally:
        await owner.stop()
        await probe.stop()
    return pairs


def test_a_new_owner_reads_the_offsets_its_predecessors_transaction_committed(tmp_path: Path, bus: str) -> None:
    service = broker(tmp_path).start()
    try:
        admin = AdminClient({"bootstrap.servers": service.address})
        for future in admin.create_topics([NewTopic("in", 1, 1), NewTopic("out", 1, 1)]).values():
            future.result(30)
        pairs = asyncio.run(handovers(service.address))
    finally:
        service.stop()
    assert [read for _, read in pairs] == [sent for sent, _ in pairs]
