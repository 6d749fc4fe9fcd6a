"""The chunkers from Python, offline: the same records the bus publishes, without a broker.

    from streams import chunk_text, chunk_file

    records = chunk_text(text, strategy="section", doc_type="solicitation", options={"max_tokens": 500})
    records = chunk_file("annual-letter.pdf", strategy="letter")

Each record is a `streams.ChunkRecord` (chunk id, text, offsets into the document, page numbers, tokens,
section path, metadata, checksum), built by the same function the workers use (`streams.core.publish`),
so a document gives the same ids here as on the bus. Options are a strategy's options (`streams
strategies` lists them); a bad one raises `OptionsError` naming it. A document the strategy does not take
(its type is outside the strategy's `doc_types`) raises `NotApplicable` with the reason, where the bus
would skip it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streams.core.chunkers import EMBEDDING_STRATEGIES, STRATEGIES, Chunker, get_chunker, make_options
from streams.core.doctype import given_type
from streams.core.document import assemble
from streams.core.events import ChunkRecord, DocType, PageEvent
from streams.core.options import OptionsError
from streams.core.publish import publish
from streams.embedding.stores import get_embedder
from streams.ingest.files import page_events
from streams.settings import Settings
from streams.sinks.search import search as run_search
from streams.strategies import SENTENCE_UNITS

if TYPE_CHECKING:
    from streams.embedding.model import Embedder


class NotApplicable(ValueError):
    """The strategy does not take this kind of document (its `doc_types`); the bus would skip it."""


def chunk_text(
    text: str | list[str],
    strategy: str = "window",
    *,
    doc_type: str | None = None,
    doc_id: str = "document",
    document_name: str | None = None,
    amendment: int = 0,
    options: Mapping[str, Any] | None = None,
    embedder: Embedder | None = None,
) -> list[ChunkRecord]:
    """Chunk `text` (one string, or a list of page texts) with `strategy` and its `options`; `semantic`
    and `cluster` embed with `embedder` when given (default: the packaged model, see `_chunker`). Without
    `doc_type` the type is detected from the text, as the assembler does on the bus."""
    pages = [text] if isinstance(text, str) else list(text)
    if not pages:
        raise ValueError("no text to chunk")
    kind, metadata = given_type({}, doc_type)
    events = [
        PageEvent(
            doc_id=doc_id,
            document_name=document_name or f"{doc_id}.txt",
            page_number=number,
            page_count=len(pages),
            text=page,
            doc_type=kind,
            amendment_number=amendment,
            metadata=metadata,
        )
        for number, page in enumerate(pages, start=1)
    ]
    return _chunk(events, strategy, options, embedder)


def chunk_file(
    path: str | Path,
    strategy: str = "window",
    *,
    doc_type: str | None = None,
    doc_id: str | None = None,
    amendment: int = 0,
    options: Mapping[str, Any] | None = None,
    embedder: Embedder | None = None,
) -> list[ChunkRecord]:
    """Chunk a file (PDF, Markdown, text, DOCX, HTML, or page JSON) as `streams publish` would read it; the
    document type is detected from its text unless given. `embedder`: as for `chunk_text`."""

    kind = DocType(doc_type) if doc_type else None
    events = page_events(Path(path), doc_id=doc_id, doc_type=kind, amendment=amendment)
    return _chunk(events, strategy, options, embedder)


def _chunk(
    events: list[PageEvent], strategy: str, options: Mapping[str, Any] | None, embedder: Embedder | None
) -> list[ChunkRecord]:
    options_json = json.dumps(dict(options or {}), sort_keys=True, default=str)
    chunker = _chunker(strategy, options_json, embedder if strategy in EMBEDDING_STRATEGIES else None)
    published = publish(assemble(events), chunker)
    if not published.applicable:
        raise NotApplicable(f"{published.skipped} (widen it with options={{'doc_types': [...]}})")
    return published.records


@functools.cache
def _chunker(strategy: str, options_json: str, embedder: Embedder | None) -> Chunker:
    """One chunker per strategy, options and embedder (a cache keyed by its inputs): models load once per
    process. Without an embedder, `semantic` and `cluster` get the packaged model's, on ONNX Runtime, with
    no shared store: the API reads no settings."""
    if strategy not in STRATEGIES:
        raise OptionsError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    options = make_options(strategy, json.loads(options_json))
    if strategy in EMBEDDING_STRATEGIES and embedder is None:
        embedder = get_embedder(long_texts=SENTENCE_UNITS)
    return get_chunker(strategy, options, embedder=embedder)


__all__ = ["ChunkRecord", "NotApplicable", "OptionsError", "chunk_file", "chunk_text"]


def search(
    question: str,
    k: int = 5,
    *,
    strategy: str | None = None,
    filters: list[str] | None = None,
    principal: str | None = None,
    tenant: str | None = None,
    index: str | None = None,
    settings: Settings | None = None,
) -> list[dict[str, Any]]:
    """The `k` nearest latest chunks in a deployment's promoted vector index (or `index`), as `streams search`
    answers: chunk id, score, document, pages, text from MongoDB, metadata and the index that answered."""
    return run_search(settings or Settings(), question, k, strategy, filters or [], principal, tenant, index)
