"""Benchmarks: chunking throughput beside the libraries users would pick instead, and
retrieval quality on gold evidence spans. Heavy imports (torch, LangChain, chonkie, docling) happen
inside the functions that need them so `streams --help` stays fast."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS")
# (description, completed, total): lets the CLI draw a progress bar without the benchmarks knowing rich.
Progress = Callable[[str, int, int], None]


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
    saved_env = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
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
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def bench_chunker(name: str, embedder: Any = None, overrides: Mapping[str, Any] | None = None) -> Any:
    """A strategy as the settings configure it (`STREAMS_<STRATEGY>__<OPTION>`, `--config`), with this
    process's embedder but no shared embedding store: a measurement must embed what it measures."""
    from streams.core.chunkers import EMBEDDING_STRATEGIES
    from streams.settings import load_settings
    from streams.strategies import build_chunker

    settings = load_settings()
    if name in EMBEDDING_STRATEGIES and embedder is None:
        from streams.embedstore import get_embedder
        from streams.strategies import SENTENCE_UNITS

        embedder = get_embedder(settings.embed_model, long_texts=SENTENCE_UNITS)
    return build_chunker(name, settings, overrides, embedder=embedder)


def baseline_libraries_missing() -> list[str]:
    """The `bench` extra's packages that are not importable (for tests and for a clear error)."""
    import importlib.util

    wanted = {
        "langchain_text_splitters": "langchain-text-splitters",
        "langchain_experimental": "langchain-experimental",
        "chonkie": "chonkie",
        "semchunk": "semchunk",
    }
    return [pkg for module, pkg in wanted.items() if importlib.util.find_spec(module) is None]


__all__ = ["BenchError", "Progress", "baseline_libraries_missing", "single_core"]
