"""hybrid strategy (seed 003): Docling HybridChunker on the stream with real offsets and ChunkContext."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from docling_core.transforms.chunker.tokenizer.openai import OpenAITokenizer

from streams.codec.avro import AvroCodec
from streams.core.chunkers import get_chunker
from streams.core.chunkers.base import ChunkDraft, ChunkingError
from streams.core.chunkers.hybrid.blocks import parse_blocks
from streams.core.chunkers.hybrid.chunker import (
    ChunkContext,
    HybridChunker,
    contextualize_chunk,
    create_chunker,
    validate_chunk,
)
from streams.core.chunkers.window import WindowChunker
from streams.core.document import assemble
from streams.core.events import AssembledDocument, ChunkRecord, Element, PageEvent
from streams.core.records import build_records
from streams.core.tokenizers import get_tokenizer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "hybrid"
SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpora"
REVIEW = "Harbour Authority Annual Review"


def make_doc(pages: list[str], elements: list[Element] | None = None) -> AssembledDocument:
    events = [
        PageEvent(doc_id="doc-h", document_name="r.txt", page_number=n, page_count=len(pages), text=text)
        for n, text in enumerate(pages, start=1)
    ]
    if elements:
        events[0] = events[0].model_copy(update={"elements": elements})
    return assemble(events)


@pytest.fixture(scope="module")
def report() -> AssembledDocument:
    pages = (FIXTURES / "report.txt").read_text(encoding="utf-8").split("\f")
    return make_doc([p.strip("\n") for p in pages])


def chunk(doc: AssembledDocument, **options: object) -> list[ChunkDraft]:
    drafts = HybridChunker(get_tokenizer(), **options).chunk(doc)
    assert drafts
    for d in drafts:
        assert d.text == doc.text[d.char_start : d.char_end] and d.text == d.text.strip()
    assert all(a.char_end <= b.char_start for a, b in itertools.pairwise(drafts))
    return drafts


def containing(drafts: list[ChunkDraft], needle: str) -> ChunkDraft:
    return next(d for d in drafts if needle in d.text)


def test_blocks_detect_headings_tables_and_lists(report: AssembledDocument) -> None:
    blocks = parse_blocks(report)
    headings = [(b.level, b.text) for b in blocks if b.kind == "heading"]
    assert headings == [
        (0, REVIEW),
        (1, "Operations"),
        (2, "Cargo Volumes"),
        (2, "Passenger Services"),
        (1, "Finance"),
        (2, "Revenue"),
        (2, "Capital Projects"),
        (1, "SAFETY AND ENVIRONMENT"),
    ]
    (table,) = [b for b in blocks if b.kind == "table"]
    assert table.rows[0] == ["Terminal", "Containers", "Bulk tonnes"] and len(table.rows) == 4
    assert next(b.text for b in blocks if b.kind == "list_item") == "Summer timetable: eight sailings a day"
    for b in blocks:
        assert report.text[b.start : b.end].strip() and b.page in (1, 2)


def test_nested_heading_context(report: AssembledDocument) -> None:
    drafts = chunk(report, max_tokens=512, min_tokens=0)  # Docling's own chunks: no minimum-size merging
    cargo = containing(drafts, "Container traffic grew")
    assert cargo.section_path == (REVIEW, "Operations", "Cargo Volumes")
    meta = cargo.metadata
    assert meta["parent_heading"] == "Cargo Volumes" and meta["parent_heading_level"] == 2
    assert meta["section_path"] == f"{REVIEW} > Operations > Cargo Volumes"
    assert "table-0" in meta["related_tables"]  # "Table 1" is mentioned and the table sits in the chunk
    safety = containing(drafts, "no serious injuries")
    assert safety.section_path == (REVIEW, "SAFETY AND ENVIRONMENT")
    assert safety.metadata["parent_heading_level"] == 1
    assert containing(drafts, "Harbour Authority operates").metadata["parent_heading_level"] == 0
    assert not any("## Finance" in d.text or d.text.startswith("Cargo Volumes") for d in drafts)


def test_short_sections_merge_keep_their_headings_and_leave_no_fragment(report: AssembledDocument) -> None:
    plain = chunk(report, max_tokens=512, min_tokens=0)
    drafts = chunk(report, max_tokens=512)
    tokens = get_tokenizer().count
    assert min(tokens(d.text) for d in plain) < 64 and len(drafts) < len(plain)
    assert all(tokens(d.text) >= 30 for d in drafts) and all(tokens(d.text) <= 512 for d in drafts)
    safety = containing(drafts, "no serious injuries")
    assert "SAFETY AND ENVIRONMENT" in (*safety.section_path, *safety.metadata["merged_headings"])
    words = [w for d in drafts for w in report.text[d.char_start : d.char_end].split()]
    inner = [w for d in plain for w in report.text[d.char_start : d.char_end].split()]
    assert set(inner) <= set(words) and len(words) >= len(inner)  # merging drops nothing Docling kept


def test_small_budget_separates_table_and_list_items(report: AssembledDocument) -> None:
    drafts = chunk(report, max_tokens=48)
    table = containing(drafts, "North Quay | 41,200")
    assert table.content_type == "table_cell" and table.metadata["element_type"] == "table_cell"
    assert table.metadata["related_tables"] == ["table-0"]
    assert table.metadata["contextualized_text"].startswith(
        f"[Section: {REVIEW} > Operations > Cargo Volumes] [Type: table_cell] [Refers to: table-0] "
    )
    lists = containing(drafts, "Summer timetable")
    assert lists.content_type == "list_item" and "Charter cruises" in lists.text
    figure = containing(drafts, "Figure 2 compares")
    assert figure.metadata["related_pictures"] == ["figure-1"]
    records = build_records(report, HybridChunker(get_tokenizer(), max_tokens=48), drafts)
    assert max(r.token_count for r in records) <= 48


def test_oversized_paragraph_is_split_at_real_offsets() -> None:
    sentences = " ".join(f"Sentence number {i} talks about the weather on the coast." for i in range(120))
    doc = make_doc([f"# Weather\n\n{sentences}\n\nA closing line."])
    drafts = chunk(doc, max_tokens=64)
    assert len(drafts) >= 15
    records = build_records(doc, HybridChunker(get_tokenizer(), max_tokens=64), drafts)
    assert max(r.token_count for r in records) <= 64
    joined = " ".join(d.text for d in drafts)
    assert " ".join(joined.split()) == " ".join(f"{sentences} A closing line.".split())


def test_page_boundary_chunk(report: AssembledDocument) -> None:
    doc = make_doc(["# Notes\n\nThe first half of a thought about tides.", "The second half continues here."])
    (draft,) = chunk(doc)
    assert draft.metadata["page_nums"] == [1, 2] and draft.metadata["is_page_boundary"] is True
    assert draft.metadata["page_num"] == 1
    (record,) = build_records(doc, HybridChunker(get_tokenizer()), [draft])
    assert record.page_numbers == [1, 2]
    single = containing(chunk(report), "Dredging of the approach channel")
    assert single.metadata["page_nums"] == [2] and single.metadata["is_page_boundary"] is False


def test_headings_from_upstream_elements() -> None:
    doc = make_doc(
        ["Quarterly summary\n\nRevenue rose in every region during the quarter."],
        elements=[Element(kind="section_header", text="Quarterly summary", level=1)],
    )
    (draft,) = chunk(doc)
    assert draft.section_path == ("Quarterly summary",) and draft.metadata["parent_heading_level"] == 1


def test_contextualize_and_validate_follow_the_seed() -> None:
    context = ChunkContext(section_path="A > B", element_type="list_item", related_tables=["table-0"])
    assert contextualize_chunk("body", context) == "[Section: A > B] [Type: list_item] [Refers to: table-0] body"
    assert contextualize_chunk("body", None) == "body"
    assert contextualize_chunk("body", ChunkContext()) == "body"
    with pytest.raises(ChunkingError):
        validate_chunk("   ", 0, 1, None)
    with pytest.raises(ChunkingError):
        validate_chunk("text", 1, 3, ChunkContext(page_nums=[1, 2]))
    with pytest.raises(ChunkingError):
        validate_chunk("text", 1, 1, ChunkContext(section_path="x" * 500))
    validate_chunk("text", 1, 1, ChunkContext(section_path="x" * 499, page_nums=[1]))


def test_section_path_over_500_characters_is_a_chunking_error() -> None:
    long = "Heading " * 20
    doc = make_doc([f"# {long}A\n\n## {long}B\n\n### {long}C\n\n#### {long}D\n\nSome body text."])
    with pytest.raises(ChunkingError) as info:
        HybridChunker(get_tokenizer()).chunk(doc)
    assert info.value.code == "invalid_chunk"


def test_deterministic_and_avro_round_trip(report: AssembledDocument) -> None:
    first, second = chunk(report, max_tokens=64), chunk(report, max_tokens=64)
    assert first == second
    chunker = HybridChunker(get_tokenizer(), max_tokens=64)
    codec = AvroCodec()
    for record in build_records(report, chunker, first):
        back = ChunkRecord(**codec.decode("chunk_record", codec.encode("chunk_record", record.model_dump())))
        assert back == record


def test_uses_docling_with_an_offline_openai_tokenizer_and_cache() -> None:
    chunker = HybridChunker(get_tokenizer(), max_tokens=300)
    assert isinstance(chunker.docling.tokenizer, OpenAITokenizer)
    assert chunker.docling.max_tokens == 300 and chunker.docling.merge_peers is True
    assert chunker.docling_tokenizer.count_tokens("<|endoftext|> hello") > 1
    assert "<|endoftext|> hello" in chunker.docling_tokenizer._cache


def test_router_and_registry() -> None:
    assert isinstance(create_chunker("hybrid"), HybridChunker)
    legacy = create_chunker("legacy")
    assert isinstance(legacy, WindowChunker) and (legacy.size, legacy.overlap) == (250, 50)
    assert isinstance(get_chunker("hybrid"), HybridChunker)


@pytest.mark.parametrize(
    "pages",
    [
        ["   \n\n "],
        ["# Only a heading"],
        ["<|endoftext|> | | |\n|---|\n\u0000"],
        ["- a\n- b\n  - c\n1) d", "```\ncode without end"],
        ["WORD " * 2000],
        ["a  b  c\n1  2  3\n\n\ttab\tcells\there"],
    ],
)
def test_odd_input_never_raises_anything_but_chunking_error(pages: list[str]) -> None:
    doc = make_doc(pages)
    try:
        drafts = HybridChunker(get_tokenizer(), max_tokens=64).chunk(doc)
    except ChunkingError:
        return
    if not doc.text.strip():
        assert drafts == []
    for d in drafts:
        assert d.text == doc.text[d.char_start : d.char_end]


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["letters/1985.md", "chunking_eval/wikitexts.md"])
def test_corpus_offsets_and_bounds(name: str) -> None:
    path = SHARED / name
    if not path.exists():
        pytest.skip("shared corpora not present")
    text = path.read_text(encoding="utf-8")
    doc = make_doc([text[i : i + 20000] for i in range(0, len(text), 20000)])
    chunker = HybridChunker(get_tokenizer())
    drafts = chunker.chunk(doc)
    records = build_records(doc, chunker, drafts)
    assert max(r.token_count for r in records) <= 512
    covered = sum(len(d.text.split()) for d in drafts)
    assert covered >= 0.97 * len(doc.text.split())  # only heading lines stay outside chunks
    assert all(d.text == doc.text[d.char_start : d.char_end] for d in drafts)


def test_form_fields_codes_and_glossary_lines_are_no_headings() -> None:
    lines = ["NAICS: 561990", "PMID: 0", "SIZE STANDARD: 6.0", "0, TCF", "RBPreticulocyte-binding protein", "AAA"]
    real = ["SECTION 2: TECHNICAL REQUIREMENTS", "INTRODUCTION", "Sources of Reported Earnings", "HUBZone Program"]
    body = "The crews log each reading and file it with the engineer on duty every morning."
    doc = make_doc(["\n\n".join(f"{line}\n\n{body}" for line in lines + real)])
    headings = {b.text for b in parse_blocks(doc) if b.kind == "heading"}
    assert headings == set(real)
