"""A pytest plugin: SIGTERM ends the run as Ctrl-C does, so fixtures still tear down; and SIGINT, when the
run began with it ignored (a shell's background job), is handled again, so the processes tests start stop on it.

Python's default SIGTERM kills the interpreter at once, without finalizers. The integration fixtures
start services in sessions of their own (`streams up`, brokers, stores), which a signal to pytest's
process group does not reach; a run stopped by SIGTERM (a CI timeout, `kill`) left them running, and
`streams up` kept restarting what was killed by PID. As KeyboardInterrupt, pytest stops the test that
runs and tears down every fixture set up so far.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

import pytest


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is not threading.main_thread():  # signals are set on the main thread only
        return
    signal.signal(signal.SIGTERM, _interrupt)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # A shell starts a background job (`.ci/run &`) with SIGINT ignored, and an ignored signal stays ignored
        # across exec: every process a test started then ignored the SIGINT that stops it as Ctrl-C would
        # (`streams lag --watch` ran on until the test timed out). A handled signal resets to the default on exec.
        signal.signal(signal.SIGINT, signal.default_int_handler)
