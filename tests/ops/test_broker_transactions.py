"""What `STREAMS_PROCESSING_GUARANTEE=exactly_once` rests on, checked against the embedded broker (noida-db).

Isolation of aborted and open transactions, offsets committed inside a transaction, and fencing: a producer
that re-initialises a transactional.id aborts the transaction its dead predecessor left open. noida-db does
not enforce `transaction.timeout.ms` (a transaction left open by a SIGKILLed producer stays open until its
transactional.id is initialised again; see the README's known limits), so a transactional worker's successor
(faust keeps the id per partition, and the supervisor restarts it) is what releases read_committed readers.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streams.ops.embedded import broker

pytestmark = [pytest.mark.integration, pytest.mark.embedded_only]

DIES_IN_A_TRANSACTION = """
import sys, time
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "tx-dies", "transaction.timeout.ms": 5000})
p.init_transactions(10)
p.begin_transaction()
p.produce("t", b"open-then-killed")
p.flush(10)
print("produced", flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def address(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    service = broker(tmp_path_factory.mktemp("tx")).start()
    admin = AdminClient({"bootstrap.servers": service.address})
    for future in admin.create_topics([NewTopic("t", 1, 1), NewTopic("src", 1, 1)]).values():
        future.result(10)
    yield service.address
    service.stop()


def visible(address: str, isolation: str = "read_committed", seconds: float = 2.0) -> list[str]:
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": f"reader-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition("t", 0, 0)])
    got: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            got.append(message.value().decode())
    consumer.close()
    return got


def test_transactions_are_isolated_and_offsets_commit_with_them(address: str) -> None:
    producer = Producer({"bootstrap.servers": address, "transactional.id": "tx-1"})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce("t", b"aborted")
    producer.flush(10)  # on the broker, then aborted
    producer.abort_transaction(10)
    producer.begin_transaction()
    producer.produce("t", b"committed")
    producer.commit_transaction(10)
    assert visible(address) == ["committed"]
    assert visible(address, "read_uncommitted") == ["aborted", "committed"]

    producer.begin_transaction()
    producer.produce("t", b"open")
    producer.flush(10)
    plain = Producer({"bootstrap.servers": address})
    plain.produce("t", b"after-open")
    plain.flush(10)
    assert visible(address) == ["committed"], "read_committed stops at the open transaction"
    producer.commit_transaction(10)
    assert visible(address) == ["committed", "open", "after-open"]

    for i in range(3):
        plain.produce("src", f"in-{i}".encode())
    plain.flush(10)
    group = Consumer({"bootstrap.servers": address, "group.id": "g", "enable.auto.commit": False})
    group.subscribe(["src"])
    deadline = time.monotonic() + 20
    while not group.assignment() and time.monotonic() < deadline:
        group.poll(0.2)
    metadata = group.consumer_group_metadata()
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("src", 0, 2)], metadata, 10)
    producer.abort_transaction(10)
    assert group.committed([TopicPartition("src", 0)], 10)[0].offset < 0, "an aborted transaction commits nothing"
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("src", 0, 3)], metadata, 10)
    producer.commit_transaction(10)
    assert group.committed([TopicPartition("src", 0)], 10)[0].offset == 3
    group.close()


def test_a_killed_producers_transaction_is_aborted_by_its_successor(address: str, tmp_path: Path) -> None:
    before = visible(address)
    child = subprocess.Popen([sys.executable, "-c", DIES_IN_A_TRANSACTION, address], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "produced"
    finally:
        child.kill()
        child.wait()
    plain = Producer({"bootstrap.servers": address})
    plain.produce("t", b"after-kill")
    plain.flush(10)
    time.sleep(6)  # past the dead producer's transaction.timeout.ms: noida-db does not abort it
    assert visible(address) == before, "read_committed readers wait on the dead producer's transaction"
    successor = Producer({"bootstrap.servers": address, "transactional.id": "tx-dies"})
    successor.init_transactions(30)
    assert visible(address) == [*before, "after-kill"], "fenced: its open transaction is aborted"
