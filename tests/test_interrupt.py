"""SIGTERM to a pytest run tears its fixtures down (tests/interrupt.py), so services started in sessions of
their own stop with the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.conftest import REPO

CHILD_TEST = textwrap.dedent(
    """
    import subprocess, time
    from pathlib import Path

    import pytest

    @pytest.fixture
    def service(tmp_path_factory):
        child = subprocess.Popen(["sleep", "300"], start_new_session=True)  # as the fixtures start services
        Path(__file__).with_name("child.pid").write_text(str(child.pid))
        yield child
        child.kill()
        child.wait()

    def test_runs_until_stopped(service):
        time.sleep(120)
    """
)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is dead, only not yet reaped by its parent
        return stat.read().split(") ")[-1][0] != "Z"


def stopped_run(tmp: Path, *plugin: str) -> tuple[int, int]:
    """Start pytest on CHILD_TEST, SIGTERM it once its fixture started the child: (exit code, child pid)."""
    (tmp / "test_child.py").write_text(CHILD_TEST)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "test_child.py"],
        cwd=tmp,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pid_file = tmp / "child.pid"
    deadline = time.monotonic() + 60
    while not pid_file.exists():
        assert run.poll() is None and time.monotonic() < deadline, "the child test never started its fixture"
        time.sleep(0.1)
    run.send_signal(signal.SIGTERM)
    return run.wait(timeout=60), int(pid_file.read_text())


def test_sigterm_tears_the_fixtures_down(tmp_path: Path) -> None:
    code, child = stopped_run(tmp_path, "-p", "tests.interrupt")
    assert code == 2  # pytest's "interrupted"
    assert not alive(child)


def test_without_the_plugin_sigterm_leaves_the_service_running(tmp_path: Path) -> None:
    """The control: Python's default SIGTERM skips every teardown."""
    code, child = stopped_run(tmp_path)
    try:
        assert code == -signal.SIGTERM
        assert alive(child)
    finally:
        os.kill(child, signal.SIGKILL)


SIGINT_TEST = textwrap.dedent(
    """
    import signal, subprocess, sys, time

    def test_a_child_stops_on_sigint():
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        time.sleep(2)  # the interpreter has set its signal handlers up
        child.send_signal(signal.SIGINT)
        assert child.wait(20) != 0  # stopped by the signal, not at the end of its sleep
    """
)


def run_with_sigint_ignored(tmp: Path, *plugin: str) -> int:
    """pytest on SIGINT_TEST as a shell's background job starts it, SIGINT ignored: its exit code."""
    (tmp / "test_sigint.py").write_text(SIGINT_TEST)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "test_sigint.py"],
        cwd=tmp,
        env=env,
        capture_output=True,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    ).returncode


def test_processes_a_test_starts_stop_on_sigint_when_pytest_began_with_it_ignored(tmp_path: Path) -> None:
    assert run_with_sigint_ignored(tmp_path, "-p", "tests.interrupt") == 0
    assert run_with_sigint_ignored(tmp_path) == 1  # the control: the child ignores SIGINT and sleeps on
