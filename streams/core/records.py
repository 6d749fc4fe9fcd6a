"""Turn chunk drafts into bus records: deterministic ids, page numbers, token counts, checksums."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Sequence
from typing import Any

from streams.core.chunkers.base import ChunkDraft, Chunker
from streams.core.doctype import routing
from streams.core.document import pages_for_range
from streams.core.events import NOT_APPLICABLE, AssembledDocument, ChunkRecord, DocumentManifest
from streams.core.metadata import own
from streams.core.tenancy import scoped


def normalized_text(text: str) -> str:
    """Text normalised for identity: NFC and collapsed whitespace, so reflowed text keeps its id."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()


def content_hash(text: str, normalized: str | None = None) -> str:
    """Identity of a chunk's content alone: equal across amendments when the text did not change."""
    return _digest(normalized_text(text) if normalized is None else normalized)


def embedding_text(text: str, section_path: Sequence[str]) -> str:
    """What is embedded for a chunk whose vector carries its context: its heading path, outermost first,
    then its text (the context once: not again when the text opens with it), as Docling's `contextualize`
    does. The record keeps the plain text."""
    context = " > ".join(h for h in section_path if h)
    return f"{context}\n{text}" if context and not text.lstrip().startswith(context) else text


def chunk_id(
    doc_id: str,
    strategy: str,
    amendment_number: int,
    draft: ChunkDraft,
    position: int,
    normalized: str | None = None,
    lineage: str = "",
) -> str:
    """Globally unique and deterministic: document, strategy, amendment, place, content and options.

    Position and range are part of the id so two identical paragraphs in one document stay distinct.
    `normalized`, when given, is `normalized_text(draft.text)` (the record builder needs it twice).
    `lineage` fingerprints non-default strategy options; the defaults add nothing, so their ids are
    the ones every earlier release produced.
    """
    parts = [
        doc_id,
        strategy,
        str(amendment_number),
        str(position),
        f"{draft.char_start}:{draft.char_end}",
        "/".join(draft.section_path),
        "|".join(draft.identity),
        normalized_text(draft.text) if normalized is None else normalized,
    ]
    digest = _digest(*parts, lineage) if lineage else _digest(*parts)
    return f"{strategy}-{digest[:32]}"


def checksum(record: dict[str, Any]) -> str:
    """sha256 over the stable fields: everything except flags that change after publication.

    The document's metadata and tenant enter it (a metadata-only change under the same id is a new checksum, and the
    sinks replace the row and the vector's metadata); a field at its empty default does not, so records
    sum as they did before the field existed."""
    stable = {
        k: v
        for k, v in record.items()
        if k not in {"checksum", "is_latest_version"}
        and not (k == "routing" and v is None)
        and not (k in ("doc_metadata", "tenant") and not v)
    }
    payload = json.dumps(stable, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def build_records(
    doc: AssembledDocument,
    chunker: Chunker,
    drafts: Sequence[ChunkDraft],
    is_latest_version: bool = True,
) -> list[ChunkRecord]:
    """Records in reading order; `position` is the index, `chunk_count` lets consumers see completeness."""
    tokenizer = chunker.tokenizer
    counts = [tokenizer.count(d.text) if d.tokens is None else d.tokens for d in drafts]
    records: list[ChunkRecord] = []
    decided = routing(doc.metadata)
    own_metadata = own(doc.metadata)
    for position, (draft, tokens) in enumerate(zip(drafts, counts, strict=True)):
        normalized = normalized_text(draft.text)
        body: dict[str, Any] = {
            "chunk_id": scoped(
                doc.tenant,
                chunk_id(doc.doc_id, chunker.name, doc.amendment_number, draft, position, normalized, chunker.lineage),
            ),
            "doc_id": doc.doc_id,
            "document_name": doc.document_name,
            "doc_type": str(doc.doc_type),
            "strategy": chunker.name,
            "chunker_version": chunker.version,
            "amendment_number": doc.amendment_number,
            "is_latest_version": is_latest_version,
            "position": position,
            "chunk_count": len(drafts),
            "text": draft.text,
            "char_start": draft.char_start,
            "char_end": draft.char_end,
            "page_numbers": pages_for_range(doc.page_map, draft.char_start, draft.char_end),
            "token_count": tokens,
            "tokenizer": tokenizer.name,
            "section_path": list(draft.section_path),
            "content_type": draft.content_type,
            "content_hash": content_hash(draft.text, normalized),
            "metadata": draft.metadata,
        }
        if decided is not None:  # absent rather than null, so a hand-made document's checksums stay as they were
            body["routing"] = decided
        if own_metadata:  # absent when empty, so a document without metadata sums as it did before
            body["doc_metadata"] = own_metadata
        if doc.tenant:  # absent without tenancy, like doc_metadata
            body["tenant"] = doc.tenant
        body["checksum"] = checksum(body)
        records.append(ChunkRecord(**body))
    return records


TABLE_CONTENT_TYPES = {"table", "financial_table", "pricing_table"}


def is_table(record: ChunkRecord) -> bool:
    """Tables live in MongoDB only (docs/strategies.md#section-5-tables): they are not useful for semantic search."""
    meta = record.metadata or {}
    return bool(meta.get("is_table")) or record.content_type in TABLE_CONTENT_TYPES


def skipped_manifest(doc: AssembledDocument, chunker: Chunker, reason: str, timestamp_ms: int = 0) -> DocumentManifest:
    """The manifest of a document this strategy does not take: accounted for, with no chunk expected."""
    version = (doc.doc_id, doc.amendment_number, chunker.name, chunker.version, doc.document_name)
    return _manifest(version, [], timestamp_ms, outcome=NOT_APPLICABLE, reason=reason)


def manifest_for(records: Sequence[ChunkRecord], timestamp_ms: int = 0) -> DocumentManifest:
    """What the stores must end up holding for this document version: the ledger's expectation."""
    first = records[0]
    version = (first.doc_id, first.amendment_number, first.strategy, first.chunker_version, first.document_name)
    return _manifest(version, records, timestamp_ms)


def _manifest(
    version: tuple[str, int, str, str, str], records: Sequence[ChunkRecord], timestamp_ms: int, **outcome: str
) -> DocumentManifest:
    """The one place a manifest is built: (doc, amendment, strategy, chunker version, name) and its records."""
    doc_id, amendment_number, strategy, chunker_version, document_name = version
    return DocumentManifest(
        doc_id=doc_id,
        amendment_number=amendment_number,
        strategy=strategy,
        chunker_version=chunker_version,
        document_name=document_name,
        chunk_ids=[r.chunk_id for r in records],
        checksums=[r.checksum for r in records],
        is_table=[is_table(r) for r in records],
        chunk_count=len(records),
        timestamp_ms=timestamp_ms,
        **outcome,
    )
