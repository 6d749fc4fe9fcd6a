"""The shared embedding store: same vectors as without it, bounded, safe with concurrent writers, and
two workers embedding one document at once share the work. SQLite here, MongoDB on SecantusDB. And the
embedders built from settings: one per distinct set of inputs, none changed by another."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from streams.embedding.model import Backend, Embedder, embedding_key
from streams.embedding.stores import MongoEmbeddingStore, SqliteEmbeddingStore
from streams.settings import Settings
from tests.conftest import HashEmbedder

SENTENCES = [
    "The contractor shall install strain gauges on every span of the bridge.",
    "Proposals are due by noon on the fourteenth of March.",
    "Revenue grew nine percent on stronger subscription renewals.",
    "Our field crews finished the survey two weeks early.",
    "Questions must be submitted in writing to the contracting officer.",
    "The board approved a dividend of twelve cents a share.",
]


def test_the_store_gives_back_the_model_vectors_bit_for_bit_and_nothing_is_embedded_twice(tmp_path: Path) -> None:
    store = SqliteEmbeddingStore(tmp_path / "e.sqlite")
    plain = Embedder().encode(SENTENCES)  # no store: the reference
    first = Embedder(store=store)
    cold = first.encode(SENTENCES)
    assert first.stats.misses == len(SENTENCES) and np.abs(cold - plain).max() < 1e-6
    other = Embedder(store=SqliteEmbeddingStore(tmp_path / "e.sqlite"))  # another process's view
    other._model = first.model  # same loaded model: only the caches are under test
    warm = other.encode(list(reversed(SENTENCES)) + SENTENCES[:2])
    assert other.stats.misses == 0 and other.stats.shared_hits == len(SENTENCES)
    assert warm[: len(SENTENCES)].tobytes() == cold[::-1].tobytes()
    # whitespace and NFC do not change the key (nor the word pieces the model sees)
    assert embedding_key("a  b\n c") == embedding_key("a b c")


def test_a_vector_does_not_depend_on_what_it_is_embedded_with() -> None:
    """Padding moves a vector by up to 1e-7, enough to move a breakpoint that sits on a threshold: so a
    sentence's vector must be the same alone, in a mixed batch, cached or not."""
    embedder = Embedder()
    mixed = embedder.encode(SENTENCES + [s.upper() + " And more words follow here." for s in SENTENCES])
    for row, sentence in enumerate(SENTENCES):
        embedder.clear_cache()
        assert embedder.encode([sentence])[0].tobytes() == mixed[row].tobytes(), sentence


def test_keys_of_another_model_or_backend_are_not_shared(tmp_path: Path, onnx_dir: Path) -> None:
    store = SqliteEmbeddingStore(tmp_path / "e.sqlite")
    torch_embedder = Embedder(store=store, backend=Backend("torch"))
    int8 = Embedder(store=store, backend=Backend("onnx-int8", onnx_dir))
    assert torch_embedder.model_key != int8.model_key
    store.save(torch_embedder.model_key, {embedding_key("x"): np.ones(4, dtype=np.float32)})
    assert store.load(int8.model_key, [embedding_key("x")]) == {}


def test_the_store_is_bounded_and_evicts_the_least_recently_used(tmp_path: Path) -> None:
    now = [1_000_000.0]
    store = SqliteEmbeddingStore(tmp_path / "e.sqlite", max_rows=50, check_every=10, clock=lambda: now[0])
    vector = np.ones(4, dtype=np.float32)
    store.save("m", {"kept": vector})
    for i in range(300):
        now[0] += 100
        if i % 20 == 0:
            assert "kept" in store.load("m", ["kept"])  # read now and then: recently used
        store.save("m", {f"k{i}": vector})
        assert store.count() <= 50 + 10
    assert "kept" in store.load("m", ["kept"])
    assert store.load("m", ["k0", "k1", "k2"]) == {}  # the oldest unread rows went first


def _writer(path: str, worker: int, keys: list[str], barrier) -> None:
    store = SqliteEmbeddingStore(Path(path), check_every=7)
    barrier.wait()
    for start in range(0, len(keys), 5):
        store.save("m", {k: np.full(4, worker, dtype=np.float32) for k in keys[start : start + 5]})
    store.close()


def test_concurrent_writers_keep_one_vector_per_key_and_lose_none(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite"
    SqliteEmbeddingStore(path).close()
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    keys = [f"key{i}" for i in range(400)]
    workers = [
        context.Process(target=_writer, args=(str(path), w, keys[w * 50 : w * 50 + 250], barrier)) for w in range(4)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    store = SqliteEmbeddingStore(path)
    found = store.load("m", keys)
    assert set(found) == set(keys[: 3 * 50 + 250]) and store.count() == len(found)
    for vector in found.values():
        assert len(set(vector.tolist())) == 1  # one writer's whole vector, never a mix


def _embed_document(path: str, descending: bool, texts: list[str], barrier, counts) -> None:
    embedder = HashEmbedder(SqliteEmbeddingStore(Path(path)), descending=descending, dimension=8, delay=0.01)
    barrier.wait()
    vectors = embedder.encode(texts)
    counts.put((len(embedder.encoded), vectors.tobytes()))


def test_two_workers_on_one_document_meet_in_the_middle(tmp_path: Path) -> None:
    path = tmp_path / "e.sqlite"
    SqliteEmbeddingStore(path).close()
    texts = [f"sentence number {i} " + "word " * (i % 17) for i in range(320)]
    context = multiprocessing.get_context("spawn")
    barrier, counts = context.Barrier(2), context.Queue()
    workers = [
        context.Process(target=_embed_document, args=(str(path), d, texts, barrier, counts)) for d in (False, True)
    ]
    for process in workers:
        process.start()
    results = [counts.get(timeout=120) for _ in workers]
    for process in workers:
        process.join(30)
    embedded = sum(n for n, _ in results)
    assert len(texts) <= embedded <= 1.15 * len(texts), embedded
    assert results[0][1] == results[1][1]  # both got the same vectors
    alone = HashEmbedder(dimension=8).encode(texts)
    assert np.frombuffer(results[0][1], dtype=np.float32).tobytes() == alone.tobytes()


@pytest.fixture(scope="module")
def mongo_store(tmp_path_factory) -> Iterator[MongoEmbeddingStore]:
    from streams.ops.embedded import document_store

    server = document_store(Path(tmp_path_factory.mktemp("mongo"))).start()
    store = MongoEmbeddingStore(f"mongodb://{server.address}", "streams")
    try:
        yield store
    finally:
        store.close()
        server.stop()


@pytest.mark.integration
def test_mongo_store_round_trips_and_keeps_the_first_vector(mongo_store: MongoEmbeddingStore) -> None:
    first = {"a": np.arange(4, dtype=np.float32), "b": np.ones(4, dtype=np.float32)}
    mongo_store.save("m", first)
    mongo_store.save("m", {"a": np.zeros(4, dtype=np.float32), "c": np.full(4, 2, dtype=np.float32)})
    found = mongo_store.load("m", ["a", "b", "c", "d"])
    assert sorted(found) == ["a", "b", "c"]
    assert found["a"].tolist() == [0.0, 1.0, 2.0, 3.0]  # the second writer did not replace it
    assert mongo_store.load("other-model", ["a"]) == {}
    embedder = HashEmbedder(mongo_store)
    embedder.encode(SENTENCES)
    again = HashEmbedder(mongo_store)
    again.encode(SENTENCES)
    assert again.encoded == [] and again.stats.shared_hits == len(SENTENCES)


def _settings(data_dir: Path, **fields: object):
    from streams.settings import Settings

    embedding = {"embed_model": None, "embed_backend": "onnx", "embed_cache": "sqlite", "embed_cache_path": None}
    return Settings(data_dir=data_dir, **{**embedding, **fields})


def test_embedders_of_different_settings_in_one_process_do_not_touch_each_other(tmp_path: Path) -> None:
    """Each is built from its own settings: building or using one changes nothing of another's (threads,
    long texts, batch order, store, caches), and the same inputs give back the very same embedder."""
    from streams.embedding.stores import cache_stats, embedder_for

    worker = embedder_for(_settings(tmp_path / "a", embed_threads=1, embed_long_chunks="mean"))
    other = embedder_for(_settings(tmp_path / "b", embed_threads=2, embed_long_chunks="truncate"))
    cluster = embedder_for(_settings(tmp_path / "a", embed_threads=1), long_texts="truncate", descending=True)
    sentences = embedder_for(_settings(tmp_path / "a", embed_threads=1), long_texts="truncate")
    assert len({id(worker), id(other), id(cluster), id(sentences)}) == 4
    assert (worker.threads, worker.long_texts, worker.descending) == (1, "mean", False)
    assert (other.threads, other.long_texts, other.descending) == (2, "truncate", False)
    assert (cluster.descending, sentences.descending) == (True, False)  # the order is each caller's own
    assert worker.store is not None and other.store is not None
    assert worker.store.path == (tmp_path / "a" / "embeddings.sqlite").absolute()  # type: ignore[attr-defined]
    assert other.store.path == (tmp_path / "b" / "embeddings.sqlite").absolute()  # type: ignore[attr-defined]
    assert cluster.store is not sentences.store and cluster.store.path == worker.store.path  # type: ignore[union-attr]

    before = cache_stats().misses
    worker.encode(SENTENCES[:2])
    assert worker.stats.misses == 2 and other.stats.misses == 0 and other._model is None
    assert cache_stats().misses == before + 2  # the metrics see every embedder, with no list of their own
    assert worker.store.count() == 2 and other.store.count() == 0  # type: ignore[attr-defined]

    # Equal inputs, from settings built again: the cached embedder, its model and caches with it.
    assert embedder_for(_settings(tmp_path / "a", embed_threads=1, embed_long_chunks="mean")) is worker
    assert embedder_for(_settings(tmp_path / "b", embed_threads=2), long_texts="truncate") is other
    assert embedder_for(_settings(tmp_path / "a", embed_threads=1), "truncate", descending=True) is cluster
    bench = embedder_for(_settings(tmp_path / "a", embed_threads=1, embed_long_chunks="mean"), shared=False)
    assert bench is not worker and bench.store is None  # a measurement embeds what it measures


def test_an_embedder_without_settings_is_keyed_by_its_arguments_alone() -> None:
    from streams.embedding.stores import get_embedder

    default = get_embedder(long_texts="truncate")
    assert get_embedder(None, Backend(), "truncate", threads=0) is default
    assert get_embedder(default.model_path, long_texts="truncate") is default  # the path is resolved first
    assert get_embedder(long_texts="truncate", threads=3) is not default and default.threads == 0
    assert default.store is None and default.backend == Backend()


def test_the_vector_sink_embeds_in_int8_where_the_strategies_use_onnx() -> None:
    from streams.embedding.stores import vector_embedder_for

    settings = Settings()
    assert settings.embed_backend == "onnx" and settings.chunk_vector_backend() == "onnx-int8"
    assert vector_embedder_for(settings).backend.name == "onnx-int8"  # builds no model until it encodes
    assert Settings(embed_backend="torch").chunk_vector_backend() == "torch"
    assert Settings(vector_backend="onnx").chunk_vector_backend() == "onnx"
    with pytest.raises(ValueError, match="vector_backend"):
        Settings(vector_backend="int4")
