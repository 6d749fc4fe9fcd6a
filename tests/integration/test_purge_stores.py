"""A purge on the stores alone (document keys off): rows, vectors and embeddings go, an embedding another
live chunk still needs stays, and the receipt says the topics keep the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.records import build_records
from streams.embedding.stores import open_store
from streams.ops.embedded import broker, document_store
from streams.ops.purge import TOPICS_KEPT, purge, receipts
from streams.sinks.factory import vector_sink
from streams.sinks.mongo import MongoSink
from tests.conftest import HashEmbedder, make_pages
from tests.integration.conftest import pipeline_settings

pytestmark = [pytest.mark.integration, pytest.mark.one_broker]

TEXT = "The harbour board met on Tuesday and voted to repair the east pier before the winter storms. " * 6


def _records(doc_id: str, text: str = TEXT):
    chunker = get_chunker("window")
    doc = assemble(make_pages(doc_id, [text]))
    return build_records(doc, chunker, chunker.chunk(doc))


def test_a_purge_without_document_keys_empties_the_stores_and_keeps_a_shared_embedding(tmp_path: Path) -> None:
    store, node = document_store(tmp_path / "mongo").start(), broker(tmp_path / "broker").start()
    try:
        settings = pipeline_settings(tmp_path, broker=node.address, mongo_url=f"mongodb://{store.address}")
        mongo, vectors = MongoSink.of(settings), vector_sink(settings, HashEmbedder(store=open_store(settings)))
        minutes, copy, other = _records("minutes"), _records("copy"), _records("other", "Ferries run late. " * 30)
        for sink in (mongo, vectors):
            sink.write_chunks(minutes + copy + other)
        first = purge(settings, ["minutes"], wait=lambda _s: None)
        held_after_first = (mongo.count(), vectors.target.count())
        second = purge(settings, ["copy"], wait=lambda _s: None)
        left = (mongo.count(), vectors.target.count())
        kept = receipts(settings)
    finally:
        store.stop()
        node.stop()
    assert first.topics == TOPICS_KEPT and first.keys == 0
    assert (first.rows, first.vectors) == (len(minutes), len(minutes))
    # The copy has the same text: its embeddings are still needed, and stay (the receipt says so).
    assert first.embeddings == 0 and "another live chunk has the same text" in first.notes[0]
    assert held_after_first == (len(copy) + len(other), len(copy) + len(other))
    assert second.embeddings == len({r.content_hash for r in copy}) and not second.notes
    assert left == (len(other), len(other))
    assert [r["doc_ids"] for r in kept] == [["minutes"], ["copy"]]
