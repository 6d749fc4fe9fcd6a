"""The record builder's token counts, whether a chunker handed them over or the builder counted."""

from __future__ import annotations

import pytest

from streams.core.chunkers import ChunkingError
from streams.core.document import assemble
from streams.core.records import build_records
from streams.core.tokenizers import get_tokenizer
from streams.ingest.files import page_events
from streams.ops.pipeline import sample_paths
from tests.conftest import strategy_chunker


@pytest.mark.parametrize("strategy", ["section", "letter", "window", "finance"])
def test_token_count_is_the_tokenizers_count_of_the_text(strategy: str) -> None:
    chunker = strategy_chunker(strategy)
    tokenizer = get_tokenizer()
    handed_over = 0
    for path in sample_paths():
        doc = assemble(page_events(path))
        try:
            drafts = chunker.chunk(doc)
        except ChunkingError:  # a strategy may refuse a document of another type; not under test here
            continue
        handed_over += sum(d.tokens is not None for d in drafts)
        for record in build_records(doc, chunker, drafts):
            assert record.token_count == tokenizer.count(record.text), (path.name, record.position)
    if strategy in ("section", "letter"):
        assert handed_over > 0, "these strategies hand their span counts to the record builder"
