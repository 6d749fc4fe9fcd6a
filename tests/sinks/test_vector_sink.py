"""The vector sink behind one contract: LanceDB on disk and Pinecone (real client, local double)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.core.chunkers.section import SectionChunker
from streams.core.document import assemble
from streams.core.events import ChunkStatus
from streams.core.records import build_records
from streams.core.tokenizers import get_tokenizer
from streams.sinks.lance_target import LanceTarget
from streams.sinks.vectors import VectorSink
from tests.conftest import HashEmbedder, make_pages
from tests.sinks.conftest import either_target


def _records(amendment: int, texts: list[str]):
    """One chunk per (tiny) section: the sink, not the merging of short sections, is under test here."""
    pages = [p.model_copy(update={"amendment_number": amendment}) for p in make_pages("doc", texts)]
    doc = assemble(pages)
    chunker = SectionChunker(get_tokenizer(), min_tokens=1, fragment_tokens=0)
    return build_records(doc, chunker, chunker.chunk(doc))


SECTIONS_V0 = [
    "SECTION 1: SCOPE OF WORK\n\nThe contractor shall install sensors on every span.\n\n"
    "SECTION 2: PRICING\n\n| CLIN | Item | Qty |\n|---|---|---|\n| 0001 | Sensor | 180 |\n\n"
    "SECTION 3: EVALUATION CRITERIA\n\nProposals are scored on price and approach."
]
SECTIONS_V1 = [SECTIONS_V0[0].replace("price and approach", "price, approach and schedule")]


def _superseded_by_amendment_1(records) -> list[ChunkStatus]:
    """The flips the section chunker publishes for amendment 0 when amendment 1 arrives."""
    return [
        ChunkStatus(
            chunk_id=r.chunk_id,
            doc_id="doc",
            strategy="section",
            amendment_number=0,
            is_latest_version=False,
            superseded_by=1,
        )
        for r in records
    ]


@pytest.fixture(params=["lancedb", "pinecone"])
def target(request, tmp_path: Path, pinecone_double):
    with either_target(request.param, tmp_path, pinecone_double) as target:
        yield target


def test_tables_skipped_flips_applied_unchanged_text_reused(target, tmp_path: Path) -> None:
    embedder = HashEmbedder()
    sink = VectorSink(target, tmp_path / "state.sqlite", embedder=embedder)
    v0, v1 = _records(0, SECTIONS_V0), _records(1, SECTIONS_V1)
    tables = [r for r in v0 if r.metadata.get("is_table")]
    assert tables, "the pricing section is a table"
    sink.write_chunks(v0)
    assert target.count() == len(v0) - len(tables)
    # amendment 1 arrives; its unchanged sections reuse vectors
    before = len(embedder.encoded)
    sink.write_chunks(v1)
    changed = {r.content_hash for r in v1 if not r.metadata.get("is_table")} - {r.content_hash for r in v0}
    assert len(embedder.encoded) - before == len(changed) == 1
    sink.apply_status(_superseded_by_amendment_1(v0))
    embeddable = [r for r in v1 if not r.metadata.get("is_table")]
    assert target.count(latest_only=True) == len(embeddable)
    assert target.count() == 2 * len(embeddable)
    # idempotent: the same batch again changes nothing and embeds nothing
    sink.write_chunks(v1)
    assert target.count() == 2 * len(embeddable) and len(embedder.encoded) - before == 1
    hits = target.query(list(embedder.encode([embeddable[0].text])[0]), 3)
    assert hits[0].chunk_id == embeddable[0].chunk_id and hits[0].score > 0.99
    assert all(h.metadata["is_latest_version"] for h in hits)


def test_a_flip_before_its_chunk_still_wins(target, tmp_path: Path) -> None:
    sink = VectorSink(target, tmp_path / "state.sqlite", embedder=HashEmbedder())
    v0 = [r for r in _records(0, SECTIONS_V0) if not r.metadata.get("is_table")]
    sink.apply_status(
        [
            ChunkStatus(
                chunk_id=v0[0].chunk_id, doc_id="doc", strategy="section", amendment_number=0, is_latest_version=False
            )
        ]
    )
    sink.apply_status(
        [
            ChunkStatus(
                chunk_id=v0[1].chunk_id,
                doc_id="doc",
                strategy="section",
                amendment_number=0,
                is_latest_version=False,
                retired=True,
            )
        ]
    )
    sink.write_chunks(v0)
    assert target.count() == len(v0) - 1  # the retired one never lands
    assert target.count(latest_only=True) == len(v0) - 2


def test_superseded_vectors_are_deleted_when_asked(target, tmp_path: Path) -> None:
    sink = VectorSink(target, tmp_path / "state.sqlite", embedder=HashEmbedder(), delete_superseded=True)
    v0 = [r for r in _records(0, SECTIONS_V0) if not r.metadata.get("is_table")]
    v1 = [r for r in _records(1, SECTIONS_V1) if not r.metadata.get("is_table")]
    sink.write_chunks(v0 + v1)
    sink.apply_status(_superseded_by_amendment_1(v0))
    assert target.count() == target.count(latest_only=True) == len(v1)


def test_the_ledger_counts_only_embeddable_chunks_and_a_superseded_version_is_not_missing(
    target, tmp_path: Path
) -> None:
    from streams.core.records import manifest_for
    from streams.sinks.ledger import Tracker

    sink = VectorSink(target, tmp_path / "state.sqlite", embedder=HashEmbedder(), delete_superseded=True)
    v0, v1 = _records(0, SECTIONS_V0), _records(1, SECTIONS_V1)
    tracker = Tracker(sink)
    tracker.add(manifest_for(v1), 0, 0)
    tracker.add(manifest_for(v0), 0, 1)
    sink.write_chunks(v1)
    [event] = tracker.check()
    assert event.amendment_number == 1 and event.outcome == "indexed"
    assert event.chunk_count == sum(1 for r in v1 if not r.metadata.get("is_table"))  # tables are MongoDB's
    tracker.done([event])
    # amendment 1 came first: amendment 0 is flipped before its chunks land, so they never do
    sink.apply_status(_superseded_by_amendment_1(v0))
    sink.write_chunks(v0)
    [late] = tracker.check()
    assert late.amendment_number == 0 and late.outcome == "superseded"
    embeddable = [r.chunk_id for r in v1 if not r.metadata.get("is_table")]
    assert sink.latest_flags(embeddable) == dict.fromkeys(embeddable, True)


def test_chunks_past_the_model_limit_are_counted_and_logged(target, tmp_path: Path, caplog) -> None:
    """Never silent: a metric per strategy, a line per document, the sink's own count."""
    from prometheus_client import REGISTRY

    long_section = "SECTION 1: SCOPE\n\n" + " ".join(f"word{i}" for i in range(300)) + ".\n\n"
    records = _records(0, [long_section + "SECTION 2: TERMS\n\nShort terms apply here."])
    sink = VectorSink(target, tmp_path / "state.sqlite", embedder=HashEmbedder())
    before = REGISTRY.get_sample_value("streams_vector_long_chunks_total", {"strategy": "section"}) or 0.0
    with caplog.at_level("WARNING", logger="streams.sinks.vectors"):
        sink.write_chunks(records)
    assert sink.stats.long_chunks == 1
    after = REGISTRY.get_sample_value("streams_vector_long_chunks_total", {"strategy": "section"})
    assert after == before + 1
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        f"doc (amendment 0, section): 1 of {len(records)} chunks longer than the embedding model's 256 word pieces, "
        "embedded truncated"
    ]


def test_context_strategies_embed_the_heading_with_the_text(tmp_path: Path) -> None:
    """A context strategy's vector is of its heading and text; others embed the text alone; the stored
    record keeps the plain text, and a chunk whose heading changed is embedded again."""
    records = _records(0, SECTIONS_V0)
    text_chunk = next(r for r in records if r.content_type != "table" and r.section_path)
    body = text_chunk.text.split("\n\n", 1)[1]  # a semantic chunk of the section's prose, below its heading
    as_semantic = text_chunk.model_copy(
        update={"strategy": "semantic", "chunk_id": "semantic-1", "text": body, "section_path": ["Work to be done"]}
    )
    embedder = HashEmbedder()
    sink = VectorSink(
        LanceTarget(tmp_path / "lance"), tmp_path / "state.sqlite", embedder=embedder, context_strategies=["semantic"]
    )
    sink.write_chunks([text_chunk, as_semantic])
    heading = "Work to be done"
    assert text_chunk.text in embedder.encoded  # the section strategy: its text alone
    assert f"{heading}\n{as_semantic.text}" in embedder.encoded  # the context strategy: heading first
    assert sink.embedded_text(text_chunk) == text_chunk.text  # a text that opens with its heading: once
    hit = sink.target.query(embedder.encode([f"{heading}\n{as_semantic.text}"])[0], 1, "semantic")[0]
    assert hit.chunk_id == "semantic-1" and hit.score > 0.999
    embedder.encoded.clear()
    sink.write_chunks([as_semantic])  # unchanged: not embedded again
    assert embedder.encoded == []
    moved = as_semantic.model_copy(update={"section_path": ["Another heading"]})
    sink.write_chunks([moved])
    assert embedder.encoded == [f"Another heading\n{as_semantic.text}"]
