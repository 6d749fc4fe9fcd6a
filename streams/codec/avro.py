"""Avro codecs for the project's topics.

Two framings, both standard, so any Avro consumer can read our topics:
- Confluent: 0x00, 4-byte big-endian schema id, Avro binary (needs a Schema Registry).
- Avro single-object encoding: 0xC3 0x01, 8-byte little-endian CRC-64-AVRO fingerprint, Avro binary.
Decoders accept both and resolve old writer schemas (from `schemas/history/`) into the current one.
"""

from __future__ import annotations

import functools
import io
import json
import struct
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import expand_schema, fingerprint, parse_schema, to_parsing_canonical_form

from streams.core.sealed import Shredded, envelope

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"  # streams/schemas links to the top-level schemas/
SINGLE_OBJECT_MARKER = b"\xc3\x01"
CONFLUENT_MAGIC = 0
SEALED_MAGIC = b"\xc5\x53"  # streams.core.sealed

SUBJECTS = {
    "page_event": "streams.PageEvent",
    "assembled_document": "streams.AssembledDocument",
    "chunk_record": "streams.ChunkRecord",
    "dead_letter": "streams.DeadLetter",
    "chunk_status": "streams.ChunkStatus",
}


class AvroDecodeError(ValueError):
    """Bytes that are not a record this project can read; the reason names the framing problem."""


def _load_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


class SchemaSet:
    """The current schemas, their fingerprints, and every historical writer schema we still read."""

    def __init__(self, schema_dir: Path = SCHEMA_DIR) -> None:
        self.dir = schema_dir
        self.strategy_records: dict[str, str] = {}
        raws: list[dict[str, Any]] = []
        for path in sorted((schema_dir / "metadata").glob("*.avsc")):
            raw = _load_json(path)
            for strategy in raw.get("strategies", [path.stem]):
                self.strategy_records[strategy] = f"{raw['namespace']}.{raw['name']}"
            raws.append(raw)
        order = (
            "page_event",
            "assembled_document",
            "dead_letter",
            "chunk_record",
            "chunk_status",
            "document_manifest",
            "document_indexed",
        )
        raws.extend(_load_json(schema_dir / f"{subject}.avsc") for subject in order)
        # Expanded schemas are self-contained: the fingerprint covers every nested record.
        expanded = expand_schema(raws)[-len(order) :]
        self.expanded: dict[str, Any] = dict(zip(order, expanded, strict=True))
        self.current: dict[str, Any] = {s: parse_schema(e, named_schemas={}) for s, e in self.expanded.items()}
        self.fingerprints: dict[bytes, tuple[str, Any]] = {}
        # computed once: the canonical form plus CRC-64 cost more than encoding a chunk record
        self.current_fingerprint: dict[str, bytes] = {s: self.fingerprint(c) for s, c in self.current.items()}
        for subject, schema in self.current.items():
            self.fingerprints[self.current_fingerprint[subject]] = (subject, schema)
        for path in sorted((schema_dir / "history").glob("*/*.avsc")):
            subject = path.parent.name
            old = parse_schema(_load_json(path), named_schemas={})
            self.fingerprints.setdefault(self.fingerprint(old), (subject, old))

    @staticmethod
    def fingerprint(schema: Any) -> bytes:
        # fastavro prints the CRC-64-AVRO value as hex of its little-endian bytes, which is the wire order.
        return bytes.fromhex(fingerprint(to_parsing_canonical_form(schema), "CRC-64-AVRO"))

    def canonical(self, subject: str) -> str:
        return to_parsing_canonical_form(self.current[subject])


@functools.cache
def schema_set() -> SchemaSet:
    return SchemaSet()


def _to_avro_datum(subject: str, record: Mapping[str, Any], schemas: SchemaSet) -> Mapping[str, Any]:
    if subject != "chunk_record":
        return record
    metadata = record.get("metadata")
    if not metadata:
        return {**record, "metadata": None}
    name = schemas.strategy_records.get(record["strategy"])
    if name is None:
        raise ValueError(f"no Avro metadata record for strategy {record['strategy']!r}")
    return {**record, "metadata": (name, metadata)}


def _from_avro_datum(subject: str, datum: dict[str, Any]) -> dict[str, Any]:
    if subject == "chunk_record" and isinstance(datum.get("metadata"), tuple):
        datum["metadata"] = datum["metadata"][1]
    elif subject == "chunk_record" and datum.get("metadata") is None:
        datum["metadata"] = {}
    if subject == "chunk_record" and isinstance(datum.get("routing"), tuple):
        datum["routing"] = datum["routing"][1]  # the one record of its union: return_record_name names it
    return datum


def _write(schema: Any, datum: Mapping[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, datum)
    return out.getvalue()


def _read(writer: Any, reader: Any, body: bytes) -> dict[str, Any]:
    buf = io.BytesIO(body)
    try:
        datum = fastavro.schemaless_reader(buf, writer, reader, return_record_name=True)
    except (EOFError, StopIteration, IndexError, UnicodeDecodeError, ValueError, TypeError) as exc:
        raise AvroDecodeError(f"truncated or corrupt Avro body: {type(exc).__name__}: {exc}") from exc
    if buf.tell() != len(body):
        raise AvroDecodeError(f"{len(body) - buf.tell()} trailing bytes after the Avro record")
    return datum


class AvroCodec:
    """Encodes with the configured framing; decodes either framing."""

    #: opens a record sealed with a document key (streams.runtime.keyring.SealingCodec); none here
    unseal: Callable[[bytes], bytes] | None = None

    def __init__(self, registry_url: str | None = None, registry: Any | None = None) -> None:
        self.schemas = schema_set()
        self.registry = registry
        if self.registry is None and registry_url:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            self.registry = SchemaRegistryClient.new_client({"url": registry_url})
        self._ids: dict[tuple[str, str], int] = {}
        self._by_id: dict[int, Any] = {}

    @property
    def framing(self) -> str:
        return "confluent" if self.registry is not None else "single-object"

    def _schema_id(self, subject: str, topic: str) -> int:
        key = (subject, topic)
        if key not in self._ids:
            from confluent_kafka.schema_registry import Schema

            schema = Schema(self.schemas.canonical(subject), "AVRO")
            self._ids[key] = self.registry.register_schema(f"{topic}-value", schema)
        return self._ids[key]

    def encode(self, subject: str, record: Mapping[str, Any], topic: str = "") -> bytes:
        schema = self.schemas.current[subject]
        body = _write(schema, _to_avro_datum(subject, record, self.schemas))
        if self.registry is not None:
            return struct.pack(">bI", CONFLUENT_MAGIC, self._schema_id(subject, topic or subject)) + body
        return SINGLE_OBJECT_MARKER + self.schemas.current_fingerprint[subject] + body

    def decode(self, subject: str, data: bytes) -> dict[str, Any]:
        if data[:2] == SEALED_MAGIC:  # a document key's record, and this codec holds no key ring
            raise Shredded(envelope(data)[0], "sealed with a document key, and STREAMS_DOCUMENT_KEYS is off here")
        reader = self.schemas.current[subject]
        if data[:2] == SINGLE_OBJECT_MARKER and len(data) >= 10:
            found = self.schemas.fingerprints.get(data[2:10])
            if found is None:
                raise AvroDecodeError(f"unknown schema fingerprint {data[2:10].hex()}")
            writer_subject, writer = found
            if writer_subject != subject:
                raise AvroDecodeError(f"record is a {writer_subject}, expected a {subject}")
            return _from_avro_datum(subject, _read(writer, reader, data[10:]))
        if data[:1] == b"\x00" and len(data) >= 5:
            (schema_id,) = struct.unpack(">I", data[1:5])
            writer = self._writer_for_id(schema_id)
            return _from_avro_datum(subject, _read(writer, reader, data[5:]))
        raise AvroDecodeError("not an Avro record: neither Confluent (0x00) nor single-object (0xC3 0x01) framing")

    def _writer_for_id(self, schema_id: int) -> Any:
        if schema_id in self._by_id:
            return self._by_id[schema_id]
        if self.registry is None:
            raise AvroDecodeError(
                f"Confluent-framed record (schema id {schema_id}) but no schema registry is configured"
            )
        try:
            schema = self.registry.get_schema(schema_id)
        except Exception as exc:  # the registry client raises its own error types
            raise AvroDecodeError(f"unknown schema id {schema_id}: {exc}") from exc
        parsed = parse_schema(json.loads(schema.schema_str), named_schemas={})
        self._by_id[schema_id] = parsed
        return parsed


def is_avro(data: bytes) -> bool:
    return data[:2] == SINGLE_OBJECT_MARKER or (data[:1] == b"\x00" and len(data) >= 5)
