"""Strategy registry. Strategies load lazily so a worker only imports what it runs (docling, torch)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any

from streams.core.chunkers.base import ChunkDraft, Chunker, ChunkingError, registered
from streams.core.options import OPTIONS, OptionsError, StrategyOptions, make_options
from streams.core.tokenizers import Tokenizer, get_tokenizer

#: Every strategy, in the order of the seeds. Each is the module `streams.core.chunkers.<name>`, whose
#: class registers itself by its `name` (`Chunker.__init_subclass__`); modules load lazily so a worker
#: only imports what it runs (docling, torch).
STRATEGIES: tuple[str, ...] = tuple(OPTIONS)


class UnknownStrategy(OptionsError):
    pass


def strategy_module(name: str) -> str:
    """Where strategy `name` lives (UnknownStrategy for a name no seed declares)."""
    if name not in OPTIONS:
        raise UnknownStrategy(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    return f"{__name__}.{name}"


def strategy_class(name: str) -> type[Chunker]:
    """The class of strategy `name`, its module imported now if it was not yet."""
    module_name = strategy_module(name)
    try:
        importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise UnknownStrategy(f"strategy {name!r} is not built yet") from exc
        raise
    cls = registered(name)
    if cls is None:
        raise UnknownStrategy(f"{module_name} defines no Chunker with name = {name!r}")
    return cls


def available_strategies() -> list[str]:
    """Strategies whose module is present in this build."""
    return [name for name in STRATEGIES if importlib.util.find_spec(strategy_module(name)) is not None]


#: Strategies that embed sentences (and so take an `embedder`).
EMBEDDING_STRATEGIES = ("semantic", "cluster")


def get_chunker(
    name: str,
    options: StrategyOptions | Mapping[str, Any] | None = None,
    *,
    tokenizer: Tokenizer | None = None,
    embedder: Any = None,
    **overrides: Any,
) -> Chunker:
    """The one way to build a strategy: options validated (OptionsError, one line), tokenizer and embedder
    injected by the caller. The seed's defaults give today's ids; changed options give a new lineage."""
    strategy_module(name)  # an unknown name is one line before its options are read
    if isinstance(options, StrategyOptions):
        chosen = make_options(name, {**options.model_dump(), **overrides} if overrides else options)
    elif options is None or isinstance(options, Mapping):
        chosen = make_options(name, {**dict(options or {}), **overrides})
    else:
        raise TypeError(f"options must be StrategyOptions or a mapping, not {type(options).__name__} (tokenizer=?)")
    cls = strategy_class(name)
    # Every option, routing ones too: the chunker keeps the whole model (what it takes, its lineage).
    values: dict[str, Any] = chosen.model_dump()
    if name in EMBEDDING_STRATEGIES:
        if embedder is None:
            raise OptionsError(f"{name} embeds sentences: pass embedder= (streams.embedstore.get_embedder())")
        values["embedder"] = embedder
    return cls(tokenizer or get_tokenizer(), **values)


__all__ = [
    "EMBEDDING_STRATEGIES",
    "OPTIONS",
    "STRATEGIES",
    "ChunkDraft",
    "Chunker",
    "ChunkingError",
    "OptionsError",
    "UnknownStrategy",
    "get_chunker",
    "strategy_class",
    "strategy_module",
]
