"""Under exactly-once the input topics of the chunkers and the sinks end in commit markers: offsets that hold
no record.

Why: a sink commits the offsets of what it stored, and a worker those of what it processed. A marker after the
last record is never returned by the consumer, so committing only past records left each partition's lag at 1
or 2 for good (one marker per transaction that wrote there), and a user or an autoscaler watching consumer lag
could never tell a drained sink or chunker from a stuck one. The sink commits its position, which the consumer
moves past markers; a worker commits through the holes its consumer stepped over (transport point 18).
"""

from __future__ import annotations

import time

import pytest

from streams.ops.pipeline import LocalPipeline, publish_pages
from streams.runtime.clients import group_id
from streams.runtime.lag import group_lag
from tests.integration.conftest import pipeline_settings
from tests.integration.test_pipeline import transaction_markers
from tests.reliability.clean_run import documents, expected_chunks, stored_chunks

pytestmark = pytest.mark.integration


@pytest.mark.kafka_only
def test_under_exactly_once_a_drained_chunker_and_sink_show_no_lag(tmp_path) -> None:
    docs = documents(8, "drained", pages=(1, 2), page_words=(40, 160))
    expected = expected_chunks(docs)
    settings = pipeline_settings(tmp_path, processing_guarantee="exactly_once")
    with LocalPipeline(settings, ["window"], sinks=["mongo"]) as pipeline:
        live = pipeline.settings
        publish_pages(live, [p for d in docs for p in d])
        stored, rows = stored_chunks(live, len(expected), timeout=120)
        groups = {
            group_id(live, "chunker-window"): [live.topics.documents, live.topics.versions],
            group_id(live, "sink-mongo"): [live.topics.chunks, live.topics.status, live.topics.manifests],
        }
        deadline = time.monotonic() + 30
        for group, topics in groups.items():
            while (lag := {(r.topic, r.partition): r.lag for r in group_lag(live, group, topics)}) and any(
                lag.values()
            ):
                pipeline.check_workers()
                assert time.monotonic() < deadline, f"{group} never committed through to the end: {lag}"
                time.sleep(0.5)
            assert lag, f"{group} committed nothing"
        markers = {topic: transaction_markers(live, topic) for topic in (live.topics.documents, live.topics.chunks)}
    assert stored == expected and rows == len(expected)
    # the documents and chunks were written in transactions, so their topics hold markers to pass
    assert all(markers.values()), markers
