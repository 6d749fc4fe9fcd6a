"""A document's own metadata: typed on the way in, merged by a stated rule, on every chunk record, and
hostile keys or values refused with a reason that names them."""

from __future__ import annotations

import json

import pytest

from streams.codec.avro import AvroCodec
from streams.core.assembly import Assembler, BadInput, Dead, Limits, parse_page
from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.metadata import MAX_METADATA_BYTES, MetadataError, as_text, clean, own
from streams.core.records import build_records
from tests.conftest import make_pages, raw_page

TEXT = "The council met on Tuesday. It voted on the budget. The motion carried by seven votes to two."

TYPED = {
    "source": "s3://bucket/minutes.pdf",
    "published": "2026-03-04",
    "year": 2026,
    "score": 0.75,
    "public": True,
    "tags": ["budget", "council"],
    "reviewer": None,
}


def _page(metadata: object, **fields: object) -> bytes:
    page = {"doc_id": "d", "document_name": "d.txt", "page_number": 1, "page_count": 1, "text": TEXT}
    return raw_page(**{**page, **fields, "metadata": metadata})


def test_typed_values_keep_their_type_and_an_object_is_kept_as_its_json_text() -> None:
    page = parse_page(_page({**TYPED, "extra": {"b": 1, "a": [1, "x"]}, "mixed": [1, "two"]}))
    assert {k: page.metadata[k] for k in TYPED} == TYPED
    assert [type(page.metadata[k]) for k in ("year", "score", "public")] == [int, float, bool]
    assert page.metadata["extra"] == '{"a":[1,"x"],"b":1}'
    assert page.metadata["mixed"] == '[1,"two"]'


@pytest.mark.parametrize(
    ("metadata", "names"),
    [
        ({"$where": "1"}, "'$where' starts with '$'"),
        ({"a.b": "1"}, "'a.b' holds '.'"),
        ({"": "1"}, "non-empty"),
        ({"tab\there": "1"}, "control"),
        ({"k" * 200: "1"}, "200 characters"),
        ({"n": 2**64}, "64 bits"),
        ({"acl": "alice"}, "'acl' must be a list"),
        ({"acl": ["alice", 3]}, "'acl' must be a list"),
        ({"blob": "x" * 1_000_000}, "largest: 'blob'"),
        ("not an object", "must be an object"),
    ],
)
def test_hostile_metadata_is_refused_with_a_reason_that_names_the_key(metadata: object, names: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_page(_page(metadata))
    assert caught.value.code == "invalid_metadata"
    assert names in caught.value.reason and caught.value.doc_id == "d"


def test_a_value_that_is_not_a_finite_number_is_refused() -> None:
    # Python's JSON parser reads NaN and Infinity; no store filters on them and Pinecone refuses them.
    raw = _page({}).replace(b'"metadata": {}', b'"metadata": {"x": NaN}')
    with pytest.raises(BadInput, match="'x': nan is not a finite number"):
        parse_page(raw)


def test_control_characters_and_operator_like_values_are_plain_data() -> None:
    page = parse_page(_page({"note": "line\x00one\x1b[31m", "query": {"$gt": 1}}))
    assert page.metadata["note"] == "line\x00one\x1b[31m"
    assert page.metadata["query"] == '{"$gt":1}'  # a string, never a sub-document MongoDB would read


def test_pages_merge_in_page_order_and_the_later_page_wins() -> None:
    pages = make_pages("d", [TEXT, TEXT, TEXT])
    pages[0].metadata.update({"title": "Draft", "author": "A"})
    pages[2].metadata.update({"title": "Final"})
    pages[1].metadata.update({"tags": ["x"]})
    doc = assemble(list(reversed(pages)))  # arrival order does not matter
    assert own(doc.metadata) == {"author": "A", "tags": ["x"], "title": "Final"}


def test_the_union_of_the_pages_metadata_has_the_same_limit() -> None:
    half = "x" * (MAX_METADATA_BYTES // 2 + 100)
    assembler = Assembler({}, {}, Limits())
    raws = [_page({f"k{n}": half}, page_number=n, page_count=2) for n in (1, 2)]
    outcomes = [o for raw in raws for o in assembler.on_page(raw)]
    [dead] = outcomes
    assert isinstance(dead, Dead) and dead.code == "metadata_too_large" and len(dead.pages) == 2
    assert "the document's metadata from all its pages" in dead.reason


def test_every_record_carries_the_publishers_keys_and_ids_do_not_depend_on_them() -> None:
    chunker = get_chunker("window")
    plain = assemble(make_pages("d", [TEXT]))
    given = assemble(make_pages("d", [TEXT], metadata=TYPED))
    retitled = assemble(make_pages("d", [TEXT], metadata={**TYPED, "title": "New"}))
    records = {
        name: build_records(doc, chunker, chunker.chunk(doc))
        for name, doc in [("plain", plain), ("given", given), ("retitled", retitled)]
    }
    assert all(r.doc_metadata == dict(sorted(TYPED.items())) for r in records["given"])
    assert all(r.doc_metadata == {} for r in records["plain"])
    assert not any(k.startswith("doc_type") for r in records["given"] for k in r.doc_metadata)  # routing has them
    ids = {name: [r.chunk_id for r in rs] for name, rs in records.items()}
    assert ids["plain"] == ids["given"] == ids["retitled"]
    sums = {name: [r.checksum for r in rs] for name, rs in records.items()}
    assert len({tuple(s) for s in sums.values()}) == 3  # a metadata-only change is a new checksum


def test_typed_metadata_is_the_same_after_avro() -> None:
    chunker = get_chunker("window")
    doc = assemble(make_pages("d", [TEXT], metadata=TYPED))
    [record, *_] = build_records(doc, chunker, chunker.chunk(doc))
    codec = AvroCodec(None)
    decoded = codec.decode("chunk_record", codec.encode("chunk_record", record.model_dump(mode="json")))
    assert decoded["doc_metadata"] == dict(sorted(TYPED.items()))
    assert [type(decoded["doc_metadata"][k]) for k in ("year", "score", "public")] == [int, float, bool]
    back = codec.decode("assembled_document", codec.encode("assembled_document", doc.model_dump(mode="json")))
    assert back["metadata"] == doc.metadata


def test_the_strategies_read_a_typed_value_as_the_text_they_read_before() -> None:
    assert [as_text(v) for v in ("2024", 2024, 1.5, True, None, ["a"])] == ["2024", "2024", "1.5", "true", "", '["a"]']
    doc = assemble(make_pages("d", [TEXT], metadata={"year": 2019, "quarter": "Q3"}))
    assert doc.meta("year") == "2019" and doc.meta("missing", "x") == "x"


def test_clean_is_what_a_page_applies() -> None:
    assert clean({"a": 1}) == {"a": 1}
    with pytest.raises(MetadataError):
        clean({"a.b": 1})
    assert json.loads(json.dumps(clean(TYPED))) == TYPED
