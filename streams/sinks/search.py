"""`streams search`: a query for people over the promoted vector index, with text fetched from MongoDB."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streams.embedding.stores import embedder_for
from streams.settings import Settings
from streams.sinks.factory import vector_target
from streams.sinks.filters import parse, readable_by
from streams.sinks.indexes import index_settings


def search(
    settings: Settings,
    question: str,
    k: int = 5,
    strategy: str | None = None,
    filters: Sequence[str] = (),
    principal: str | None = None,
    tenant: str | None = None,
    index: str | None = None,
) -> list[dict[str, Any]]:
    """The `k` nearest latest chunks meeting every filter (`year>=2024`, `tags=a|b`), and only those that
    `principal` may read when one is given (streams.sinks.filters; FilterError: one line). With tenancy on
    the search is `tenant`'s alone: its own namespace or table, and rows of its own. It reads vector index
    `index`, or the promoted one (streams.sinks.indexes), and embeds the question with that index's model."""
    from streams.sinks.mongo import MongoSink

    scope = settings.tenant_scope(tenant)
    where = parse(filters, settings.vector_keys)  # a bad filter is refused before the model loads
    if principal is not None:
        where.append(readable_by(principal))
    settings = index_settings(settings, index)  # after the refusals above: they need no store
    vector = embedder_for(settings).encode([question])[0]
    matches = vector_target(settings, scope).query([float(x) for x in vector], k, strategy, where)
    if not matches:
        return []
    store = MongoSink.of(settings, timeout_ms=3000)
    try:
        docs = {d["_id"]: d for d in store.by_ids([m.chunk_id for m in matches], tenant=scope or None)}
    finally:
        store.close()
    hits = []
    for match in matches:
        doc = docs.get(match.chunk_id, {})
        hits.append(
            {
                "chunk_id": match.chunk_id,
                "score": round(match.score, 4),
                "doc_id": match.metadata.get("doc_id"),
                "document_name": doc.get("document_name", match.metadata.get("doc_id")),
                "strategy": match.metadata.get("strategy"),
                "amendment_number": doc.get("amendment_number", match.metadata.get("amendment_number", 0)),
                "page_numbers": doc.get("page_numbers", []),
                "text": doc.get("text", "(text not in MongoDB yet)"),
                "doc_metadata": doc.get("doc_metadata", {}),
                "vector_index": match.metadata.get("vector_index") or settings.index_name,
            }
        )
    return hits
