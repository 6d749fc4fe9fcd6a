"""section's options: defaults = its specification's values, bounds and cross-field checks."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, field_validator, model_validator

from streams.core.chunkers.base import FRAGMENT_TOKENS
from streams.core.options import StrategyOptions

#: The file filter's keywords (docs/strategies.md#section-1-scope-and-the-file-filter), and the acronyms of
#: what it includes: statement of work, performance work statement, statement of objectives, quality assurance
#: surveillance plan, RFx, and amendments.
FILTER_INCLUDE = (
    "scope",
    "requirement",
    "specification",
    "solicitation",
    "terms",
    "condition",
    "work",
    "technical",
    "statement",
    "criteria",
    "evaluation",
    "proposal",
    "amendment",
    "sow",
    "pws",
    "soo",
    "qasp",
    "rfp",
    "rfq",
    "rfi",
)
FILTER_EXCLUDE = ("questionnaire", "form", "template", "blank", "example", "sample")


class SectionOptions(StrategyOptions):
    strategy: ClassVar[str] = "section"
    seed: ClassVar[str] = "002"
    summary: ClassVar[str] = "document sections of RFPs, with requirement and table flags"

    doc_types: tuple[str, ...] = Field(("solicitation",), description="seed 002's scope: solicitations (RFPs)")
    include_keywords: tuple[str, ...] = Field(
        FILTER_INCLUDE,
        description="seed 002's file filter: a file whose name or title lines have one of these words is chunked",
    )
    exclude_keywords: tuple[str, ...] = Field(
        FILTER_EXCLUDE,
        description="seed 002's file filter: a file whose name or title lines have one of these words is skipped "
        "(excludes win)",
    )

    min_tokens: int = Field(400, ge=1, le=100_000, description="sections merge below this")
    max_tokens: int = Field(600, ge=1, le=100_000, description="sections split above this")
    fragment_tokens: int = Field(
        FRAGMENT_TOKENS, ge=0, le=100_000, description="a piece this small joins a neighbour whatever its kind"
    )

    @field_validator("include_keywords", "exclude_keywords", mode="before")
    @classmethod
    def _words(cls, value: Any) -> Any:
        """`rfp,sow` from the environment or `--set`: lowercase words, in the order given."""
        if isinstance(value, str):
            value = [part for part in value.replace(" ", ",").split(",") if part]
        if isinstance(value, list | tuple):
            value = tuple(str(v).strip().lower() for v in value if str(v).strip())
        return value

    @model_validator(mode="after")
    def _ordered(self) -> SectionOptions:
        self._not_above("min_tokens", "max_tokens")
        self._not_above("fragment_tokens", "min_tokens")
        return self
