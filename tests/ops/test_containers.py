"""The switch to real images: without STREAMS_TEST_DOCKER=1 (or without an engine) the embedded services
run; with an override registered, the factories hand out the override's service instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.ops.embedded import FACTORY_OVERRIDES, EmbeddedBroker, broker, document_store
from tests.containers import ContainerService, docker_available


def test_no_docker_means_embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("STREAMS_TEST_DOCKER", raising=False)
    assert docker_available() is False
    if not FACTORY_OVERRIDES:
        assert isinstance(broker(tmp_path), EmbeddedBroker)


def test_overrides_replace_both_factories(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[tuple[str, Path, int | None]] = []

    def fake(kind: str):
        def factory(data_dir: Path, port: int | None) -> ContainerService:
            seen.append((kind, data_dir, port))
            return ContainerService(kind)

        return factory

    monkeypatch.setitem(FACTORY_OVERRIDES, "broker", fake("kafka"))
    monkeypatch.setitem(FACTORY_OVERRIDES, "document_store", fake("mongo"))
    assert broker(tmp_path, 9999).kind == "kafka"
    assert document_store(tmp_path).kind == "mongo"
    assert seen == [("kafka", tmp_path, 9999), ("mongo", tmp_path, None)]
