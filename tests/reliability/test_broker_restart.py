"""The embedded broker is stopped (SIGTERM) and started again on the same port and data directory while
the workers and the MongoDB sink keep running.

Why: a broker restart (upgrade, crash, node move) must cost time, never data. Every client reconnects on
its own: the faust workers (assembler, chunker), the sink and the test's collector; the pages published
before the restart, those in flight and those published after end as exactly the chunks of a clean run,
stored once. noida-db forgets every consumer group when it restarts (generations start again at 1, members
are unknown), so each restart is also a rebalance of every group before or between commits.

Known limits (why the second test runs an audit and a repair before it compares):

- noida-db 0.2.3 can lose produce requests it has acknowledged (acks=all) when SIGTERM arrives while they
  are in flight. Reproduced without the pipeline: eight producers sending 200 KB records, SIGTERM after
  50-260 ms, restart: in 2 of 8 rounds records acknowledged at offsets 252-254 of a partition were gone,
  its end offset after the restart being 244. In the pipeline that is a chunk record the chunker sent just
  before the stop (position 0 of a document whose positions 1-3 are there, under the offsets position 0
  had been given); the chunker's input offset is committed, so nothing re-publishes it. A real Kafka
  broker does not acknowledge what it has not logged.
- Four ways a faust worker lost or stalled on messages across the rebalance a restart causes were found
  and fixed in `streams/agents/transport.py` (points 4-7: commits past a skipped first message, stream
  queues emptied on resume, jumps in dense offsets committed as holes, a hand-over cut short by the
  rebalance yet marked read). After points 4-6 the restart with nothing in flight passed 38 of 39 runs
  here (one run: the assembler stopped consuming one partition of `pages.cleaned` after the restart, which
  fits point 7: a message lost in the hand-over holds the partition's commit while nothing fetches it
  again); after point 7 it passed 46 of 46 runs. It stays opt-in
  (STREAMS_TEST_BROKER_RESTART=1) until a longer soak says it holds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from streams.ops.embedded import document_store
from streams.ops.pipeline import Collected, Collector, LocalPipeline, publish_pages
from streams.runtime.lag import group_lag
from streams.settings import Settings
from streams.sinks.lance_target import LanceTarget
from streams.sinks.mongo import MongoSink
from tests.integration.conftest import pipeline_settings
from tests.reliability.clean_run import documents, expected_chunks, stored_chunks

# it kills or freezes its broker or store: services of its own
pytestmark = [pytest.mark.integration, pytest.mark.own_services]

DOWN_S = 3.0


def restart_settings(tmp_path: Path, store_address: str, **overrides: object) -> Settings:
    # Pages of one document may straddle the restart and the rejoin that follows it: no assembly timeout
    # (4 s in the integration defaults) may turn that delay into a dead letter.
    return pipeline_settings(
        tmp_path,
        mongo_url=f"mongodb://{store_address}",
        sink_assignment="group",
        assembly_timeout_s=120.0,
        **overrides,
    )


@contextmanager
def restart_pipeline(tmp_path: Path) -> Iterator[LocalPipeline]:
    """A window chunker and a group-mode MongoDB sink on an embedded broker that the test may restart."""
    store = document_store(tmp_path).start()
    settings = restart_settings(tmp_path, store.address)
    try:
        with LocalPipeline(settings, ["window"], sinks=["mongo"], own_store=False) as pipeline:
            assert pipeline.broker is not None
            pipeline.broker.throwaway = False  # a restart is a controlled shutdown here, not a kill
            yield pipeline
    finally:
        store.stop()


@pytest.mark.embedded_only  # the opt-in soak of noida-db's rejoin; the mid-run test below runs on both
@pytest.mark.skipif(
    os.environ.get("STREAMS_TEST_BROKER_RESTART") != "1",
    reason="opt in with STREAMS_TEST_BROKER_RESTART=1: with nothing in flight it stalled 1 of 39 runs before "
    "point 7 of the transport, 0 of 46 since (module docstring)",
)
def test_broker_restart_between_batches_loses_and_duplicates_nothing(tmp_path) -> None:
    """Restart with nothing in flight: every client must rejoin, recover its tables and go on."""
    before, after = documents(20, "idle-a"), documents(20, "idle-b")
    expected_before, expected = expected_chunks(before), expected_chunks(before + after)
    with restart_pipeline(tmp_path) as pipeline:
        live = pipeline.settings
        publish_pages(live, [p for d in before for p in d])
        stored, _ = stored_chunks(live, len(expected_before), timeout=60)
        assert stored == expected_before
        wait_committed(live, timeout=30)  # chunker and sink done with the first batch: nothing in flight

        pipeline.broker.stop()
        time.sleep(DOWN_S)
        pipeline.broker.start()
        restarted_at = time.monotonic()

        publish_pages(live, [p for d in after for p in d])
        collector = Collector(live)
        result = collector.wait([(d[0].doc_id, 0) for d in before + after], ["window"], timeout=60, drain=True)
        recovered_s = time.monotonic() - restarted_at
        collector.close()
        stored, rows = stored_chunks(live, len(expected), timeout=60)
        pipeline.check_workers()
    report_and_check("between batches", before, after, expected, result, stored, rows, recovered_s)


def report_and_check(
    label: str,
    before: list,
    after: list,
    expected: dict[str, str],
    result: Collected,
    stored: dict[str, str],
    rows: int,
    recovered_s: float,
    extra: str = "",
) -> None:
    """Print the counts for the issue note, then demand exactly the clean run's chunks, each stored once."""
    print(
        f"\nbroker restart {label} ({DOWN_S:.0f}s down): {len(before)} + {len(after)} docs, "
        f"{sum(map(len, before + after))} pages, {len(expected)} chunks expected;{extra} all settled "
        f"{recovered_s:.1f}s after the restart; stored {len(stored)} ({rows} rows); "
        f"dead letters {[(d.reason_code, d.doc_id) for d in result.dead]}; re-published {result.duplicates}"
    )
    assert {r.chunk_id: r.checksum for r in result.records()} == expected
    assert not result.dead
    assert stored == expected and rows == len(expected)


def wait_committed(settings: Settings, timeout: float) -> None:
    """Until the chunker and the Mongo sink have committed up to the end of their input topics."""
    groups = {"streams-chunker-window": [settings.topics.documents], "streams-sink-mongo": [settings.topics.chunks]}
    deadline = time.monotonic() + timeout
    while True:
        rows = [row for group, topics in groups.items() for row in group_lag(settings, group, topics, timeout=5)]
        if rows and all(row.committed == row.end for row in rows):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not committed to the end: {rows}")
        time.sleep(0.5)


def test_broker_restart_mid_run_is_found_by_the_audit_and_repaired(tmp_path, bus: str) -> None:
    """Restart (SIGTERM) while documents are being chunked and stored, with both sinks: the stop comes once
    chunks flow, and the stores must still lack chunks when it has returned (measured, not assumed). noida-db
    may lose records it acknowledged (module docstring); one document's rows and vectors are also deleted
    by hand, so the audit always has a gap to name and `--repair` one to close beside whatever the broker
    lost. The audit names them all, none beyond repair, and after the repair finds none: the end state
    equals a clean run on the topic, in MongoDB and in the vector store. Apache Kafka logs what it
    acknowledges, so there the forced gap is the only one."""
    from tests.reliability.clean_run import (
        audit_names_the_gaps_and_repair_closes_them,
        chunk_ids_by_document,
        force_gap,
        stored_counts,
    )
    from tests.reliability.test_supervision import _settled, _topic_chunks

    before, after = documents(30, "restart-a"), documents(20, "restart-b")
    expected_before, expected = expected_chunks(before), expected_chunks(before + after)
    store = document_store(tmp_path).start()
    # The sinks write batches of 8: the stop finds both mid-stream, not done while the broker saves and exits.
    settings = restart_settings(tmp_path, store.address, sink_batch_size=8)
    try:
        with LocalPipeline(settings, ["window"], sinks=["mongo", "vectors"], own_store=False) as pipeline:
            live = pipeline.settings
            collector = Collector(live)
            publish_pages(live, [p for d in before for p in d])  # acknowledged before the restart
            deadline = time.monotonic() + 60
            while not collector.result.chunks and time.monotonic() < deadline:
                collector.poll(0.2)  # restart as soon as chunks flow: documents are in flight
            collector.close()
            assert collector.result.chunks, "no chunk before the restart"

            pipeline.broker.stop()  # SIGTERM, until its processes are gone; the janitor stops with it
            mongo = MongoSink.of(live)
            try:
                rows, vectors = stored_counts(live, mongo)  # the broker gone: at least what was stored when it went
                assert rows + vectors < 2 * len(expected_before), (rows, vectors, len(expected_before))
                time.sleep(DOWN_S)
                pipeline.broker.start()  # same arguments: same port and data directory; a new janitor
                restarted_at = time.monotonic()
                publish_pages(live, [p for d in after for p in d])
                _settled(pipeline, mongo)
                settled_s = time.monotonic() - restarted_at
                forced = force_gap(live, chunk_ids_by_document(before + after))
                lost = audit_names_the_gaps_and_repair_closes_them(pipeline, forced, len(before + after))
                repaired_s = time.monotonic() - restarted_at
                stored, row_count = stored_chunks(live, len(expected), timeout=60)
                latest = mongo.count(latest_only=True)
            finally:
                mongo.close()
            target = LanceTarget(live.lance_dir, live.lance_table)
            vector_ids = target.ids()
            flags = target.flags(vector_ids)
            on_topic = {r.chunk_id: r.checksum for r in _topic_chunks(pipeline)}
            pipeline.check_workers()  # every worker and both sinks survived the restart
    finally:
        store.stop()
    print(
        f"\nbroker restart mid run: at the stop {rows} rows and {vectors} vectors of {len(expected_before)} "
        f"chunks stored; {len(expected)} chunks expected in all; gaps the broker left: {lost or 'none'}; "
        f"settled {settled_s:.1f}s, repaired {repaired_s:.1f}s after the restart"
    )
    if bus == "kafka":
        assert not lost, lost  # a restarted Kafka lost nothing it had acknowledged
    assert on_topic == expected
    assert stored == expected and row_count == len(expected) and latest == len(expected)
    assert sorted(vector_ids) == sorted(expected) and all(flags.values())
