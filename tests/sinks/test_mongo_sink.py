"""The MongoDB sink against a real MongoDB-protocol server: any order of chunks and flips ends the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.core.chunkers.window import WindowChunker
from streams.core.document import assemble
from streams.core.events import ChunkRecord, ChunkStatus
from streams.core.records import build_records
from streams.core.tokenizers import get_tokenizer
from streams.ops.embedded import document_store
from streams.sinks.mongo import MongoSink
from tests.conftest import make_pages

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sink(tmp_path_factory) -> Iterator[MongoSink]:
    store = document_store(Path(tmp_path_factory.mktemp("mongo"))).start()
    sink = MongoSink(f"mongodb://{store.address}")
    try:
        yield sink
    finally:
        sink.close()
        store.stop()


def _records(doc_id: str) -> list[ChunkRecord]:
    doc = assemble(make_pages(doc_id, ["a sentence that repeats for a while. " * 120]))
    chunker = WindowChunker(get_tokenizer())
    records = build_records(doc, chunker, chunker.chunk(doc))
    assert len(records) >= 2
    return records


def _retire(records: list[ChunkRecord]) -> list[ChunkStatus]:
    return [
        ChunkStatus(
            chunk_id=r.chunk_id,
            doc_id=r.doc_id,
            strategy=r.strategy,
            amendment_number=r.amendment_number,
            is_latest_version=False,
            retired=True,
        )
        for r in records
    ]


def _state(sink: MongoSink, doc_id: str) -> list[tuple[str, bool, bool]]:
    rows = sink.collection.find({"doc_id": doc_id}, {"retired": 1, "is_latest_version": 1})
    return sorted((r["_id"], r["retired"], r["is_latest_version"]) for r in rows)


@pytest.mark.parametrize("order", ["chunks_first", "retire_first", "retire_then_redelivered"])
def test_a_retirement_holds_whatever_order_it_arrives_in(sink: MongoSink, order: str) -> None:
    doc_id = f"retire-{order}"
    records = _records(doc_id)
    if order == "chunks_first":
        sink.write_chunks(records)
        sink.apply_status(_retire(records))
    else:
        sink.apply_status(_retire(records))
        sink.write_chunks(records)
        if order == "retire_then_redelivered":
            sink.write_chunks(records)  # at-least-once: the same chunks again
    assert _state(sink, doc_id) == sorted((r.chunk_id, True, False) for r in records)
    assert sink.count(doc_id=doc_id) == 0
    # the full text is there for an audit even though nothing is live
    assert all(row.get("text") for row in sink.by_ids([r.chunk_id for r in records]))


def test_a_redelivered_chunk_does_not_revive_a_flip(sink: MongoSink) -> None:
    records = _records("flipped")
    sink.write_chunks(records)
    flips = [s.model_copy(update={"retired": False}) for s in _retire(records)]
    sink.apply_status(flips)
    sink.write_chunks(records)
    assert _state(sink, "flipped") == sorted((r.chunk_id, False, False) for r in records)
    assert sink.count(doc_id="flipped") == len(records)
    assert sink.count(doc_id="flipped", latest_only=True) == 0


def test_a_flip_that_lands_before_its_chunk_leaves_a_live_row(sink: MongoSink) -> None:
    records = _records("flip-first")
    flips = [s.model_copy(update={"retired": False}) for s in _retire(records)]
    sink.apply_status(flips)
    sink.write_chunks(records)
    assert _state(sink, "flip-first") == sorted((r.chunk_id, False, False) for r in records)
    assert sink.count(doc_id="flip-first") == len(records)
    assert sink.count(doc_id="flip-first", latest_only=True) == 0


def test_a_manifest_is_reported_only_once_its_store_holds_every_chunk(sink: MongoSink) -> None:
    from streams.core.records import manifest_for
    from streams.sinks.ledger import Tracker

    records = _records("ledgered")
    tracker = Tracker(sink)
    tracker.add(manifest_for(records), partition=1, offset=7)  # the manifest first, no chunk yet
    assert tracker.check() == [] and tracker.low_water() == {1: 7}
    sink.write_chunks(records[:-1])  # all but one: still incomplete
    assert tracker.check() == []
    tracker.add(manifest_for(records), partition=1, offset=9)  # redelivered: a restart must read from 7
    assert tracker.low_water() == {1: 7}
    sink.write_chunks(records[-1:])
    [event] = tracker.check()
    assert (event.doc_id, event.store, event.chunk_count, event.outcome) == (
        "ledgered",
        "mongo",
        len(records),
        "indexed",
    )
    assert tracker.pending  # until the event is acknowledged
    tracker.done([event])
    assert not tracker.pending and tracker.low_water() == {}


def test_a_retired_document_is_reported_as_retired_not_missing(sink: MongoSink) -> None:
    from streams.core.records import manifest_for
    from streams.sinks.ledger import Tracker

    records = _records("ledger-retired")
    sink.apply_status(_retire(records))
    sink.write_chunks(records)
    tracker = Tracker(sink)
    tracker.add(manifest_for(records), partition=0, offset=0)
    [event] = tracker.check()
    assert event.outcome == "retired"


def test_the_urls_own_timeouts_win_over_the_projects() -> None:
    """pymongo lets a keyword argument win over the URL's option: a timeout set in STREAMS_MONGO_URL was
    ignored for the project's 10 s until the project passed only the ones the URL leaves unset."""
    own = MongoSink("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500&socketTimeoutMS=700").client.options
    default = MongoSink("mongodb://127.0.0.1:1/").client.options
    assert own.server_selection_timeout == 0.5 and own.pool_options.socket_timeout == 0.7
    assert default.server_selection_timeout == 10.0 and default.pool_options.socket_timeout == 120.0
