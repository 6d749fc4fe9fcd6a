"""A worker or sink that stops making progress with records waiting exits, so that its supervisor starts it again.

A process that died is restarted by whatever runs it (`streams up`, Compose's restart policy, a Kubernetes
Deployment); one that is alive but stuck (a consumer that never rejoined its group after the broker came back,
a write waiting on a frozen store) holds its partitions for ever, and nothing in its health says so. Here a
thread in each process asks the broker, now and then, for its group's committed offsets and end offsets. The
process is stalled when, for `stall_timeout_s`:

- records wait on partitions it owns (or on any of its group's, while it owns none: a rebalance that never
  ended leaves a member without partitions),
- its group committed nothing on them, and
- it used less than a quarter of a core: a long document being chunked or embedded keeps a core busy, a
  stuck process does not.

A broker that does not answer is no stall of the process's own: the clock starts again once it answers. The
stalled process writes one line saying so and exits with `EX_STALLED`; what it had not committed is read again
by the next one (at least once; under exactly-once its open transaction is aborted).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from streams.runtime.lag import PartitionLag, group_lag, known_groups
from streams.settings import Settings

log = logging.getLogger("streams.watchdog")

EX_STALLED = 75  # sysexits.h EX_TEMPFAIL: try again, which is what a supervisor does with an exit
BUSY_SHARE = 0.25  # CPU seconds per second above which a process is working, not stuck

Partition = tuple[str, int]


@dataclass(frozen=True)
class Sample:
    """One look at the group: committed and end offsets by partition (None when the broker did not answer),
    the partitions this process owns, and its CPU seconds so far."""

    at: float
    cpu: float
    lag: Mapping[Partition, PartitionLag] | None
    owned: frozenset[Partition] = frozenset()


@dataclass
class StallClock:
    """Whether a process is stalled, from successive samples (pure: the thread below feeds it)."""

    timeout_s: float
    busy_share: float = BUSY_SHARE
    first: Sample | None = field(default=None, init=False)  # the sample the current still spell began at

    def observe(self, sample: Sample) -> str | None:
        """None, or why the process is stalled, in one line."""
        if sample.lag is None:
            self.first = None  # the broker is away: nobody could have made progress
            return None
        waiting = _waiting(sample)
        if not waiting:
            self.first = None
            return None
        first = self.first
        if first is None or first.lag is None or _committed(first, waiting) != _committed(sample, waiting):
            self.first = sample
            return None
        still = sample.at - first.at
        cpu = sample.cpu - first.cpu
        if still < self.timeout_s or cpu >= self.busy_share * still:
            return None
        records = sum(sample.lag[p].lag for p in waiting)
        where = ", ".join(f"{topic}[{partition}]" for topic, partition in sorted(waiting))
        return (
            f"stalled: {records} records waiting on {where}, nothing committed for {still:.0f} s and "
            f"{cpu:.1f} CPU seconds used; exiting so that the supervisor starts it again (STREAMS_STALL_TIMEOUT_S)"
        )


def _waiting(sample: Sample) -> set[Partition]:
    assert sample.lag is not None
    lagging = {p for p, row in sample.lag.items() if row.lag > 0}
    return lagging & sample.owned if sample.owned else lagging


def _committed(sample: Sample, partitions: set[Partition]) -> dict[Partition, int]:
    assert sample.lag is not None
    return {p: sample.lag[p].committed for p in partitions if p in sample.lag}


class Watchdog:
    """The thread: samples the group every `interval_s` once the process `ready()`, and on a stall calls
    `on_stall(reason)` (by default: write the line, exit with EX_STALLED)."""

    def __init__(
        self,
        role: str,
        timeout_s: float,
        lag: Callable[[], list[PartitionLag]],
        owned: Callable[[], frozenset[Partition]],
        ready: Callable[[], bool],
        interval_s: float | None = None,
        on_stall: Callable[[str], None] | None = None,
    ) -> None:
        self.role = role
        self.clock = StallClock(timeout_s)
        self.lag = lag
        self.owned = owned
        self.ready = ready
        # Five looks a timeout, at most one a minute: each is a few ms of CPU (4.6 on Kafka), a cost idle too.
        self.interval_s = interval_s or min(60.0, max(0.5, timeout_s / 5))
        self.on_stall = on_stall or self._exit
        self.stopped = threading.Event()

    def start(self) -> Watchdog:
        threading.Thread(target=self._run, daemon=True, name="watchdog").start()
        return self

    def stop(self) -> None:
        self.stopped.set()

    def sample(self) -> Sample:
        try:
            rows: dict[Partition, PartitionLag] | None = {(r.topic, r.partition): r for r in self.lag()}
        except Exception:  # the broker is away or busy: not this process's stall
            rows = None
        return Sample(time.monotonic(), time.process_time(), rows, frozenset(self.owned()))

    def _run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            if not self.ready():
                continue  # joining its group and recovering its tables is not a stall
            reason = self.clock.observe(self.sample())
            if reason is not None:
                self.on_stall(reason)
                return

    def _exit(self, reason: str) -> None:
        print(f"{self.role}: {reason}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(EX_STALLED)  # a stuck event loop or consumer would never finish a graceful stop


def watch_process(
    settings: Settings,
    role: str,
    group: str,
    ready: Callable[[], bool],
    owned: Callable[[], frozenset[Partition]],
) -> Watchdog | None:
    """A worker's or sink's health, both reading its group's lag: /metrics, /healthz and /readyz when
    STREAMS_METRICS_PORT is set, and the watchdog unless STREAMS_STALL_TIMEOUT_S is 0 (returned, or None)."""
    from streams.runtime.metrics import serve

    topics = known_groups(settings).get(group, [])

    def lag() -> list[PartitionLag]:
        return group_lag(settings, group, topics, timeout=5)

    if settings.metrics_port:
        serve(settings.metrics_port, ready=ready, lag=lag)
    if settings.stall_timeout_s <= 0:
        return None
    return Watchdog(role, settings.stall_timeout_s, lag, owned, ready).start()
