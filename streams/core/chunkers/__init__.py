"""Strategy registry. Strategies load lazily so a worker only imports what it runs (docling, torch)."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from streams.core.chunkers.base import ChunkDraft, Chunker, ChunkingError
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


class UnknownStrategy(ValueError):
    pass


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


def get_chunker(name: str, tokenizer: Tokenizer | None = None, **options: Any) -> Chunker:
    if name not in STRATEGIES:
        raise UnknownStrategy(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    module_name, class_name = STRATEGIES[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise UnknownStrategy(f"strategy {name!r} is not built yet") from exc
        raise
    cls: type[Chunker] = getattr(module, class_name)
    return cls(tokenizer or get_tokenizer(), **options)


__all__ = [
    "EMBEDDING_STRATEGIES",
    "STRATEGIES",
    "ChunkDraft",
    "Chunker",
    "ChunkingError",
    "UnknownStrategy",
    "get_chunker",
]
