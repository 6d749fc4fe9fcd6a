"""The embedded default: a Kafka-protocol broker (noida-db) started and stopped by the project itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams.ops.groups import GroupJanitor
from streams.ops.kafka import kafka_broker, kafka_cluster
from streams.ops.processes import EmbeddedProcess, ServiceError, free_port, installed_binary, wait_for_port


@dataclass
class EmbeddedBroker(EmbeddedProcess):
    """noida-db plus the group janitor that expires dead members, which noida-db itself never does."""

    janitor: GroupJanitor | None = None
    kind: str = "noida"

    def ready(self, timeout: float = 60.0) -> EmbeddedBroker:
        super().ready(timeout)
        self.janitor = GroupJanitor(self.address).start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self.janitor is not None:
            self.janitor.stop()
            self.janitor = None
        super().stop(timeout)

    def kill(self) -> None:
        if self.janitor is not None:
            self.janitor.stop()
            self.janitor = None
        super().kill()


#: Brokers the project can start itself: `streams up/demo --broker KIND`, `streams broker --kind KIND`.
BROKER_KINDS = ("noida", "kafka")

# Other implementations of the two services by name ("broker", "document_store"); the test suite puts
# Apache Kafka here for its Kafka pass (tests/conftest.py).
FACTORY_OVERRIDES: dict[str, Callable[[Path, int | None], Any]] = {}


def broker(data_dir: Path, port: int | None = None, kind: str | None = None, nodes: int = 1) -> EmbeddedProcess:
    """A broker on its own port and data directory: noida-db speaking the Kafka protocol (pinned 0.2.3) by
    default, Apache Kafka in KRaft mode with `kind="kafka"` (streams.ops.kafka), a cluster of `nodes` of them
    when more than one (its nodes on ports of their own)."""
    if nodes > 1:
        if kind != "kafka" and (kind is not None or FACTORY_OVERRIDES.get("broker") is None):
            raise ServiceError(f"noida-db runs one node; a cluster of {nodes} is Apache Kafka's (--broker kafka)")

        cluster = kafka_cluster(data_dir, nodes)
        cluster.throwaway = bool(FACTORY_OVERRIDES.get("broker"))  # a test's: nothing reads its data again
        return cluster  # type: ignore[return-value]
    if override := FACTORY_OVERRIDES.get("broker"):
        return override(data_dir, port)
    if kind == "kafka":
        return kafka_broker(data_dir, port)
    if kind not in (None, "noida"):
        raise ServiceError(f"unknown broker kind {kind!r}: choose one of {', '.join(BROKER_KINDS)}")
    return noida_broker(data_dir, port)


def noida_broker(data_dir: Path, port: int | None = None) -> EmbeddedBroker:
    """noida-db on its own port and data directory, whatever FACTORY_OVERRIDES says."""
    port = port or free_port()
    args = [
        installed_binary("noida-db"),
        "start",
        "--only",
        "kafka",
        "--kafka-port",
        str(port),
        "--host",
        "127.0.0.1",
        "--data-dir",
        str(data_dir / "noida"),
    ]
    return EmbeddedBroker("broker", args, port, data_dir)


def document_store(data_dir: Path, port: int | None = None) -> EmbeddedProcess:
    """SecantusDB (MongoDB wire protocol, GPL-2.0, run as a separate process) on its own port and data dir."""
    if override := FACTORY_OVERRIDES.get("document_store"):
        return override(data_dir, port)
    return secantus_store(data_dir, port)


def secantus_store(data_dir: Path, port: int | None = None) -> EmbeddedProcess:
    """SecantusDB on its own port and data directory, whatever FACTORY_OVERRIDES says."""
    port = port or free_port()
    storage = data_dir / "secantus"
    storage.mkdir(parents=True, exist_ok=True)
    args = [
        installed_binary("secantusd-py"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--storage-path",
        str(storage),
    ]
    return EmbeddedProcess("document-store", args, port, data_dir)


__all__ = [
    "BROKER_KINDS",
    "FACTORY_OVERRIDES",
    "EmbeddedBroker",
    "EmbeddedProcess",
    "ServiceError",
    "broker",
    "document_store",
    "free_port",
    "noida_broker",
    "secantus_store",
    "wait_for_port",
]
