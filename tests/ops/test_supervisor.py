"""The supervisor of `streams up` on a role that crashes at every start, with no broker needed: what each
restart line says (the role, how it ended, the last lines of its log, the restart count and the wait), how
the wait grows and where it stops, and that the crash loop ends with the role stopped as failed. The wait
is scaled down here (a real loop takes 0.5 s, then 1, 2 and 4 s; tests/reliability/test_supervision.py runs
one at full scale); the processes, their logs and the supervisor are the real ones."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from streams.ops import pipeline as harness
from streams.ops.pipeline import LocalPipeline
from streams.runtime import metrics
from tests.integration.conftest import pipeline_settings

REPO = Path(__file__).resolve().parents[2]
#: A role the worker command refuses with exit code 1 (not 78, which is a bad setting: never restarted).
CRASHING = "no-such-role"
LOG_LINE = "error: unknown role 'no-such-role'"


def supervise_until_failed(pipeline: LocalPipeline, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not pipeline.failed():
        assert time.monotonic() < deadline, pipeline.health
        pipeline.check_workers()
        time.sleep(0.02)


def test_each_restart_line_names_the_exit_and_the_log_tail_and_the_wait_doubles_to_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness, "RESTART_MIN_S", 0.1)
    monkeypatch.setattr(harness, "RESTART_MAX_S", 0.2)
    monkeypatch.setattr(harness, "CRASH_LOOP", (5, 60.0))
    events: list[str] = []
    before = metrics.ROLE_RESTARTS.labels(CRASHING)._value.get()
    pipeline = LocalPipeline(pipeline_settings(tmp_path), [], own_broker=False, supervise=True, on_event=events.append)
    try:
        pipeline.start_worker(CRASHING)
        supervise_until_failed(pipeline)
    finally:
        pipeline.stop()

    restarts = [line for line in events if "; restart " in line]
    assert len(restarts) == 4, events
    for number, line in enumerate(restarts, start=1):
        # role, how it ended, the last lines of its log, the count and the wait, on one line
        assert line.startswith(f"{CRASHING} exited (exit code 1: ") and LOG_LINE in line, line
        assert f"; restart {number} in " in line and "\n" not in line, line
    waits = [float(re.search(r" in ([\d.]+)s$", line)[1]) for line in restarts]
    assert waits == [0.1, 0.2, 0.2, 0.2]  # doubling, then held at the cap
    [failed] = pipeline.failed()
    assert failed.role == CRASHING and failed.restarts == 4 and LOG_LINE in failed.last_exit
    assert events[-1].startswith(f"{CRASHING} failed (5 crashes), not restarted; last exit exit code 1: ")
    assert metrics.ROLE_RESTARTS.labels(CRASHING)._value.get() - before == 4


def test_the_documented_back_off_is_the_supervisors() -> None:
    """docs/operations.md states the first wait, the cap and the crash-loop rule; they are the code's."""
    text = " ".join((REPO / "docs" / "operations.md").read_text(encoding="utf-8").split())
    found = re.search(r"restarted after ([\d.]+) s, .*? up to (\d+) s", text)
    assert found, "docs/operations.md no longer states the back-off"
    assert (float(found[1]), float(found[2])) == (harness.RESTART_MIN_S, harness.RESTART_MAX_S)
    loop = re.search(r"crashes (\d+) times within (\d+) s", text)
    assert loop and (int(loop[1]), float(loop[2])) == harness.CRASH_LOOP
