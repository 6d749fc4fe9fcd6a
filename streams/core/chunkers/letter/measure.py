"""Token sizes for every stage of the letter chunker: the seed's tiers and one counter of the letter's spans."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streams.core.chunkers.letter.layout import Block
from streams.core.tokenizers import Tokenizer, span_counter

TABLE_TOKENS = 16  # a table in a tier-1 chunk costs its placeholder line, not its rows


@dataclass(frozen=True, slots=True)
class Tiers:
    """The letter's sizes (docs/strategies.md#letter-5-tiers-and-sizes): tier-1 sections of t1_min-t1_max tokens cut
    near t1_target; nothing below t2_min."""

    t1_min: int
    t1_max: int
    t1_target: int
    t2_min: int

    @property
    def t1_limit(self) -> int:
        """Unit costs add up to within a token or two of the emitted text's count (BPE merges at the seams)."""
        return self.t1_max - 4


class Tokens:
    """Token counts of spans of one letter's text. The stages ask for the same spans many times, so counts
    are memoised; a count depends only on the span, so the memo is a cache, never state a stage reads."""

    def __init__(self, tokenizer: Tokenizer, text: str) -> None:
        self.tokenizer = tokenizer
        self.text = text
        self._span_count = span_counter(tokenizer, text)
        self._counts: dict[tuple[int, int], int] = {}

    def count(self, start: int, end: int) -> int:
        """Tokens of text[start:end]."""
        key = (start, end)
        if key not in self._counts:
            self._counts[key] = self._span_count(start, end)
        return self._counts[key]

    def of_text(self, text: str) -> int:
        """Tokens of a text that is not a span of the letter (a tier-1 chunk with table placeholders)."""
        return self.tokenizer.count(text)

    def block(self, b: Block) -> int:
        return TABLE_TOKENS if b.kind == "table" else self.count(b.start, b.end)

    def costs(self, units: Sequence[Sequence[Block]]) -> list[int]:
        """Tokens each unit adds to a piece, the gap before it included and a table counted as its
        placeholder line, so that sums match the emitted text's count (blank lines and indents are tokens)."""
        costs: list[int] = []
        prev_end: int | None = None
        for u in units:
            cursor = u[0].start if prev_end is None else prev_end
            total = 0
            for b in u:
                if b.kind == "table":
                    total += (self.count(cursor, b.start) if cursor < b.start else 0) + self.block(b)
                    cursor = b.end
            costs.append(total + (self.count(cursor, u[-1].end) if cursor < u[-1].end else 0))
            prev_end = u[-1].end
        return costs
