"""Integration fixtures: a real Kafka-protocol broker started by the project (noida-db), or Apache Kafka
through testcontainers when a Docker engine is available and STREAMS_TEST_DOCKER=1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.ops.pipeline import LocalPipeline
from streams.settings import Settings


def docker_available() -> bool:
    if os.environ.get("STREAMS_TEST_DOCKER") != "1":
        return False
    try:
        import docker

        docker.from_env().ping()
        return True
    except Exception:
        return False


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
        if docker_available():  # pragma: no cover - no Docker engine on the development machine
            from testcontainers.kafka import KafkaContainer

            container = KafkaContainer().with_kraft().start()
            settings = settings.model_copy(update={"broker": container.get_bootstrap_server()})
            pipeline = LocalPipeline(settings, strategies, own_broker=False)
            pipeline.container = container  # type: ignore[attr-defined]
        else:
            pipeline = LocalPipeline(settings, strategies)
        started.append(pipeline.start())
        return pipeline

    yield start
    for pipeline in started:
        pipeline.stop()
        container = getattr(pipeline, "container", None)
        if container is not None:  # pragma: no cover
            container.stop()
