"""Child processes the project starts itself (a broker, a document store, a JVM), each on a free
loopback port with its own data directory, stopped by its PID: the part every service shares."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path

from streams.runtime.procs import group_alive


class ServiceError(RuntimeError):
    pass


#: Linux's default ephemeral range, for a system that does not say its own.
EPHEMERAL_DEFAULT = (32768, 60999)
#: Ports free_port picks from when the ephemeral range leaves room below it.
SERVICE_PORTS_FROM = 10000
_handed_out: set[int] = set()


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for the source ports of outgoing connections (and for `bind(0)`)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return EPHEMERAL_DEFAULT


def _bindable(port: int) -> bool:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A loopback port nothing listens on, outside the kernel's ephemeral range.

    A port from that range (what `bind(0)` gives) can also become the source port of an outgoing
    connection: a client that keeps dialling a server still starting (a readiness probe, a producer's
    bootstrap) is now and then given the very port it dials, connects to itself, and holds the port, so
    the server then fails to bind it ("Address already in use"; seen with Kafka on 2026-11-27). A port
    below the range is never handed out that way. Within one process a port is handed out once."""
    low, high = ephemeral_range()
    if low - SERVICE_PORTS_FROM >= 1000:
        pool = range(SERVICE_PORTS_FROM, low)
    elif 65535 - high >= 1000:
        pool = range(high + 1, 65536)
    else:
        pool = range(0)
    chooser = random.SystemRandom()
    for _ in range(200 if pool else 0):
        port = chooser.choice(pool)
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:  # no room outside the range
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float, proc: subprocess.Popen | None = None, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-400:] if log and log.exists() else ""
            raise ServiceError(f"service exited with code {proc.returncode}: {tail.strip()}")
        with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
            sock.settimeout(0.5)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise ServiceError(f"nothing listened on port {port} within {timeout:.0f}s")


def _signal_group(pgid: int, signum: int) -> None:
    with suppress(ProcessLookupError):  # the whole group is gone already
        os.killpg(pgid, signum)


def installed_binary(name: str) -> str:
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if not found:
        raise ServiceError(f"{name} is not installed (pip install -e '.[all]')")
    return found


@dataclass
class EmbeddedProcess:
    """A child process we started, stopped by its PID (its own process group)."""

    name: str
    args: list[str]
    port: int
    data_dir: Path
    proc: subprocess.Popen | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.data_dir / f"{self.name}.log"

    def start(self, timeout: float = 60.0) -> EmbeddedProcess:
        self.launch()
        return self.ready(timeout)

    def launch(self) -> None:
        """Start the process without waiting for it: `ready` waits (so two services can start at once)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )

    def ready(self, timeout: float = 60.0) -> EmbeddedProcess:
        wait_for_port(self.port, timeout, self.proc, self.log_path)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group and wait until every process in it is gone.

        The launchers (`noida-db`, `secantusd-py`) are Python wrappers that exit at once on SIGTERM while
        the server they started is still saving its data; returning then lets a restart on the same
        port and data directory race the old server ("already running", or clients reaching the old one).
        """
        if self.proc is None:
            return
        if self.proc.poll() is None or group_alive(self.proc.pid):
            _signal_group(self.proc.pid, signal.SIGTERM)
        if not self._wait_group(timeout):
            _signal_group(self.proc.pid, signal.SIGKILL)
            self._wait_group(timeout)

    def alive(self) -> bool:
        return self.proc is not None and (self.proc.poll() is None or group_alive(self.proc.pid))

    def kill(self) -> None:
        if self.proc is not None and (self.proc.poll() is None or group_alive(self.proc.pid)):
            _signal_group(self.proc.pid, signal.SIGKILL)
            self._wait_group(10.0)

    def _wait_group(self, timeout: float) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        while group_alive(self.proc.pid):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> EmbeddedProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["EmbeddedProcess", "ServiceError", "free_port", "wait_for_port"]
