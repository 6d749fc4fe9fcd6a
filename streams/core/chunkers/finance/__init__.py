"""Strategy `finance` (seed 001): transcripts, earnings releases, slide decks and press releases."""

from streams.core.chunkers.finance.chunker import CHUNK_TYPES, FinanceChunker

__all__ = ["CHUNK_TYPES", "FinanceChunker"]
