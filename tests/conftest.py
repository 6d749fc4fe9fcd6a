"""Shared fixtures: paths, the shared corpora (skipped when absent), page builders."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from streams.core.embedding import Embedder
from streams.core.events import PageEvent
from tests.containers import docker_available, kafka_container, mongo_container

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/ from today's output")


@pytest.fixture
def shared_corpora() -> Path:
    path = SHARED / "corpora"
    if not path.is_dir():
        pytest.skip("../shared/corpora is not present")
    return path


def strategy_chunker(strategy: str, **options: object):
    """A strategy as the workers build it: semantic and cluster get this process's sentence embedder."""
    from streams.core.chunkers import EMBEDDING_STRATEGIES, get_chunker

    embedder = None
    if strategy in EMBEDDING_STRATEGIES:
        from streams.embedstore import get_embedder
        from streams.strategies import SENTENCE_UNITS

        embedder = get_embedder(long_texts=SENTENCE_UNITS)
    return get_chunker(strategy, options, embedder=embedder)


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


class HashEmbedder(Embedder):
    """The real embedder (caches, shared store, batching) with a deterministic forward pass: text hashed
    into a unit vector, and a record of what it embedded. The real model is exercised elsewhere; here the
    point is what gets embedded. `delay` makes a batch cost time, as the model's does."""

    def __init__(self, store=None, descending: bool = False, dimension: int = 384, delay: float = 0.0) -> None:
        super().__init__(model_path="test-hash-embedder", store=store, long_texts="truncate")
        self.descending = descending
        self.size = dimension
        self.delay = delay
        self.encoded: list[str] = []

    def token_lengths(self, texts: list[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    @property
    def dimension(self) -> int:
        return self.size

    def forward(self, texts: list[str]) -> np.ndarray:
        time.sleep(self.delay)
        self.encoded += texts
        rows = []
        for text in texts:
            rng = np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big"))
            vector = rng.standard_normal(self.size).astype(np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.vstack(rows)
