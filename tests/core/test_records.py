"""The record builder: token counts, whether a chunker handed them over or the builder counted, and chunk
identity (NFC and collapsed whitespace feed the id and the content hash; any other change of text is new)."""

from __future__ import annotations

import hashlib
import unicodedata

import pytest

from streams.core.chunkers import ChunkingError
from streams.core.chunkers.base import ChunkDraft
from streams.core.document import assemble
from streams.core.events import NOT_APPLICABLE
from streams.core.records import (
    build_records,
    checksum,
    chunk_id,
    content_hash,
    embedding_text,
    is_table,
    manifest_for,
    normalized_text,
    skipped_manifest,
)
from streams.core.tokenizers import get_tokenizer
from streams.ingest.files import page_events
from streams.ops.pipeline import sample_paths
from tests.conftest import make_pages, strategy_chunker


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


# --- chunk identity: NFC and collapsed whitespace feed the id and the content hash --------------------

CAFE_NFC = "caf\u00e9 au lait"  # "é" composed: U+00E9
CAFE_NFD = "cafe\u0301 au lait"  # "e" + U+0301 COMBINING ACUTE ACCENT


def _recipe(*parts: str) -> str:
    """The documented recipe, written out: sha256 over each part in UTF-8 followed by a 0x1F separator."""
    return hashlib.sha256(b"".join(part.encode("utf-8") + b"\x1f" for part in parts)).hexdigest()


def _id(text: str) -> str:
    draft = ChunkDraft(text=text, char_start=10, char_end=29, section_path=("Letter", "Outlook"), identity=("q1", "s2"))
    return chunk_id("doc-1", "window", 0, draft, 3)


@pytest.mark.parametrize(
    ("composed", "other"),
    [
        (CAFE_NFC, CAFE_NFD),
        ("\u00c5ngstr\u00f6m", "A\u030angstro\u0308m"),  # decomposed: A + ring above, o + diaeresis
        ("\u00c5ngstr\u00f6m", "\u212bngstr\u00f6m"),  # ANGSTROM SIGN, whose canonical form is U+00C5
    ],
)
def test_canonically_equivalent_spellings_are_one_chunk(composed: str, other: str) -> None:
    assert other != composed and unicodedata.normalize("NFC", other) == composed
    assert normalized_text(other) == composed
    assert _id(other) == _id(composed)
    assert content_hash(other) == content_hash(composed)


def test_reflowed_whitespace_keeps_the_id() -> None:
    reflowed = "  caf\u00e9\n\tau \u00a0 lait \n"
    assert normalized_text(reflowed) == CAFE_NFC
    assert _id(reflowed) == _id(CAFE_NFC)
    assert content_hash(reflowed) == content_hash(CAFE_NFC)
    assert _id(CAFE_NFD.replace(" ", "\n\n")) == _id(CAFE_NFC)  # both at once


@pytest.mark.parametrize(
    ("changed", "original"),
    [
        ("cafe au lait", CAFE_NFC),  # the accent dropped: a real change, not a normalisation
        ("Caf\u00e9 au lait", CAFE_NFC),  # case
        ("caf\u00e9 au laits", CAFE_NFC),  # a letter more
        ("caf\u00e9 aulait", CAFE_NFC),  # a space taken out joins two words
        ("\ufb01le", "file"),  # the "fi" ligature: NFKC would fold it, NFC keeps it
        ("x\u00b2", "x2"),  # a superscript two: the same
    ],
)
def test_a_real_change_of_text_changes_the_id(changed: str, original: str) -> None:
    assert _id(changed) != _id(original)
    assert content_hash(changed) != content_hash(original)


def test_ids_and_hashes_match_the_documented_recipe_by_hand() -> None:
    """`<strategy>-<first 32 hex of sha256>` of document, strategy, amendment, position, range, section
    path, identity and normalised text; the content hash is the sha256 of the normalised text alone."""
    nfc = b"caf\xc3\xa9 au lait"  # the NFC text in UTF-8, written out by hand
    assert content_hash(CAFE_NFD) == hashlib.sha256(nfc + b"\x1f").hexdigest()
    assert content_hash(CAFE_NFD) == "71357f148356e61f9e22896b417e53c6d7b17e791cbd2e72a812dd69028debc4"
    by_hand = b"doc-1\x1fwindow\x1f0\x1f3\x1f10:29\x1fLetter/Outlook\x1fq1|s2\x1f" + nfc + b"\x1f"
    assert _id(CAFE_NFD) == "window-" + hashlib.sha256(by_hand).hexdigest()[:32]
    assert _id(CAFE_NFD) == "window-ad19a8f18768a8195e78ac5c61efeb53"
    parts = ["doc-2", "letter", "4", "0", "0:11", "", "", "caf\u00e9 au lait"]
    draft = ChunkDraft(text=" cafe\u0301\nau  lait", char_start=0, char_end=11)
    assert chunk_id("doc-2", "letter", 4, draft, 0) == "letter-" + _recipe(*parts)[:32]
    assert chunk_id("doc-2", "letter", 4, draft, 0, lineage="L1") == "letter-" + _recipe(*parts, "L1")[:32]


def test_records_carry_the_normalised_identity() -> None:
    """Through the record builder: one document in NFC and one in NFD give the same ids and hashes."""
    chunker = strategy_chunker("window")
    records = [
        build_records(
            assemble(make_pages("doc-1", [text])), chunker, [ChunkDraft(text=text, char_start=0, char_end=11)]
        )
        for text in (CAFE_NFC, CAFE_NFD)
    ]
    nfc, nfd = records[0][0], records[1][0]
    assert nfd.text == CAFE_NFD  # the record keeps the text as it came
    assert (nfd.chunk_id, nfd.content_hash) == (nfc.chunk_id, nfc.content_hash)
    assert nfc.content_hash == _recipe(CAFE_NFC)


# --- every field of a record and a manifest, worked out by hand ------------------------------------------


def _two_page_doc() -> object:
    # page 1 = "Alpha beta.\n\n" [0, 13), page 2 = "Gamma delta.\n\n" [13, 27)
    return assemble(make_pages("doc-9", ["Alpha beta.", "Gamma delta."], amendment_number=3, doc_type="letter"))


def _drafts() -> list[ChunkDraft]:
    return [
        ChunkDraft(text="Alpha beta.", char_start=0, char_end=11, section_path=("Intro",), tokens=7),
        ChunkDraft(
            text="beta.\n\nGamma",
            char_start=6,
            char_end=18,
            content_type="table",
            metadata={"rows": 1},
            identity=("t1",),
        ),
        ChunkDraft(text="delta.", char_start=19, char_end=25, metadata={"is_table": True}),
    ]


def test_every_field_of_the_records_of_a_two_page_document() -> None:
    chunker = strategy_chunker("window")
    doc = _two_page_doc()
    records = build_records(doc, chunker, _drafts(), is_latest_version=False)
    tokenizer = get_tokenizer()
    assert [(r.position, r.chunk_count) for r in records] == [(0, 3), (1, 3), (2, 3)]
    assert [(r.char_start, r.char_end, r.page_numbers) for r in records] == [
        (0, 11, [1]),
        (6, 18, [1, 2]),
        (19, 25, [2]),
    ]
    first, second, third = records
    assert (first.doc_id, first.document_name, first.doc_type, first.amendment_number) == (
        "doc-9",
        "doc-9.txt",
        "letter",
        3,
    )
    assert (first.strategy, first.chunker_version, first.tokenizer) == ("window", chunker.version, tokenizer.name)
    assert (first.is_latest_version, first.token_count) == (False, 7)  # the chunker's count is taken as it is
    assert second.token_count == tokenizer.count("beta.\n\nGamma")  # no count handed over: the builder counts
    assert (first.section_path, second.content_type, second.metadata, third.content_type) == (
        ["Intro"],
        "table",
        {"rows": 1},
        "text",
    )
    assert first.text == "Alpha beta." and second.text == "beta.\n\nGamma"
    # The id recipe over this record's own parts: amendment 3, position 1, range 6:18, identity t1.
    assert second.chunk_id == "window-" + _recipe("doc-9", "window", "3", "1", "6:18", "", "t1", "beta. Gamma")[:32]
    assert first.chunk_id == "window-" + _recipe("doc-9", "window", "3", "0", "0:11", "Intro", "", "Alpha beta.")[:32]
    assert second.content_hash == _recipe("beta. Gamma")
    for record in records:
        assert record.checksum == checksum(record.model_dump())
    assert checksum({**first.model_dump(), "is_latest_version": True}) == first.checksum  # flipping it later


def test_the_checksum_recipe_by_hand() -> None:
    """sha256 of the record as compact JSON, keys sorted, non-ASCII as UTF-8, without the checksum and
    the latest flag; values JSON cannot hold are written as their str()."""
    import datetime

    record = {"b": 1, "a": "\u00e9", "when": datetime.date(2026, 11, 26), "checksum": "x", "is_latest_version": True}
    payload = b'{"a":"\xc3\xa9","b":1,"when":"2026-11-26"}'
    assert checksum(record) == "sha256:" + hashlib.sha256(payload).hexdigest()
    assert checksum({**record, "checksum": "y", "is_latest_version": False}) == checksum(record)
    assert checksum({**record, "b": 2}) != checksum(record)


def test_a_lone_surrogate_is_hashed_not_refused() -> None:
    """Text from a PDF can carry a lone surrogate; identity must still be computable (UTF-8 surrogatepass)."""
    assert content_hash("\ud800") == hashlib.sha256(b"\xed\xa0\x80\x1f").hexdigest()
    assert checksum({"text": "\ud800"}) == "sha256:" + hashlib.sha256(b'{"text":"\xed\xa0\x80"}').hexdigest()


def test_tables_are_told_by_content_type_or_by_metadata() -> None:
    chunker = strategy_chunker("window")
    records = build_records(_two_page_doc(), chunker, _drafts())
    assert [is_table(r) for r in records] == [False, True, True]
    for content_type in ("financial_table", "pricing_table"):
        assert is_table(records[0].model_copy(update={"content_type": content_type}))
    assert not is_table(records[2].model_copy(update={"metadata": {"is_table": False}}))


def test_the_manifest_of_a_chunked_document_lists_every_record_in_order() -> None:
    chunker = strategy_chunker("window")
    records = build_records(_two_page_doc(), chunker, _drafts())
    manifest = manifest_for(records, timestamp_ms=1234)
    assert manifest.model_dump() == {
        "doc_id": "doc-9",
        "amendment_number": 3,
        "strategy": "window",
        "chunker_version": chunker.version,
        "document_name": "doc-9.txt",
        "chunk_ids": [r.chunk_id for r in records],
        "checksums": [r.checksum for r in records],
        "is_table": [False, True, True],
        "chunk_count": 3,
        "timestamp_ms": 1234,
        "outcome": "chunked",
        "reason": "",
    }
    assert manifest_for(records).timestamp_ms == 0
    assert manifest_for(records[:1]).chunk_ids == [records[0].chunk_id]  # a document of one chunk


def test_the_manifest_of_a_skipped_document_expects_nothing_and_says_why() -> None:
    chunker = strategy_chunker("window")
    manifest = skipped_manifest(_two_page_doc(), chunker, "not a memo")
    assert manifest.model_dump() == {
        "doc_id": "doc-9",
        "amendment_number": 3,
        "strategy": "window",
        "chunker_version": chunker.version,
        "document_name": "doc-9.txt",
        "chunk_ids": [],
        "checksums": [],
        "is_table": [],
        "chunk_count": 0,
        "timestamp_ms": 0,
        "outcome": NOT_APPLICABLE,
        "reason": "not a memo",
    }
    assert skipped_manifest(_two_page_doc(), chunker, "r", timestamp_ms=99).timestamp_ms == 99


@pytest.mark.parametrize(
    ("text", "path", "embedded"),
    [
        ("Body", ("Letter", "", "Outlook"), "Letter > Outlook\nBody"),  # empty titles left out
        ("Letter > Outlook: body", ("Letter", "Outlook"), "Letter > Outlook: body"),  # already opens with it
        ("  Letter > Outlook body", ("Letter", "Outlook"), "  Letter > Outlook body"),  # after leading blanks too
        ("Body", (), "Body"),
        ("Body", ("",), "Body"),
    ],
)
def test_the_embedded_text_carries_the_heading_path_once(text: str, path: tuple[str, ...], embedded: str) -> None:
    assert embedding_text(text, path) == embedded


def test_non_default_options_are_another_lineage_in_every_id() -> None:
    """Options off the seed's defaults add their fingerprint as a last id part; the defaults add nothing."""
    plain, tuned = strategy_chunker("window"), strategy_chunker("window", chunk_size_words=100)
    assert plain.lineage == "" and tuned.lineage
    draft = [ChunkDraft(text="Alpha beta.", char_start=0, char_end=11)]
    (record,) = build_records(_two_page_doc(), tuned, draft)
    parts = ("doc-9", "window", "3", "0", "0:11", "", "", "Alpha beta.")
    assert record.chunk_id == "window-" + _recipe(*parts, tuned.lineage)[:32]
    assert build_records(_two_page_doc(), plain, draft)[0].chunk_id == "window-" + _recipe(*parts)[:32]
