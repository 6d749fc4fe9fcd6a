"""Strategy `hybrid` (seed 003): Docling's HybridChunker over the document's structure, with chunk context.

This module is the declaration, light on purpose: the chunker (`chunker.py`) imports docling, so a process
imports it only when it builds the strategy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field, model_validator

from streams.core.chunkers.base import Limits, Strategy
from streams.core.chunkers.hybrid.conformance import rules
from streams.core.options import StrategyOptions


class HybridOptions(StrategyOptions):
    strategy: ClassVar[str] = "hybrid"
    seed: ClassVar[str] = "003"
    summary: ClassVar[str] = "Docling's HybridChunker over document structure"

    max_tokens: int = Field(512, ge=16, le=100_000, description="the most tokens a chunk may hold")
    min_tokens: int | None = Field(
        None, ge=0, le=100_000, description="undersized peers merge below this (default: min(64, max_tokens / 4))"
    )
    merge_peers: bool = Field(True, description="merge undersized neighbours under one heading")

    @model_validator(mode="after")
    def _ordered(self) -> HybridOptions:
        if self.min_tokens is None:  # resolved, so an explicit default is the default (same lineage)
            object.__setattr__(self, "min_tokens", min(64, self.max_tokens // 4))
        self._not_above("min_tokens", "max_tokens")
        return self


def _limits(options: Mapping[str, Any]) -> Limits:
    return Limits(max_tokens=options["max_tokens"])


STRATEGY = Strategy("hybrid", HybridOptions, f"{__name__}.chunker:HybridChunker", limits=_limits, rules=rules)

__all__ = ["STRATEGY", "HybridOptions"]
