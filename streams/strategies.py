"""Settings to chunkers: the one path from the outside in.

environment (`STREAMS_SECTION__MAX_TOKENS`) / config file (`--config`, a `[section]` table) / CLI `--set`
→ `Settings` → `streams.core.options` (validated, one clear line when bad) → `get_chunker(name, options,
tokenizer=..., embedder=...)`. Workers, the CLI, the bench and the audit all build strategies here, so
they all agree on the options and so on the lineage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streams.core.chunkers import EMBEDDING_STRATEGIES, OPTIONS, Chunker, get_chunker, make_options
from streams.core.options import OptionsError, StrategyOptions
from streams.core.tokenizers import get_tokenizer
from streams.embedding.stores import embedder_for
from streams.settings import Settings

#: How `semantic` and `cluster` embed their sentence units: as the model reads them, whatever
#: `STREAMS_EMBED_LONG_CHUNKS` says about whole chunks, so that setting never moves a chunk boundary.
SENTENCE_UNITS = "truncate"


def options_for(settings: Settings, strategy: str, overrides: Mapping[str, Any] | None = None) -> StrategyOptions:
    """The strategy's options: its settings (environment, config file) with `overrides` (`--set`) on top."""
    if strategy not in type(settings).model_fields or not isinstance(getattr(settings, strategy), dict):
        return make_options(strategy, dict(overrides or {}))  # make_options names the unknown strategy
    return make_options(strategy, {**getattr(settings, strategy), **dict(overrides or {})})


def build_chunker(
    strategy: str, settings: Settings, overrides: Mapping[str, Any] | None = None, embedder: Any = None
) -> Chunker:
    """A chunker as the settings configure it; the embedding strategies get this process's embedder."""
    options = options_for(settings, strategy, overrides)
    if strategy in EMBEDDING_STRATEGIES and embedder is None:
        embedder = embedder_for(settings, long_texts=SENTENCE_UNITS)
    return get_chunker(strategy, options, tokenizer=get_tokenizer(settings.tokenizer), embedder=embedder)


def check_options(settings: Settings, strategies: Iterable[str] = ()) -> list[StrategyOptions]:
    """Validate the named strategies' options and every strategy given any setting, before anything
    starts: a bad value anywhere is one line (OptionsError) and the process refuses to start."""

    configured = [name for name in OPTIONS if getattr(settings, name, None)]
    names = list(dict.fromkeys([*strategies, *configured]))
    return [options_for(settings, name) for name in names]


def long_chunk_warning(options: StrategyOptions, long_chunks: str, max_pieces: int) -> str | None:
    """A line for the log when the strategy may make chunks longer than the embedding model reads
    (`max_pieces`, from the model's own files)."""
    limits = {k: v for k, v in options.model_dump().items() if k.endswith("max_tokens") or k == "chunk_size_words"}
    over = {k: v for k, v in limits.items() if isinstance(v, int) and v > max_pieces}
    if not over:
        return None
    what = ", ".join(f"{k}={v}" for k, v in sorted(over.items()))
    handling = (
        "embedded as the mean of windows"
        if long_chunks == "mean"
        else "embedded truncated (their tails are not searchable)"
    )
    return (
        f"{options.strategy}: {what} allows chunks past the embedding model's {max_pieces} word pieces; "
        f"such chunks are counted and {handling} (STREAMS_EMBED_LONG_CHUNKS)"
    )


__all__ = ["OptionsError", "build_chunker", "check_options", "long_chunk_warning", "options_for"]
