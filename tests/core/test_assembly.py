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


# --- what each dead letter says, and the edges of every limit (each written out by hand) ----------------


def _page(doc_id: str = "d", number: int = 1, count: int = 1, text: str = "t", **extra: object) -> bytes:
    return raw_page(doc_id=doc_id, document_name="x", page_number=number, page_count=count, text=text, **extra)


def _nested(depth: int) -> str:
    """A JSON value `depth` levels deep: arrays inside one another."""
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        # The page object is one level, so 63 arrays in a field reach exactly 64: allowed (and ignored). The
        # second field makes 65 brackets in all, so the bytes are walked, not waved through by their count.
        (f'"x": {_nested(63)}, "y": {{}}', None),
        (f'"x": {_nested(64)}', "json_too_deep"),  # 65 levels
        # 70 objects deep: a parser that only counted arrays would let them through.
        ('"x": ' + '{"a": ' * 70 + "1" + "}" * 70, "json_too_deep"),
        # Seventy siblings are never deeper than two: closing brackets count down, for objects and arrays.
        ('"x": [' + ", ".join(["{}"] * 70) + "]", None),
        ('"x": [' + ", ".join(["[]"] * 70) + "]", None),
        # Down from 41 to 40, then 30 more: 71 deep, although never more than 41 open at once before the dip.
        ('"x": ' + "[" * 40 + "[]," + "[" * 30 + "]" * 70, "json_too_deep"),
        # Ten closed siblings first do not buy any depth: 2 + 64 = 66 levels.
        ('"x": [' + "[], " * 10 + _nested(64) + "]", "json_too_deep"),
        # Brackets inside strings are text, also after an escaped quote; the string ends at the real quote.
        ('"x": "' + "[{" * 40 + '\\" still text ' + "[{" * 40 + '"', None),
        # After a string with an escape, real nesting is counted again.
        ('"x": "a\\"b", "y": ' + _nested(70), "json_too_deep"),
    ],
)
def test_nesting_is_counted_outside_strings_only(extra: str, code: str | None) -> None:
    raw = b'{"doc_id": "d", "document_name": "x", "page_number": 1, "page_count": 2, "text": "t", ' + extra.encode()
    raw += b"}"
    outcomes = _assembler().on_page(raw, 0, 0)
    if code is None:
        assert outcomes == []  # a valid first page of two: stored, waiting for page 2
    else:
        (dead,) = outcomes
        assert (dead.code, dead.reason) == (code, "JSON nesting deeper than 64 levels")


def test_the_reasons_of_malformed_pages_name_the_problem() -> None:
    assembler = Assembler({}, {}, Limits(max_page_bytes=200))
    cases = {
        b"": ("empty_message", "message has no value", None),
        b"[1, 2]": ("invalid_page_event", "page event must be a JSON object, got list", None),
        _page(number="one"): ("invalid_page_event", "page_number: ", "d"),  # the field first, pydantic's words after
        _page(number=3, count=2): ("page_out_of_range", "page_number 3 is beyond page_count 2", "d"),
        _page(text="x" * 200): ("page_too_large", f"page message is {len(_page(text='x' * 200))} bytes, over", None),
        _page(text="t").replace(b'"t"', b'"\\ud800"'): ("invalid_text", "text contains an unencodable character", "d"),
    }
    for raw, (code, reason, doc_id) in cases.items():
        (dead,) = assembler.on_page(raw, 0, 0)
        assert (dead.code, dead.doc_id, dead.pages) == (code, doc_id, [raw])
        assert dead.reason.startswith(reason), dead.reason
    (dead,) = assembler.on_page(_page(number="one"), 0, 0)
    assert dead.reason.endswith(" (1 error(s))")
    (dead,) = assembler.on_page(_page(elements=[{"text": "no kind"}]), 0, 0)
    assert dead.reason == "elements.0.kind: Field required (1 error(s))"  # where, as a dotted path
    (dead,) = assembler.on_page(_page(text="x" * 200), 0, 0)
    assert dead.reason.endswith("over the 200-byte limit")


def test_a_page_of_exactly_the_byte_limit_is_accepted() -> None:
    exact = _page(text="x" * 100)
    assert (
        Assembler({}, {}, Limits(max_page_bytes=len(exact))).on_page(exact, 0, 0)[0].document.text == "x" * 100 + "\n\n"
    )
    (dead,) = Assembler({}, {}, Limits(max_page_bytes=len(exact) - 1)).on_page(exact, 0, 0)
    assert dead.code == "page_too_large"


def test_the_default_page_limit_is_two_million_bytes() -> None:
    from streams.core.assembly import parse_page

    head = _page(text="")
    fill = 2_000_000 - len(head)  # the text that brings the message to exactly 2,000,000 bytes
    assert len(_page(text="x" * fill)) == 2_000_000
    assert parse_page(_page(text="x" * fill)).text == "x" * fill
    with pytest.raises(ValueError, match="2000001 bytes, over the 2000000-byte limit"):
        parse_page(_page(text="x" * (fill + 1)))


def test_bad_input_carries_its_reason_as_the_message() -> None:
    from streams.core.assembly import BadInput

    exc = BadInput("code", "the reason", "doc-7")
    assert (str(exc), exc.code, exc.reason, exc.doc_id) == ("the reason", "code", "the reason", "doc-7")


def _avro_decoder(store: dict[bytes, dict]) -> object:
    """A stand-in Avro decoder over a table of known messages; it records what it was handed."""
    seen: list[object] = []

    def decode(raw: bytes) -> dict:
        seen.append(raw)
        return dict(store[raw])

    decode.seen = seen  # type: ignore[attr-defined]
    return decode


def test_avro_pages_are_decoded_on_arrival_and_again_when_the_document_completes() -> None:
    fields = {"doc_id": "a", "document_name": "a.pdf", "page_count": 2}
    one, two = b"\x00\x00\x00\x00\x01page-1", b"\xc3\x01page-2"  # Confluent framing; Avro single-object
    decode = _avro_decoder(
        {one: {**fields, "page_number": 1, "text": "uno"}, two: {**fields, "page_number": 2, "text": "dos"}}
    )
    assembler = Assembler({}, {}, Limits(), decode_avro=decode)
    assert assembler.on_page(one, 0, 0) == []
    assert assembler.on_page(one, 0, 0) == []  # an identical duplicate: the stored copy is decoded to compare
    (done,) = assembler.on_page(two, 0, 0)
    assert done.document.text == "uno\n\ndos\n\n"
    assert decode.seen == [one, one, one, two, one]  # type: ignore[attr-defined]


def test_an_avro_record_that_cannot_be_re_encoded_is_dead() -> None:
    loop: dict = {"doc_id": "a"}
    loop["self"] = loop
    assembler = Assembler({}, {}, Limits(), decode_avro=lambda raw: loop)
    (dead,) = assembler.on_page(b"\x00loop", 0, 0)
    assert (dead.code, dead.reason) == (
        "invalid_page_event",
        "page event cannot be re-encoded: Circular reference detected",
    )


def test_a_raised_page_limit_holds_when_stored_pages_are_read_back() -> None:
    """A page over the 2 MB default, allowed by the limits, is stored, compared as a duplicate and
    assembled: every re-read uses the configured limit, not the default."""
    big = _page("big", 1, 2, "x" * 2_100_000)
    assembler = Assembler({}, {}, Limits(max_page_bytes=3_000_000, max_document_bytes=5_000_000))
    assert assembler.on_page(big, 0, 0) == []
    assert assembler.on_page(big, 0, 0) == []
    (done,) = assembler.on_page(_page("big", 2, 2, "end"), 0, 0)
    assert len(done.document.text) == 2_100_000 + 2 + 3 + 2


def test_an_empty_document_is_dead_with_every_page_in_page_order() -> None:
    first, last = _page("blank", 1, 2, " "), _page("blank", 2, 2, "\n")
    (dead,) = _feed(_assembler(), [first, last])
    assert (dead.code, dead.reason, dead.doc_id) == (
        "empty_document",
        "every page is empty or has no letters or digits",
        "blank",
    )
    assert dead.pages == [first, last]


def test_the_completed_document_keeps_the_clock_of_its_first_and_last_page() -> None:
    assembler = _assembler()
    assert assembler.on_page(_page("c", 2, 2, "two"), 0, 1_500) == []
    (done,) = assembler.on_page(_page("c", 1, 2, "one"), 0, 4_000)
    assert (done.document.first_page_ms, done.document.completed_ms) == (1_500, 4_000)
    (alone,) = _assembler().on_page(_page("solo"))  # the clock and partition default to 0
    assert (alone.document.first_page_ms, alone.document.completed_ms) == (0, 0)
    assembler = _assembler(timeout_ms=0)
    assert assembler.on_page(_page("open", 1, 2)) == []
    assert assembler.on_tick() == []  # the tick's clock defaults to 0 too: 0 ms old is not past a 0 ms timeout
    (dead,) = assembler.on_tick(0, 1)  # partition 0, where the page was (by default) received
    assert dead.doc_id == "open"


def test_a_different_page_after_completion_is_a_conflict_with_its_own_reason() -> None:
    assembler = _assembler()
    pages = [_page("k", 1, 2, "one"), _page("k", 2, 2, "two")]
    assert isinstance(_feed(assembler, pages)[0], Completed)
    other = _page("k", 1, 2, "ONE")
    (dead,) = _feed(assembler, [other])
    assert (dead.code, dead.reason, dead.doc_id, dead.pages) == (
        "conflicting_duplicate",
        "page 1 differs from the one already assembled",
        "k",
        [other],
    )


def test_a_finished_header_written_by_an_earlier_release_still_recognises_duplicates() -> None:
    """Finished headers keep each page's digest: the first 32 hex digits of the sha256 of the page's JSON
    as pydantic writes it. Headers outlive a release, so the recipe is fixed."""
    import hashlib

    from streams.core.assembly import parse_page

    page = _page("old", 1, 1, "kept")
    digest = hashlib.sha256(parse_page(page).model_dump_json().encode()).hexdigest()[:32]
    assembler = _assembler()
    key = Assembler.doc_key("old", 0)
    assembler.headers[key] = json.dumps({"state": "done", "digests": {"1": digest}, "updated_ms": 0}).encode()
    assert assembler.on_page(page, 0, 5) == []
    (dead,) = assembler.on_page(_page("old", 1, 1, "changed"), 0, 5)
    assert dead.code == "conflicting_duplicate"


def test_the_dead_letters_of_a_live_document_say_what_happened() -> None:
    assembler = _assembler()
    first = _page("m", 1, 2, "one")
    assert assembler.on_page(first, 0, 10) == []
    recount = _page("m", 2, 3, "two")
    (dead,) = assembler.on_page(recount, 0, 20)
    assert (dead.reason, dead.doc_id, dead.pages) == (
        "page 2 says page_count 3, earlier pages said 2",
        "m",
        [first, recount],
    )
    late_raw = _page("m", 2, 2, "two")
    (late,) = assembler.on_page(late_raw, 0, 30)
    assert (late.code, late.reason, late.doc_id, late.pages) == (
        "page_count_changed",
        "document was already dead-lettered (page_count_changed); late page 2",
        "m",
        [late_raw],
    )
    assembler.on_tick(None, 30)  # the dead header kept the clock of its death (20): forgotten after retention
    assert list(assembler.headers) == [Assembler.doc_key("m", 0)]
    assembler.on_tick(None, 20 + Limits().retention_ms + 1)
    assert assembler.headers == {}
    assembler = _assembler()
    assert assembler.on_page(first, 0, 10) == []
    clash = _page("m", 1, 2, "uno")
    (dead,) = assembler.on_page(clash, 0, 20)
    assert (dead.reason, dead.pages) == ("page 1 arrived twice with different content", [first, clash])


def test_a_document_of_exactly_the_size_limit_completes() -> None:
    pages = [_page("s", n, 3, "abc") for n in (1, 2, 3)]
    exact = sum(map(len, pages))
    (done,) = _feed(_assembler(max_document_bytes=exact), pages)
    assert isinstance(done, Completed)
    assembler = _assembler(max_document_bytes=exact - 1, retention_ms=10)
    dead = [o for page in pages for o in assembler.on_page(page, 0, 5)]
    assert (dead[0].code, dead[0].reason) == ("document_too_large", f"document is over the {exact - 1}-byte limit")
    assert dead[0].pages == pages  # the two stored pages and the third that did not fit
    assembler.on_tick(None, 15)  # died at 5: exactly the retention, kept
    assert len(assembler.headers) == 1
    assembler.on_tick(None, 16)
    assert assembler.headers == {}


def test_the_size_limit_counts_the_stored_pages_again_after_a_rebalance() -> None:
    pages = [_page("s", n, 3, "abc") for n in (1, 2, 3)]
    assembler = _assembler(max_document_bytes=sum(map(len, pages)) - 1)
    assert _feed(assembler, pages[:2]) == []
    assembler.forget_cached()
    (dead,) = _feed(assembler, pages[2:])
    assert dead.code == "document_too_large"


def test_page_count_at_the_page_limit_is_accepted() -> None:
    (done,) = _assembler(max_pages=1).on_page(_page("one"), 0, 0)
    assert isinstance(done, Completed)
    (dead,) = _assembler(max_pages=1).on_page(_page("two", 1, 2), 0, 0)
    assert (dead.code, dead.reason, dead.doc_id) == (
        "document_too_large",
        "page_count 2 is over the 1-page limit",
        "two",
    )


def test_pending_bytes_exactly_at_the_limit_evict_nothing() -> None:
    first, second = _page("p1", 1, 2, "a"), _page("p2", 1, 2, "b")
    assembler = _assembler(max_pending_bytes=len(first) + len(second))
    assert _feed(assembler, [first, second]) == []
    third = _page("p3", 1, 2, "c")
    (dead,) = assembler.on_page(third, 0, 7)  # one over: the oldest goes, and the total is at the limit again
    assert (dead.code, dead.doc_id, dead.pages) == ("assembly_capacity", "p1", [first])
    assert dead.reason == (
        f"pending pages over the {len(first) + len(second)}-byte limit; oldest incomplete document evicted"
    )
    assert assembler.pending_bytes() == len(second) + len(third)
    assert assembler.on_tick(None, 7) == []  # the evicted document's header has a clock; nothing else is due


def test_a_timeout_after_a_rebalance_still_takes_the_stored_pages() -> None:
    assembler = _assembler(timeout_ms=100)
    first = _page("t", 1, 3, "one")
    assert assembler.on_page(first, 0, 0) == []
    assembler.forget_cached()
    (dead,) = assembler.on_tick(0, 101)
    assert (dead.code, dead.pages, dead.reason) == (
        "incomplete_timeout",
        [first],
        "incomplete after 100 ms; missing pages 2, 3",
    )


def test_timeouts_are_strictly_after_the_limit_and_name_the_missing_pages() -> None:
    assembler = _assembler(timeout_ms=100)
    assert assembler.on_page(_page("t", 3, 12, "three"), 0, 50) == []
    assert assembler.on_tick(0, 150) == []  # exactly the timeout: not yet
    (dead,) = assembler.on_tick(0, 151)
    assert dead.reason == "incomplete after 100 ms; missing pages 1, 2, 4, 5, 6, 7, 8, 9, 10, 11 ..."
    assembler = _assembler(timeout_ms=100)
    assert assembler.on_page(_page("u", 11, 11, "eleven"), 0, 0) == []
    (dead,) = assembler.on_tick(0, 101)
    assert dead.reason == "incomplete after 100 ms; missing pages 1, 2, 3, 4, 5, 6, 7, 8, 9, 10"  # ten: no "..."


def test_the_tick_of_one_partition_leaves_the_others_alone() -> None:
    assembler = _assembler(timeout_ms=100)
    assert assembler.on_page(_page("p", 1, 2), 1, 0) == []  # partition 1
    assert assembler.on_page(_page("q", 1, 2), 2, 0) == []  # partition 2
    assert assembler.on_tick(3, 1_000) == []
    (dead,) = assembler.on_tick(2, 1_000)
    assert dead.doc_id == "q"
    (dead,) = assembler.on_tick(None, 1_000)
    assert dead.doc_id == "p"


def test_finished_and_dead_headers_are_forgotten_after_the_retention_of_their_last_change() -> None:
    assembler = _assembler(retention_ms=1_000, timeout_ms=10_000)
    done_key, dead_key, open_key = (Assembler.doc_key(d, 0) for d in ("done", "dead", "open"))
    assert isinstance(assembler.on_page(_page("done"), 4, 500)[0], Completed)  # finished at 500
    assert assembler.on_page(_page("dead", 1, 2, "a"), 4, 600) == []
    assert assembler.on_page(_page("dead", 1, 2, "b"), 4, 700)[0].code == "conflicting_duplicate"  # dead at 700
    assert assembler.on_page(_page("open", 1, 2), 4, 0) == []
    assembler.on_tick(4, 1_500)  # the finished one is exactly 1,000 ms old: kept
    assert set(assembler.headers) == {done_key, dead_key, open_key}
    assembler.on_tick(5, 5_000)  # another partition's tick touches nothing
    assert set(assembler.headers) == {done_key, dead_key, open_key}
    assembler.on_tick(4, 1_501)
    assert set(assembler.headers) == {dead_key, open_key}  # the open one is older, but waits for its timeout
    assembler.on_tick(4, 1_701)
    assert set(assembler.headers) == {open_key}


def test_a_document_sent_again_after_its_header_expired_is_assembled_afresh() -> None:
    assembler = _assembler(retention_ms=10)
    pages = [_page("again", n, 3, f"p{n}") for n in (1, 2, 3)]
    assert isinstance(_feed(assembler, pages)[0], Completed)
    assembler.on_tick(None, 100)
    assert assembler.headers == {}
    assert _feed(assembler, pages[:2]) == []  # two of three: no completion from a count left behind
    (done,) = _feed(assembler, pages[2:])
    assert done.document.text == "p1\n\np2\n\np3\n\n"
