"""Real images through testcontainers when a Docker engine is present (opt in with STREAMS_TEST_DOCKER=1).

The integration tests start their services through `streams.ops.embedded.broker` and `document_store`
(directly or through `LocalPipeline`). With Docker available, the root conftest swaps those factories for
these: Apache Kafka in KRaft mode and MongoDB, one container per service the test asks for, behind the
same small interface (`start`, `stop`, `address`, context manager). Tests of noida-db behaviour (the group
janitor, a broker restart on the same port) are marked `embedded_only` and keep the embedded services.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

KAFKA_IMAGE = os.environ.get("STREAMS_TEST_KAFKA_IMAGE", "confluentinc/cp-kafka:7.6.0")
MONGO_IMAGE = os.environ.get("STREAMS_TEST_MONGO_IMAGE", "mongo:7")


def docker_available() -> bool:
    if os.environ.get("STREAMS_TEST_DOCKER") != "1":
        return False
    try:
        import docker

        docker.from_env().ping()
        return True
    except Exception:
        return False


class ContainerService:  # pragma: no cover - no Docker engine on the development machine
    """A testcontainers container with the interface of `streams.ops.embedded.EmbeddedProcess`."""

    janitor = None  # a real broker expires dead group members itself

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.container: Any = None

    def start(self, timeout: float = 120.0) -> ContainerService:
        if self.kind == "kafka":
            from testcontainers.kafka import KafkaContainer

            self.container = KafkaContainer(KAFKA_IMAGE).with_kraft().start()
        else:
            from testcontainers.core.container import DockerContainer
            from testcontainers.core.waiting_utils import wait_for_logs

            # no root user: the tests connect as the embedded store allows, without credentials
            self.container = DockerContainer(MONGO_IMAGE).with_exposed_ports(27017).start()
            wait_for_logs(self.container, "Waiting for connections", timeout=timeout)
        return self

    def launch(self) -> None:
        self.start()

    def ready(self, timeout: float = 120.0) -> ContainerService:
        return self

    @property
    def name(self) -> str:
        return "broker" if self.kind == "kafka" else "document-store"

    @property
    def address(self) -> str:
        if self.kind == "kafka":
            return self.container.get_bootstrap_server()
        host = self.container.get_container_host_ip()
        return f"{host}:{self.container.get_exposed_port(27017)}"

    def stop(self, timeout: float = 10.0) -> None:
        if self.container is not None:
            self.container.stop()
            self.container = None

    kill = stop

    def __enter__(self) -> ContainerService:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def kafka_container(data_dir: Path, port: int | None = None) -> ContainerService:  # pragma: no cover
    return ContainerService("kafka")


def mongo_container(data_dir: Path, port: int | None = None) -> ContainerService:  # pragma: no cover
    return ContainerService("mongo")
