"""The console's tests run against a real stack: the embedded broker, SecantusDB, LanceDB, the workers
and both sinks, with the samples, a hostile document and a dead letter on the bus."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from streams.core.options import DOC_TYPES
from streams.ingest.files import page_events
from streams.ops.embedded import free_port
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages, sample_paths
from streams.settings import Settings
from streams.ui.browser import browser_paths, headless_chromium
from tests.debian import install
from tests.integration.conftest import pipeline_settings

STRATEGIES = ["window", "section"]
#: A document whose text is markup: the console must show it as text and run none of it.
HOSTILE = (
    "# Notes <script>window.__pwned = 1</script>\n\n"
    'A <b>bold</b> claim & an <img src=x onerror="window.__pwned = 2"> image.\n'
)
HOSTILE_ID = "hostile-markup"
BAD_PAGE = b'{"doc_id": "broken-1", "page_number": "one", "text": "<i>not a page</i> \x00\x07"}'


@dataclass
class Stack:
    settings: Settings
    pipeline: LocalPipeline
    docs: dict[str, list]  # doc_id -> its page events, every amendment


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory, bus: str) -> Iterator[Stack]:
    """One stack per broker: it depends on `bus`, so the Kafka pass builds its own on Kafka (without that
    dependency pytest kept the noida-db stack for the `[kafka]` tests)."""
    tmp = tmp_path_factory.mktemp(f"console-{bus}")
    # section takes every document type here (an option, as a user would widen it), so the console shows
    # two strategies side by side on every sample
    every_type = {"doc_types": ",".join(DOC_TYPES)}
    settings = pipeline_settings(tmp, sink_assignment="manual", lancedb_path=tmp / "lance", section=every_type)
    pipeline = LocalPipeline(settings, STRATEGIES, sinks=["mongo", "vectors"])
    pipeline.start()
    try:
        settings = pipeline.settings
        hostile = tmp / "hostile.md"
        hostile.write_text(HOSTILE)
        events = [e for p in sample_paths() for e in page_events(p)]
        events += page_events(hostile, doc_id=HOSTILE_ID)
        docs: dict[str, list] = {}
        for e in events:
            docs.setdefault(e.doc_id, []).append(e)
        publish_pages(settings, [*events, (b"broken-1", BAD_PAGE)])
        collector = Collector(settings, watch_indexed=True)
        wanted = {(e.doc_id, e.amendment_number) for e in events}
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            collector.poll(1.0)
            done = {
                (d, a)
                for d, a in wanted
                if all((d, a, s, store) in collector.indexed for s in STRATEGIES for store in ("mongo", "vectors"))
            }
            if done == wanted and collector.result.dead:
                break
        else:
            raise AssertionError(f"not indexed in time: {sorted(wanted - done)}")
        yield Stack(settings, pipeline, docs)
    finally:
        pipeline.stop()


@pytest.fixture(scope="session")
def client(stack: Stack) -> Iterator:
    from starlette.testclient import TestClient

    from streams.ui.app import create_app

    with TestClient(create_app(stack.settings)) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def served(stack: Stack) -> Iterator[str]:
    """The console over real HTTP (uvicorn in a thread), for the browser."""
    import uvicorn

    from streams.ui.app import create_app

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(stack.settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the console did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Headless Debian chromium through selenium and chromedriver; installed here when missing."""
    chromium, driver_path = browser_paths()
    if not (chromium and driver_path):
        why = install("chromium", "chromium-driver")
        chromium, driver_path = browser_paths()
        if not (chromium and driver_path):
            pytest.skip(f"no browser for the console's browser tests: {why or 'chromium not found after install'}")
    driver = headless_chromium(tmp_path_factory.mktemp("chromium"))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Screenshots go here (CI keeps the directory): STREAMS_TEST_ARTIFACTS or test-artifacts/."""
    path = Path(os.environ.get("STREAMS_TEST_ARTIFACTS", "test-artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path
