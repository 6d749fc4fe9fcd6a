"""Vector indexes: one per embedding model, side by side, so a deployment moves to a new model without
downtime.

An index is a name bound to a model (a local directory or an endpoint's model), the backend that embeds its
chunks, its dimensions and its target (the LanceDB table or Pinecone namespace `chunks.NAME`). Its vector
sink is its own consumer group (`streams-sink-vectors.NAME`), so a new index backfills from the start of the
chunk and status topics while the current one keeps serving, and both take new chunks. The catalogue lives
in the deployment's MongoDB (collection `vector_indexes`), which every process of a deployment reads; the
index called `default` is the one the settings describe, and needs no entry. One index is promoted: the
one searches read (`streams search`, the console, `streams.api.search`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from streams.runtime.clients import client_options
from streams.settings import ConfigError, Settings

DEFAULT = "default"
COLLECTION = "vector_indexes"
_SERVING = "_serving"


@dataclass(frozen=True)
class VectorIndex:
    """One index as the catalogue keeps it; empty fields take the deployment's settings."""

    name: str
    model: str = ""  # STREAMS_EMBED_MODEL: a model directory, or the endpoint's model name
    url: str = ""  # STREAMS_EMBED_URL: an embeddings endpoint, "" for a local model
    backend: str = ""  # STREAMS_VECTOR_BACKEND
    max_tokens: int = 0  # an endpoint's STREAMS_EMBED_MAX_TOKENS
    tokenizer: str = ""  # an endpoint's STREAMS_EMBED_TOKENIZER
    dimension: int = 0
    created_ms: int = 0

    def settings(self, base: Settings) -> Settings:
        """`base` as this index's vector sink, search and audit need it: its model, backend and target. An
        endpoint's key is never kept here: each process reads it from its own settings (STREAMS_EMBED_API_KEY)."""
        update: dict[str, Any] = {"vector_index": self.name}
        if self.model:
            update["embed_model"] = self.model
        if self.name != DEFAULT:
            update["embed_url"] = self.url or None
        if self.max_tokens:
            update["embed_max_tokens"] = self.max_tokens
        if self.url and self.dimension:
            update["embed_dimensions"] = self.dimension
        if self.tokenizer:
            update["embed_tokenizer"] = self.tokenizer
        if self.backend:
            update["vector_backend"] = self.backend
        return base.model_copy(update=update)


@contextmanager
def catalogue(settings: Settings, timeout_ms: int = 5000) -> Iterator[Any]:
    """The catalogue's collection, its client closed on the way out."""
    from pymongo import MongoClient

    client: MongoClient = MongoClient(settings.mongo_url, **client_options(settings.mongo_url, timeout_ms))
    try:
        yield client[settings.mongo_database][COLLECTION]
    finally:
        client.close()


def indexes(settings: Settings, timeout_ms: int = 5000) -> list[VectorIndex]:
    """Every index of the deployment, `default` first (unless it was dropped)."""
    with catalogue(settings, timeout_ms) as collection:
        rows = list(collection.find({"_id": {"$ne": _SERVING}}))
    named = [
        VectorIndex(**{k: v for k, v in r.items() if k != "_id"}, name=r["_id"]) for r in rows if r["_id"] != DEFAULT
    ]
    default = [] if any(r["_id"] == DEFAULT for r in rows) else [VectorIndex(DEFAULT, model=settings.embed_model or "")]
    return [*default, *sorted(named, key=lambda i: i.name)]


def find(settings: Settings, name: str) -> VectorIndex:
    """The index called `name`; an unknown name is one line."""
    for index in indexes(settings):
        if index.name == name:
            return index
    raise ConfigError(f"no vector index {name!r}: `streams index create {name} --model ...` makes one")


def add(settings: Settings, index: VectorIndex) -> None:
    from pymongo.errors import DuplicateKeyError

    if index.name == DEFAULT:
        raise ConfigError("the index `default` is the one the settings describe: name a new one")
    row = {k: v for k, v in asdict(index).items() if k != "name"}
    with catalogue(settings) as collection:
        try:
            collection.insert_one({"_id": index.name, **row, "created_ms": int(time.time() * 1000)})
        except DuplicateKeyError:
            raise ConfigError(f"vector index {index.name!r} exists already") from None


def remove(settings: Settings, name: str) -> None:
    """Forget index `name`; the default index, which has no entry, is marked dropped instead."""
    with catalogue(settings) as collection:
        if name == DEFAULT:
            collection.replace_one({"_id": DEFAULT}, {"_id": DEFAULT, "dropped": True}, upsert=True)
        else:
            collection.delete_one({"_id": name})


def serving(settings: Settings) -> str:
    """The promoted index's name (`default` until another is promoted)."""
    with catalogue(settings) as collection:
        row = collection.find_one({"_id": _SERVING})
    return str(row["name"]) if row else DEFAULT


def promote(settings: Settings, name: str) -> None:
    find(settings, name)
    with catalogue(settings) as collection:
        collection.replace_one({"_id": _SERVING}, {"_id": _SERVING, "name": name}, upsert=True)


def index_settings(settings: Settings, name: str | None = None) -> Settings:
    """The settings of index `name`, or of the one STREAMS_VECTOR_INDEX names, or of the promoted one:
    what a search reads."""
    name = name or settings.vector_index or serving(settings)
    if name == DEFAULT:
        return settings.model_copy(update={"vector_index": DEFAULT})
    return find(settings, name).settings(settings)
