"""A document tombstone on the versions topic retires every chunk of every amendment, in the store too."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.sinks.mongo import MongoSink
from streams.sinks.runner import SinkRunner
from tests.conftest import make_pages
from tests.integration.conftest import pipeline_settings

pytestmark = pytest.mark.integration


def _until(condition, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the store"
        time.sleep(0.5)


def test_tombstone_retires_all_chunks(tmp_path) -> None:
    store = document_store(tmp_path).start()
    settings = pipeline_settings(tmp_path, mongo_url=f"mongodb://{store.address}", sink_assignment="manual")
    versions = [
        [p.model_copy(update={"amendment_number": a}) for p in make_pages("gone", [f"text of version {a}. " * 80])]
        for a in (0, 1)
    ]
    keep = make_pages("kept", ["this one stays. " * 80])
    stop = threading.Event()
    try:
        with LocalPipeline(settings, ["window"]) as pipeline:
            sink = MongoSink.of(pipeline.settings)
            runner = SinkRunner(pipeline.settings, sink)
            thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
            thread.start()
            collector = Collector(pipeline.settings)
            for pages in [*versions, keep]:
                publish_pages(pipeline.settings, pages)
            seen = collector.wait([("gone", 0), ("gone", 1), ("kept", 0)], ["window"], timeout=180)
            collector.close()
            stored = sum(len(seen.chunks[("gone", a, "window")]) for a in (0, 1))
            # on the topic is not in the store: wait for the sink, or "nothing live" would hold trivially
            _until(lambda: sink.count(doc_id="gone") == stored and sink.count(doc_id="kept") > 0)
            env = {**os.environ, "STREAMS_BROKER": pipeline.settings.broker}
            done = subprocess.run([sys.executable, "-m", "streams", "delete", "gone"], env=env, capture_output=True)
            assert done.returncode == 0, done.stderr
            _until(lambda: sink.collection.count_documents({"doc_id": "gone", "retired": True}) >= stored)
            assert sink.count(doc_id="gone") == 0
            assert sink.collection.count_documents({"doc_id": "gone", "retired": True}) == stored
            assert sink.count(doc_id="kept", latest_only=True) > 0
            stop.set()
            thread.join(30)
    finally:
        stop.set()
        store.stop()
