"""The stall clock: records waiting on partitions the process owns, nothing committed on them and a core left
idle, for the whole timeout, is a stall; anything else (progress, a busy core, an absent broker, nothing
waiting, partitions someone else owns) starts the clock again or never starts it."""

from __future__ import annotations

import threading

from streams.runtime.lag import PartitionLag
from streams.runtime.watchdog import Sample, StallClock, Watchdog

TOPIC = "chunks.created"


def rows(*committed_end: tuple[int, int]) -> dict[tuple[str, int], PartitionLag]:
    return {
        (TOPIC, p): PartitionLag("g", TOPIC, p, committed, end, max(0, end - committed))
        for p, (committed, end) in enumerate(committed_end)
    }


def sample(at: float, cpu: float, lag: dict | None, owned: frozenset = frozenset()) -> Sample:
    return Sample(at, cpu, lag, owned)


def test_records_waiting_with_nothing_committed_and_an_idle_core_is_a_stall_once_the_timeout_has_passed() -> None:
    clock = StallClock(timeout_s=60)
    assert clock.observe(sample(0, 1.0, rows((10, 25), (5, 5)))) is None
    assert clock.observe(sample(59, 2.0, rows((10, 30), (5, 5)))) is None  # more arrived: still waiting
    reason = clock.observe(sample(61, 2.5, rows((10, 31), (5, 5))))
    assert reason is not None
    assert reason.startswith("stalled: 21 records waiting on chunks.created[0], nothing committed for 61 s")
    assert "1.5 CPU seconds" in reason and "STREAMS_STALL_TIMEOUT_S" in reason


def test_a_commit_starts_the_clock_again() -> None:
    clock = StallClock(timeout_s=60)
    clock.observe(sample(0, 0.0, rows((10, 25))))
    assert clock.observe(sample(50, 0.1, rows((11, 25)))) is None  # one record committed: progress
    assert clock.observe(sample(100, 0.2, rows((11, 25)))) is None  # 50 s still since then
    assert clock.observe(sample(111, 0.3, rows((11, 25)))) is not None


def test_a_busy_core_is_work_not_a_stall() -> None:
    """A long document being chunked or embedded commits nothing for minutes, on a core it keeps busy."""
    clock = StallClock(timeout_s=60)
    clock.observe(sample(0, 0.0, rows((10, 25))))
    assert clock.observe(sample(120, 100.0, rows((10, 25)))) is None
    assert clock.observe(sample(120, 29.0, rows((10, 25)))) is not None  # under a quarter of the 120 s


def test_a_broker_that_does_not_answer_is_not_the_process_s_stall() -> None:
    clock = StallClock(timeout_s=60)
    clock.observe(sample(0, 0.0, rows((10, 25))))
    assert clock.observe(sample(200, 0.0, None)) is None
    assert clock.observe(sample(230, 0.0, rows((10, 25)))) is None  # the clock starts again when it answers
    assert clock.observe(sample(291, 0.0, rows((10, 25)))) is not None


def test_nothing_waiting_is_idle_not_stalled() -> None:
    clock = StallClock(timeout_s=60)
    clock.observe(sample(0, 0.0, rows((25, 25))))
    assert clock.observe(sample(1000, 0.0, rows((25, 25)))) is None


def test_only_the_partitions_a_process_owns_count_unless_it_owns_none() -> None:
    """Another replica's stuck partition is that replica's to report; a member left without partitions (a
    rebalance that never ended) answers for every waiting partition of its group."""
    mine = frozenset({(TOPIC, 1)})
    clock = StallClock(timeout_s=60)
    clock.observe(sample(0, 0.0, rows((10, 25), (5, 5)), mine))
    assert clock.observe(sample(100, 0.0, rows((10, 25), (5, 5)), mine)) is None
    orphan = StallClock(timeout_s=60)
    orphan.observe(sample(0, 0.0, rows((10, 25), (5, 5))))
    assert orphan.observe(sample(100, 0.0, rows((10, 25), (5, 5)))) is not None


def test_the_thread_waits_for_the_process_to_join_then_reports_the_stall_once() -> None:
    """Joining a group and recovering tables is not a stall: nothing is sampled before `ready()`."""
    ready = threading.Event()
    stalls: list[str] = []
    reported = threading.Event()
    asked: list[int] = []

    def lag() -> list[PartitionLag]:
        asked.append(1)
        return list(rows((10, 25)).values())

    def on_stall(reason: str) -> None:
        stalls.append(reason)
        reported.set()

    dog = Watchdog("sink:mongo", 0.3, lag, frozenset, ready.is_set, interval_s=0.05, on_stall=on_stall).start()
    try:
        assert not reported.wait(0.5) and not asked
        ready.set()
        assert reported.wait(5)
        assert len(stalls) == 1 and stalls[0].startswith("stalled: 15 records waiting on chunks.created[0]")
    finally:
        dog.stop()
