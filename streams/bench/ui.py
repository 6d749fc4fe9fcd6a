"""`streams bench ui`: how fast the console serves a document view, for a sample and a 300-page document.

The view is read from the real services (pages from the embedded broker, chunks from the embedded
MongoDB) and served over HTTP by uvicorn in this process. The baseline, measured in the same run, is the
same document's JSON (text and records, no drawing), so the ratio is what drawing the boundaries costs.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streams.core.document import assemble
from streams.core.events import DocType, PageEvent
from streams.core.publish import publish
from streams.ingest.files import page_events
from streams.ops.embedded import broker, document_store, free_port
from streams.settings import Settings
from streams.strategies import build_chunker
from streams.ui.browser import headless_chromium

#: The vocabulary of the synthetic document, one string so the list stays short to read.
_VOCABULARY = (
    "harbor bridge deck cable tender price schedule bidder clause amendment section load steel "
    "span inspection contractor warranty notice award deadline insurance bond traffic lane repair survey"
)
WORDS = _VOCABULARY.split()


def synthetic_document(doc_id: str, pages: int) -> list[PageEvent]:
    """A long report: a heading every third page, prose, and a small table every tenth page (no corpus text)."""
    events = []
    for n in range(1, pages + 1):
        lines: list[str] = []
        if n % 3 == 1:
            lines.append(f"## Part {n // 3 + 1}: {WORDS[n % len(WORDS)].title()} works")
        for p in range(5):
            words = [WORDS[(n * 7 + p * 13 + i * i) % len(WORDS)] for i in range(80)]
            lines.append(" ".join(words).capitalize() + ".")
        if n % 10 == 0:
            lines.append("| item | quantity | unit price |\n|---|---|---|")
            lines += [f"| {WORDS[(n + r) % len(WORDS)]} | {r * 3 + n} | {r * 125 + n}.00 |" for r in range(6)]
        events.append(
            PageEvent(
                doc_id=doc_id,
                document_name=f"{doc_id}.md",
                page_number=n,
                page_count=pages,
                text="\n\n".join(lines),
                doc_type=DocType.generic,
            )
        )
    return events


def _timed(get: Callable[[], Any], rounds: int) -> dict[str, float]:
    first_started = time.perf_counter()
    get()
    first = time.perf_counter() - first_started
    runs = []
    for _ in range(rounds):
        started = time.perf_counter()
        get()
        runs.append(time.perf_counter() - started)
    return {"first_ms": round(first * 1000, 1), "median_ms": round(statistics.median(runs) * 1000, 1)}


def run_ui_bench(pages: int, rounds: int, progress: Callable[[str, int, int], None]) -> dict[str, Any]:
    import httpx
    import uvicorn

    from streams.ops.pipeline import publish_pages, sample_paths
    from streams.ops.topics import ensure_topics
    from streams.sinks.mongo import MongoSink
    from streams.ui.app import create_app

    with tempfile.TemporaryDirectory(prefix="bench-ui-") as tmp:
        data_dir = Path(tmp)
        progress("starting the broker and MongoDB", 0, 4)
        bus, store = broker(data_dir), document_store(data_dir)
        bus.start()
        store.start()
        try:
            settings = Settings(
                data_dir=data_dir, broker=bus.address, mongo_url=f"mongodb://{store.address}", partitions=2
            )
            ensure_topics(settings)
            sample = max(sample_paths(), key=lambda p: p.stat().st_size if p.suffix != ".json" else 0)
            documents = {"sample": page_events(sample), f"{pages} pages": synthetic_document("long-report", pages)}
            progress("publishing and chunking", 1, 4)
            sink = MongoSink.of(settings)
            chunks: dict[str, int] = {}
            for label, events in documents.items():
                publish_pages(settings, events)
                doc = assemble(events)
                for strategy in ("window", "section"):
                    chunker = build_chunker(strategy, settings)
                    records = publish(doc, chunker).records
                    sink.write_chunks(records)
                    chunks[f"{label}/{strategy}"] = len(records)
            sink.close()
            port = free_port()
            server = uvicorn.Server(
                uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
            )
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            while not server.started:
                time.sleep(0.05)
            progress("timing the views", 2, 4)
            results: dict[str, Any] = {}
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
                for label, events in documents.items():
                    doc_id = events[0].doc_id
                    chars = len(assemble(events).text)

                    def get(path: str, params: dict[str, str]) -> Callable[[], int]:
                        def fetch() -> int:
                            response = client.get(path, params=params)
                            response.raise_for_status()
                            return len(response.content)

                        return fetch

                    baseline = _timed(get(f"/doc/{doc_id}.json", {"s": "window"}), rounds)
                    one = _timed(get(f"/doc/{doc_id}", {"s": "window"}), rounds)
                    two = _timed(get(f"/doc/{doc_id}", {"s": "window", "s2": "section"}), rounds)
                    results[label] = {
                        "doc_id": doc_id,
                        "pages": len(events),
                        "chars": chars,
                        "chunks": {s: chunks[f"{label}/{s}"] for s in ("window", "section")},
                        "html_bytes": get(f"/doc/{doc_id}", {"s": "window", "s2": "section"})(),
                        "json_baseline": baseline,
                        "view_one_strategy": one,
                        "view_two_strategies": two,
                        "ratio_two_to_baseline": round(two["median_ms"] / max(baseline["median_ms"], 0.1), 2),
                    }
                progress("loading the views in a browser", 3, 4)
                browser_error = _browser_timings(f"http://127.0.0.1:{port}", results, rounds)
            server.should_exit = True
            thread.join(10)
            progress("done", 4, 4)
            return {"rounds": rounds, "documents": results, "target_ms": 1000, "browser": browser_error or "chromium"}
        finally:
            store.stop()
            bus.stop()


def _browser_timings(base: str, results: dict[str, Any], rounds: int) -> str:
    """Navigation timing of the two-strategy view in headless chromium (when installed): the page as a
    person gets it, parsed and laid out, not only served. Returns why it was skipped, or ""."""

    try:
        driver = headless_chromium()
    except FileNotFoundError as exc:
        return f"{exc}: browser timings skipped"
    try:
        for row in results.values():
            loads = []
            for _ in range(rounds):
                driver.get(f"{base}/doc/{row['doc_id']}?s=window&s2=section")
                loads.append(
                    driver.execute_script(
                        "const t = performance.getEntriesByType('navigation')[0];"
                        "return [t.responseEnd, t.domContentLoadedEventEnd, t.loadEventEnd];"
                    )
                )
            row["browser_ms"] = {
                key: round(statistics.median(load[i] for load in loads), 1)
                for i, key in enumerate(("response_end", "dom_content_loaded", "load_end"))
            }
    finally:
        driver.quit()
    return ""
