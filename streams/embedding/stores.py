"""Embedding stores shared by every process of a deployment: `semantic`, `cluster` and the vector sink
look a text up here before they embed it, and save what they embed.

- `SqliteEmbeddingStore`: the embedded default, one file in the run's data directory (WAL, so readers
  never wait for a writer). Bounded: past `max_rows` the least recently used rows go.
- `MongoEmbeddingStore`: production; survives restarts and is shared by replicas on other machines.
  Bounded by a TTL index on the last use.

Both keep the first vector written for a key (insert-or-ignore), so every reader of a key gets the same
vector whoever computed it.

Also the embedders: `embedder_for(settings)` is the one place settings become an embedder (model, backend,
threads, long-text handling, store), and its callers hand it on to chunkers, the vector sink, search and
the audit. Embedders are kept in a cache keyed by exactly those inputs, so equal inputs share one model and
one LRU, and different ones never touch each other. The core itself reads no environment.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from streams.embedding.files import ModelSpec, model_spec
from streams.embedding.model import Backend, CacheStats, Embedder, EmbeddingStore, default_model_path
from streams.embedding.remote import RemoteSpec
from streams.runtime.clients import client_options
from streams.settings import Settings

_BATCH = 500


class SqliteEmbeddingStore:
    """Rows (model, key, vector, used); `used` is refreshed on reads at most once a minute per row.

    The size is checked every `check_every` inserts of this process, so with N writers the table can
    hold up to max_rows + N * check_every rows between trims.
    """

    def __init__(
        self,
        path: Path,
        max_rows: int = 500_000,
        check_every: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.clock = clock
        self.path = path
        self.max_rows = max_rows
        self.check_every = check_every or max(1, min(1000, max_rows // 10))
        self._since_check = 0
        self._lock = threading.Lock()
        self.db = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, key TEXT NOT NULL, vector BLOB NOT NULL,"
            " used INTEGER NOT NULL, PRIMARY KEY (model, key)) WITHOUT ROWID"
        )
        self.db.execute("CREATE INDEX IF NOT EXISTS vectors_used ON vectors (used)")

    def load(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        stale: list[str] = []
        now = int(self.clock())
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), _BATCH):
                batch = unique[start : start + _BATCH]
                marks = ",".join("?" * len(batch))
                for key, blob, used in self.db.execute(
                    f"SELECT key, vector, used FROM vectors WHERE model = ? AND key IN ({marks})", [model, *batch]
                ):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
                    if used < now - 60:
                        stale.append(key)
            if stale:
                self.db.executemany(
                    "UPDATE vectors SET used = ? WHERE model = ? AND key = ?", [(now, model, k) for k in stale]
                )
        return found

    def save(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        if not vectors:
            return
        now = int(self.clock())
        rows = [(model, key, np.asarray(v, dtype=np.float32).tobytes(), now) for key, v in vectors.items()]
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?, ?)", rows)
                self._since_check += len(rows)
                if self._since_check >= self.check_every:
                    self._since_check = 0
                    self._trim()
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def _trim(self) -> None:
        (count,) = self.db.execute("SELECT COUNT(*) FROM vectors").fetchone()
        excess = count - self.max_rows
        if excess > 0:
            self.db.execute(
                "DELETE FROM vectors WHERE (model, key) IN (SELECT model, key FROM vectors ORDER BY used LIMIT ?)",
                (excess,),
            )

    def forget(self, keys: Sequence[str]) -> int:
        """Every model's vector of `keys` gone (a purge): how many rows left."""
        removed = 0
        with self._lock:
            for start in range(0, len(keys), _BATCH):
                batch = list(keys[start : start + _BATCH])
                marks = ",".join("?" * len(batch))
                removed += self.db.execute(f"DELETE FROM vectors WHERE key IN ({marks})", batch).rowcount
        return removed

    def drop_model(self, model: str) -> int:
        """Every vector of one model gone (its index dropped): how many rows left."""
        with self._lock:
            return int(self.db.execute("DELETE FROM vectors WHERE model = ?", (model,)).rowcount)

    def count(self) -> int:
        with self._lock:
            return int(self.db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        self.db.close()


class MongoEmbeddingStore:
    """One document per (model, key): `_id` "model|key", the vector as float32 bytes, `used` for the TTL."""

    def __init__(self, url: str, database: str, collection: str = "embeddings", ttl_days: int = 30) -> None:
        from pymongo import MongoClient

        self.client: Any = MongoClient(url, **client_options(url, 10_000))
        self.collection = self.client[database][collection]
        self.collection.create_index("used", expireAfterSeconds=ttl_days * 86_400)

    def load(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        import datetime as dt

        found: dict[str, np.ndarray] = {}
        stale: list[str] = []
        day_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=1)
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _BATCH):
            ids = [f"{model}|{k}" for k in unique[start : start + _BATCH]]
            for doc in self.collection.find({"_id": {"$in": ids}}):
                key = doc["_id"].split("|", 1)[1]
                found[key] = np.frombuffer(bytes(doc["vector"]), dtype=np.float32)
                used = doc.get("used")
                if used is not None and used.replace(tzinfo=dt.UTC) < day_ago:
                    stale.append(doc["_id"])
        if stale:
            self.collection.update_many({"_id": {"$in": stale}}, {"$set": {"used": dt.datetime.now(dt.UTC)}})
        return found

    def save(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        import datetime as dt

        from bson import Binary
        from pymongo import UpdateOne

        now = dt.datetime.now(dt.UTC)
        if vectors:
            self.collection.bulk_write(
                [
                    UpdateOne(
                        {"_id": f"{model}|{key}"},
                        {"$setOnInsert": {"vector": Binary(np.asarray(v, dtype=np.float32).tobytes()), "used": now}},
                        upsert=True,
                    )
                    for key, v in vectors.items()
                ],
                ordered=False,
            )

    def drop_model(self, model: str) -> int:
        """Every vector of one model gone (its index dropped): ids start `model|`."""
        import re

        return int(self.collection.delete_many({"_id": {"$regex": f"^{re.escape(model)}\\|"}}).deleted_count)

    def forget(self, keys: Sequence[str]) -> int:
        """Every model's vector of `keys` gone (a purge): ids are `model|key`, so one pattern per batch."""
        import re

        removed = 0
        for start in range(0, len(keys), _BATCH):
            pattern = "\\|(" + "|".join(re.escape(k) for k in keys[start : start + _BATCH]) + ")$"
            removed += self.collection.delete_many({"_id": {"$regex": pattern}}).deleted_count
        return removed

    def close(self) -> None:
        self.client.close()


@dataclass(frozen=True)
class StoreSpec:
    """The shared store an embedder saves to, as the settings name it: part of the embedder's cache key,
    so two settings with different stores never share (or overwrite) each other's."""

    kind: str  # "sqlite" or "mongo"
    path: Path | None = None
    max_rows: int = 500_000
    url: str = field(default="", repr=False)  # may carry credentials
    database: str = ""
    ttl_days: int = 30

    @classmethod
    def from_settings(cls, settings: Settings) -> StoreSpec | None:
        """The store `settings.embed_cache` names ("sqlite", "mongo"), or None for "none"."""
        kind = settings.embed_cache
        if kind == "none":
            return None
        if kind == "sqlite":
            return cls("sqlite", path=settings.embed_cache_file.absolute(), max_rows=settings.embed_cache_max_rows)
        if kind == "mongo":
            return cls(
                "mongo",
                url=settings.mongo_url,
                database=settings.mongo_database,
                ttl_days=settings.embed_cache_ttl_days,
            )
        raise ValueError(f"unknown embedding cache {kind!r}: use sqlite, mongo or none")

    def open(self) -> EmbeddingStore:
        if self.kind == "sqlite" and self.path is not None:
            return SqliteEmbeddingStore(self.path, self.max_rows)
        if self.kind == "mongo":
            return MongoEmbeddingStore(self.url, self.database, ttl_days=self.ttl_days)
        raise ValueError(f"unknown embedding cache {self.kind!r}: use sqlite, mongo or none")


@dataclass(frozen=True)
class _Inputs:
    """Everything an embedder is built from: the key of the cache below."""

    model_path: str
    backend: Backend
    threads: int
    long_texts: str
    descending: bool
    store: StoreSpec | None
    remote: RemoteSpec | None


_embedders: dict[_Inputs, Embedder] = {}  # the cache keyed by its inputs; nothing else is kept here
_building = threading.Lock()


def get_embedder(
    model_path: str | None = None,
    backend: Backend | None = None,
    long_texts: str = "mean",
    *,
    threads: int = 0,
    descending: bool = False,
    store: StoreSpec | None = None,
    remote: RemoteSpec | None = None,
) -> Embedder:
    """The embedder for exactly these inputs, built on first use and then reused: loading a model costs
    seconds and memory, so equal inputs share one. Every input is an argument (defaults: the packaged
    model on ONNX Runtime, the runtime's threads, no shared store); nothing is read from anywhere else.
    `descending` is the order missing texts are embedded in (`Embedder`); a store is opened once per key."""
    inputs = _Inputs(
        "" if remote else str(Path(model_path or default_model_path()).resolve()),
        backend or Backend(),
        threads,
        long_texts,
        descending,
        store,
        remote,
    )
    with _building:
        embedder = _embedders.get(inputs)
        first = embedder is None and not _embedders
        if embedder is None:
            embedder = Embedder(
                inputs.model_path,
                backend=inputs.backend,
                threads=threads,
                long_texts=long_texts,
                descending=descending,
                store=store.open() if store is not None else None,
                remote=remote,
            )
            _embedders[inputs] = embedder
    if first:  # one collector per process, over every embedder it builds (registering reads it: unlocked)
        from prometheus_client import REGISTRY

        from streams.runtime.metrics import EmbeddingCacheCollector

        REGISTRY.register(EmbeddingCacheCollector(cache_stats))
    return embedder


def embedder_for(
    settings: Settings,
    long_texts: str | None = None,
    *,
    descending: bool = False,
    shared: bool = True,
    backend: str | None = None,
) -> Embedder:
    """The embedder the settings ask for: model, backend, threads, long-text handling and shared store.

    `long_texts` overrides `settings.embed_long_chunks`: `semantic` and `cluster` embed their sentence
    units as the model reads them ("truncate"), so the setting never moves a chunk boundary; whole
    chunks (the vector sink, search) are embedded as the setting says. `descending`: see `Embedder`.
    `shared=False` leaves the store out (a benchmark must embed what it measures). `backend` overrides
    `settings.embed_backend` (the vector sink's, `vector_embedder_for`)."""
    return get_embedder(
        settings.embed_model,
        backend_for(settings, backend),
        long_texts or settings.embed_long_chunks,
        threads=settings.embed_threads or 0,
        descending=descending,
        store=StoreSpec.from_settings(settings) if shared else None,
        remote=remote_spec(settings),
    )


def backend_for(settings: Settings, name: str | None = None) -> Backend:
    """The backend `name` (default `settings.embed_backend`) where the settings put it: graph cache, device."""
    return Backend(name or settings.embed_backend, settings.onnx_dir, settings.embed_device)


def remote_spec(settings: Settings) -> RemoteSpec | None:
    """The endpoint the settings name (STREAMS_EMBED_URL), or None for a local model."""
    if not settings.embed_url:
        return None
    return RemoteSpec(
        url=settings.embed_url,
        model=settings.embed_model or "",
        api_key=settings.secret("embed_api_key"),
        max_tokens=settings.embed_max_tokens,
        dimensions=settings.embed_dimensions or 0,
        tokenizer=settings.embed_tokenizer,
        batch_texts=settings.embed_batch_texts,
        batch_tokens=settings.embed_batch_tokens,
        concurrency=settings.embed_concurrency,
        tokens_per_minute=settings.embed_tokens_per_minute,
        timeout_s=settings.embed_timeout_s,
        retries=settings.embed_retries,
    )


def vector_embedder_for(settings: Settings) -> Embedder:
    """The embedder of the chunks the vector store holds (`STREAMS_VECTOR_BACKEND`): the vector sink's, and
    the audit's when it re-embeds a missing vector, so a repaired vector is the sink's own."""
    return embedder_for(settings, backend=settings.chunk_vector_backend())


def spec_for(settings: Settings) -> ModelSpec:
    """What the configured model declares (dimensions, word pieces read), from its files without loading it;
    an endpoint's model is asked once (its probe) and its limit is the setting's."""
    if settings.embed_url:  # the embedder's own spec: no request where STREAMS_EMBED_DIMENSIONS is set
        return vector_embedder_for(settings).spec
    return model_spec(settings.embed_model or default_model_path())


def embedding_limit(settings: Settings) -> int:
    """The tokens the configured model reads of one text, known without a load or a request."""
    return settings.embed_max_tokens if settings.embed_url else spec_for(settings).max_pieces


def cache_stats() -> CacheStats:
    """Where the vectors of every embedder this process built came from (for the metrics endpoint)."""
    with _building:
        embedders = list(_embedders.values())
    return _total_stats(embedders)


def open_store(settings: Settings) -> EmbeddingStore | None:
    """The store `settings.embed_cache` names ("sqlite", "mongo" or "none"), opened."""
    spec = StoreSpec.from_settings(settings)
    return spec.open() if spec is not None else None


def _total_stats(embedders: Sequence[Embedder]) -> CacheStats:
    total = CacheStats()
    for embedder in embedders:
        for name in ("hits", "shared_hits", "misses", "long"):
            setattr(total, name, getattr(total, name) + getattr(embedder.stats, name))
    return total
