"""The legacy word window of seed 003: 250 words with 50 words of overlap, exact character ranges
(docs/strategies.md#window-1-word-windows)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field, model_validator

from streams.core.chunkers.base import ChunkDraft, Chunker, Limits, Strategy
from streams.core.document import pages_for_range
from streams.core.events import AssembledDocument
from streams.core.options import StrategyOptions, require
from streams.core.text import WORD


class WindowOptions(StrategyOptions):
    strategy: ClassVar[str] = "window"
    seed: ClassVar[str] = "003"
    summary: ClassVar[str] = "fixed word windows with overlap"

    chunk_size_words: int = Field(250, ge=1, le=100_000, description="words per chunk")
    chunk_overlap_words: int = Field(50, ge=0, le=100_000, description="words shared with the previous chunk")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> WindowOptions:
        require(
            self.chunk_overlap_words < self.chunk_size_words,
            f"chunk_overlap_words ({self.chunk_overlap_words}) must be below "
            f"chunk_size_words ({self.chunk_size_words})",
        )
        return self


class WindowChunker(Chunker):
    name = "window"
    version = "1.0.0"
    metadata_record = "streams.meta.WindowMetadata"
    options_model = WindowOptions
    options: WindowOptions

    @property
    def size(self) -> int:
        """Words per window: a read-only view of the model, which callers and tests read by this name."""
        return self.options.chunk_size_words

    @property
    def overlap(self) -> int:
        """Words shared with the previous window, read from the model."""
        return self.options.chunk_overlap_words

    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        spans = [m.span() for m in WORD.finditer(doc.text)]
        drafts: list[ChunkDraft] = []
        step = self.size - self.overlap
        for first in range(0, len(spans), step):
            last = min(first + self.size, len(spans)) - 1
            start, end = spans[first][0], spans[last][1]
            pages = pages_for_range(doc.page_map, start, end)
            drafts.append(
                ChunkDraft(
                    text=doc.text[start:end],
                    char_start=start,
                    char_end=end,
                    content_type="text",
                    metadata={
                        "page_num": pages[0] if pages else 1,
                        "word_count": last - first + 1,
                        "start_word": first,
                        "end_word": last + 1,
                        "chunk_size_words": self.size,
                        "chunk_overlap_words": self.overlap,
                    },
                )
            )
            if last == len(spans) - 1:
                break
        return drafts


def _limits(options: Mapping[str, Any]) -> Limits:
    return Limits(max_words=options["chunk_size_words"], overlapping=True)


STRATEGY = Strategy("window", WindowOptions, f"{__name__}:WindowChunker", limits=_limits)
