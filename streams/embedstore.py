"""Embedding stores shared by every process of a deployment: `semantic`, `cluster` and the vector sink
look a text up here before they embed it, and save what they embed.

- `SqliteEmbeddingStore`: the embedded default, one file in the run's data directory (WAL, so readers
  never wait for a writer). Bounded: past `max_rows` the least recently used rows go.
- `MongoEmbeddingStore`: production; survives restarts and is shared by replicas on other machines.
  Bounded by a TTL index on the last use.

Both keep the first vector written for a key (insert-or-ignore), so every reader of a key gets the same
vector whoever computed it.

Also the process's one embedder per (model, backend): the core's `Embedder` is built here from settings
(model, backend, threads, long-text handling), so the core itself reads no environment.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from streams.core.embedding import Backend, CacheStats, Embedder, EmbeddingStore, default_model_path
from streams.settings import Settings


@dataclass(frozen=True)
class EmbedderDefaults:
    """How `get_embedder` builds in this process; set once from settings at start-up (`configure`)."""

    backend: Backend = field(default_factory=Backend)
    threads: int = 0
    long_texts: str = "mean"


_defaults = EmbedderDefaults()


def configure(backend: Backend | None = None, threads: int | None = None, long_texts: str | None = None) -> None:
    """Set this process's embedder defaults (the parts given)."""
    global _defaults
    changes = {"backend": backend, "threads": threads, "long_texts": long_texts}
    _defaults = replace(_defaults, **{k: v for k, v in changes.items() if v is not None})


def get_embedder(
    model_path: str | None = None, backend: Backend | None = None, long_texts: str | None = None
) -> Embedder:
    """One embedder (model and caches) per model, backend, threads and long-text handling per process."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are on disk: never ask the network
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    resolved = str(Path(model_path or default_model_path()).resolve())
    wanted = replace(_defaults, backend=backend or _defaults.backend, long_texts=long_texts or _defaults.long_texts)
    return _embedder_for(resolved, wanted)


@functools.cache
def _embedder_for(resolved_path: str, defaults: EmbedderDefaults) -> Embedder:
    return Embedder(resolved_path, backend=defaults.backend, threads=defaults.threads, long_texts=defaults.long_texts)


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

    def count(self) -> int:
        with self._lock:
            return int(self.db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        self.db.close()


class MongoEmbeddingStore:
    """One document per (model, key): `_id` "model|key", the vector as float32 bytes, `used` for the TTL."""

    def __init__(self, url: str, database: str, collection: str = "embeddings", ttl_days: int = 30) -> None:
        from pymongo import MongoClient

        self.client: Any = MongoClient(url, serverSelectionTimeoutMS=10_000)
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

    def close(self) -> None:
        self.client.close()


def open_store(settings: Settings) -> EmbeddingStore | None:
    """The store `settings.embed_cache` names ("sqlite", "mongo" or "none")."""
    kind = settings.embed_cache
    if kind == "none":
        return None
    if kind == "sqlite":
        return SqliteEmbeddingStore(settings.embed_cache_file, settings.embed_cache_max_rows)
    if kind == "mongo":
        return MongoEmbeddingStore(settings.mongo_url, settings.mongo_database, ttl_days=settings.embed_cache_ttl_days)
    raise ValueError(f"unknown embedding cache {kind!r}: use sqlite, mongo or none")


def embedder_for(settings: Settings, long_texts: str | None = None) -> Embedder:
    """This process's embedder as the settings ask: backend, model, and the shared store attached.

    `long_texts` overrides `settings.embed_long_chunks`: `semantic` and `cluster` embed their sentence
    units as the model reads them ("truncate"), so the setting never moves a chunk boundary; whole
    chunks (the vector sink, search) are embedded as the setting says."""
    configure(Backend(settings.embed_backend, settings.onnx_dir), settings.embed_threads, settings.embed_long_chunks)
    embedder = get_embedder(settings.embed_model, long_texts=long_texts)
    if all(e is not embedder for e in _set_up):
        embedder.attach(open_store(settings))
        if not _set_up:  # one collector per process, over every embedder it built
            from prometheus_client import REGISTRY

            from streams.runtime.metrics import EmbeddingCacheCollector

            REGISTRY.register(EmbeddingCacheCollector(lambda: _total_stats(_set_up)))
        _set_up.append(embedder)
    return embedder


def _total_stats(embedders: Sequence[Embedder]) -> CacheStats:
    total = CacheStats()
    for embedder in embedders:
        for name in ("hits", "shared_hits", "misses", "long"):
            setattr(total, name, getattr(total, name) + getattr(embedder.stats, name))
    return total


_set_up: list[Embedder] = []
