"""Benchmarks: chunking throughput beside the libraries users would pick instead, and
retrieval quality on gold evidence spans. Heavy imports (torch, LangChain, chonkie, docling) happen
inside the functions that need them so `streams --help` stays fast."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streams.core.chunkers import EMBEDDING_STRATEGIES
from streams.embedding.stores import embedder_for
from streams.settings import load_settings
from streams.strategies import SENTENCE_UNITS, build_chunker

if TYPE_CHECKING:
    from streams.embedding.model import Embedder
    from streams.settings import Settings

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS")
# (description, completed, total): lets the CLI draw a progress bar without the benchmarks knowing rich.
Progress = Callable[[str, int, int], None]
#: A SQLite file of vectors kept between quality runs (`kept_vectors`); None: every text is embedded.
_kept_vectors: ContextVar[Path | None] = ContextVar("kept_vectors", default=None)


class BenchError(RuntimeError):
    """An expected failure (missing corpus, missing library) with a one-line message for the user."""


@contextmanager
def single_core() -> Iterator[None]:
    """Pin numeric libraries to one thread while measuring, so every candidate runs on one core;
    restore the previous settings afterwards (the tests share a process with other suites).

    The environment variables bind native libraries loaded inside the block; torch, whose pool
    already exists once imported, is told directly.
    """
    wanted = {**dict.fromkeys(THREAD_VARIABLES, "1"), "TOKENIZERS_PARALLELISM": "false", "STREAMS_EMBED_THREADS": "1"}
    with environment(**wanted):
        torch: Any = None
        with contextlib.suppress(ImportError):
            import torch
        saved_threads = torch.get_num_threads() if torch is not None else 0
        if torch is not None:
            torch.set_num_threads(1)
        try:
            yield
        finally:
            if torch is not None:
                torch.set_num_threads(saved_threads)


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """The variables set inside the block (settings, and the workers a bench starts, read them), restored after."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, before in saved.items():
            if before is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = before


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container's cpuset narrows)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def bench_settings() -> Settings:
    """The settings in-process measurements run with: embedding on one thread unless
    `STREAMS_EMBED_THREADS` says otherwise, so every candidate runs on one core."""

    settings = load_settings()
    if settings.embed_threads is None:
        settings = settings.model_copy(update={"embed_threads": 1})
    return settings


@contextmanager
def kept_vectors(path: Path) -> Iterator[None]:
    """Inside the block the bench's embedders keep their vectors in the SQLite file `path` and read them
    back on the next run, so a re-run embeds only the texts it has not seen. Only where the figures are
    scores, not speed: a vector is the same bytes cached or not (`streams.embedding.model`)."""
    token = _kept_vectors.set(path.absolute())
    try:
        yield
    finally:
        _kept_vectors.reset(token)


def bench_embedder(long_texts: str | None = None, backend: str | None = None) -> Embedder:
    """The embedder a measurement uses, from `bench_settings` (model, backend, threads, long-text handling)
    with `backend` and `long_texts` overriding them, and no shared store: a measurement must embed what
    it measures (inside `kept_vectors`, the file it names). Equal arguments give the same embedder, so one
    measurement can clear another's cache."""

    settings = bench_settings()
    if backend is not None:
        settings = settings.model_copy(update={"embed_backend": backend})
    kept = _kept_vectors.get()
    if kept is not None:
        settings = settings.model_copy(update={"embed_cache": "sqlite", "embed_cache_path": kept})
    return embedder_for(settings, long_texts, shared=kept is not None)


def bench_chunker(name: str, embedder: Any = None, overrides: Mapping[str, Any] | None = None) -> Any:
    """A strategy as the settings configure it (`STREAMS_<STRATEGY>__<OPTION>`, `--config`), with the
    bench's embedder (`bench_embedder`) unless one is given."""

    if name in EMBEDDING_STRATEGIES and embedder is None:
        embedder = bench_embedder(SENTENCE_UNITS)
    return build_chunker(name, bench_settings(), overrides, embedder=embedder)


def missing_packages(wanted: Mapping[str, str]) -> list[str]:
    """The packages (module -> package name) whose module is not importable, for one clear error."""
    import importlib.util

    missing = []
    for module, package in wanted.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a dotted module whose parent package is missing
            found = False
        if not found:
            missing.append(package)
    return missing


def baseline_libraries_missing() -> list[str]:
    """The `bench` extra's packages that are not importable (for tests and for a clear error)."""
    return missing_packages(
        {
            "langchain_text_splitters": "langchain-text-splitters",
            "langchain_experimental": "langchain-experimental",
            "chonkie": "chonkie",
            "semchunk": "semchunk",
        }
    )


__all__ = [
    "BenchError",
    "Progress",
    "baseline_libraries_missing",
    "bench_chunker",
    "bench_embedder",
    "environment",
    "kept_vectors",
    "single_core",
    "usable_cores",
]
