"""A document's allow-listed metadata on its vectors, typed as both stores filter it, and refused in one line
where a store could never take it."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.metadata import VECTOR_FIELDS, MetadataError, vector_keys
from streams.core.records import build_records
from streams.settings import ConfigError, Settings
from streams.sinks.base import VectorRow
from streams.sinks.lance_target import LanceTarget
from streams.sinks.pinecone_target import PineconeTarget
from streams.sinks.vectors import VectorSink
from tests.conftest import HashEmbedder, make_pages
from tests.sinks.conftest import either_target

TEXT = "The council met on Tuesday. It voted on the budget. The motion carried by seven votes to two."
KEYS = {"source": "str", "year": "int", "published": "date", "tags": "list", "public": "bool", "score": "float"}
META = {
    "source": "s3://b/m.pdf",
    "year": "2026",
    "published": "2026-03-04",
    "tags": ["budget"],
    "public": True,
    "score": 1,
    "secret": "not listed",
}


def _records(doc_id: str, metadata: dict):
    chunker = get_chunker("window")
    doc = assemble(make_pages(doc_id, [TEXT], metadata=metadata))
    return build_records(doc, chunker, chunker.chunk(doc))


@pytest.fixture(params=["lancedb", "pinecone"])
def target(request, tmp_path: Path, pinecone_double):
    with either_target(request.param, tmp_path, pinecone_double, KEYS) as target:
        yield target


def test_allow_listed_keys_reach_the_vectors_typed_and_the_others_do_not(target, tmp_path: Path) -> None:
    sink = VectorSink(target, tmp_path / "state.sqlite", embedder=HashEmbedder(), metadata_keys=KEYS)
    sink.write_chunks(_records("with", META) + _records("without", {"source": "s3://b/n.pdf"}))
    [hit, *_] = [m for m in target.query(HashEmbedder().encode([TEXT])[0], k=10) if m.metadata["doc_id"] == "with"]
    got = {k: hit.metadata.get(k) for k in [*KEYS, "secret"]}
    assert got == {
        "source": "s3://b/m.pdf",
        "year": 2026,
        "published": 1772582400,  # 2026-03-04T00:00:00Z
        "tags": ["budget"],
        "public": True,
        "score": 1.0,
        "secret": None,
    }
    [other, *_] = [m for m in target.query(HashEmbedder().encode([TEXT])[0], k=10) if m.metadata["doc_id"] == "without"]
    assert other.metadata["source"] == "s3://b/n.pdf" and other.metadata.get("year") is None


def test_a_value_of_the_wrong_type_or_size_is_refused_with_its_key(tmp_path: Path) -> None:
    sink = VectorSink(LanceTarget(tmp_path / "l", columns=KEYS), tmp_path / "s", HashEmbedder(), metadata_keys=KEYS)
    [bad_year, *_] = _records("d", {**META, "year": "twenty"})
    assert sink.refusal(bad_year) == ("vector_metadata_invalid", "vector metadata 'year' must be int, got 'twenty'")
    [bad_date, *_] = _records("d", {**META, "published": "last week"})
    assert sink.refusal(bad_date)[0] == "vector_metadata_invalid"
    [big, *_] = _records("d", {**META, "source": "x" * 30_000, "tags": ["y" * 12_000]})
    code, reason = sink.refusal(big)
    assert code == "vector_metadata_too_large" and "largest: 'source'" in reason and "over 40960" in reason
    [fine, *_] = _records("d", META)
    assert sink.refusal(fine) is None
    unlisted = VectorSink(LanceTarget(tmp_path / "m"), tmp_path / "t", HashEmbedder())
    assert unlisted.refusal(big) is None  # a key no vector carries costs the vectors nothing


def test_pinecone_itself_refuses_what_the_budget_keeps_out(tmp_path: Path, pinecone_double) -> None:
    url, key, _state = pinecone_double
    target = PineconeTarget(api_key=key, host=url)
    try:
        over = VectorSink(target, tmp_path / "s", HashEmbedder(), metadata_keys=KEYS, max_metadata_bytes=90_000)
        records = _records("d", {**META, "source": "x" * 45_000})
        assert over.refusal(records[0]) is None
        with pytest.raises(Exception, match="exceeds the limit of 40960 bytes"):
            over.write_chunks(records)
    finally:
        target.close()


def test_a_new_key_adds_a_column_and_a_changed_type_is_refused_in_one_line(tmp_path: Path) -> None:
    LanceTarget(tmp_path / "l", columns={"source": "str"})
    grown = LanceTarget(tmp_path / "l", columns={"source": "str", "year": "int"})
    assert {"source", "year"} <= set(grown.schema.names)
    assert "year" in LanceTarget(tmp_path / "l").schema.names  # a reader that lists no key still opens it
    with pytest.raises(ConfigError, match="keeps 'year' as int64, not string"):
        LanceTarget(tmp_path / "l", columns={"year": "str"})


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("year:integer", "the type must be one of"),
        ("doc_id", "a field every vector already has"),
        ("a,a", "listed twice"),
        ("$x", "which MongoDB reads as an operator"),
    ],
)
def test_a_bad_allow_list_is_refused_at_start(spec: str, says: str) -> None:
    with pytest.raises(MetadataError, match=says):
        vector_keys(spec, VECTOR_FIELDS)
    with pytest.raises(ValueError, match=says):
        Settings(vector_metadata_keys=spec)


def test_a_budget_over_pinecones_limit_is_refused_with_pinecone() -> None:
    with pytest.raises(ValueError, match="Pinecone takes at most 40960 bytes"):
        Settings(vector_store="pinecone", vector_metadata_max_bytes=50_000)
    assert Settings(vector_store="lancedb", vector_metadata_max_bytes=50_000).vector_metadata_max_bytes == 50_000
    assert Settings(vector_metadata_keys=" source , year:int ").vector_keys == {
        "source": "str",
        "year": "int",
        "acl": "list",
    }


def test_every_field_of_a_vector_row_is_reserved_from_a_documents_metadata() -> None:
    from dataclasses import fields

    own = {f.name for f in fields(VectorRow)} - {"values", "extra"}
    assert own <= set(VECTOR_FIELDS), own - set(VECTOR_FIELDS)
    assert {"vector", "values", "id"} <= set(VECTOR_FIELDS)
