"""Corrections of `streams/agents/transport.py` driven on a real Apache Kafka broker, each run with the
correction and without it (the released code), so each test shows the defect on Kafka and its repair."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.consumer.group_coordinator import CoordinatorGroupRebalance
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata
from confluent_kafka.admin import AdminClient, NewTopic

from streams.agents import transport
from streams.ops.kafka import kafka_broker
from tests.conftest import KAFKA_NEEDS
from tests.debian import ensure

pytestmark = pytest.mark.integration

TOPIC = "documents.assembled"


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if missing := ensure(KAFKA_NEEDS):
        pytest.fail(f"Apache Kafka cannot run here: {missing}")
    broker = kafka_broker(tmp_path_factory.mktemp("kafka"))
    broker.launch()
    broker.ready()
    try:
        admin = AdminClient({"bootstrap.servers": broker.address})
        for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
            future.result(30)
        yield broker.address
    finally:
        broker.stop()


class LeaveOneOut(AbstractPartitionAssignor):
    """A leader's assignor that gives every partition to the first member and leaves the others out of its
    SyncGroup request altogether: Kafka then answers each of them with an empty assignment (no bytes)."""

    name = "leave-one-out"
    version = 0

    @classmethod
    def assign(cls, cluster, members):  # type: ignore[no-untyped-def]
        first = min(members)
        partitions = [(t, sorted(cluster.partitions_for_topic(t) or ())) for t in sorted(members[first].subscription)]
        return {first: ConsumerProtocolMemberAssignment(cls.version, partitions, b"")}

    @classmethod
    def metadata(cls, topics):  # type: ignore[no-untyped-def]
        return ConsumerProtocolMemberMetadata(cls.version, list(topics), b"")

    @classmethod
    def on_assignment(cls, assignment):  # type: ignore[no-untyped-def]
        return None


async def coordination_errors(address: str, group: str) -> tuple[list[str], int]:
    """Two members of `group` under `LeaveOneOut`, given six seconds: the errors their coordinator routines
    (or their start) ended with, and how many partitions the member that got them owns."""
    members = [
        AIOKafkaConsumer(
            TOPIC,
            bootstrap_servers=address,
            group_id=group,
            partition_assignment_strategy=(LeaveOneOut,),
            retry_backoff_ms=200,
            max_poll_interval_ms=10_000,  # the rebalance timeout: a join in flight at stop() waits at most this
        )
        for _ in range(2)
    ]
    errors = [repr(e) for e in await asyncio.gather(*(m.start() for m in members), return_exceptions=True) if e]
    try:
        await asyncio.sleep(6)
        for member in members:
            task = member._coordinator._coordination_task
            if task.done() and not task.cancelled() and task.exception() is not None:
                errors.append(repr(task.exception()))
        owned = max(len(m._subscription.assigned_partitions()) for m in members)
    finally:
        await asyncio.gather(*(m.stop() for m in members), return_exceptions=True)
    return errors, owned


@pytest.mark.parametrize("corrected", [True, False], ids=["corrected", "released"])
def test_a_member_left_out_of_an_assignment_joins_again_on_kafka(
    kafka: str, corrected: bool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Point 10. Kafka hands a member the leader left out an assignment of no bytes. aiokafka as released
    dies decoding it: its coordinator routine ends with the error and the member never syncs again (on
    Kafka the group then holds it until its session times out; on noida-db for ever). Corrected, it joins
    again, as aiokafka does when a join yields no assignment, and stays a live member."""
    transport._rejoin_on_empty_assignment()
    patched = CoordinatorGroupRebalance.perform_group_join
    if not corrected:
        monkeypatch.setattr(CoordinatorGroupRebalance, "perform_group_join", patched.__wrapped__)
    caplog.set_level(logging.WARNING, logger="streams.agents")

    errors, owned = asyncio.run(coordination_errors(kafka, f"left-out-{'corrected' if corrected else 'released'}"))
    if corrected:
        assert errors == [] and owned == 2, errors
        assert "empty assignment from SyncGroup; joining again" in caplog.text
    else:
        assert any("unpack requires a buffer" in e for e in errors), "aiokafka took an empty assignment: drop point 10?"
