"""`streams bench idle`: what `streams up` costs while nothing arrives, CPU per process over a window.

A service that spins while idle costs a core per replica in production and slows everything beside it on
a small machine; this is the check that it does not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from streams.runtime.procs import group_cpu_s, process_cpu_s
from streams.settings import UP_FILE


def sample(processes: dict[str, int], window: float, own: dict[str, int] | None = None) -> dict[str, float]:
    """CPU % of one core per role over `window` seconds (process groups; `own` are single processes)."""
    own = own or {}

    def read() -> dict[str, float]:
        return {**{r: group_cpu_s(p) for r, p in processes.items()}, **{r: process_cpu_s(p) for r, p in own.items()}}

    before, started = read(), time.monotonic()
    time.sleep(window)
    after, elapsed = read(), time.monotonic() - started
    return {role: round(100 * (after[role] - before[role]) / elapsed, 2) for role in before}


#: Services `streams up` starts but does not write: their cost is reported on their own lines.
SERVICES = ("broker", "document-store")


def run_idle_bench_on(
    brokers: list[str],
    strategies: list[str] | None,
    window: float,
    warmup: float,
    progress: Callable[[str, int, int], None],
) -> dict:
    """The idle bench on each broker in one run (noida-db first, the baseline)."""
    reports = {kind: run_idle_bench(strategies, window, warmup, progress, kind) for kind in brokers}
    if len(reports) == 1:
        return next(iter(reports.values()))
    base, kafka = reports["noida"], reports["kafka"]
    return {
        "brokers": reports,
        "ratios": {
            "kafka_vs_noida_ours": round(kafka["ours_percent"] / max(base["ours_percent"], 0.01), 2),
            "kafka_broker_vs_noida_broker": round(
                kafka["cpu_percent"].get("broker", 0) / max(base["cpu_percent"].get("broker", 0), 0.01), 2
            ),
        },
    }


def run_idle_bench(
    strategies: list[str] | None,
    window: float,
    warmup: float,
    progress: Callable[[str, int, int], None],
    broker_kind: str = "noida",
) -> dict:
    """Start `streams up` as a user would, let it settle, then sample every process it started."""
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        data_dir = Path(tmp)
        env = {**os.environ, "STREAMS_DATA_DIR": str(data_dir), "STREAMS_BROKER_KIND": broker_kind}
        args = [sys.executable, "-m", "streams", "up", *[a for s in strategies or [] for a in ("-s", s)]]
        up = subprocess.Popen(
            args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            up_file = data_dir / UP_FILE
            deadline = time.monotonic() + 300
            while not up_file.exists():
                if up.poll() is not None:
                    raise RuntimeError(f"streams up exited with code {up.returncode} before it was up")
                if time.monotonic() > deadline:
                    raise RuntimeError("streams up did not come up within 300 s")
                time.sleep(0.2)
            processes = json.loads(up_file.read_text())["processes"]
            steps = int(warmup)
            for second in range(steps):  # model loading and group joins are start-up, not idle
                progress(f"settling on {broker_kind}", second, steps)
                time.sleep(1)
            progress(f"sampling {window:.0f} s on {broker_kind}", 0, 1)
            cpu = sample(processes, window, own={"up": up.pid})
            progress("done", 1, 1)
        finally:
            os.killpg(up.pid, signal.SIGTERM)
            try:
                up.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
                up.wait()
    ours = {role: percent for role, percent in cpu.items() if role not in SERVICES}
    return {
        "broker_kind": broker_kind,
        "window_s": window,
        "warmup_s": warmup,
        "cpu_percent": cpu,
        "total_percent": round(sum(cpu.values()), 2),
        "ours_percent": round(sum(ours.values()), 2),
        "max_percent": max(ours.values()),
        # the workers, sinks, supervisor and console: what this project writes
        "targets": {"ours_under_3": sum(ours.values()) < 3.0, "each_under_1": max(ours.values()) < 1.0},
    }
