"""A read_committed reader that passed an aborted transaction reads its producer's later transactions: on Apache
Kafka, yes; on noida-db 0.2.3, no (pinned here): exactly-once refuses noida-db, in one line (`streams.settings`).

Why it matters: under exactly-once a worker that dies mid-transaction leaves it open, and its successor, which
keeps the transactional id (faust keeps it per partition), aborts it. Every reader of that worker's output topic
that was already reading (the next stage's workers, the sinks) then has to go on reading the successor's
committed transactions. noida-db sends every aborted transaction a partition ever had with every fetch, not only
those that end at or after the fetch offset, and it keeps the producer id across epochs; librdkafka and aiokafka
then take each later batch of that producer for part of the aborted transaction and skip it, for good, while
their position moves on. A reader started afterwards past that point does too; only one that reads the abort
marker and the later transactions in one fetch reads them. If the noida-db case starts failing, noida-db mended it,
and the refusal can go.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioPartition
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pydantic import ValidationError

from streams.ops.embedded import broker
from streams.settings import Settings
from tests.cli import streams

pytestmark = pytest.mark.integration

LATER = ["after-0", "after-1", "after-2"]


class Reader:
    """A read_committed librdkafka reader of topic `t` from offset 0, polled when asked."""

    def __init__(self, address: str, start: int = 0) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": address,
                "group.id": f"reader-{time.monotonic_ns()}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        self.consumer.assign([TopicPartition("t", 0, start)])
        self.offsets: dict[str, int] = {}

    def read(self, seconds: float = 3.0) -> list[str]:
        got: list[str] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self.consumer.poll(0.2)
            if message is not None and not message.error():
                got.append(message.value().decode())
                self.offsets[got[-1]] = message.offset()
        return got


async def aiokafka_reads(address: str, produce_later: object) -> tuple[list[str], list[str]]:
    """What an aiokafka read_committed reader (the workers' client) reads before and after `produce_later()`."""
    consumer = AIOKafkaConsumer(bootstrap_servers=address, isolation_level="read_committed", enable_auto_commit=False)
    await consumer.start()
    try:
        partition = AioPartition("t", 0)
        consumer.assign([partition])
        consumer.seek(partition, 0)

        async def read(seconds: float) -> list[str]:
            got: list[str] = []
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=200)
                got += [r.value.decode() for records in batches.values() for r in records]
            return got

        before = await read(3.0)
        await asyncio.to_thread(produce_later)  # type: ignore[arg-type]
        return before, await read(3.0)
    finally:
        await consumer.stop()


def test_a_reader_past_an_aborted_transaction_reads_the_producers_later_ones(tmp_path: Path, bus: str) -> None:
    service = broker(tmp_path).start()
    try:
        address = service.address
        admin = AdminClient({"bootstrap.servers": address})  # kept: a collected client cancels its request
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(20)

        def producer() -> Producer:
            made = Producer({"bootstrap.servers": address, "transactional.id": "worker-0"})
            made.init_transactions(30)
            return made

        first = producer()
        first.begin_transaction()
        first.produce("t", b"before")
        first.commit_transaction(30)
        live = Reader(address)
        assert live.read() == ["before"]
        first.begin_transaction()
        first.produce("t", b"dead")
        first.flush(30)  # left open: the worker died here
        successor = producer()  # fences the first and aborts its open transaction
        assert live.read(2.0) == [], "the aborted record is never read"

        def commit(values: list[str]) -> None:
            for value in values:
                successor.begin_transaction()
                successor.produce("t", value.encode())
                successor.commit_transaction(30)

        before, after = asyncio.run(aiokafka_reads(address, lambda: commit(LATER)))
        assert before == ["before"]
        read_by_live = live.read()
        fresh = Reader(address)
        assert fresh.read() == ["before", *LATER], "a reader started from the beginning reads everything"
        # A reader started past the abort marker, as a restarted one whose commit is past it.
        restarted = Reader(address, start=fresh.offsets[LATER[0]]).read()
        if bus == "kafka":
            assert (read_by_live, after, restarted) == (LATER, LATER, LATER)
        else:  # noida-db 0.2.3: both clients skip the producer's later transactions, even when started afresh there
            assert (read_by_live, after, restarted) == ([], [], [])
        live.consumer.close()
    finally:
        service.stop()


@pytest.mark.embedded_only  # no broker runs: the settings refuse first
def test_exactly_once_refuses_the_embedded_broker_and_only_it(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="exactly_once needs Apache Kafka"):
        Settings(data_dir=tmp_path, broker_kind="noida", processing_guarantee="exactly_once")
    assert Settings(data_dir=tmp_path, broker_kind="kafka", processing_guarantee="exactly_once")
    assert Settings(data_dir=tmp_path, broker_kind="noida", processing_guarantee="at_least_once")
    with pytest.raises(ValidationError, match=r"\^\(at_least_once\|exactly_once\)\$"):
        Settings(data_dir=tmp_path, broker_kind="kafka", processing_guarantee="exactly-once")


@pytest.mark.embedded_only  # no broker runs: the settings refuse first
@pytest.mark.parametrize(
    "command", [["up", "--strategy", "window"], ["worker", "--role", "assembler"], ["sink", "mongo"], ["lag"]]
)
def test_every_process_refuses_exactly_once_on_the_embedded_broker_in_one_line(tmp_path: Path, command) -> None:
    """Before anything starts, with the code supervisors do not restart (78): `streams up` starts no broker,
    a worker or sink no consumer."""
    env = {
        **os.environ,
        "STREAMS_DATA_DIR": str(tmp_path),
        "STREAMS_BROKER_KIND": "noida",
        "STREAMS_PROCESSING_GUARANTEE": "exactly_once",
    }
    done = streams(*command, env=env, timeout=120)
    assert done.returncode == 78, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: bad setting STREAMS_PROCESSING_GUARANTEE: exactly_once needs Apache Kafka")
    assert not list(tmp_path.iterdir()), "something started"


@pytest.mark.embedded_only  # no broker runs: the settings refuse first
def test_streams_up_with_the_kafka_broker_takes_exactly_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--broker kafka` with exactly-once in the environment: the kind is taken before the guarantee is checked
    against it (a public console without a token refuses right after, so nothing starts)."""
    from typer.testing import CliRunner

    from streams.cli import app

    for name, value in {
        "STREAMS_DATA_DIR": str(tmp_path),
        "STREAMS_BROKER_KIND": "noida",
        "STREAMS_PROCESSING_GUARANTEE": "exactly_once",
        "STREAMS_UI_HOST": "0.0.0.0",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("STREAMS_UI_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["up", "--strategy", "window", "--broker", "kafka"])
    assert result.exit_code != 0
    assert "STREAMS_UI_TOKEN" in str(result.exception) + result.output, (result.exception, result.output)
