"""Strategy `finance` (seed 001): transcripts, earnings releases, slide decks and press releases."""

from collections.abc import Mapping
from typing import Any

from streams.core.chunkers.base import Limits, Strategy
from streams.core.chunkers.finance.chunker import CHUNK_TYPES, FinanceChunker
from streams.core.chunkers.finance.options import FinanceOptions

#: Units the finance strategy never splits (a Q&A pair, a table, a slide, prepared remarks).
WHOLE_UNITS = frozenset({"qna", "table", "slide", "prepared_remarks"})


def _limits(options: Mapping[str, Any]) -> Limits:
    return Limits(max_tokens=options["max_tokens"], whole_units=WHOLE_UNITS)


STRATEGY = Strategy("finance", FinanceOptions, f"{__name__}.chunker:FinanceChunker", limits=_limits)

__all__ = ["CHUNK_TYPES", "STRATEGY", "WHOLE_UNITS", "FinanceChunker", "FinanceOptions"]
