"""letter's options: defaults = its specification's values, bounds and cross-field checks."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from streams.core.options import StrategyOptions, require


class LetterOptions(StrategyOptions):
    strategy: ClassVar[str] = "letter"
    seed: ClassVar[str] = "000"
    summary: ClassVar[str] = "tier-1 sections and tier-2 tables of shareholder letters"

    doc_types: tuple[str, ...] = Field(("letter",), description="seed 000's scope: shareholder letters")

    section_min_tokens: int = Field(250, ge=1, le=100_000, description="tier-1 section chunks merge below this")
    section_target_tokens: int = Field(500, ge=1, le=100_000, description="where an over-long section is cut")
    section_max_tokens: int = Field(800, ge=8, le=100_000, description="tier-1 section chunks split above this")
    min_tokens: int = Field(150, ge=1, le=100_000, description="the smallest chunk (and the prose a letter needs)")

    @model_validator(mode="after")
    def _ordered(self) -> LetterOptions:
        require(
            self.min_tokens <= self.section_min_tokens < self.section_target_tokens < self.section_max_tokens,
            "need min_tokens <= section_min_tokens < section_target_tokens < section_max_tokens, got "
            f"{self.min_tokens}, {self.section_min_tokens}, {self.section_target_tokens}, {self.section_max_tokens}",
        )
        return self
