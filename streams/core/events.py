"""Event contracts shared by every stage; the Avro schemas in `schemas/` mirror these models."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from streams.core.metadata import as_text, clean


class DocType(StrEnum):
    letter = "letter"
    transcript = "transcript"
    release = "release"
    slides = "slides"
    press = "press"
    solicitation = "solicitation"
    generic = "generic"


class Element(BaseModel):
    """A structured element extracted upstream (section header, speaker turn, table, slide title)."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    text: str = ""
    page_number: int | None = None
    level: int | None = None
    speaker: str | None = None
    role: str | None = None
    firm: str | None = None
    title: str | None = None
    element_id: str | None = None
    rows: list[list[str]] = Field(default_factory=list)
    attrs: dict[str, str] = Field(default_factory=dict)


class PageEvent(BaseModel):
    """One cleaned page as published on `pages.cleaned`."""

    model_config = ConfigDict(extra="ignore")

    doc_id: str = Field(min_length=1, max_length=512)
    document_name: str = Field(min_length=1, max_length=1024)
    page_number: int = Field(ge=1)
    page_count: int = Field(ge=1)
    text: str
    doc_type: DocType = DocType.generic
    amendment_number: int = Field(default=0, ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)  # the contract of streams.core.metadata
    elements: list[Element] = Field(default_factory=list)
    #: set by assembly's parse from the metadata key that names tenants (streams.core.tenancy), never by input
    tenant: str = Field("", exclude=True)

    @field_validator("doc_id")
    @classmethod
    def _doc_id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("doc_id is blank")
        return value

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata_contract(cls, value: Any) -> Any:

        return clean(value)


class PageSpan(BaseModel):
    """Where one page sits in the document stream: [start_char, end_char)
    (docs/strategies.md#stream-2-pages-joined-into-one-stream)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    page_number: int
    start_char: int
    end_char: int


class AssembledDocument(BaseModel):
    """All pages of one document version joined into one stream."""

    model_config = ConfigDict(extra="forbid")

    doc_id: str
    document_name: str
    doc_type: DocType
    amendment_number: int = 0
    page_count: int
    text: str
    page_map: list[PageSpan]
    metadata: dict[str, Any] = Field(default_factory=dict)
    elements: list[Element] = Field(default_factory=list)
    first_page_ms: int = 0
    completed_ms: int = 0
    #: whose document it is ("" without tenancy); `doc_id` is then `tenant#doc_id` (streams.core.tenancy)
    tenant: str = ""

    def meta(self, key: str, default: str = "") -> str:
        """One metadata value as the strategies read it: text (streams.core.metadata.as_text)."""

        return as_text(self.metadata[key]) if key in self.metadata else default


class Routing(BaseModel):
    """How a chunk's document got its type (the assembler's decision, repeated on every chunk)."""

    model_config = ConfigDict(extra="forbid")

    source: str  # "given" by the publisher, "detected" from the text, or "default" (nothing clear: generic)
    confidence: float = 1.0
    evidence: list[str] = Field(default_factory=list)


class ChunkRecord(BaseModel):
    """One chunk on `chunks.created`; the field names are the public contract."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    doc_id: str
    document_name: str
    doc_type: str
    strategy: str
    chunker_version: str
    amendment_number: int
    is_latest_version: bool = True
    position: int
    chunk_count: int
    text: str
    char_start: int
    char_end: int
    page_numbers: list[int]
    token_count: int
    tokenizer: str
    section_path: list[str] = Field(default_factory=list)
    content_type: str = "text"
    content_hash: str
    checksum: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    routing: Routing | None = None
    #: The document's own metadata (its publisher's keys, typed), the same on every chunk of the document.
    doc_metadata: dict[str, Any] = Field(default_factory=dict)
    #: whose chunk it is ("" without tenancy): its ids then open with `tenant#` (streams.core.tenancy)
    tenant: str = ""


class DeadLetter(BaseModel):
    """Bad input with its original bytes and a reason a human can act on."""

    model_config = ConfigDict(extra="forbid")

    reason_code: str
    reason: str
    stage: str
    source_topic: str
    source_partition: int = -1
    source_offset: int = -1
    key: bytes | None = None
    value: bytes | None = None
    doc_id: str | None = None
    timestamp_ms: int = 0
    attempt: int = 0  # n: refused again on its n-th re-drive (streams.runtime.redrive)
    redriven_from: str | None = None  # the dead letter it was re-driven from, partition:offset


class ChunkStatus(BaseModel):
    """A flip of `is_latest_version` (or a retirement) of a chunk already on `chunks.created`."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    doc_id: str
    strategy: str
    amendment_number: int
    is_latest_version: bool
    retired: bool = False
    superseded_by: int = -1
    timestamp_ms: int = 0


#: A manifest's (and an indexed event's) outcome when a strategy skips a document that is not for it.
NOT_APPLICABLE = "not_applicable"


class DocumentManifest(BaseModel):
    """The ledger's expectation for one document version and lineage: every chunk id, in order."""

    model_config = ConfigDict(extra="forbid")

    doc_id: str
    amendment_number: int
    strategy: str
    chunker_version: str
    document_name: str = ""
    chunk_ids: list[str]
    checksums: list[str]
    is_table: list[bool]
    chunk_count: int
    timestamp_ms: int = 0
    #: "chunked", or NOT_APPLICABLE: the strategy does not take this document, and no chunk is expected
    outcome: str = "chunked"
    reason: str = ""

    @property
    def key(self) -> str:
        return manifest_key(self.doc_id, self.amendment_number, self.strategy, self.chunker_version)

    @property
    def applicable(self) -> bool:
        return self.outcome != NOT_APPLICABLE

    def ids_held_by(self, holds_tables: bool) -> list[str]:
        """The chunk ids a store must account for: all of them, or the non-table ones (vectors,
        docs/strategies.md#section-5-tables)."""
        if holds_tables:
            return list(self.chunk_ids)
        return [cid for cid, table in zip(self.chunk_ids, self.is_table, strict=True) if not table]


def manifest_key(doc_id: str, amendment: int, strategy: str, chunker_version: str) -> str:
    """One compacted record per document version and lineage (`|` cannot start a version label)."""
    return f"{doc_id}|{amendment}|{strategy}|{chunker_version}"


class DocumentIndexed(BaseModel):
    """A store holds every chunk a manifest names (or knows why it does not: superseded, retired)."""

    model_config = ConfigDict(extra="forbid")

    doc_id: str
    amendment_number: int
    strategy: str
    chunker_version: str
    store: str
    chunk_count: int
    outcome: str = "indexed"
    indexed_ms: int = 0

    @property
    def manifest_key(self) -> str:
        return manifest_key(self.doc_id, self.amendment_number, self.strategy, self.chunker_version)

    @property
    def key(self) -> str:
        return f"{self.manifest_key}|{self.store}"
