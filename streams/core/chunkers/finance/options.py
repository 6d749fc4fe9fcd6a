"""finance's options: defaults = its specification's values, bounds and cross-field checks."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from streams.core.options import StrategyOptions


class FinanceOptions(StrategyOptions):
    strategy: ClassVar[str] = "finance"
    seed: ClassVar[str] = "001"
    summary: ClassVar[str] = "speaker turns, Q&A pairs, statements and their tables"

    doc_types: tuple[str, ...] = Field(
        ("transcript", "release", "slides", "press"),
        description="seed 001's scope: earnings transcripts, releases, slide decks and press releases",
    )

    min_tokens: int = Field(500, ge=1, le=100_000, description="transcript and deck chunks merge below this")
    max_tokens: int = Field(1200, ge=1, le=100_000, description="transcript and deck chunks split above this")
    press_min_tokens: int = Field(400, ge=1, le=100_000, description="press-release chunks merge below this")
    press_max_tokens: int = Field(800, ge=1, le=100_000, description="press-release chunks split above this")
    synopsis_rows: int = Field(4, ge=0, le=1000, description="table rows quoted in a table's synopsis")

    @model_validator(mode="after")
    def _ordered(self) -> FinanceOptions:
        self._not_above("min_tokens", "max_tokens")
        self._not_above("press_min_tokens", "press_max_tokens")
        return self
