"""Shared fixtures: paths, the shared corpora (skipped when absent), page builders."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.core.events import PageEvent
from tests.containers import docker_available, kafka_container, mongo_container

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def shared_corpora() -> Path:
    path = SHARED / "corpora"
    if not path.is_dir():
        pytest.skip("../shared/corpora is not present")
    return path


def make_pages(doc_id: str, texts: list[str], **fields: object) -> list[PageEvent]:
    return [
        PageEvent(
            doc_id=doc_id,
            document_name=f"{doc_id}.txt",
            page_number=number,
            page_count=len(texts),
            text=text,
            **fields,
        )
        for number, text in enumerate(texts, start=1)
    ]


def page_bytes(page: PageEvent) -> bytes:
    return page.model_dump_json().encode()


def raw_page(**fields: object) -> bytes:
    return json.dumps(fields).encode()


@pytest.fixture(scope="session", autouse=True)
def real_images() -> Iterator[None]:
    """With STREAMS_TEST_DOCKER=1 and a Docker engine, every broker and document store a test starts is a
    real image (Apache Kafka in KRaft mode, MongoDB) instead of the embedded one; see tests/containers.py."""
    from streams.ops.embedded import FACTORY_OVERRIDES

    if docker_available():  # pragma: no cover - no Docker engine on the development machine
        FACTORY_OVERRIDES.update(broker=kafka_container, document_store=mongo_container)
    yield
    FACTORY_OVERRIDES.clear()


@pytest.fixture(autouse=True)
def embedded_only(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests of noida-db behaviour itself (marker `embedded_only`) keep the embedded services."""
    from streams.ops.embedded import FACTORY_OVERRIDES

    if request.node.get_closest_marker("embedded_only"):
        for name in list(FACTORY_OVERRIDES):
            monkeypatch.delitem(FACTORY_OVERRIDES, name)
