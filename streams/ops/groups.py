"""Consumer-group session expiry for the embedded broker.

A Kafka broker removes a group member whose heartbeats stop for `session.timeout.ms`, so a worker killed
with SIGKILL loses its partitions to the survivors. noida-db 0.2.3 never expires a session: the group waits
for the dead member's JoinGroup or SyncGroup forever and every live member sits without partitions (seen as
COMPLETING_REBALANCING with a dead leader). The process that owns the embedded broker stands in for the
session timeout: every worker names itself `streams.<role>.p<pid>.<host>` as client id
(`streams.runtime.clients.client_id`), and the janitor sends LeaveGroup for members whose process on this
host is gone. Production brokers never need it.

The same missing timeout strands a live process's old membership: a consumer told its generation is stale
(a replica joined, or the broker restarted and forgot the group) rejoins under a new member id, and the
group then waits for the old id's JoinGroup forever (PREPARING_REBALANCING, the process listed twice).
While a group rebalances, the janitor also expires every membership of a process but its newest.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streams.runtime.clients import CLIENT_ID_PATTERN, KAFKA_LOG, host_name
from streams.runtime.procs import process_alive

log = logging.getLogger("streams.groups")


@dataclass(frozen=True)
class DeadMember:
    group: str
    member_id: str
    client_id: str


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "logger": KAFKA_LOG})


def dead_members(bootstrap: str, timeout: float = 10.0, admin: Any = None) -> list[DeadMember]:
    """Members of every group whose client id names a process on this host that no longer runs, and,
    in a group that is rebalancing, older memberships of a live process that has rejoined under a new id.
    `admin`: a client to reuse (the janitor's), else one made for this call."""
    from confluent_kafka import ConsumerGroupState

    if admin is None:  # not `or`: a librdkafka client is falsy while nothing is queued in it
        admin = _admin(bootstrap)
    groups = [g.group_id for g in admin.list_consumer_groups(request_timeout=timeout).result().valid]
    if not groups:
        return []
    host, found = host_name(), []
    for group, future in admin.describe_consumer_groups(groups, request_timeout=timeout).items():
        try:
            description = future.result()
        except Exception:  # a group that vanished meanwhile has no members to expire
            continue
        live: dict[str, list[str]] = {}
        for member in description.members:
            match = CLIENT_ID_PATTERN.match(member.client_id or "")
            if not match or match["host"] != host:
                continue
            if process_alive(int(match["pid"])):
                live.setdefault(member.client_id, []).append(member.member_id)
            else:
                found.append(DeadMember(group, member.member_id, member.client_id))
        if description.state != ConsumerGroupState.STABLE:
            found.extend(superseded(group, live))
    return found


def superseded(group: str, memberships: dict[str, list[str]]) -> list[DeadMember]:
    """All but the newest member id of each process (client id) listed more than once in a group.

    A consumer holds one membership per group; noida-db's member ids are `<client id>-<time-ordered id>`,
    so the greatest is the current one. Were it ever the wrong one, the live consumer would only be told
    its id is unknown and rejoin.
    """
    return [
        DeadMember(group, member_id, client)
        for client, member_ids in memberships.items()
        if len(member_ids) > 1
        for member_id in sorted(member_ids)[:-1]
    ]


async def _leave(
    bootstrap: str, members: list[DeadMember], on_leaving: Callable[[DeadMember], None] | None = None
) -> None:
    from aiokafka import AIOKafkaClient
    from aiokafka.protocol.group import LeaveGroupRequest

    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        for member in members:
            coordinator = await client.coordinator_lookup(0, member.group)
            if on_leaving:
                on_leaving(member)
            await client.send(coordinator, LeaveGroupRequest(member.group, member.member_id))
    finally:
        await client.close()


def expire_dead_members(
    bootstrap: str, on_leaving: Callable[[DeadMember], None] | None = None, admin: Any = None
) -> list[DeadMember]:
    """Send LeaveGroup on behalf of every dead member; returns who was expired.

    `on_leaving` runs before each LeaveGroup is sent. Whoever records expiries must do it there: once the
    broker has the LeaveGroup, a successor can be assigned and observed before this function returns (the
    client's close alone takes milliseconds), so a record made afterwards can be seen missing.
    """
    members = dead_members(bootstrap, admin=admin)
    if members:
        asyncio.run(_leave(bootstrap, members, on_leaving))
        for member in members:
            log.info("expired dead member %s of group %s", member.client_id, member.group)
    return members


class GroupJanitor:
    """Runs `expire_dead_members` every `interval` seconds beside the embedded broker."""

    def __init__(self, bootstrap: str, interval: float = 2.0) -> None:
        self.bootstrap, self.interval = bootstrap, interval
        self.expired: list[DeadMember] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="group-janitor", daemon=True)

    def start(self) -> GroupJanitor:
        self._thread.start()
        return self

    def _run(self) -> None:
        # One admin client for every round: a new one each round (threads, connection, metadata) was most
        # of an idle `streams up`'s own CPU and a share of the broker's (docs/benchmarks.md, Idle).
        admin = None
        while not self._stop.wait(self.interval):
            try:
                if admin is None:
                    admin = _admin(self.bootstrap)
                expire_dead_members(self.bootstrap, on_leaving=self.expired.append, admin=admin)
            except Exception as exc:  # the broker may be restarting: a fresh client next round
                admin = None
                log.debug("group janitor: %s", exc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
