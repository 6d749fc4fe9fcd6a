"""Which dead letters a re-drive chooses, the headers it sends, and an assembler that lets a re-driven page
start its document again."""

from __future__ import annotations

import pytest

from streams.core.assembly import Assembler, Completed, Dead, Limits
from streams.core.events import DeadLetter
from streams.ops.redrive import Choice
from streams.runtime import redrive
from streams.settings import ConfigError
from tests.conftest import raw_page


def _letter(**fields: object) -> DeadLetter:
    base = {"reason_code": "letter_too_short", "reason": "r", "stage": "chunk:letter", "source_topic": "t"}
    return DeadLetter(**{**base, "doc_id": "d", "timestamp_ms": 1_764_684_000_000, **fields})


def test_every_condition_given_must_hold() -> None:
    letter = _letter()
    assert Choice().takes(letter)
    assert Choice(reasons=["x", "letter_too_short"], strategies=["letter"], doc_ids=["d"]).takes(letter)
    assert not Choice(stages=["assembly"]).takes(letter)
    assert not Choice(doc_ids=["other"]).takes(letter)
    assert Choice(since="2025-12-02T13:59:00Z", until="2025-12-02T14:01").takes(letter)
    assert not Choice(since="2025-12-02T14:00:01+00:00").takes(letter)


def test_a_bad_time_is_one_line() -> None:
    with pytest.raises(ConfigError, match="--since 'yesterday': give an ISO-8601 time"):
        Choice(since="yesterday")


def test_headers_round_trip_in_both_client_shapes_and_other_stages_skip() -> None:
    sent = redrive.headers("3:17", 2, "chunk:letter")
    for shape in (sent, dict(sent)):  # librdkafka's list of pairs, faust's mapping
        assert redrive.read(shape) == redrive.Redrive("3:17", 2, "chunk:letter")
        assert redrive.skips(shape, "chunk:window") and not redrive.skips(shape, "chunk:letter")
    assert redrive.read(None) is None and redrive.read([("other", b"x")]) is None
    assert not redrive.skips(None, "chunk:window")  # an ordinary record is everyone's


def test_a_redriven_page_starts_a_dead_document_again() -> None:
    assembler = Assembler({}, {}, Limits(max_page_bytes=300))
    page = raw_page(doc_id="d", document_name="d.txt", page_number=1, page_count=2, text="x" * 400)
    [dead] = assembler.on_page(page)
    assert isinstance(dead, Dead) and dead.code == "page_too_large"
    small = raw_page(doc_id="d", document_name="d.txt", page_number=1, page_count=1, text="the pier")
    assembler.headers[assembler.doc_key("d", 0)] = b'{"state": "dead", "code": "incomplete_timeout"}'
    [late] = assembler.on_page(small)
    assert isinstance(late, Dead) and "already dead-lettered" in late.reason  # a late page is still refused
    [done] = assembler.on_page(small, redriven=True)
    assert isinstance(done, Completed) and done.document.text.startswith("the pier")
