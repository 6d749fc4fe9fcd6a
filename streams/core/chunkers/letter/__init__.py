"""Strategy `letter` (seed 000): shareholder letters in tier-1 sections and tier-2 tables."""

from collections.abc import Mapping
from typing import Any

from streams.core.chunkers.base import Limits, Strategy
from streams.core.chunkers.letter.chunker import LetterChunker, seed_object, seed_objects
from streams.core.chunkers.letter.conformance import rules
from streams.core.chunkers.letter.gate import coherence, validate
from streams.core.chunkers.letter.options import LetterOptions
from streams.core.chunkers.letter.summary import validate_summary


def _limits(options: Mapping[str, Any]) -> Limits:
    """A letter's sizes are its own rules (`rules`); its chunks may carry rewritten text (a table's summary)."""
    return Limits(verbatim=False)


STRATEGY = Strategy("letter", LetterOptions, f"{__name__}.chunker:LetterChunker", limits=_limits, rules=rules)

__all__ = [
    "STRATEGY",
    "LetterChunker",
    "LetterOptions",
    "coherence",
    "seed_object",
    "seed_objects",
    "validate",
    "validate_summary",
]
