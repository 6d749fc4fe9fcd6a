"""The pure assembler: order, duplicates, conflicts, limits, timeouts, and the bytes kept for dead letters."""

from __future__ import annotations

import json
import random

import pytest

from streams.core.assembly import Assembler, Completed, Dead, Limits
from tests.conftest import make_pages, page_bytes, raw_page


def _assembler(**limits: int) -> Assembler:
    return Assembler({}, {}, Limits(**limits))


def _feed(assembler: Assembler, raws: list[bytes], now: int = 0) -> list:
    out = []
    for raw in raws:
        out += assembler.on_page(raw, 0, now)
    return out


def test_any_order_with_identical_duplicates_completes_once() -> None:
    pages = [page_bytes(p) for p in make_pages("d", [f"page {i}" for i in range(1, 8)])]
    raws = pages + pages[2:5]
    random.Random(7).shuffle(raws)
    assembler = _assembler()
    outcomes = _feed(assembler, raws)
    assert len(outcomes) == 1 and isinstance(outcomes[0], Completed)
    doc = outcomes[0].document
    assert doc.text.startswith("page 1\n\npage 2") and len(doc.page_map) == 7
    assert assembler.pages == {}  # page bytes are released once the document is out
    assert _feed(assembler, [pages[3]]) == []  # a late identical duplicate is still a no-op


def test_conflicting_duplicate_kills_the_document_with_all_its_pages() -> None:
    pages = make_pages("d", ["a", "b", "c"])
    assembler = _assembler()
    assert _feed(assembler, [page_bytes(pages[0]), page_bytes(pages[1])]) == []
    clash = page_bytes(pages[1].model_copy(update={"text": "B!"}))
    (dead,) = _feed(assembler, [clash])
    assert isinstance(dead, Dead) and dead.code == "conflicting_duplicate"
    assert dead.pages == [page_bytes(pages[0]), page_bytes(pages[1]), clash]
    (late,) = _feed(assembler, [page_bytes(pages[2])])
    assert late.code == "conflicting_duplicate" and "already dead-lettered" in late.reason


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{oops", "invalid_json"),
        ("café".encode("cp1252"), "invalid_utf8"),
        (b"[" * 10_000 + b"]" * 10_000, "json_too_deep"),
        (b'{"a": ' + b"[" * 65 + b"]" * 65 + b"}", "json_too_deep"),
        (
            raw_page(doc_id="d", document_name="x", page_number=1, page_count=1, text="t").replace(
                b'"t"', b'"\\ud800"'
            ),
            "invalid_text",
        ),
        (
            raw_page(doc_id="d", document_name="x", page_number=1, page_count=1, text="t").replace(
                b'"t"', b'"a\\uDFFFb"'
            ),
            "invalid_text",
        ),
        (b"", "empty_message"),
        (raw_page(doc_id="", document_name="x", page_number=1, page_count=1, text="t"), "invalid_page_event"),
        (raw_page(document_name="x", page_number=1, page_count=1, text="t"), "invalid_page_event"),
        (
            raw_page(doc_id="d", document_name="x", page_number=0, page_count=1, text="t"),
            "invalid_page_event",
        ),
        (
            raw_page(doc_id="d", document_name="x", page_number="one", page_count=1, text="t"),
            "invalid_page_event",
        ),
        (raw_page(doc_id="d", document_name="x", page_number=3, page_count=2, text="t"), "page_out_of_range"),
        (
            raw_page(doc_id="d", document_name="x", page_number=1, page_count=1, text="t", doc_type="memo"),
            "invalid_page_event",
        ),
        (
            raw_page(doc_id="d", document_name="x", page_number=1, page_count=10_000, text="t"),
            "document_too_large",
        ),
        (json.dumps([1, 2]).encode(), "invalid_page_event"),
        (b"\xc3\x01" + b"\x00" * 12, "invalid_avro"),
    ],
)
def test_malformed_input_is_dead_with_its_bytes(raw: bytes, code: str) -> None:
    assembler = Assembler(
        {}, {}, Limits(max_pages=5_000), decode_avro=lambda b: (_ for _ in ()).throw(ValueError("bad avro"))
    )
    (dead,) = assembler.on_page(raw, 0, 0)
    assert dead.code == code and dead.reason and dead.pages == [raw]


def test_page_count_change_and_size_limits() -> None:
    assembler = _assembler(max_document_bytes=400, max_page_bytes=300)
    first = page_bytes(make_pages("d", ["a", "b"])[0])
    assert _feed(assembler, [first]) == []
    (dead,) = _feed(assembler, [page_bytes(make_pages("d", ["a", "b", "c"])[2])])
    assert dead.code == "page_count_changed" and len(dead.pages) == 2
    (big,) = _feed(assembler, [page_bytes(make_pages("e", ["x" * 400])[0])])
    assert big.code == "page_too_large"
    pages = make_pages("f", ["y" * 150, "z" * 150, "w"])
    outcomes = _feed(assembler, [page_bytes(p) for p in pages])
    assert [o.code for o in outcomes] == ["document_too_large", "document_too_large"]
    assert len(outcomes[0].pages) == 2 and "already dead-lettered" in outcomes[1].reason


def test_incomplete_document_times_out_with_all_pages() -> None:
    assembler = _assembler(timeout_ms=1_000)
    pages = make_pages("slow", ["a", "b", "c", "d"])
    _feed(assembler, [page_bytes(pages[0]), page_bytes(pages[2])], now=100)
    assert assembler.on_tick(0, 1_000) == []
    (dead,) = assembler.on_tick(0, 1_200)
    assert dead.code == "incomplete_timeout" and "missing pages 2, 4" in dead.reason
    assert dead.pages == [page_bytes(pages[0]), page_bytes(pages[2])]
    assert assembler.on_tick(0, 1_300) == []


def test_pending_memory_is_bounded_by_evicting_the_oldest() -> None:
    assembler = _assembler(max_pending_bytes=2_000)
    outcomes = []
    for n in range(10):
        outcomes += assembler.on_page(page_bytes(make_pages(f"doc{n}", ["x" * 300, "never"])[0]), 0, n)
    evicted = [o for o in outcomes if isinstance(o, Dead)]
    assert evicted and all(o.code == "assembly_capacity" for o in evicted)
    assert [o.doc_id for o in evicted] == [f"doc{n}" for n in range(len(evicted))]
    assert assembler.pending_bytes() <= 2_000


def test_empty_documents_are_dead_not_chunked() -> None:
    (dead,) = _feed(_assembler(), [page_bytes(p) for p in make_pages("blank", ["  \n", "\u200b\u202e\x07"])])
    assert dead.code == "empty_document" and len(dead.pages) == 2


def test_pending_bytes_running_total_matches_a_fresh_scan() -> None:
    headers: dict = {}
    pages: dict = {}
    assembler = Assembler(headers, pages, Limits(timeout_ms=10))
    for n in range(6):
        docs = make_pages(f"r{n}", ["a" * (50 * n + 1), "b", "c"])
        for page in docs[: 1 + n % 3]:  # some complete, some not
            assembler.on_page(page_bytes(page), 0, n)
        assert assembler.pending_bytes() == Assembler(headers, pages).pending_bytes()
    assembler.on_tick(0, 1_000)  # everything left times out
    assert assembler.pending_bytes() == 0 == Assembler(headers, pages).pending_bytes()


class CountingMap(dict):
    """A table stand-in that counts writes and deletes, i.e. the changelog messages a faust table sends."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def __setitem__(self, key, value) -> None:
        self.writes += 1
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        self.writes += 1
        super().__delitem__(key)


@pytest.mark.parametrize("count", [1, 3, 5])
def test_the_completing_page_is_never_stored(count: int) -> None:
    pages = CountingMap()
    assembler = Assembler({}, pages, Limits())
    raws = [page_bytes(p) for p in make_pages("d", [f"page {i}" for i in range(1, count + 1)])]
    random.Random(count).shuffle(raws)
    outcomes = _feed(assembler, raws)
    assert isinstance(outcomes[-1], Completed) and len(outcomes[-1].document.page_map) == count
    assert pages.writes == 2 * (count - 1)  # each earlier page stored once and deleted once


def test_an_open_header_is_written_once() -> None:
    """Rewriting the header on every page made large documents' changelogs grow with the page count (a
    page list in it: quadratic). Now only the first page writes it; the rest is in the page map."""
    written: list[int] = []

    class Recording(dict):
        def __setitem__(self, key: str, value: bytes) -> None:
            written.append(len(value))
            super().__setitem__(key, value)

    assembler = Assembler(Recording(), {})
    pages = [page_bytes(p) for p in make_pages("big", [f"page {i}" for i in range(1, 301)])]
    random.Random(3).shuffle(pages)
    outcomes = _feed(assembler, pages)
    assert len(outcomes) == 1 and isinstance(outcomes[0], Completed)
    assert len(written) == 2  # the open header, then the finished one with every page's digest
    assert _feed(assembler, [pages[0]]) == []  # the finished header still recognises a late duplicate


def test_open_header_of_an_earlier_release_is_still_read() -> None:
    """Headers that listed the received pages or kept a count (earlier releases) still complete and dedupe."""
    pages = make_pages("old", ["one", "two", "three"])
    assembler = _assembler()
    key = Assembler.doc_key("old", 0)
    legacy = {
        "state": "open",
        "doc_id": "old",
        "page_count": 3,
        "received": [1],
        "digests": {"1": "whatever"},
        "bytes": len(page_bytes(pages[0])),
        "first_ms": 0,
        "updated_ms": 0,
        "partition": 0,
    }
    assembler.headers[key] = json.dumps(legacy).encode()
    assembler.pages[Assembler.page_key(key, 1)] = page_bytes(pages[0])
    assert _feed(assembler, [page_bytes(pages[0])]) == []  # identical duplicate of a listed page
    assert _feed(assembler, [page_bytes(pages[1])]) == []
    (done,) = _feed(assembler, [page_bytes(pages[2])])
    assert isinstance(done, Completed) and done.document.text.startswith("one\n\ntwo\n\nthree")
    assert [p.page_number for p in done.document.page_map] == [1, 2, 3]
    assert assembler.pages == {}


def _three_pages() -> list[bytes]:
    return [page_bytes(p) for p in make_pages("r", ["one", "two", "three"])]


def test_pages_recovered_from_another_replica_count_after_a_rebalance() -> None:
    """The counts are a per-process cache: after an assignment they must come from the page map again,
    which now holds pages another replica stored. Otherwise the document would wait forever."""
    raws = _three_pages()
    assembler = _assembler()
    key = Assembler.doc_key("r", 0)
    assert _feed(assembler, raws[:1]) == []
    assembler.pages[Assembler.page_key(key, 2)] = raws[1]  # stored by the replica that owned it before
    assembler.forget_cached()  # what the assembler app does on every assignment
    (done,) = _feed(assembler, raws[2:])
    assert isinstance(done, Completed) and [p.page_number for p in done.document.page_map] == [1, 2, 3]
    assert assembler.pages == {} and assembler.pending_bytes() == 0


def test_a_header_lost_entirely_is_rebuilt_from_the_stored_pages() -> None:
    raws = _three_pages()
    assembler = _assembler()
    assert _feed(assembler, raws[:2]) == []
    del assembler.headers[Assembler.doc_key("r", 0)]
    assembler.forget_cached()  # as after the rebalance that recovered these tables
    (done,) = _feed(assembler, raws[2:])
    assert isinstance(done, Completed) and [p.page_number for p in done.document.page_map] == [1, 2, 3]
    assert assembler.pending_bytes() == 0


def test_a_lost_page_write_never_completes_a_document_with_a_gap() -> None:
    """The opposite loss: the header counted page 2 but the page table lost it. The redelivered page 2
    must not complete the document without page 3."""
    raws = _three_pages()
    assembler = _assembler()
    key = Assembler.doc_key("r", 0)
    assert _feed(assembler, raws[:2]) == []
    del assembler.pages[Assembler.page_key(key, 2)]  # page 2's page write lost, its header write kept
    assembler.forget_cached()
    assert _feed(assembler, raws[1:2]) == []  # redelivered: stored again, no completion
    (done,) = _feed(assembler, raws[2:])
    assert isinstance(done, Completed) and [p.page_number for p in done.document.page_map] == [1, 2, 3]
    assert assembler.pending_bytes() == 0
