"""Strategy registry. Strategies load lazily so a worker only imports what it runs (docling, torch)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from typing import Any

from streams.core.chunkers.base import ChunkDraft, Chunker, ChunkingError
from streams.core.options import OPTIONS, OptionsError, StrategyOptions, make_options
from streams.core.tokenizers import Tokenizer, get_tokenizer

# name -> "module:Class"; a strategy module may be missing until its issue lands.
STRATEGIES: dict[str, str] = {
    "window": "streams.core.chunkers.window:WindowChunker",
    "letter": "streams.core.chunkers.letter:LetterChunker",
    "finance": "streams.core.chunkers.finance:FinanceChunker",
    "section": "streams.core.chunkers.section:SectionChunker",
    "hybrid": "streams.core.chunkers.hybrid:HybridChunker",
    "semantic": "streams.core.chunkers.semantic:SemanticChunker",
    "cluster": "streams.core.chunkers.semantic:ClusterChunker",
}


class UnknownStrategy(OptionsError):
    pass


assert set(OPTIONS) == set(STRATEGIES), "every strategy declares its options in streams.core.options"


def available_strategies() -> list[str]:
    """Strategies whose module is present in this build."""
    found = []
    for name, target in STRATEGIES.items():
        module = target.split(":")[0]
        if importlib.util.find_spec(module) is not None:
            found.append(name)
    return found


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
    if name not in STRATEGIES:
        raise UnknownStrategy(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    if isinstance(options, StrategyOptions):
        chosen = make_options(name, {**options.model_dump(), **overrides} if overrides else options)
    elif options is None or isinstance(options, Mapping):
        chosen = make_options(name, {**dict(options or {}), **overrides})
    else:
        raise TypeError(f"options must be StrategyOptions or a mapping, not {type(options).__name__} (tokenizer=?)")
    module_name, class_name = STRATEGIES[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise UnknownStrategy(f"strategy {name!r} is not built yet") from exc
        raise
    cls: type[Chunker] = getattr(module, class_name)
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
]
