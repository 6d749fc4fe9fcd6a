"""PineconeTarget with the real `pinecone` client against the local data-plane double."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

pytest.importorskip("pinecone")

from streams.sinks.base import VectorRow, VectorTarget
from streams.sinks.pinecone_target import PineconeTarget
from tests.sinks.pinecone_double import (
    ApiFailure,
    DoubleState,
    matches_filter,
    serve_pinecone_double,
)

DIM = 4
NS = "streams"
Served = tuple[str, str, DoubleState]


def row(
    chunk_id: str,
    values: list[float],
    *,
    strategy: str = "section",
    latest: bool = True,
    amendment: int = 0,
    doc_id: str = "doc-1",
) -> VectorRow:
    return VectorRow(
        chunk_id=chunk_id,
        values=values,
        doc_id=doc_id,
        strategy=strategy,
        section_type="text",
        amendment_number=amendment,
        is_latest_version=latest,
        is_critical=False,
        requirement_flag=True,
        content_hash=f"h-{chunk_id}",
    )


def unit(i: int) -> list[float]:
    """A distinct, non-zero vector per i, so cosine ranks are predictable."""
    return [1.0, float(i % 7), float(i % 3), 0.5]


@pytest.fixture
def target(pinecone_double: Served) -> Iterator[PineconeTarget]:
    url, key, _ = pinecone_double
    t = PineconeTarget(api_key=key, host=url, namespace=NS, dimension=DIM)
    yield t
    t.close()


def test_satisfies_the_protocol(target: PineconeTarget) -> None:
    assert isinstance(target.name, str)
    checked: VectorTarget = target
    assert checked.count() == 0


def test_upsert_sends_the_rest_shape_and_auth_headers(target: PineconeTarget, pinecone_double: Served) -> None:
    _, key, state = pinecone_double
    target.upsert([row("a", [1.0, 0.0, 0.0, 0.0]), row("b", [0.0, 1.0, 0.0, 0.0])])

    [call] = state.calls_to("/vectors/upsert", "POST")
    assert call.body is not None
    assert call.body["namespace"] == NS
    first = call.body["vectors"][0]
    assert first["id"] == "a" and first["values"] == [1.0, 0.0, 0.0, 0.0]
    assert first["metadata"]["is_latest_version"] is True
    assert first["metadata"]["amendment_number"] == 0
    headers = {k.lower(): v for k, v in call.headers.items()}
    assert headers["api-key"] == key
    assert headers["x-pinecone-api-version"]
    stored = state.vectors(NS)
    assert set(stored) == {"a", "b"}
    assert "text" not in stored["a"]["metadata"]
    assert target.count() == 2


def test_upsert_is_idempotent(target: PineconeTarget) -> None:
    rows = [row(f"c{i}", unit(i)) for i in range(5)]
    target.upsert(rows)
    target.upsert(rows)
    assert target.count() == 5


def test_upsert_batches_of_100(target: PineconeTarget, pinecone_double: Served) -> None:
    _, _, state = pinecone_double
    target.upsert([row(f"c{i:03d}", unit(i)) for i in range(250)])

    sizes = [len(c.body["vectors"]) for c in state.calls_to("/vectors/upsert") if c.body]
    assert sizes == [100, 100, 50]
    assert target.count() == 250


def test_empty_inputs_make_no_requests(target: PineconeTarget, pinecone_double: Served) -> None:
    _, _, state = pinecone_double
    target.upsert([])
    target.delete([])
    target.set_latest([], False)
    assert state.calls == []
    assert target.query(unit(1), 0) == []


def test_wrong_dimension_is_caught_before_sending(target: PineconeTarget, pinecone_double: Served) -> None:
    _, _, state = pinecone_double
    with pytest.raises(RuntimeError, match="3 values, the index expects 4"):
        target.upsert([row("a", [1.0, 0.0, 0.0])])
    with pytest.raises(RuntimeError, match="the index expects 4"):
        target.query([1.0, 0.0], 3)
    assert state.calls == []


def test_server_dimension_mismatch_is_one_clear_line(pinecone_double: Served) -> None:
    url, key, state = pinecone_double
    state.dimension = 8
    t = PineconeTarget(api_key=key, host=url, dimension=DIM)
    with pytest.raises(RuntimeError) as info:
        t.upsert([row("a", unit(1))])
    message = str(info.value)
    assert message.startswith("pinecone upsert failed:")
    assert "does not match the dimension of the index 8" in message
    assert "\n" not in message
    t.close()


def test_set_latest_patches_only_the_flag(target: PineconeTarget, pinecone_double: Served) -> None:
    _, _, state = pinecone_double
    target.upsert([row("a", unit(1), amendment=2), row("b", unit(2)), row("c", unit(3))])
    target.set_latest(["a", "b"], False)

    updates = state.calls_to("/vectors/update")
    assert [c.body for c in updates] == [
        {"namespace": NS, "id": "a", "setMetadata": {"is_latest_version": False}},
        {"namespace": NS, "id": "b", "setMetadata": {"is_latest_version": False}},
    ]
    stored = state.vectors(NS)
    assert stored["a"]["metadata"]["is_latest_version"] is False
    assert stored["a"]["metadata"]["content_hash"] == "h-a"
    assert stored["a"]["metadata"]["amendment_number"] == 2
    assert stored["c"]["metadata"]["is_latest_version"] is True
    assert target.count() == 3
    assert target.count(latest_only=True) == 1

    target.set_latest(["a"], True)
    assert target.count(latest_only=True) == 2


@pytest.mark.parametrize("status", [200, 404])
def test_set_latest_on_a_missing_id_is_ignored(target: PineconeTarget, pinecone_double: Served, status: int) -> None:
    _, _, state = pinecone_double
    state.update_missing_status = status
    target.upsert([row("a", unit(1))])
    target.set_latest(["gone", "a"], False)
    assert target.count(latest_only=True) == 0


def test_delete_in_batches_of_1000(target: PineconeTarget, pinecone_double: Served) -> None:
    _, _, state = pinecone_double
    target.upsert([row(f"c{i:04d}", unit(i)) for i in range(120)])
    doomed = [f"c{i:04d}" for i in range(100)] + [f"missing-{i}" for i in range(1400)]
    target.delete(doomed)

    sizes = [len(c.body["ids"]) for c in state.calls_to("/vectors/delete") if c.body]
    assert sizes == [1000, 500]
    assert target.count() == 20
    assert target.count(latest_only=True) == 20


def test_count_latest_walks_pages(target: PineconeTarget, pinecone_double: Served) -> None:
    _, _, state = pinecone_double
    target.upsert([row(f"c{i:03d}", unit(i), latest=i % 3 != 0) for i in range(250)])

    assert target.count() == 250
    assert target.count(latest_only=True) == 250 - len(range(0, 250, 3))
    lists = state.calls_to("/vectors/list", "GET")
    assert len(lists) == 3
    assert "paginationToken" not in lists[0].query and "paginationToken" in lists[1].query
    assert len(state.calls_to("/vectors/fetch", "GET")) == 3


def test_count_is_per_namespace(pinecone_double: Served) -> None:
    url, key, _ = pinecone_double
    a = PineconeTarget(api_key=key, host=url, namespace="a", dimension=DIM)
    b = PineconeTarget(api_key=key, host=url, namespace="b", dimension=DIM)
    a.upsert([row("x", unit(1)), row("y", unit(2))])
    b.upsert([row("x", unit(1))])
    assert (a.count(), b.count(), b.count(latest_only=True)) == (2, 1, 1)
    b.delete(["x"])
    assert (a.count(), b.count(), b.count(latest_only=True)) == (2, 0, 0)
    a.close()
    b.close()


def test_query_ranks_by_cosine_and_returns_metadata(target: PineconeTarget, pinecone_double: Served) -> None:
    _, _, state = pinecone_double
    target.upsert(
        [
            row("east", [1.0, 0.0, 0.0, 0.0]),
            row("north", [0.0, 1.0, 0.0, 0.0]),
            row("north-east", [1.0, 1.0, 0.0, 0.0]),
        ]
    )
    matches = target.query([1.0, 0.1, 0.0, 0.0], k=2)

    assert [m.chunk_id for m in matches] == ["east", "north-east"]
    assert matches[0].score == pytest.approx(1 / math.sqrt(1.01))
    assert matches[0].score > matches[1].score
    assert matches[0].metadata["doc_id"] == "doc-1"
    assert matches[0].metadata["is_latest_version"] is True
    [call] = state.calls_to("/query", "POST")
    assert call.body is not None
    assert call.body["topK"] == 2 and call.body["includeMetadata"] is True
    assert call.body["filter"] == {"is_latest_version": {"$eq": True}}
    assert call.body["namespace"] == NS


def test_query_sees_only_latest_and_the_strategy(target: PineconeTarget, pinecone_double: Served) -> None:
    _, _, state = pinecone_double
    target.upsert(
        [
            row("old", [1.0, 0.0, 0.0, 0.0], latest=False),
            row("sec", [0.9, 0.1, 0.0, 0.0], strategy="section"),
            row("sem", [0.8, 0.2, 0.0, 0.0], strategy="semantic"),
        ]
    )
    assert [m.chunk_id for m in target.query([1.0, 0.0, 0.0, 0.0], k=10)] == ["sec", "sem"]
    assert [m.chunk_id for m in target.query([1.0, 0.0, 0.0, 0.0], k=10, strategy="semantic")] == ["sem"]
    assert target.query([1.0, 0.0, 0.0, 0.0], k=10, strategy="letter") == []
    assert state.calls_to("/query")[1].body["filter"] == {  # type: ignore[index]
        "$and": [{"is_latest_version": {"$eq": True}}, {"strategy": {"$eq": "semantic"}}]
    }

    target.set_latest(["sec"], False)
    target.set_latest(["old"], True)
    assert [m.chunk_id for m in target.query([1.0, 0.0, 0.0, 0.0], k=10)] == ["old", "sem"]


def test_numbers_come_back_as_floats(target: PineconeTarget) -> None:
    """As on real Pinecone: metadata numbers are float64, so readers must not expect int."""
    target.upsert([row("a", unit(1), amendment=3)])
    [match] = target.query(unit(1), 1)
    assert match.metadata["amendment_number"] == 3
    assert isinstance(match.metadata["amendment_number"], float)


def test_wrong_api_key_is_one_line_without_the_key(pinecone_double: Served) -> None:
    url, key, state = pinecone_double
    wrong = "wrong-secret-key-do-not-print-42"
    t = PineconeTarget(api_key=wrong, host=url, dimension=DIM)
    for call in (lambda: t.upsert([row("a", unit(1))]), t.count, lambda: t.query(unit(1), 3)):
        with pytest.raises(RuntimeError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message
        assert wrong not in message and key not in message
        assert "unauthorized" in message and "Invalid API Key" in message
        assert info.value.__cause__ is None and info.value.__suppress_context__
    assert state.unauthorized == 3
    assert state.calls == []
    t.close()


def test_missing_key_is_rejected_locally(pinecone_double: Served) -> None:
    url, _, _ = pinecone_double
    with pytest.raises(RuntimeError, match="no API key"):
        PineconeTarget(api_key="", host=url)


def test_unreachable_host_is_one_line(pinecone_double: Served) -> None:
    url, key, _ = pinecone_double
    with serve_pinecone_double(api_key=key) as (other_url, _, _):
        dead = other_url
    t = PineconeTarget(api_key=key, host=url, index_host=dead, dimension=DIM)
    with pytest.raises(RuntimeError) as info:
        t.count()
    assert str(info.value).startswith("pinecone count failed:")
    assert "\n" not in str(info.value) and key not in str(info.value)
    t.close()


def test_index_host_is_used_for_the_data_plane(pinecone_double: Served) -> None:
    url, key, state = pinecone_double
    with serve_pinecone_double(api_key=key) as (control_url, _, control_state):
        t = PineconeTarget(api_key=key, host=control_url, index_host=url, dimension=DIM)
        t.upsert([row("a", unit(1))])
        assert t.count() == 1
        t.close()
        assert control_state.calls == []
    assert len(state.calls_to("/vectors/upsert")) == 1


def test_double_serves_describe_index_for_name_resolution(pinecone_double: Served) -> None:
    from pinecone import Pinecone

    url, key, state = pinecone_double
    pc = Pinecone(api_key=key, host=url)
    index = pc.Index(name=state.index_name)
    index.upsert(vectors=[{"id": "a", "values": unit(1)}], namespace=NS)
    assert index.describe_index_stats().namespaces[NS].vector_count == 1
    assert [c.path for c in state.calls][:1] == [f"/indexes/{state.index_name}"]
    index.close()
    pc.close()


def test_double_rejects_bad_metadata_and_strips_nulls(pinecone_double: Served) -> None:
    """Raw HTTP, because the client refuses a nested object before sending it."""
    import httpx

    url, key, state = pinecone_double
    headers = {"Api-Key": key}
    ok = {"vectors": [{"id": "a", "values": unit(1), "metadata": {"k": None, "tags": ["x"], "n": 1}}]}
    response = httpx.post(f"{url}/vectors/upsert", json=ok, headers=headers)
    assert response.json() == {"upsertedCount": 1}
    assert state.vectors("")["a"]["metadata"] == {"tags": ["x"], "n": 1.0}

    bad = {"vectors": [{"id": "b", "values": unit(1)}, {"id": "c", "values": unit(1), "metadata": {"o": {}}}]}
    response = httpx.post(f"{url}/vectors/upsert", json=bad, headers=headers)
    assert response.status_code == 400
    assert "list of strings" in response.json()["error"]["message"]
    assert set(state.vectors("")) == {"a"}
    assert httpx.post(f"{url}/vectors/upsert", json=ok).status_code == 401


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"s": {"$eq": "x"}}, True),
        ({"s": "x"}, True),
        ({"s": {"$ne": "x"}}, False),
        ({"missing": {"$ne": "x"}}, True),
        ({"s": {"$in": ["y", "x"]}}, True),
        ({"s": {"$nin": ["x"]}}, False),
        ({"tags": {"$eq": "b"}}, True),
        ({"tags": {"$in": ["z"]}}, False),
        ({"n": {"$gte": 2}, "flag": {"$eq": True}}, True),
        ({"n": {"$lt": 2}}, False),
        ({"$and": [{"s": {"$eq": "x"}}, {"flag": {"$eq": False}}]}, False),
        ({"$or": [{"s": {"$eq": "q"}}, {"flag": {"$eq": True}}]}, True),
        ({"flag": {"$eq": 1}}, False),
        ({"n": {"$eq": 2}}, True),
        ({"missing": {"$exists": False}}, True),
    ],
)
def test_filter_operators(flt: dict[str, object], expected: bool) -> None:
    metadata = {"s": "x", "tags": ["a", "b"], "n": 2.0, "flag": True}
    assert matches_filter(metadata, flt) is expected


def test_filter_rejects_unknown_operators() -> None:
    with pytest.raises(ApiFailure, match="unsupported filter operator"):
        matches_filter({"s": "x"}, {"s": {"$regex": "x"}})


def test_default_namespace_counts(pinecone_double: Served) -> None:
    """The empty namespace is reported as `__default__` in the stats."""
    url, key, _ = pinecone_double
    t = PineconeTarget(api_key=key, host=url, namespace="", dimension=DIM)
    t.upsert([row("a", unit(1)), row("b", unit(2), latest=False)])
    assert (t.count(), t.count(latest_only=True)) == (2, 1)
    assert [m.chunk_id for m in t.query(unit(2), 5)] == ["a"]
    t.close()


def test_unsupported_metadata_names_the_chunk(target: PineconeTarget, pinecone_double: Served) -> None:
    _, _, state = pinecone_double
    bad = row("a", unit(1))
    object.__setattr__(bad, "section_type", {"nested": 1})
    with pytest.raises(RuntimeError, match=r"pinecone upsert failed: chunk a: metadata 'section_type'"):
        target.upsert([bad])
    assert state.calls == []
