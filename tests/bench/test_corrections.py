"""`streams bench corrections`: the switch that takes corrections away, and the churn itself on Apache Kafka.

The churn run with the transport as it is must lose nothing and leave nothing stalled; that is the claim
the bench's other runs are measured against (docs/corrections.md gives the runs without each point)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from streams.bench import BenchError
from streams.bench.corrections import POINTS, UNCORRECTED_DIR, parse_points, run_churn
from tests.conftest import KAFKA_NEEDS
from tests.debian import ensure

PROBE = """
import json
from faust.transport.drivers import aiokafka as driver
from streams.agents import transport
from streams.agents.transport import SeekingConsumer as S, SeekingConsumerThread as T
print(json.dumps({
    "1": S.ack is driver.Consumer.ack,
    "2": T.seek_to_committed is driver.AIOKafkaConsumerThread.seek_to_committed,
    "4": S._new_offset is driver.Consumer._new_offset,
    "6": S._add_gap is driver.Consumer._add_gap,
    "7": S._held_before.__name__ == "nothing",
    "10": transport._rejoin_on_empty_assignment.__name__ == "nothing",
}))
"""


def released(points: str) -> dict[str, bool]:
    """Which corrections a fresh interpreter, started as the bench starts its workers, runs without."""
    env = {**os.environ, "PYTHONPATH": str(UNCORRECTED_DIR), "UNCORRECTED_POINTS": points}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_worker_runs_without_exactly_the_points_named() -> None:
    assert released("none") == dict.fromkeys(["1", "2", "4", "6", "7", "10"], False)
    assert released("1,6") == {"1": True, "2": False, "4": False, "6": True, "7": False, "10": False}
    assert set(released("all").values()) == {True}


def test_points_are_named_or_refused() -> None:
    assert parse_points("all") == frozenset(POINTS)
    assert parse_points("none") == frozenset()
    assert parse_points("4, 7") == frozenset({4, 7})
    with pytest.raises(BenchError, match="no point 8"):
        parse_points("8")  # point 8 is about CPU on noida-db; it has its own bench (idle)
    with pytest.raises(BenchError, match="not 'x'"):
        parse_points("x")


@pytest.mark.integration
def test_the_corrected_transport_loses_nothing_under_rebalance_churn_on_kafka(tmp_path: Path) -> None:
    """Replicas of the assembler and the chunker join and leave every few seconds (one leave in three a
    SIGKILL) while pages flow: every document is chunked without a restart, none is lost."""
    if missing := ensure(KAFKA_NEEDS):
        pytest.fail(f"Apache Kafka cannot run here: {missing}")
    report = run_churn(frozenset(), docs=120, broker_kind="kafka", data_dir=tmp_path, progress=lambda *_: None)
    assert (report["stalled"], report["lost"]) == (0, 0), report
