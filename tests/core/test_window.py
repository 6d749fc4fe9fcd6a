import re

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.records import build_records
from tests.conftest import make_pages


def _doc(words_per_page: list[int]):
    texts = [" ".join(f"p{p}w{i}" for i in range(n)) for p, n in enumerate(words_per_page, start=1)]
    return assemble(make_pages("win", texts))


def test_windows_of_250_words_with_50_overlap_and_exact_ranges() -> None:
    doc = _doc([180, 180, 180])  # 540 words
    chunker = get_chunker("window")
    drafts = chunker.chunk(doc)
    assert [len(d.text.split()) for d in drafts] == [250, 250, 140]
    for draft in drafts:
        assert doc.text[draft.char_start : draft.char_end] == draft.text
    # consecutive windows share exactly 50 words
    first, second = drafts[0].text.split(), drafts[1].text.split()
    assert first[-50:] == second[:50]
    records = build_records(doc, chunker, drafts)
    assert [r.page_numbers for r in records] == [[1, 2], [2, 3], [3]]
    assert all(r.token_count > 0 and r.tokenizer == "tiktoken:cl100k_base" for r in records)
    assert [r.position for r in records] == [0, 1, 2] and {r.chunk_count for r in records} == {3}


def test_short_document_is_one_window_and_empty_is_none() -> None:
    chunker = get_chunker("window")
    assert len(chunker.chunk(_doc([10]))) == 1
    assert chunker.chunk(assemble(make_pages("e", ["   "]))) == []


def test_ids_and_checksums_are_deterministic_and_distinct() -> None:
    chunker = get_chunker("window")
    doc = _doc([300, 300])
    one = build_records(doc, chunker, chunker.chunk(doc))
    two = build_records(doc, chunker, chunker.chunk(doc))
    assert [r.model_dump_json() for r in one] == [r.model_dump_json() for r in two]
    assert len({r.chunk_id for r in one}) == len(one)
    assert all(re.fullmatch(r"window-[0-9a-f]{32}", r.chunk_id) for r in one)
    other = assemble([p.model_copy(update={"doc_id": "other"}) for p in make_pages("win", ["x y z"])])
    amended = assemble([p.model_copy(update={"amendment_number": 1}) for p in make_pages("win", ["x y z"])])
    base = assemble(make_pages("win", ["x y z"]))
    ids = {build_records(d, chunker, chunker.chunk(d))[0].chunk_id for d in (other, amended, base)}
    assert len(ids) == 3
    hashes = {build_records(d, chunker, chunker.chunk(d))[0].content_hash for d in (other, amended, base)}
    assert len(hashes) == 1  # same text keeps its content identity across documents and amendments
