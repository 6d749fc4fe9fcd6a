"""Shared fixtures: paths, the shared corpora (skipped when absent), page builders, and the bus.

The bus: every test of the integration, reliability, console and operations suites (marked `integration`
under tests/integration, tests/reliability, tests/ui and tests/ops) runs once on noida-db, the embedded
default, and once on Apache Kafka (`[noida]` and `[kafka]` in its id). Tests of noida-db's own behaviour
are marked `embedded_only` and run on it alone; exactly-once tests are marked `kafka_only` and run on Kafka
alone (exactly-once refuses noida-db). `STREAMS_TEST_BUS=noida` (or `kafka`) runs one pass only; a machine
without Java or Maven fails the Kafka pass rather than skipping it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from streams.core.embedding import Embedder
from streams.core.events import PageEvent
from tests.debian import ensure

pytest_plugins = ["tests.interrupt"]  # SIGTERM tears fixtures down, as Ctrl-C does

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


BUSES = ("noida", "kafka")
#: What the Kafka pass needs on the machine, by command and the Debian package that brings it.
KAFKA_NEEDS = {"java": "openjdk-17-jre-headless", "mvn": "maven", "openssl": "openssl"}
#: The suites that run on both brokers (see the module docstring).
BOTH_BUSES = ("integration", "reliability", "ui", "ops")


def buses() -> list[str]:
    chosen = [b.strip() for b in os.environ.get("STREAMS_TEST_BUS", ",".join(BUSES)).split(",") if b.strip()]
    unknown = sorted(set(chosen) - set(BUSES))
    if unknown or not chosen:
        raise pytest.UsageError(f"STREAMS_TEST_BUS: choose from {', '.join(BUSES)}, not {unknown or 'nothing'}")
    return chosen


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Each test of the bus suites once per broker: `bus` is a session fixture, so pytest groups the tests
    by broker and a session-wide stack (the console's) is built once for each."""
    node = metafunc.definition
    folder = Path(str(node.fspath)).parent.name
    if (
        "bus" in metafunc.fixturenames
        and folder in BOTH_BUSES
        and node.get_closest_marker("integration")
        and not node.get_closest_marker("embedded_only")
    ):
        metafunc.parametrize("bus", buses(), indirect=True, scope="session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Exactly-once refuses noida-db (`streams.settings`), so a test marked `kafka_only` (an exactly-once one)
    runs in the Kafka pass alone, and so does every test under `STREAMS_PROCESSING_GUARANTEE=exactly_once`.
    Left out of the noida-db pass, not skipped: pytest counts them as deselected."""
    everything_exactly_once = os.environ.get("STREAMS_PROCESSING_GUARANTEE") == "exactly_once"
    keep: list[pytest.Item] = []
    left_out: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_noida = (callspec is not None and callspec.params.get("bus") == "noida") or (
            item.get_closest_marker("embedded_only") is not None
        )
        kafka_only = everything_exactly_once or item.get_closest_marker("kafka_only") is not None
        (left_out if on_noida and kafka_only else keep).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = keep


@pytest.fixture(scope="session", autouse=True)
def bus(request: pytest.FixtureRequest) -> Iterator[str]:
    """The broker this test's services use: every broker a test starts (`streams.ops.embedded.broker`, a
    `LocalPipeline`, a `streams up` subprocess through STREAMS_BROKER_KIND) is of this kind."""
    from streams.ops.embedded import FACTORY_OVERRIDES
    from streams.ops.kafka import kafka_broker

    kind = getattr(request, "param", "noida")
    if kind == "kafka" and (missing := ensure(KAFKA_NEEDS)):
        pytest.fail(f"Apache Kafka cannot run here: {missing}")  # a failure, not a skip
    patch = pytest.MonkeyPatch()
    patch.setenv("STREAMS_BROKER_KIND", kind)
    if kind == "kafka":
        patch.setitem(FACTORY_OVERRIDES, "broker", kafka_broker)
    yield kind
    patch.undo()


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
