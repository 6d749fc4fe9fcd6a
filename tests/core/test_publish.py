"""Routing by document type: each strategy takes the documents its seed is for and skips the rest as not
applicable (a manifest with no chunks, never a dead letter), through the one function every caller uses."""

from __future__ import annotations

import pytest

from streams.codec.avro import AvroCodec
from streams.core.chunkers import get_chunker, make_options
from streams.core.doctype import given_type
from streams.core.document import assemble
from streams.core.events import NOT_APPLICABLE, DocType, DocumentManifest
from streams.core.options import DOC_TYPES, OptionsError
from streams.core.publish import publish
from streams.core.records import build_records, skipped_manifest
from tests.conftest import make_pages

LETTER = (
    "To the Shareholders of Harbor Mills:\n\n"
    + "Our earnings rose this year because our managers kept costs low and prices fair. " * 30
    + "\n\nWe remain committed to the principles that guided us. " * 20
)


def doc_of(doc_type: str, text: str = LETTER, name: str = "doc.txt"):
    pages = make_pages("routed", [text])
    kind, given = given_type({}, doc_type)  # set on purpose: `generic` too stays what it says
    pages = [p.model_copy(update={"doc_type": kind, "document_name": name, "metadata": given}) for p in pages]
    return assemble(pages)


def test_the_seeds_scope_is_each_strategys_default() -> None:
    assert make_options("letter").doc_types == ("letter",)
    assert make_options("finance").doc_types == ("transcript", "release", "slides", "press")
    assert make_options("section").doc_types == ("solicitation",)
    for strategy in ("window", "hybrid", "semantic", "cluster"):
        assert make_options(strategy).doc_types == DOC_TYPES
    assert set(DOC_TYPES) == {t.value for t in DocType}


def test_doc_types_is_an_option_like_any_other() -> None:
    written = make_options("letter", {"doc_types": "generic, letter"})
    assert written.doc_types == ("letter", "generic")  # one order, however it was written
    assert (
        written.lineage_tag()
        and written.lineage_tag() == make_options("letter", {"doc_types": "letter,generic"}).lineage_tag()
    )
    assert make_options("letter", {"doc_types": ["letter"]}).lineage_tag() == ""  # the default adds nothing
    with pytest.raises(OptionsError, match=r"letter.doc_types=.*unknown document type memo"):
        make_options("letter", {"doc_types": "memo"})
    with pytest.raises(OptionsError, match="would take no document"):
        make_options("window", {"doc_types": ""})
    # the chunker's constructor never sees it: routing happens around the chunker
    assert "doc_types" not in make_options("letter").chunker_options()


@pytest.mark.parametrize("doc_type", [t for t in DOC_TYPES if t != "letter"])
def test_letter_skips_what_is_not_a_letter_with_a_reason(doc_type: str) -> None:
    chunker = get_chunker("letter")
    published = publish(doc_of(doc_type), chunker)
    assert published.records == [] and not published.applicable
    assert published.skipped == f"letter takes letter, not {doc_type}"


def test_a_strategy_chunks_what_it_takes_exactly_as_the_record_builder_does() -> None:
    chunker = get_chunker("letter")
    doc = doc_of("letter")
    published = publish(doc, chunker)
    assert published.applicable and published.records
    assert published.records == build_records(doc, chunker, chunker.chunk(doc))
    widened = get_chunker("letter", {"doc_types": "letter,generic"})
    assert publish(doc_of("generic"), widened).records  # a user may widen the scope


def test_seed_002s_file_filter_makes_a_solicitation_file_not_applicable() -> None:
    chunker = get_chunker("section")
    skipped = publish(doc_of("solicitation", name="bridge_bid_questionnaire.pdf"), chunker)
    assert not skipped.applicable and "seed 002's file filter" in skipped.skipped
    assert publish(doc_of("solicitation", name="bridge_rfp_issued.pdf"), chunker).applicable


def test_a_not_applicable_manifest_expects_nothing_and_round_trips_as_avro() -> None:
    chunker = get_chunker("section")
    doc = doc_of("letter")
    manifest = skipped_manifest(doc, chunker, publish(doc, chunker).skipped, 5)
    assert manifest.outcome == NOT_APPLICABLE and not manifest.applicable
    assert manifest.chunk_count == 0 and manifest.ids_held_by(True) == []
    assert manifest.chunker_version == chunker.version and manifest.strategy == "section"
    codec = AvroCodec()
    back = DocumentManifest(
        **codec.decode("document_manifest", codec.encode("document_manifest", manifest.model_dump()))
    )
    assert back == manifest
