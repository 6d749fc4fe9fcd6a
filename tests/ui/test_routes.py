"""The console's routes against the real stack (tests/ui/conftest.py), through Starlette's test client."""

from __future__ import annotations

import html
import re

import pytest

from streams.core.document import assemble
from streams.sinks.mongo import MongoSink
from tests.ui.conftest import HOSTILE_ID, STRATEGIES, Stack

pytestmark = pytest.mark.integration

CUT = r'class="cut[^"]*" id="col0-([^"]+)" data-chunk="[^"]+" data-start="(\d+)" data-end="(\d+)"'
RUN = r'<span class="seg [^"]+" data-start="(\d+)" data-end="(\d+)" data-chunks="[^"]*">(.*?)</span>'


def stored(stack: Stack, doc_id: str, amendment: int, strategy: str) -> list[dict]:
    sink = MongoSink.of(stack.settings)
    try:
        query = {"doc_id": doc_id, "amendment_number": amendment, "strategy": strategy, "text": {"$exists": True}}
        return sorted(sink.collection.find(query), key=lambda r: r["position"])
    finally:
        sink.close()


def test_the_console_stack_runs_on_the_broker_its_test_id_names(stack: Stack, bus: str) -> None:
    assert stack.settings.broker_kind == bus
    assert stack.pipeline.broker is not None and getattr(stack.pipeline.broker, "kind", "noida") == bus


def test_index_lists_every_published_document(client, stack: Stack) -> None:
    page = client.get("/")
    assert page.status_code == 200
    for doc_id in stack.docs:
        assert f'href="/doc/{doc_id}"' in page.text


def test_document_view_says_how_the_document_was_typed(client, stack: Stack) -> None:
    """The samples are published without a type: the page shows the detected one and its evidence, and the
    index lists the detected type, not the pages' `generic`."""
    letter = next(d for d in stack.docs if "letter" in stack.docs[d][0].document_name)
    page = client.get(f"/doc/{letter}")
    assert page.status_code == 200
    shown = re.search(r'<p class="routing" id="routing">(.*?)</p>', page.text, re.S)
    assert shown and shown.group(1).startswith("type letter: detected (")
    assert "salutation to owners" in html.unescape(shown.group(1))
    assert client.get("/").text.count("<td>letter</td>") == 1


def test_document_view_draws_each_chunk_where_its_record_says(client, stack: Stack) -> None:
    doc_id = "vantor-2031-q2-release"
    if doc_id not in stack.docs:
        doc_id = max(stack.docs, key=lambda d: len(stack.docs[d]))
    pages = [p for p in stack.docs[doc_id] if p.amendment_number == 0]
    doc = assemble(pages)
    for strategy in STRATEGIES:
        rows = stored(stack, doc_id, 0, strategy)
        assert rows, f"no {strategy} chunks of {doc_id}"
        page = client.get(f"/doc/{doc_id}", params={"a": 0, "s": strategy})
        assert page.status_code == 200
        cuts = re.findall(CUT, page.text)
        assert [(c, int(s), int(e)) for c, s, e in cuts] == [
            (r["_id"], r["char_start"], r["char_end"])
            for r in sorted(rows, key=lambda r: (r["char_start"], r["position"]))
        ]
        # every character of the document is drawn once, in order (text runs and table cells aside)
        runs = re.findall(RUN, page.text, re.S)
        for start, end, body in runs:
            assert html.unescape(body) == doc.text[int(start) : int(end)]


def test_two_strategies_side_by_side(client) -> None:
    page = client.get("/doc/field-notes-7", params={"s": "window", "s2": "section"})
    assert page.status_code == 200
    assert 'data-strategy="window"' in page.text and 'data-strategy="section"' in page.text
    assert 'id="col1-' in page.text


def test_chunk_record_on_request(client, stack: Stack) -> None:
    row = stored(stack, "field-notes-7", 0, "window")[0]
    record = client.get(f"/api/chunk/{row['_id']}").json()
    assert record["chunk_id"] == row["_id"] and record["text"] == row["text"]
    assert record["is_latest_version"] is True and record["token_count"] == row["token_count"]
    assert client.get("/api/chunk/no-such-chunk").status_code == 404


def test_an_amended_document_shows_kept_and_changed_chunks(client, stack: Stack) -> None:
    doc_id = next(d for d, pages in stack.docs.items() if any(p.amendment_number > 0 for p in pages))
    amendment = max(p.amendment_number for p in stack.docs[doc_id])
    now = stored(stack, doc_id, amendment, "section")
    before = {r["content_hash"] for r in stored(stack, doc_id, amendment - 1, "section")}
    kept = sum(r["content_hash"] in before for r in now)
    page = client.get(f"/doc/{doc_id}", params={"a": amendment, "s": "section"})
    diff = re.search(r'data-kept="(\d+)" data-changed="(\d+)" data-gone="(\d+)"', page.text)
    assert diff, "no comparison with the previous amendment"
    assert (int(diff[1]), int(diff[2])) == (kept, len(now) - kept)
    assert 0 < kept < len(now)  # the sample amendment changes some sections and keeps others
    assert len(re.findall(r'class="cut kept[^"]*" id=', page.text)) == kept


def test_markup_in_a_document_is_shown_as_text(client) -> None:
    page = client.get(f"/doc/{HOSTILE_ID}")
    assert page.status_code == 200
    assert "<script>window.__pwned" not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page.text
    assert "&lt;b&gt;bold&lt;/b&gt;" in page.text


def test_trace_reports_pages_manifests_and_stores(client, stack: Stack) -> None:
    page = client.get("/doc/field-notes-7/trace")
    assert page.status_code == 200
    pages = re.search(r'data-received="(\d+)" data-count="(\d+)"', page.text)
    assert pages and pages[1] == pages[2] == str(len(stack.docs["field-notes-7"]))
    for strategy in STRATEGIES:
        held = len(stored(stack, "field-notes-7", 0, strategy))
        row = re.search(rf'data-strategy="{strategy}" data-store="mongo">.*?</tr>', page.text, re.S)
        assert row, f"no mongo row for {strategy}"
        numbers = re.findall(r'<td class="num">(\d*)</td>', row[0])
        assert numbers[0] == numbers[1] == numbers[2] == str(held)  # manifest, expected, held
        assert "not yet" not in row[0]
    assert 'id="gaps" class="ok"' in page.text


def test_bus_shows_lag_and_the_dead_letter_safely(client) -> None:
    page = client.get("/bus")
    assert page.status_code == 200
    assert "streams-chunker-window" in page.text and "streams-sink-mongo" in page.text
    assert "broken-1" in page.text
    assert "&lt;i&gt;not a page&lt;/i&gt;" in page.text and "<i>not a page" not in page.text
    assert "\\x00" in page.text  # control bytes are shown as code points, not written raw
    first = client.get("/api/lag").json()
    second = client.get("/api/lag").json()
    assert first["total_lag"] == 0 and all(r["lag"] == 0 for r in first["partitions"])
    assert all(r["produced_per_s"] is not None for r in second["partitions"])
    letters = client.get("/api/dead-letters").json()
    ours = [d for d in letters if "broken-1" in d["preview"]]
    assert ours and ours[0]["stage"] == "assembly" and ours[0]["reason_code"] == "invalid_json"
    assert ours[0]["source_topic"] == "pages.cleaned" and ours[0]["source_offset"] >= 0


def test_search_links_to_the_chunk_in_its_document(client) -> None:
    page = client.get("/search", params={"q": "how long does the dough rest before the salt goes in", "k": 3})
    assert page.status_code == 200
    link = re.search(r'href="/doc/([^"?]+)\?a=(\d+)&amp;s=(\w+)#col0-([^"]+)"', page.text)
    assert link and link[1] == "field-notes-7", page.text[page.text.find("<h1>") :]
    view = client.get(f"/doc/{link[1]}", params={"a": link[2], "s": link[3]})
    assert f'id="col0-{link[4]}"' in view.text


def test_search_takes_the_filters_and_principal_of_streams_search(client) -> None:
    question = {"q": "how long does the dough rest before the salt goes in", "k": 10}
    page = client.get("/search", params={**question, "f": "doc_id=field-notes-7", "as": "anyone"})
    links = re.findall(r'href="/doc/([^"?]+)\?a=', page.text)
    assert links and set(links) == {"field-notes-7"}  # documents without an acl are anyone's
    assert 'id="principal" value="anyone"' in page.text and "doc_id=field-notes-7</textarea>" in page.text
    refused = client.get("/search", params={**question, "f": "owner=me"})
    assert "search failed: filter &#39;owner=me&#39;: the vectors do not carry &#39;owner&#39;" in refused.text


@pytest.mark.one_broker  # no topic read: the same on either broker
def test_try_a_file_chunks_offline_with_options_from_the_form(client) -> None:
    text = "# Title\n\n" + "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(12))
    form = {"text": text, "name": "mine.md", "use.window": "on", "use.section": "on", "window.chunk_size_words": "100"}
    page = client.post("/try", data=form)
    assert page.status_code == 200
    assert 'data-strategy="window"' in page.text and 'data-strategy="section"' in page.text
    assert "+o" in page.text  # a non-default option is its own lineage, shown in the version
    bad = client.post("/try", data={**form, "window.chunk_size_words": "-3"})
    assert "window" in bad.text and "chunk_size_words" in bad.text and 'class="message refused"' in bad.text


@pytest.mark.one_broker  # no topic read: the same on either broker
def test_try_refuses_an_upload_over_the_limit(stack: Stack) -> None:
    from starlette.testclient import TestClient

    from streams.ui.app import create_app

    small = stack.settings.model_copy(update={"ui_max_upload_bytes": 1000})
    with TestClient(create_app(small)) as client:
        page = client.post("/try", files={"file": ("big.md", b"word " * 1000)})
        assert page.status_code == 413 and "over the limit of 1,000 bytes" in page.text


@pytest.mark.one_broker  # no topic read: the same on either broker
def test_read_only_unless_started_writable(client, stack: Stack) -> None:
    from starlette.testclient import TestClient

    from streams.ui.app import create_app

    form = {"text": "# A\n\nSome text to publish.\n", "name": "pub.md", "use.window": "on", "publish": "1"}
    assert client.post("/try", data=form).status_code == 403
    with TestClient(create_app(stack.settings, writable=True)) as writable:
        page = writable.post("/try", data=form)
        assert page.status_code == 200 and 'id="published"' in page.text
    assert writable.get("/").status_code == 200
