"""Property-based: arbitrary page events never crash the assembler or any chunker, and every chunk's
range slices the document stream to its text (or a documented transformation) within its pages."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.core.assembly import Assembler, Completed, Dead, Limits
from streams.core.chunkers import ChunkingError, available_strategies
from streams.core.document import assemble
from streams.core.events import DocType, PageEvent
from streams.core.records import build_records
from tests.conftest import strategy_chunker

PIECES = st.sampled_from(
    [
        "word",
        "Section 1: SCOPE",
        "## Heading",
        "1.2 Requirements",
        "The contractor shall comply.",
        "| CLIN | Item | Price |",
        "|---|---|---|",
        "| 0001 | Sensor | $1,200 |",
        "Revenue rose 5% YoY to $2.5 billion.",
        "* * *",
        "Operator",
        "John Smith - Acme Capital",
        "Question-and-Answer Session",
        "Warren E. Buffett",
        "To the Shareholders of Example Inc.:",
        "Float ......... 1,234   1,456",
        "\u00e9t\u00e9",
        "\u202e\u200b",
        "\t",
        "  ",
        "\n",
        "\n\n",
        "[[PAGE_BREAK]]",
        ".",
        "?",
        "1999",
        "(12.5)",
        "%",
    ]
)
TEXT = st.lists(st.one_of(PIECES, st.text(max_size=12)), max_size=60).map(" ".join)


def page_events(texts: list[str], doc_type: DocType) -> list[PageEvent]:
    return [
        PageEvent(doc_id="p", document_name="p.txt", page_number=i, page_count=len(texts), text=t, doc_type=doc_type)
        for i, t in enumerate(texts, start=1)
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.binary(max_size=200), st.dictionaries(st.text(max_size=12), st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=10), max_size=8).map(lambda d: json.dumps(d).encode())), max_size=8))  # fmt: skip
def test_assembler_never_raises_on_arbitrary_bytes(messages: list[bytes]) -> None:
    assembler = Assembler({}, {}, Limits(max_pages=50))
    for index, raw in enumerate(messages):
        for outcome in assembler.on_page(raw, 0, index):
            assert isinstance(outcome, Completed | Dead)
            if isinstance(outcome, Dead):
                assert outcome.code and outcome.reason and outcome.pages
    for outcome in assembler.on_tick(0, 10**12):
        assert isinstance(outcome, Dead) and outcome.pages


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=4), st.permutations(list(range(4))))
def test_assembler_completes_any_page_order(texts: list[str], order: list[int]) -> None:
    pages = page_events(texts, DocType.generic)
    assembler = Assembler({}, {})
    outcomes = []
    for index in [i for i in order if i < len(pages)]:
        outcomes += assembler.on_page(pages[index].model_dump_json().encode(), 0, 0)
    assert len(outcomes) == 1
    if isinstance(outcomes[0], Completed):
        assert outcomes[0].document.text == assemble(pages).text
    else:
        assert outcomes[0].code == "empty_document"


HEAVY = {"semantic": 12, "cluster": 12, "hybrid": 15}


@pytest.mark.parametrize("strategy", available_strategies())
def test_chunkers_keep_ranges_and_pages_on_arbitrary_documents(strategy: str) -> None:
    chunker = strategy_chunker(strategy)

    @settings(max_examples=HEAVY.get(strategy, 60), deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(TEXT, min_size=1, max_size=3), st.sampled_from(list(DocType)))
    def check(texts: list[str], doc_type: DocType) -> None:
        doc = assemble(page_events(texts, doc_type))
        try:
            drafts = chunker.chunk(doc)
        except ChunkingError as exc:
            assert str(exc) and exc.code
            return
        for draft in drafts:
            assert 0 <= draft.char_start <= draft.char_end <= len(doc.text)
            if draft.text_transform is None:
                assert doc.text[draft.char_start : draft.char_end] == draft.text
        for record in build_records(doc, chunker, drafts):
            assert set(record.page_numbers) <= set(range(1, doc.page_count + 1))

    check()
