"""Shared fixtures: paths, the shared corpora (skipped when absent), page builders, and the bus.

The bus: every test of the integration, reliability, console and operations suites (marked `integration`
under tests/integration, tests/reliability, tests/ui and tests/ops) runs once on noida-db, the embedded
default, and once on Apache Kafka (`[noida]` and `[kafka]` in its id). Tests of noida-db's own behaviour
are marked `embedded_only` and run on it alone; exactly-once tests and tests of a Kafka feature noida-db
lacks are marked `kafka_only` and run on Kafka alone; a broker-agnostic test marked `one_broker` runs on
noida-db only, or on Kafka only when marked `one_broker("kafka")` (docs/claims.md says which broker shows
each claim; with one pass chosen, it runs in that one). `STREAMS_TEST_BUS=noida` (or `kafka`)
runs one pass only; a machine without Java or Maven fails the Kafka pass rather than skipping it.

The services: each pass starts one broker and one document store (`pool`) and lends them to every bus-suite
test that would start its own per test, under a deployment prefix of its own (`STREAMS_DEPLOYMENT`), and
deletes what the test made afterwards. A test that kills, freezes or reconfigures its services is marked
`own_services`, and one that uses a module's or a session's services keeps those.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from streams.core.events import PageEvent
from streams.embedding.files import ModelSpec
from streams.embedding.model import Embedder
from streams.ops.processes import EmbeddedProcess
from tests.buses import BUSES
from tests.debian import ensure

pytest_plugins = ["tests.interrupt", "tests.schedule"]  # SIGTERM tears fixtures down; how xdist shares tests

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/ from today's output")


@pytest.fixture(scope="session")
def onnx_dir() -> Path:
    """Where this run's ONNX graphs are exported: the service's own default (`Settings.onnx_dir`), which the
    workers read too, so a run exports each graph once however many tests and workers load it."""
    from streams.settings import Settings

    return Settings(embed_export_dir=os.environ.get("STREAMS_EMBED_EXPORT_DIR") or None).onnx_dir


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
        from streams.embedding.stores import get_embedder
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
        chosen = buses()
        if mark := node.get_closest_marker("one_broker"):  # its broker, or the one pass that runs
            chosen = [b for b in chosen if b == (mark.args or ("noida",))[0]] or chosen[:1]
        metafunc.parametrize("bus", chosen, indirect=True, scope="session")


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

    kind = getattr(request, "param", "noida")
    if kind == "kafka" and (missing := ensure(KAFKA_NEEDS)):
        pytest.fail(f"Apache Kafka cannot run here: {missing}")  # a failure, not a skip
    patch = pytest.MonkeyPatch()
    patch.setenv("STREAMS_BROKER_KIND", kind)
    if kind == "kafka":
        patch.setitem(FACTORY_OVERRIDES, "broker", throwaway_kafka)
    yield kind
    patch.undo()


def throwaway_kafka(data_dir: Path, port: int | None = None) -> EmbeddedProcess:
    """Apache Kafka for one test: killed when stopped (nothing reads its data again), which spares the
    seconds of a controlled shutdown; a test that restarts it sets `throwaway = False` first."""
    from streams.ops.kafka import kafka_broker

    node = kafka_broker(data_dir, port)
    node.throwaway = True
    return node


class Lent:
    """A broker or document store started once per broker pass and lent to one test at a time: starting it
    is a no-op and stopping it gives it back, while the test's topics, groups and databases live under its
    own deployment prefix (`STREAMS_DEPLOYMENT`), as two deployments share one cluster in production."""

    def __init__(self, service: EmbeddedProcess) -> None:
        self.service = service

    def __getattr__(self, name: str) -> object:
        return getattr(self.service, name)

    def launch(self) -> None:
        pass

    def ready(self, timeout: float = 0.0) -> Lent:
        return self

    def start(self, timeout: float = 0.0) -> Lent:
        return self

    def stop(self, timeout: float = 0.0) -> None:
        pass

    def kill(self) -> None:
        raise AssertionError("a test that kills its services needs its own: mark it `own_services`")

    def __enter__(self) -> Lent:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class Pool:
    """The services of one broker pass, each started on first loan and again if a test left it dead."""

    def __init__(self, root: Path, kind: str) -> None:
        self.root, self.kind = root, kind
        self.services: dict[str, EmbeddedProcess] = {}

    def factory(self, name: str):
        """The project's own factory of a service of this pass's kind (not the lending stand-in)."""
        from streams.ops.embedded import noida_broker, secantus_store

        if name == "document_store":
            return secantus_store
        return throwaway_kafka if self.kind == "kafka" else noida_broker

    def lend(self, name: str) -> Lent:
        service = self.services.get(name)
        if service is None or not service.alive():
            if service is not None:
                service.kill()
            service = self.factory(name)(self.root / f"{name}-{len(self.services)}").start()
            self.services[name] = service
        return Lent(service)

    def close(self) -> None:
        for service in self.services.values():
            service.kill()  # throwaway: nothing in it outlives the run


@pytest.fixture(scope="session")
def pools() -> Iterator[dict[str, Pool]]:
    """Each broker kind's pool, kept for the whole session: a worker that goes from a `[kafka]` file to a
    unit test and on to a `[noida]` one keeps both pools, where a session fixture depending on `bus` would
    be torn down and started again at every such switch."""
    made: dict[str, Pool] = {}
    yield made
    for shared in made.values():
        shared.close()


@pytest.fixture
def pool(bus: str, pools: dict[str, Pool], tmp_path_factory: pytest.TempPathFactory) -> Pool:
    """One broker (of this test's kind) and one document store, shared by the tests that start neither
    themselves nor at module scope."""
    if bus not in pools:
        pools[bus] = Pool(tmp_path_factory.mktemp(f"pool-{bus}"), bus)
    return pools[bus]


#: Fixtures of a wider scope that a lending test may use: none of them starts a broker or a store.
LENDING_SAFE = {"bus", "onnx_dir", "pool", "pools", "tmp_path_factory", "monkeypatch", "worker_id"}
DEPLOYMENTS = iter(range(1, 1_000_000))


def lends(item: pytest.Item) -> bool:
    """Whether a test borrows the pool: a bus-suite test that starts its services per test, not one that
    kills or reconfigures them (`own_services`) or reuses a module's or session's (those start their own)."""
    folder = Path(str(item.fspath)).parent.name
    if folder not in BOTH_BUSES or not item.get_closest_marker("integration"):
        return False
    if item.get_closest_marker("own_services"):
        return False
    info = getattr(item, "_fixtureinfo", None)
    for name in info.names_closure if info else ():
        defs = info.name2fixturedefs.get(name) or ()
        if defs and defs[-1].scope != "function" and name not in LENDING_SAFE and defs[-1].baseid.startswith("tests"):
            return False
    return True


@pytest.fixture(autouse=True)
def lent_services(request: pytest.FixtureRequest, bus: str) -> Iterator[str | None]:
    """For a lending test (`lends`): the pool's broker and store stand in for the ones its pipelines start,
    under a deployment prefix of its own; at the end its topics and databases are deleted."""
    from streams.ops.embedded import FACTORY_OVERRIDES

    if not lends(request.node):
        yield None
        return
    pool: Pool = request.getfixturevalue("pool")
    deployment = f"t{next(DEPLOYMENTS)}"
    patch = pytest.MonkeyPatch()
    patch.setenv("STREAMS_DEPLOYMENT", deployment)
    own = {name: FACTORY_OVERRIDES.get(name) for name in ("broker", "document_store")}
    borrowed: set[str] = set()
    before: list[tuple[set[str], set[str]]] = []

    def lender(name: str):
        def make(data_dir: Path, port: int | None = None) -> object:
            if port is not None:  # a fixed port: a service of its own, as before
                return (own[name] or pool.factory(name))(data_dir, port)
            lent = pool.lend(name)
            if name == "broker" and name not in borrowed:
                before.append(names_on(lent.service))
            borrowed.add(name)
            return lent

        return make

    for name in own:
        patch.setitem(FACTORY_OVERRIDES, name, lender(name))
    try:
        yield deployment
    finally:
        patch.undo()
        give_back(pool, deployment, borrowed, before[0] if before else None)


def names_on(service: EmbeddedProcess) -> tuple[set[str], set[str]]:
    """The topics (less the broker's own) and consumer groups on a broker now."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": service.address})
    topics = {t for t in admin.list_topics(timeout=10).topics if not t.startswith("__")}
    groups = {g.group_id for g in admin.list_consumer_groups(request_timeout=10).result().valid}
    return topics, groups


def give_back(pool: Pool, deployment: str, borrowed: set[str], before: tuple[set[str], set[str]] | None) -> None:
    """Delete what a test made on the pool's services (every topic and group that was not on the broker
    when it borrowed it: `before`, taken at the first loan), so the next test starts on a small broker."""
    if before is not None and (service := pool.services.get("broker")) is not None and service.alive():
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": service.address})
        try:
            topics, groups = names_on(service)
            if made := sorted(topics - before[0]):
                for future in admin.delete_topics(made, operation_timeout=30).values():
                    future.result(30)
            if new_groups := sorted(groups - before[1]):
                for future in admin.delete_consumer_groups(new_groups, request_timeout=10).values():
                    with contextlib.suppress(Exception):  # a member still expiring: the group holds no topic now
                        future.result(10)
        except Exception as exc:  # a broker that cannot delete is still lent: the next test has its own names
            print(f"pool: what {deployment} made was not deleted: {exc}")
    if "document_store" in borrowed and (store := pool.services.get("document_store")) is not None and store.alive():
        from pymongo import MongoClient

        client = MongoClient(f"mongodb://{store.address}", serverSelectionTimeoutMS=5000)
        try:
            for name in client.list_database_names():
                if name.startswith(f"{deployment}-") or name == "streams":
                    client.drop_database(name)
        except Exception as exc:
            print(f"pool: databases of {deployment} not dropped: {exc}")
        finally:
            client.close()


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

    @property
    def spec(self) -> ModelSpec:  # type: ignore[override]
        return ModelSpec(dimension=self.size, max_pieces=256)

    def forward(self, texts: list[str]) -> np.ndarray:
        time.sleep(self.delay)
        self.encoded += texts
        rows = []
        for text in texts:
            rng = np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big"))
            vector = rng.standard_normal(self.size).astype(np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.vstack(rows)
