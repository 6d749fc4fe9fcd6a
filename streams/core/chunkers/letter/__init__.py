"""Strategy `letter` (seed 000): shareholder letters in tier-1 sections and tier-2 tables."""

from streams.core.chunkers.letter.chunker import LetterChunker, seed_object, seed_objects
from streams.core.chunkers.letter.gate import coherence, validate
from streams.core.chunkers.letter.summary import validate_summary

__all__ = ["LetterChunker", "coherence", "seed_object", "seed_objects", "validate", "validate_summary"]
