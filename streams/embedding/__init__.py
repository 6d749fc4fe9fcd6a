"""Sentence embeddings, in one package: the model's files (`files`), the ONNX graph written from its weights
(`graph`), ONNX Runtime sessions (`onnx`), the embedder with its caches (`model`) and the embedding stores a
deployment shares, built from the settings (`stores`).

It sits above the pure core: the strategies that embed are handed an embedder (the core's
`SentenceEmbedder` contract) and never import this package.
"""

from __future__ import annotations

from streams.core.chunkers.base import EmbeddingUnavailable
from streams.embedding.model import Backend, CacheStats, Embedder, EmbeddingStore, default_model_path, embedding_key
from streams.embedding.stores import (
    MongoEmbeddingStore,
    SqliteEmbeddingStore,
    cache_stats,
    embedder_for,
    get_embedder,
    open_store,
    vector_embedder_for,
)

__all__ = [
    "Backend",
    "CacheStats",
    "Embedder",
    "EmbeddingStore",
    "EmbeddingUnavailable",
    "MongoEmbeddingStore",
    "SqliteEmbeddingStore",
    "cache_stats",
    "default_model_path",
    "embedder_for",
    "embedding_key",
    "get_embedder",
    "open_store",
    "vector_embedder_for",
]
