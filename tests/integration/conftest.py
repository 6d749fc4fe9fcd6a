"""Integration fixtures: a real broker started by the project, noida-db or Apache Kafka (the `bus` fixture
of tests/conftest.py runs each test on both)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from streams.ops.pipeline import LocalPipeline
from streams.settings import Settings


def pipeline_settings(tmp: Path, **overrides: object) -> Settings:
    base = {
        "data_dir": tmp,
        "partitions": 2,
        "assembly_timeout_s": 4.0,
        "sweep_interval_s": 0.5,
        "max_page_bytes": 200_000,
    }
    return Settings(**{**base, **overrides})


@pytest.fixture
def run_pipeline(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Start a whole pipeline (own broker, topics, workers) and stop it after the test."""
    started: list[LocalPipeline] = []

    def start(strategies: list[str], **overrides: object) -> LocalPipeline:
        settings = pipeline_settings(tmp_path_factory.mktemp("pipeline"), **overrides)
        pipeline = LocalPipeline(settings, strategies)  # the test's broker kind (tests/conftest.py)
        started.append(pipeline.start())
        return pipeline

    yield start
    for pipeline in started:
        pipeline.stop()


#: What the test process sets for its own services, which a user's terminal does not have.
TEST_ONLY = ("STREAMS_BROKER", "STREAMS_STRATEGIES", "STREAMS_DEPLOYMENT")


def user_env(data_dir: Path, **env: str) -> dict[str, str]:
    """A user's terminal beside a `streams up` in `data_dir`: this environment less `TEST_ONLY`, plus `env`."""
    return {**{k: v for k, v in os.environ.items() if k not in TEST_ONLY}, "STREAMS_DATA_DIR": str(data_dir), **env}


def up_settings(data_dir: Path) -> Settings:
    """The settings a `streams up` in `data_dir` wrote to its up.json (broker, deployment, stores), as every
    command run beside it reads them."""
    import json

    saved = json.loads((data_dir / "up.json").read_text())
    return Settings(**saved["settings"], data_dir=data_dir, strategies=saved["strategies"])


def audited(settings: Settings, stores: tuple[str, ...] = ("mongo", "vectors"), timeout: float = 240):
    """The audit of every strategy of `settings`, run in this process (no interpreter start per look) until
    it finds document versions and no gap, or at the timeout: the last report either way."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        report = audit_once(settings, list(settings.strategies), stores)
        if (report.versions and not report.gaps) or time.monotonic() > deadline:
            return report
        time.sleep(1)


def audit_once(settings: Settings, strategies: list[str], stores: tuple[str, ...] = ("mongo", "vectors")):
    """What `streams audit -s ...` reports, from this process: the stores opened for it and closed again."""
    from streams.ops.audit import audit, audit_stores

    opened = audit_stores(settings, list(stores))
    try:
        return audit(settings, strategies, opened)[0]
    finally:
        for store in opened:
            store.close()


def start_up(data_dir: Path, *args: str, stderr: int = subprocess.DEVNULL, **env: str) -> subprocess.Popen:
    """`streams up --json ARGS` as a user runs it in a terminal of its own (its own data directory and
    process group, no STREAMS_BROKER or deployment of the test's; `env` adds the user's): read its first
    line, then stop it with SIGINT."""
    return subprocess.Popen(
        [sys.executable, "-m", "streams", "up", "--json", *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=user_env(data_dir, **env),
        start_new_session=True,
    )


def until(condition, what=lambda: "", timeout: float = 180) -> None:
    """Poll `condition` every half second; at the timeout fail, saying `what()` (where things stood)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out: {what()}")


@contextmanager
def sinks_running(settings: Settings, embedder) -> Iterator[tuple]:
    """Both sinks of `settings` in this process, each on its own thread, so a test can read their stores and
    counters: (MongoSink, VectorSink), stopped on the way out."""
    import threading

    from streams.sinks.factory import vector_sink
    from streams.sinks.mongo import MongoSink
    from streams.sinks.runner import SinkRunner

    mongo, vectors = MongoSink.of(settings), vector_sink(settings, embedder)
    mongo.ensure_indexes()
    stop = threading.Event()
    threads = [
        threading.Thread(target=SinkRunner(settings, sink).run, args=(stop,), daemon=True) for sink in (mongo, vectors)
    ]
    for thread in threads:
        thread.start()
    try:
        yield mongo, vectors
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
