"""The group janitor stands in for the session timeout noida-db lacks: a consumer killed with SIGKILL is
expired, and its successor gets the partitions instead of waiting for a rebalance that never completes."""

from __future__ import annotations

import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from streams.ops.embedded import broker
from streams.runtime.clients import CLIENT_ID_PATTERN, client_id
from streams.runtime.procs import process_alive

PROBE = """
import sys
from confluent_kafka import Consumer
from streams.runtime.clients import client_id
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "probe", "client.id": client_id("probe"),
              "session.timeout.ms": 6000})
c.subscribe(["t"], on_assign=lambda consumer, parts: print("assigned", len(parts), flush=True))
while True:
    c.poll(0.2)
"""


def test_client_id_names_role_process_and_host() -> None:
    match = CLIENT_ID_PATTERN.match(client_id("chunker:window", pid=4242))
    assert match and match["role"] == "chunker-window" and match["pid"] == "4242"


def test_process_alive_treats_an_unreaped_child_as_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and process_alive(child.pid):
        time.sleep(0.05)
    assert not process_alive(child.pid)  # a zombie until wait() below
    child.wait()
    assert process_alive(child.pid) is False


def _assigned(proc: subprocess.Popen, timeout: float) -> int | None:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return int(proc.stdout.readline().split()[1]) if ready else None


@pytest.mark.integration
@pytest.mark.embedded_only
@pytest.mark.own_services  # the janitor under test is its broker's own
def test_janitor_expires_a_killed_member_so_its_successor_is_assigned(tmp_path: Path) -> None:
    service = broker(tmp_path).start()
    procs: list[subprocess.Popen] = []
    try:
        admin = AdminClient({"bootstrap.servers": service.address})
        admin.create_topics([NewTopic("t", 2, 1)])["t"].result()

        def start() -> subprocess.Popen:
            procs.append(subprocess.Popen([sys.executable, "-c", PROBE, service.address], stdout=subprocess.PIPE))
            return procs[-1]

        first = start()
        assert _assigned(first, 60) == 2
        first.kill()
        first.wait()
        second = start()
        assert _assigned(second, 60) == 2
        assert service.janitor is not None
        assert [m.client_id for m in service.janitor.expired] == [client_id("probe", pid=first.pid)]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        service.stop()


@pytest.mark.integration
@pytest.mark.embedded_only
@pytest.mark.own_services  # the janitor under test is its broker's own
def test_the_janitor_records_an_expiry_before_the_broker_can_act_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cause of the flaky test above: the janitor appended to `expired` after its LeaveGroup had been
    answered and its client closed, so a successor assigned meanwhile could be seen with no expiry
    recorded. The record must exist when the LeaveGroup leaves the process."""
    from aiokafka.client import AIOKafkaClient

    from streams.ops import groups

    service = broker(tmp_path).start()
    assert service.janitor is not None
    service.janitor.stop()  # this test drives the expiry itself
    proc = subprocess.Popen([sys.executable, "-c", PROBE, service.address], stdout=subprocess.PIPE)
    try:
        admin = AdminClient({"bootstrap.servers": service.address})
        admin.create_topics([NewTopic("t", 2, 1)])["t"].result()
        assert _assigned(proc, 60) == 2
        proc.kill()
        proc.wait()
        recorded: list[groups.DeadMember] = []
        seen_at_send: list[list[str]] = []
        send = AIOKafkaClient.send

        async def watching_send(self, node_id, request, *args, **kwargs):  # type: ignore[no-untyped-def]
            if type(request).__name__.startswith("LeaveGroupRequest"):
                seen_at_send.append([m.client_id for m in recorded])
            return await send(self, node_id, request, *args, **kwargs)

        monkeypatch.setattr(AIOKafkaClient, "send", watching_send)
        expired = groups.expire_dead_members(service.address, on_leaving=recorded.append)
        assert [m.client_id for m in expired] == [client_id("probe", pid=proc.pid)]
        assert seen_at_send == [[client_id("probe", pid=proc.pid)]]
    finally:
        proc.kill()
        proc.wait()
        service.stop()


@pytest.mark.integration
@pytest.mark.embedded_only
@pytest.mark.own_services  # the janitor under test is its broker's own
def test_the_janitor_keeps_one_admin_client_across_rounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new librdkafka admin client every round (threads, connection, metadata) was most of an idle
    `streams up`'s CPU; it was made anew each time because an idle client is falsy (`admin or ...`)."""
    from streams.ops import groups

    service = broker(tmp_path).start()
    assert service.janitor is not None
    service.janitor.stop()  # only the janitor under test makes clients from here on
    made: list[object] = []
    rounds: list[int] = []
    make, expire = groups._admin, groups.expire_dead_members
    monkeypatch.setattr(groups, "_admin", lambda bootstrap: made.append(make(bootstrap)) or made[-1])
    monkeypatch.setattr(groups, "expire_dead_members", lambda *a, **kw: rounds.append(1) or expire(*a, **kw))
    janitor = groups.GroupJanitor(service.address, interval=0.2).start()
    try:
        deadline = time.monotonic() + 30
        while len(rounds) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        janitor.stop()
        service.stop()
    assert len(rounds) >= 5
    assert len(made) == 1
