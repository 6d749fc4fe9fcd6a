"""The legacy word window of seed 003: 250 words with 50 words of overlap, exact character ranges."""

from __future__ import annotations

from streams.core.chunkers.base import ChunkDraft, Chunker
from streams.core.document import pages_for_range
from streams.core.events import AssembledDocument
from streams.core.text import WORD
from streams.core.tokenizers import Tokenizer


class WindowChunker(Chunker):
    name = "window"
    version = "1.0.0"
    metadata_record = "streams.meta.WindowMetadata"

    def __init__(self, tokenizer: Tokenizer, chunk_size_words: int = 250, chunk_overlap_words: int = 50) -> None:
        super().__init__(tokenizer)
        if chunk_size_words < 1 or not 0 <= chunk_overlap_words < chunk_size_words:
            raise ValueError("need chunk_size_words >= 1 and 0 <= overlap < size")
        self.size = chunk_size_words
        self.overlap = chunk_overlap_words

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
