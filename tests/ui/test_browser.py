"""The console in a real browser: headless Debian chromium, driven by selenium through chromedriver."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from streams.core.document import assemble
from tests.ui.conftest import HOSTILE_ID, Stack
from tests.ui.test_routes import stored

# The browser draws what the routes serve: the routes run on both brokers (test_routes.py), the browser on one
pytestmark = [pytest.mark.integration, pytest.mark.one_broker]

#: Per chunk, the text of every drawn run that carries it, joined in page order.
DRAWN = """
const out = {};
for (const seg of document.querySelectorAll('[data-side="col0"] .seg')) {
  for (const id of (seg.dataset.chunks || '').split(' ').filter(Boolean)) out[id] = (out[id] || '') + seg.textContent;
}
return out;
"""


def largest(stack: Stack) -> str:
    return max(stack.docs, key=lambda d: sum(len(p.text) for p in stack.docs[d] if p.amendment_number == 0))


def wait_for(driver, script: str, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"never true in the browser: {script}")


def test_document_view_draws_the_records_boundaries(browser, served: str, stack: Stack, artifacts: Path) -> None:
    doc_id = largest(stack)
    rows = stored(stack, doc_id, 0, "window")
    doc = assemble([p for p in stack.docs[doc_id] if p.amendment_number == 0])
    browser.get(f"{served}/doc/{doc_id}?a=0&s=window&s2=section")
    load_ms = browser.execute_script(
        "const t = performance.getEntriesByType('navigation')[0]; return t.domContentLoadedEventEnd;"
    )
    cuts = browser.execute_script(
        "return [...document.querySelectorAll('[data-side=\"col0\"] .cut')].map("
        "c => [c.dataset.chunk, +c.dataset.start, +c.dataset.end])"
    )
    expected = sorted(rows, key=lambda r: (r["char_start"], r["position"]))
    assert cuts == [[r["_id"], r["char_start"], r["char_end"]] for r in expected]
    drawn = browser.execute_script(DRAWN)
    for row in rows:
        assert drawn[row["_id"]] == doc.text[row["char_start"] : row["char_end"]], f"chunk {row['position']}"
    shades = browser.execute_script(
        'return [...new Set([...document.querySelectorAll(\'[data-side="col0"] .seg.c0, [data-side="col0"] .seg.c1\')]'
        ".map(s => getComputedStyle(s).backgroundColor))]"
    )
    assert len(shades) == 2, f"alternating chunks are not drawn in two colours: {shades}"
    assert browser.find_elements("css selector", '[data-side="col1"] .cut'), "the second strategy is not beside it"
    # a chunk's record on click
    target = expected[len(expected) // 2]
    browser.find_element("css selector", f'[data-side="col0"] .cut[data-chunk="{target["_id"]}"]').click()
    wait_for(
        browser,
        f"const p = document.getElementById('record'); return p && !p.hidden && p.dataset.chunk === '{target['_id']}';",
    )
    panel = browser.find_element("id", "record").text
    assert target["_id"] in panel and str(target["token_count"]) in panel
    browser.save_screenshot(str(artifacts / "console-document.png"))
    (artifacts / "console-document.txt").write_text(
        f"{doc_id}: {len(rows)} window chunks, DOMContentLoaded {load_ms:.0f} ms\n"
    )


def test_a_search_result_leads_to_its_chunk(browser, served: str) -> None:
    browser.get(f"{served}/search")
    box = browser.find_element("name", "q")
    box.send_keys("how long does the dough rest before the salt goes in")
    box.submit()
    wait_for(browser, "return document.querySelectorAll('#hits a.hit').length > 0", 60)
    first = browser.find_element("css selector", "#hits a.hit")
    chunk_id = first.get_attribute("data-chunk")
    first.click()
    wait_for(
        browser,
        f"const p = document.getElementById('record'); return p && !p.hidden && p.dataset.chunk === '{chunk_id}';",
    )
    assert "/doc/field-notes-7" in browser.current_url
    marker = browser.find_element("id", f"col0-{chunk_id}")
    assert marker.is_displayed()


def test_markup_in_a_document_runs_nothing(browser, served: str, artifacts: Path) -> None:
    browser.get(f"{served}/doc/{HOSTILE_ID}")
    assert browser.execute_script("return window.__pwned === undefined")
    text = browser.find_element("css selector", ".doctext").text
    assert "<script>window.__pwned = 1</script>" in text and "<b>bold</b>" in text
    assert not browser.find_elements("css selector", ".doctext b, .doctext img, .doctext script")
    browser.save_screenshot(str(artifacts / "console-hostile.png"))


def test_the_lag_table_refreshes_itself(browser, served: str, artifacts: Path) -> None:
    browser.get(f"{served}/bus")
    wait_for(browser, "return document.getElementById('lag').dataset.refreshed", 20)
    rows = browser.find_elements("css selector", "#lag tbody tr")
    assert rows and "streams-chunker-window" in browser.find_element("id", "lag").text
    assert browser.find_element("id", "letters").text.count("invalid_json") >= 1
    browser.save_screenshot(str(artifacts / "console-bus.png"))
