"""`streams search --filter` and `--as` on both vector stores alike: LanceDB on disk and Pinecone (its real
client against the double, which evaluates filters by Pinecone's documented rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.metadata import vector_keys
from streams.core.records import build_records
from streams.sinks.filters import FilterError, parse, readable_by
from streams.sinks.vectors import VectorSink
from tests.conftest import HashEmbedder, make_pages
from tests.sinks.conftest import either_target

KEYS = vector_keys("source,year:int,score:float,published:date,tags:list,public:bool,dc-kind")
TEXT = "The harbour board met on Tuesday and voted to repair the east pier before the winter storms."
DOCS = {
    "a": {
        "source": "s3://a",
        "year": 2024,
        "score": 0.5,
        "published": "2024-02-01",
        "tags": ["pier", "budget"],
        "public": True,
        "dc-kind": "minutes",
        "acl": ["alice", "group:board"],
    },
    "b": {
        "source": "s3://b",
        "year": 2025,
        "score": 0.9,
        "published": "2025-06-30T12:00:00+02:00",
        "tags": ["budget"],
        "public": False,
        "dc-kind": "it's quoted",
        "acl": ["bob"],
    },
    "c": {"source": "s3://c", "year": 2026, "published": "2026-01-15", "tags": [], "public": True},
}  # c has no acl: anyone may read it


@pytest.fixture(params=["lancedb", "pinecone"])
def target(request, tmp_path: Path, pinecone_double):
    with either_target(request.param, tmp_path, pinecone_double, KEYS) as target:
        sink = VectorSink(target, tmp_path / "state.sqlite", embedder=HashEmbedder(), metadata_keys=KEYS)
        chunker = get_chunker("window")
        for doc_id, metadata in DOCS.items():
            doc = assemble(make_pages(doc_id, [TEXT], metadata=metadata))
            sink.write_chunks(build_records(doc, chunker, chunker.chunk(doc)))
        yield target


def _docs(target, filters: list[str], principal: str | None = None) -> list[str]:
    where = parse(filters, KEYS) + ([readable_by(principal)] if principal else [])
    return sorted({m.metadata["doc_id"] for m in target.query(HashEmbedder().encode([TEXT])[0], 20, None, where)})


@pytest.mark.parametrize(
    ("filters", "docs"),
    [
        ([], ["a", "b", "c"]),
        (["source=s3://b"], ["b"]),
        (["source=s3://a|s3://c"], ["a", "c"]),
        (["tags=budget"], ["a", "b"]),  # a list matches when it holds the value
        (["tags=pier|nothing"], ["a"]),
        (["year>=2025"], ["b", "c"]),
        (["year<=2025", "year>=2025"], ["b"]),
        (["score>=0.6"], ["b"]),  # c has no score: a range never matches a missing key
        (["published>=2025-06-30"], ["b", "c"]),  # b: 10:00 UTC that day
        (["published<=2025-06-30T09:59:59Z"], ["a"]),
        (["public=true"], ["a", "c"]),
        (["dc-kind=it's quoted"], ["b"]),  # a key with '-', a value with a quote
        (["doc_id=a|b", "tags=budget", "year>=2025"], ["b"]),
    ],
)
def test_filters_select_the_same_documents_in_both_stores(target, filters: list[str], docs: list[str]) -> None:
    assert _docs(target, filters) == docs


def test_a_principal_reads_what_names_it_and_what_has_no_acl(target) -> None:
    assert _docs(target, [], "alice") == ["a", "c"]
    assert _docs(target, [], "group:board") == ["a", "c"]
    assert _docs(target, [], "bob") == ["b", "c"]
    assert _docs(target, [], "mallory") == ["c"]
    assert _docs(target, ["tags=budget"], "mallory") == []


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("owner=me", "the vectors do not carry 'owner'"),
        ("year>=soon", "must be int"),
        ("source>=s3://a", "ranges take numbers and dates"),
        ("tags<=x", "ranges take numbers and dates"),
        ("published>=yesterday", "must be date"),
        ("year", "write key=value"),
        ("year=", "write key=value"),
    ],
)
def test_a_bad_filter_is_one_line_naming_it(expression: str, says: str) -> None:
    with pytest.raises(FilterError, match=says):
        parse([expression], KEYS)


def test_every_vector_carries_its_acl_and_the_acl_is_a_list() -> None:
    assert vector_keys("source") == {"source": "str", "acl": "list"}
    with pytest.raises(ValueError, match="its type is list"):
        vector_keys("acl:str")
    with pytest.raises(FilterError, match="needs a principal"):
        readable_by(" ")
