"""`streams delete`: retire a document (a tombstone), or purge it, or all of a tenant's, from everywhere.

A purge, in this order:
1. the documents' keys leave the key ring (streams.runtime.keyring): every sealed copy of their text on
   every topic (pages, assembled documents, chunks, dead letters, changelogs) is unreadable from now on;
2. it waits out the processes' key caches (STREAMS_KEY_CACHE_SECONDS), so no process can still open one,
   or write one back into a store;
3. their rows leave MongoDB, their vectors the vector store (a tenant's whole namespace or table), and
   their embedding-store entries go, save those another live row still needs (the same text);
4. a tombstone per document on the versions topic, as a plain delete: the chunkers forget their versions;
5. a receipt in the `purges` collection: which documents, whose, when, and how much went (no text).

With document keys off (STREAMS_DOCUMENT_KEYS unset) steps 1 and 2 are skipped and the receipt says that
the topics keep the text until their retention; the stores are purged all the same.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from streams.core.records import content_hash, embedding_text
from streams.core.tenancy import qualify
from streams.embedding.stores import open_store
from streams.runtime.keyring import KeyRing
from streams.settings import ConfigError, Settings
from streams.sinks.factory import vector_target
from streams.sinks.indexes import indexes

PURGES_COLLECTION = "purges"
#: What the receipt says of the topics, by whether their records were sealed.
TOPICS_SHREDDED = "sealed copies unreadable: their keys are deleted"
TOPICS_KEPT = "not erased: STREAMS_DOCUMENT_KEYS is off, the topics keep the text until their retention"


@dataclass
class Receipt:
    """What a purge removed, kept in the `purges` collection; never any text."""

    purge_id: str
    tenant: str
    doc_ids: list[str]
    at_ms: int
    keys: int = 0
    rows: int = 0
    vectors: int = 0
    embeddings: int = 0
    topics: str = TOPICS_KEPT
    whole_tenant: bool = False
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def tombstone(settings: Settings, doc_ids: Sequence[str]) -> None:
    """A tombstone per document on the versions topic: every strategy retires its chunks."""
    from streams.ops.pipeline import Refusals, producer

    refusals = Refusals()
    out = producer(settings, refusals)
    for doc_id in doc_ids:
        out.produce(settings.topics.versions, key=doc_id.encode(), value=None)
    refusals.check(out, "tombstone(s)")  # one clear line (main), not a tombstone reported as published


def _embedding_keys(row: dict[str, Any], context: frozenset[str]) -> set[str]:
    """The keys the row's text was embedded under: its content hash, or its heading and text's."""
    keys = {str(row.get("content_hash") or "")}
    if row.get("strategy") in context:
        keys.add(content_hash(embedding_text(str(row.get("text") or ""), row.get("section_path") or [])))
    return keys - {""}


def purge(
    settings: Settings,
    doc_ids: Sequence[str] = (),
    tenant: str | None = None,
    wait: Callable[[float], None] = time.sleep,
    on_step: Callable[[str], None] = lambda _step: None,
) -> Receipt:
    """Purge the documents `doc_ids` (the tenant's own ids with tenancy on), or, with none named, every
    document of `tenant`. The receipt is kept and returned."""
    from streams.sinks.mongo import MongoSink

    scope = settings.tenant_scope(tenant)
    whole = not doc_ids
    if whole and not scope:
        raise ConfigError("name the documents to purge, or a tenant (--tenant) to purge all of its documents")
    mongo = MongoSink.of(settings)
    try:
        rows_of: dict[str, Any] = (
            {"tenant": scope} if whole else {"doc_id": {"$in": [qualify(scope, d) for d in doc_ids]}}
        )
        docs = sorted({str(d) for d in mongo.collection.distinct("doc_id", rows_of)})
        if not whole:
            docs = sorted({*docs, *(qualify(scope, d) for d in doc_ids)})
        receipt = Receipt(uuid.uuid4().hex, scope, docs, int(time.time() * 1000), whole_tenant=whole)
        if settings.document_keys:
            on_step("deleting the document keys")
            keys = KeyRing.of(settings)
            gone = keys.delete(tenant=scope) if whole else keys.delete(docs)
            receipt.keys, receipt.topics = len(gone), TOPICS_SHREDDED
            receipt.doc_ids = docs = sorted({*docs, *gone})
            on_step(f"waiting {settings.key_cache_seconds:g}s for every process to forget them")
            wait(settings.key_cache_seconds)
        on_step("deleting rows, vectors and embeddings")
        rows = list(
            mongo.collection.find(rows_of, {"_id": 1, "content_hash": 1, "strategy": 1, "text": 1, "section_path": 1})
        )
        receipt.rows = mongo.collection.delete_many(rows_of).deleted_count
        for index in indexes(settings):  # every index holds its own vectors of the documents
            own = index.settings(settings)
            if whole:
                target = vector_target(own, scope)
                receipt.vectors += target.count()
                target.drop()  # type: ignore[attr-defined]
            else:
                target = vector_target(own)
                ids = [str(r["_id"]) for r in rows]
                receipt.vectors += len(target.flags(ids))
                target.delete(ids)
        store = open_store(settings)
        if store is not None:
            candidates = {k for row in rows for k in _embedding_keys(row, frozenset(settings.embed_context))}
            shared = {
                str(d["content_hash"])
                for d in mongo.collection.find(
                    {"content_hash": {"$in": sorted(candidates)}, "text": {"$exists": True}}, {"content_hash": 1}
                )
            }
            receipt.embeddings = store.forget(sorted(candidates - shared))
            if shared:
                receipt.notes.append(f"{len(shared)} embedding(s) kept: another live chunk has the same text")
            store.close()  # type: ignore[attr-defined]
        # Last: the chunkers forget their versions, and the sinks' retirements find nothing left to retire
        # (a flip leaves a stub row, its id and flags, no text, as for any flip that lands before its chunk).
        on_step("retiring the documents")
        tombstone(settings, docs)
        mongo.collection.database[PURGES_COLLECTION].insert_one({"_id": receipt.purge_id, **receipt.as_dict()})
        return receipt
    finally:
        mongo.close()


def receipts(settings: Settings, tenant: str | None = None) -> list[dict[str, Any]]:
    """The purge receipts kept, oldest first (one tenant's, or all)."""
    from streams.sinks.mongo import MongoSink

    mongo = MongoSink.of(settings)
    try:
        query = {"tenant": tenant} if tenant is not None else {}
        return sorted(mongo.collection.database[PURGES_COLLECTION].find(query, {"_id": 0}), key=lambda r: r["at_ms"])
    finally:
        mongo.close()
