"""Both wire formats, interop with confluent-kafka's own deserializer, and backward compatibility."""

from __future__ import annotations

import io
import json

import fastavro
import pytest
from fastavro.utils import generate_many

from streams.codec.avro import AvroCodec, AvroDecodeError, SchemaSet, schema_set
from streams.codec.history import history_files
from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.events import AssembledDocument, ChunkRecord, DeadLetter, PageEvent
from streams.core.records import build_records
from tests.conftest import make_pages


def _crc64_avro(data: bytes) -> int:
    """The Avro spec's reference fingerprint, written out independently of fastavro."""
    empty = 0xC15D213AA4D7A795
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (empty & -(fp & 1))
        table.append(fp)
    fp = empty
    for byte in data:
        fp = (fp >> 8) ^ table[(fp ^ byte) & 0xFF]
    return fp


@pytest.fixture(scope="module")
def records() -> list[ChunkRecord]:
    doc = assemble(make_pages("codec", ["word " * 300, "more " * 100]))
    chunker = get_chunker("window")
    return build_records(doc, chunker, chunker.chunk(doc))


def _samples(records: list[ChunkRecord]) -> dict[str, dict]:
    doc = assemble(make_pages("codec", ["a b c"]))
    page = PageEvent(doc_id="x", document_name="x.pdf", page_number=1, page_count=1, text="hé", metadata={"k": "v"})
    letter = DeadLetter(reason_code="invalid_json", reason="bad", stage="assembly", source_topic="t", value=b"\x00\xff")
    return {
        "chunk_record": records[0].model_dump(),
        "assembled_document": AssembledDocument.model_validate(doc.model_dump()).model_dump(mode="json"),
        "page_event": page.model_dump(mode="json"),
        "dead_letter": letter.model_dump(),
    }


@pytest.mark.parametrize("registry_url", [None, "mock://codec-tests"])
def test_round_trip_every_subject(records: list[ChunkRecord], registry_url: str | None) -> None:
    codec = AvroCodec(registry_url)
    for subject, record in _samples(records).items():
        data = codec.encode(subject, record, topic=f"topic-{subject}")
        assert codec.decode(subject, data) == record


def test_single_object_header_is_the_spec_fingerprint(records: list[ChunkRecord]) -> None:
    codec = AvroCodec()
    data = codec.encode("chunk_record", records[0].model_dump())
    canonical = codec.schemas.canonical("chunk_record").encode()
    assert data[:2] == b"\xc3\x01"
    assert data[2:10] == _crc64_avro(canonical).to_bytes(8, "little")
    body = fastavro.schemaless_reader(io.BytesIO(data[10:]), codec.schemas.current["chunk_record"], None)
    assert body["chunk_id"] == records[0].chunk_id


def test_confluent_bytes_read_by_confluent_deserializer(records: list[ChunkRecord]) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    registry = SchemaRegistryClient.new_client({"url": "mock://interop"})
    codec = AvroCodec(registry=registry)
    data = codec.encode("chunk_record", records[1].model_dump(), topic="chunks.created")
    assert data[0] == 0
    decoded = AvroDeserializer(registry)(data, SerializationContext("chunks.created", MessageField.VALUE))
    assert decoded["chunk_id"] == records[1].chunk_id
    assert decoded["metadata"]["word_count"] == records[1].metadata["word_count"]
    # and a registry-aware codec reads single-object bytes too
    plain = AvroCodec().encode("chunk_record", records[1].model_dump())
    assert codec.decode("chunk_record", plain)["chunk_id"] == records[1].chunk_id


def test_bad_bytes_are_rejected_with_reasons(records: list[ChunkRecord]) -> None:
    codec = AvroCodec()
    good = codec.encode("chunk_record", records[0].model_dump())
    with pytest.raises(AvroDecodeError, match="truncated"):
        codec.decode("chunk_record", good[:-20])
    with pytest.raises(AvroDecodeError, match="trailing"):
        codec.decode("chunk_record", good + b"\x00\x00")
    with pytest.raises(AvroDecodeError, match="unknown schema fingerprint"):
        codec.decode("chunk_record", b"\xc3\x01" + b"\x01" * 8 + good[10:])
    with pytest.raises(AvroDecodeError, match="no schema registry"):
        codec.decode("chunk_record", b"\x00\x00\x00\x00\x07" + good[10:])
    with pytest.raises(AvroDecodeError, match="unknown schema id"):
        AvroCodec("mock://empty").decode("chunk_record", b"\x00\x00\x00\x30\x39" + good[10:])
    with pytest.raises(AvroDecodeError, match="expected a chunk_record"):
        codec.decode("chunk_record", codec.encode("dead_letter", _samples(records)["dead_letter"]))
    with pytest.raises(AvroDecodeError, match="not an Avro record"):
        codec.decode("chunk_record", b'{"json": true}')


def test_every_current_schema_is_published_in_history() -> None:
    """A schema change must be snapshotted (streams schemas snapshot), so the next test covers it."""
    schemas = schema_set()
    published = {
        subject: {
            SchemaSet.fingerprint(fastavro.parse_schema(json.loads(p.read_text()), named_schemas={})) for p in paths
        }
        for subject, paths in history_files().items()
    }
    for subject, schema in schemas.current.items():
        assert SchemaSet.fingerprint(schema) in published.get(subject, set()), f"{subject} changed: snapshot it"


@pytest.mark.parametrize("subject", ["chunk_record", "assembled_document", "page_event", "dead_letter", "chunk_status"])
def test_every_published_version_is_readable_by_the_current_schema(subject: str) -> None:
    codec = AvroCodec()
    paths = history_files().get(subject, [])
    assert paths, f"no published history for {subject}"
    for path in paths:
        writer = fastavro.parse_schema(json.loads(path.read_text()), named_schemas={})
        header = b"\xc3\x01" + SchemaSet.fingerprint(writer)
        for datum in generate_many(writer, 25):
            out = io.BytesIO()
            fastavro.schemaless_writer(out, writer, datum)
            decoded = codec.decode(subject, header + out.getvalue())
            assert set(decoded) >= {f["name"] for f in json.loads(path.read_text())["fields"]}


def test_a_new_optional_field_keeps_old_data_readable(tmp_path) -> None:
    """The evolution rule itself: adding a field with a default is backward compatible; without, not."""
    old = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]}
    compatible = {**old, "fields": [*old["fields"], {"name": "b", "type": "int", "default": 7}]}
    breaking = {**old, "fields": [*old["fields"], {"name": "b", "type": "int"}]}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(old), {"a": "x"})
    body = out.getvalue()
    assert fastavro.schemaless_reader(
        io.BytesIO(body), fastavro.parse_schema(old), fastavro.parse_schema(compatible)
    ) == {"a": "x", "b": 7}
    with pytest.raises(fastavro.read.SchemaResolutionError):
        fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(old), fastavro.parse_schema(breaking))
