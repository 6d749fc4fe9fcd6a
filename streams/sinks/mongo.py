"""MongoDB sink: full text and all metadata, upsert by chunk id, flips applied, idempotent.

A flip may reach the sink before the chunk it flips (two topics, no cross-topic order). Upserts therefore
never set `is_latest_version` or `retired` on an existing document (`$setOnInsert`), and flips upsert a stub, so the
end state is the same in any order. Queries on the embedded SecantusDB avoid `$lte` on compound indexes
(a known bug drops equal rows).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pymongo import ASCENDING, MongoClient, UpdateOne
from pymongo.collection import Collection

from streams.core.events import ChunkRecord, ChunkStatus
from streams.runtime.clients import client_options
from streams.settings import Settings
from streams.sinks.base import RETIRED, STORED, is_table, section_type

INDEXES: list[list[tuple[str, int]]] = [
    [("doc_id", ASCENDING), ("amendment_number", ASCENDING)],
    [("doc_id", ASCENDING), ("is_latest_version", ASCENDING)],
    [("strategy", ASCENDING), ("is_latest_version", ASCENDING)],
    [("section_type", ASCENDING)],
    [("content_hash", ASCENDING)],
    [("tenant", ASCENDING), ("doc_id", ASCENDING)],
]


def chunk_document(record: ChunkRecord) -> dict[str, Any]:
    body = record.model_dump()
    body.pop("is_latest_version")
    body["section_type"] = section_type(record)
    body["is_table"] = is_table(record)
    meta = record.metadata or {}
    body["requirement_flag"] = bool(meta.get("requirement_flag", False))
    body["is_critical"] = bool(meta.get("is_critical", False))
    return body


class MongoSink:
    name = "mongo"
    holds_tables = True

    def __init__(self, url: str, database: str = "streams", collection: str = "chunks", timeout_ms: int = 10_000):
        # A store that stops answering (frozen, or a network that drops packets) fails a write after
        # SOCKET_TIMEOUT_MS, which the sink retries and logs; without it the write waited for ever, silently.
        self.client: MongoClient = MongoClient(url, **client_options(url, timeout_ms), tz_aware=True)
        self.collection: Collection = self.client[database][collection]

    @classmethod
    def of(cls, settings: Settings, timeout_ms: int = 10_000) -> MongoSink:
        """The chunk collection of this deployment (its database carries the deployment's prefix)."""
        return cls(settings.mongo_url, settings.mongo_database, settings.mongo_collection, timeout_ms)

    def ensure_indexes(self) -> None:
        for keys in INDEXES:
            self.collection.create_index(keys)

    def write_chunks(self, records: Sequence[ChunkRecord]) -> int:
        if not records:
            return 0
        now = int(time.time() * 1000)
        ops = [
            UpdateOne(
                {"_id": r.chunk_id},
                {
                    "$set": {**chunk_document(r), "stored_ms": now},
                    # A status may land before its chunk (two topics): the flags it set must survive the chunk.
                    "$setOnInsert": {"is_latest_version": r.is_latest_version, "retired": False},
                },
                upsert=True,
            )
            for r in records
        ]
        self.collection.bulk_write(ops, ordered=False)
        return len(ops)

    def apply_status(self, statuses: Sequence[ChunkStatus]) -> int:
        if not statuses:
            return 0
        ops = []
        for s in statuses:
            if s.retired:
                update: dict[str, Any] = {"$set": {"is_latest_version": False, "retired": True}}
            else:  # a stub made by a flip must read as live once its chunk lands, like any other row
                update = {"$set": {"is_latest_version": False}, "$setOnInsert": {"retired": False}}
            ops.append(UpdateOne({"_id": s.chunk_id}, update, upsert=True))
        self.collection.bulk_write(ops, ordered=False)
        return len(ops)

    def _rows(self, ids: Sequence[str], fields: dict[str, int]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for start in range(0, len(ids), 1000):
            query = {"_id": {"$in": list(ids[start : start + 1000])}, "text": {"$exists": True}}
            rows.extend(self.collection.find(query, fields))
        return rows

    def account(self, ids: Sequence[str]) -> dict[str, str]:
        """A row with its text counts as held; a retired one too (it is kept, flagged, for audits)."""
        return {row["_id"]: RETIRED if row.get("retired") else STORED for row in self._rows(ids, {"retired": 1})}

    def latest_flags(self, ids: Sequence[str]) -> dict[str, bool]:
        return {row["_id"]: bool(row.get("is_latest_version")) for row in self._rows(ids, {"is_latest_version": 1})}

    def set_latest(self, ids: Sequence[str], is_latest: bool) -> None:
        for start in range(0, len(ids), 1000):
            batch = list(ids[start : start + 1000])
            self.collection.update_many({"_id": {"$in": batch}}, {"$set": {"is_latest_version": is_latest}})

    # -- queries users run ----------------------------------------------------------------------
    def count(self, latest_only: bool = False, **where: Any) -> int:
        query: dict[str, Any] = {"text": {"$exists": True}, "retired": False, **where}
        if latest_only:
            query["is_latest_version"] = True
        return self.collection.count_documents(query)

    def by_ids(self, ids: Sequence[str], tenant: str | None = None) -> list[dict[str, Any]]:
        """The rows of `ids`; with `tenant`, only that tenant's (a query never reads across tenants)."""
        query: dict[str, Any] = {"_id": {"$in": list(ids)}}
        if tenant is not None:
            query["tenant"] = tenant
        return list(self.collection.find(query))

    def refusal(self, record: ChunkRecord) -> tuple[str, str] | None:
        """Every record fits: its metadata is checked at assembly, and a record is far below a document's 16 MB."""
        return None

    def close(self) -> None:
        self.client.close()
