"""Type detection from the assembled text: what decides, what never decides alone, and what always wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.codec.avro import AvroCodec
from streams.core.chunkers import get_chunker
from streams.core.doctype import GIVEN, MIN_SCORE, SOURCE_KEY, detect, given_type
from streams.core.document import assemble
from streams.core.events import ChunkRecord, DocType, PageEvent
from streams.core.publish import publish
from streams.ingest.files import page_events

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "routing"
LETTER = FIXTURES / "northwind_2031_annual.txt"
RFP = FIXTURES / "Draft_RFPfor_Engineering_Services.md"


def pages(texts: list[str], name: str = "doc.txt", doc_type: str | None = None) -> list[PageEvent]:
    kind, metadata = given_type({}, doc_type)
    return [
        PageEvent(
            doc_id="d",
            document_name=name,
            page_number=n,
            page_count=len(texts),
            text=t,
            doc_type=kind,
            metadata=metadata,
        )
        for n, t in enumerate(texts, start=1)
    ]


def test_a_letter_as_raw_pdf_text_is_a_letter_from_its_second_page() -> None:
    events = page_events(LETTER)
    assert len(events) == 3 and "Shareholders" not in events[0].text  # the salutation is on page 2
    doc = assemble(events)
    assert doc.doc_type is DocType.letter
    assert doc.metadata[SOURCE_KEY] == "detected"
    assert "salutation to owners" in doc.metadata["doc_type_evidence"]
    assert "file name" not in doc.metadata["doc_type_evidence"]  # the name says nothing of a letter
    assert publish(doc, get_chunker("letter")).records


def test_the_same_text_is_typed_the_same_under_any_name_and_twice() -> None:
    text = LETTER.read_text()
    first = detect(text, "northwind_2031_annual.txt")
    assert first == detect(text, "northwind_2031_annual.txt")
    assert detect(text, "x.txt").doc_type is DocType.letter
    assert detect(text.lower(), "x.txt").doc_type is DocType.letter  # a lowercased extraction too


def test_a_file_name_alone_never_decides() -> None:
    plain = "The garden club met on Tuesday. We planted beans and talked about the rain. " * 20
    for name in ("shareholder_letter_2031.txt", "RFP_2031.md", "earnings_call.txt", "press.txt"):
        found = detect(plain, name)
        assert found.doc_type is DocType.generic, (name, found)
        assert max(found.scores.values()) < MIN_SCORE


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("Dear John,\n\nI am writing this letter from the farm. The cows are well. Yours, Mary\n" * 5, "a letter"),
        ("Whisk the eggs. The batter shall rest for an hour. Serves four. Sow the herbs in spring.\n" * 8, "a recipe"),
        ("Minutes. The chair opened the call at 7. After a Q&A on the budget the meeting closed.\n" * 6, "minutes"),
    ],
)
def test_decoy_words_leave_a_plain_document_generic(text: str, why: str) -> None:
    assert detect(text, "doc.txt").doc_type is DocType.generic, why


def test_a_type_given_on_purpose_wins_generic_included() -> None:
    text = LETTER.read_text().replace("\f", "\n\n")
    assert assemble(pages([text])).doc_type is DocType.letter  # nothing given: detected
    given = assemble(pages([text], doc_type="generic"))  # `--doc-type generic`
    assert given.doc_type is DocType.generic and given.metadata[SOURCE_KEY] == GIVEN
    assert assemble(pages([text], doc_type="transcript")).doc_type is DocType.transcript
    # a page from another publisher that says the type was set on purpose
    marked = [p.model_copy(update={"metadata": {SOURCE_KEY: GIVEN}}) for p in pages([text])]
    assert assemble(marked).doc_type is DocType.generic
    # the publisher's own reader: a flag marks the pages, no flag leaves the type to the text
    flagged = page_events(LETTER, doc_type=DocType.generic)
    assert all(p.metadata[SOURCE_KEY] == GIVEN for p in flagged)
    assert assemble(flagged).doc_type is DocType.generic
    assert SOURCE_KEY not in page_events(LETTER)[0].metadata


def test_every_chunk_record_says_how_its_document_was_typed_and_survives_avro() -> None:
    doc = assemble(page_events(RFP))
    assert doc.doc_type is DocType.solicitation
    records = publish(doc, get_chunker("window")).records
    assert records and all(r.routing is not None and r.routing.source == "detected" for r in records)
    assert "request for proposal" in records[0].routing.evidence
    codec = AvroCodec()
    back = ChunkRecord(**codec.decode("chunk_record", codec.encode("chunk_record", records[0].model_dump())))
    assert back == records[0]
    # a skipped strategy says what the type was decided from
    skipped = publish(doc, get_chunker("letter")).skipped
    assert skipped.startswith("letter takes letter, not solicitation (detected: request for proposal")


def test_a_weak_or_split_signal_stays_generic_with_its_reason() -> None:
    found = detect("Our shareholders met in the hall. Operator error delayed the start.\n" * 3, "notes.txt")
    assert found.doc_type is DocType.generic
    assert found.evidence[0].startswith("no clear type (best ")
