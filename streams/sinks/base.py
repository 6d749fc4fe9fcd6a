"""The sink contract and the vector-target contract shared by Pinecone and LanceDB."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from streams.core.events import ChunkRecord, ChunkStatus
from streams.core.records import TABLE_CONTENT_TYPES, is_table

if TYPE_CHECKING:
    from streams.sinks.filters import Condition

__all__ = [
    "RETIRED",
    "STORED",
    "SUPERSEDED",
    "TABLE_CONTENT_TYPES",
    "ChunkSink",
    "Match",
    "VectorRow",
    "VectorTarget",
    "is_table",
    "section_type",
]


def section_type(record: ChunkRecord) -> str:
    """The section type users filter on: the strategy's own when it has one, else the content type."""
    meta = record.metadata or {}
    return str(meta.get("section_type") or meta.get("chunk_type") or record.content_type or "text")


#: What a store says of a chunk the ledger expects: held, or knowingly absent (and why).
STORED, SUPERSEDED, RETIRED = "stored", "superseded", "retired"


class ChunkSink(Protocol):
    """Idempotent writes: the same batch applied twice leaves the same state."""

    name: str
    #: whether table chunks belong in this store (MongoDB: yes; vectors: no, docs/strategies.md#section-5-tables)
    holds_tables: bool

    def write_chunks(self, records: Sequence[ChunkRecord]) -> int: ...

    def apply_status(self, statuses: Sequence[ChunkStatus]) -> int: ...

    def account(self, ids: Sequence[str]) -> dict[str, str]:
        """For each of `ids` the store holds or deliberately does not: STORED, SUPERSEDED or RETIRED."""
        ...

    def latest_flags(self, ids: Sequence[str]) -> dict[str, bool]:
        """`is_latest_version` of each stored one of `ids` (the audit compares them with the ledger)."""
        ...

    def set_latest(self, ids: Sequence[str], is_latest: bool) -> None:
        """Repair of a wrong flag, either way (a status flip can only clear it)."""
        ...

    def refusal(self, record: ChunkRecord) -> tuple[str, str] | None:
        """(reason code, reason) when this store can never take `record` as it is: the runner dead-letters
        it and the rest of the batch flows. None: it can be stored."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class VectorRow:
    """A vector with the minimal metadata of docs/strategies.md#section-6-storage-vectors-and-amendments: no text, no
    tables."""

    chunk_id: str
    values: list[float]
    doc_id: str
    strategy: str
    section_type: str
    amendment_number: int
    is_latest_version: bool
    is_critical: bool
    requirement_flag: bool
    content_hash: str
    #: the model that made the vector and the index it belongs to (streams.sinks.indexes)
    embedding_model: str = ""
    vector_index: str = ""
    #: the document's allow-listed metadata (STREAMS_VECTOR_METADATA_KEYS), typed as the stores filter it
    extra: dict[str, Any] = field(default_factory=dict)

    def metadata(self) -> dict[str, Any]:
        return {
            **self.extra,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "strategy": self.strategy,
            "section_type": self.section_type,
            "amendment_number": self.amendment_number,
            "is_latest_version": self.is_latest_version,
            "is_critical": self.is_critical,
            "requirement_flag": self.requirement_flag,
            "content_hash": self.content_hash,
            "embedding_model": self.embedding_model,
            "vector_index": self.vector_index,
        }


#: The metadata every vector has (`VectorRow.metadata`'s own keys) and the names the stores give a vector's
#: id and values: a document's own key may not take one of them.


@dataclass(frozen=True)
class Match:
    chunk_id: str
    score: float
    metadata: dict[str, Any]


class VectorTarget(Protocol):
    """Where vectors go. Two implementations: Pinecone (production) and LanceDB (embedded default)."""

    name: str

    def upsert(self, rows: Sequence[VectorRow]) -> None: ...

    def set_latest(self, ids: Sequence[str], is_latest: bool) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def count(self, latest_only: bool = False) -> int: ...

    def flags(self, ids: Sequence[str]) -> dict[str, bool]: ...

    def query(
        self, vector: Sequence[float], k: int, strategy: str | None = None, where: Sequence[Condition] = ()
    ) -> list[Match]:
        """The `k` nearest latest-version vectors that meet every condition (streams.sinks.filters)."""
        ...
