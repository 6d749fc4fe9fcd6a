"""The document store (SecantusDB) goes down mid-run for longer than the sink's server-selection timeout,
then comes back on the same port and storage.

Why: the MongoDB sink commits its offsets only after the store has a batch. While the store is down the
sink must retry with backoff and keep its committed offsets where the last stored batch left them, so no
chunk produced meanwhile counts as consumed; after the restart everything is stored, once.
"""

from __future__ import annotations

import time

import pytest

from streams.ops.embedded import document_store
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.runtime.lag import group_lag
from streams.settings import Settings
from tests.integration.conftest import pipeline_settings
from tests.reliability.clean_run import documents, expected_chunks, stored_chunks

pytestmark = [
    pytest.mark.integration,
    pytest.mark.embedded_only,
    pytest.mark.own_services,
]  # a restart on the same port and storage

#: Longer than MongoSink's serverSelectionTimeoutMS (10 s), so at least one write fails and is retried.
OUTAGE_S = 12.0
MAX_OUTAGE_S = 90.0
SINK_GROUP = "streams-sink-mongo"


def chunk_offsets(settings: Settings) -> dict[int, tuple[int, int]]:
    """partition -> (committed offset of the Mongo sink, end offset) on the chunk topic."""
    rows = group_lag(settings, SINK_GROUP, [settings.topics.chunks], timeout=5)
    return {row.partition: (row.committed, row.end) for row in rows}


def wait_committed_to_end(settings: Settings, timeout: float) -> dict[int, tuple[int, int]]:
    deadline = time.monotonic() + timeout
    while True:
        offsets = chunk_offsets(settings)
        if offsets and all(committed == end for committed, end in offsets.values()):
            return offsets
        if time.monotonic() > deadline:
            raise AssertionError(f"the sink did not commit up to the end of the chunk topic: {offsets}")
        time.sleep(0.5)


def test_store_outage_then_restart_loses_and_duplicates_nothing(tmp_path) -> None:
    before, during = documents(20, "outage-a"), documents(30, "outage-b")
    expected_before, expected = expected_chunks(before), expected_chunks(before + during)
    store = document_store(tmp_path).start()
    settings = pipeline_settings(tmp_path, mongo_url=f"mongodb://{store.address}", sink_assignment="group")
    try:
        with LocalPipeline(settings, ["window"], sinks=["mongo"], own_store=False) as pipeline:
            live = pipeline.settings
            publish_pages(live, [p for d in before for p in d])
            stored, _ = stored_chunks(live, len(expected_before), timeout=60)
            assert stored == expected_before
            at_outage = wait_committed_to_end(live, timeout=30)

            store.stop()
            down_at = time.monotonic()
            publish_pages(live, [p for d in during for p in d])
            collector = Collector(live)
            samples = 0
            sink_log_path = live.data_dir / "logs" / "sink-mongo.log"
            # Down for OUTAGE_S, and until the sink has failed a write: a write that starts more than
            # OUTAGE_S - 10 s after the stop (chunks still on their way on a loaded machine) would wait out
            # server selection, see the store back, succeed, and never take the backoff path under test.
            while time.monotonic() - down_at < OUTAGE_S or (
                "write failed" not in sink_log_path.read_text(errors="replace")
                and time.monotonic() - down_at < MAX_OUTAGE_S
            ):
                collector.poll(0.5)
                offsets = chunk_offsets(live)
                # Not one offset committed past what was stored before the outage.
                assert {p: c for p, (c, _) in offsets.items()} == {p: c for p, (c, _) in at_outage.items()}
                samples += 1
            outage_s = time.monotonic() - down_at
            produced = len(collector.result.records())
            behind = sum(end - committed for committed, end in chunk_offsets(live).values())
            assert produced > len(expected_before) and behind > 0  # chunks of the outage are waiting

            store.start()  # same port and storage path: the same EmbeddedProcess arguments
            restarted_at = time.monotonic()
            stored, rows = stored_chunks(live, len(expected), timeout=60)
            recovered_s = time.monotonic() - restarted_at
            at_end = wait_committed_to_end(live, timeout=30)
            result = collector.wait([(d[0].doc_id, 0) for d in before + during], ["window"], timeout=60, drain=True)
            collector.close()
            pipeline.check_workers()
            sink_log = sink_log_path.read_text(errors="replace")
    finally:
        store.stop()
    retries = sink_log.count("write failed")
    print(
        f"\nstore outage {outage_s:.0f}s: {len(before) + len(during)} docs, "
        f"{sum(map(len, before + during))} pages, {len(expected)} chunks expected; "
        f"{produced} chunk records on the topic when the store came back, {behind} uncommitted; "
        f"{samples} offset samples during the outage; sink write retries {retries}; "
        f"stored {len(stored)} ({rows} rows) {recovered_s:.1f}s after the restart; "
        f"dead letters {len(result.dead)}; re-published {result.duplicates}; "
        f"committed/end {at_end}"
    )
    assert retries >= 1  # the outage outlasted one write attempt: the backoff path ran
    assert {r.chunk_id: r.checksum for r in result.records()} == expected
    assert not result.dead
    assert stored == expected and rows == len(expected)  # each chunk once, nothing lost
