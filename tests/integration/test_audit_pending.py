"""The audit tells backlog from loss, on each broker: rows a sink has not written yet because it is behind are
`pending` with its lag (exit 3), `--wait` waits for it to catch up and then finds nothing (exit 0), and a row
deleted from a sink that is not behind is missing (exit 1)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.sinks.mongo import MongoSink
from streams.sinks.runner import SinkRunner
from tests.cli import streams
from tests.conftest import make_pages
from tests.integration.conftest import pipeline_settings
from tests.integration.test_audit_gaps import stack_env, text

pytestmark = pytest.mark.integration


def _until_listed(settings, runner: SinkRunner, audit, timeout: float = 60):
    """The audit once the sink's group is one the broker lists (it has joined and been given partitions)."""
    from streams.ops.lag import active_groups

    deadline = time.monotonic() + timeout
    while not (runner.has_partitions and runner.group in active_groups(settings)):
        assert time.monotonic() < deadline, "the sink never joined its group"
        time.sleep(0.5)
    return audit()


def test_a_sink_behind_is_pending_until_it_catches_up_and_a_lost_row_is_missing(tmp_path: Path) -> None:
    store = document_store(tmp_path).start()
    # The sink joins its group (subscribes): a member the broker lists, while it is still behind.
    settings = pipeline_settings(tmp_path, mongo_url=f"mongodb://{store.address}")
    docs = [make_pages(f"pending-{n}", [text(n)]) for n in range(3)]
    try:
        with LocalPipeline(settings, ["window"]) as pipeline:
            settings = pipeline.settings
            publish_pages(settings, [p for d in docs for p in d])
            collector = Collector(settings)
            collector.wait([(d[0].doc_id, 0) for d in docs], ["window"], timeout=180, drain=True)
            collector.close()
            env = stack_env(settings)
            audit = ("audit", "--stores", "mongo", "-s", "window", "--json")
            never = streams(*audit, env=env)  # no sink ever ran: nothing is working on the rows, they are missing

            mongo = MongoSink.of(settings)
            stop, go = threading.Event(), threading.Event()
            write = mongo.write_chunks

            def held(records):  # the sink has joined its group and read its first batch, and writes nothing yet
                go.wait(120)
                return write(records)

            mongo.write_chunks = held  # type: ignore[method-assign]
            runner = SinkRunner(settings, mongo)
            thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
            thread.start()
            try:
                behind = _until_listed(settings, runner, lambda: streams(*audit, env=env))
                go.set()
                waited = streams(*audit, "--wait", "120", env=env)
                lost = mongo.collection.find_one({"doc_id": "pending-1"})["_id"]
                mongo.collection.delete_one({"_id": lost})
                missing = streams(*audit, env=env)
            finally:
                stop.set()
                thread.join(30)
    finally:
        store.stop()

    assert never.returncode == 1 and json.loads(never.stdout)["pending"] == 0, never.stdout
    report = json.loads(behind.stdout)
    assert behind.returncode == 3, behind.stderr
    assert report["gaps"]["rows_missing"] == 3 and report["pending"] == 3
    groups = {g["pending"].split(" lag ")[0] for g in report["details"]}
    assert len(groups) == 1 and groups.pop().endswith("streams-sink-mongo"), report["details"]
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert json.loads(waited.stdout)["gaps"]["rows_missing"] == 0
    after = json.loads(missing.stdout)
    assert missing.returncode == 1, missing.stderr
    assert after["gaps"]["rows_missing"] == 1 and after["pending"] == 0
    assert [g["doc_id"] for g in after["details"]] == ["pending-1"]
