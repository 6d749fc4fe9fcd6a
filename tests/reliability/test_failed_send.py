"""A chunker whose send raises halfway through a document loses none of it, under either guarantee.

Why: faust restarts an agent that raised, and the input it was processing is acked when its stream's iterator
is finalised, or committed past by the inputs after it. Under at-least-once the delivery gate then holds every
table write, the next commit fails and the worker stops (streams/agents/delivery.py). Under exactly-once nothing
was held: the document's first chunks and its offset committed in the transaction, its other chunks and its
manifest never, and no dead letter said so (one document of six lost, on both brokers). The gate now fails
every commit after it: the worker stops, and its successor aborts the transaction and takes the input again.

Under exactly-once every chunk is also committed once: the restarted chunker fetched some documents twice while
its recovery ended, and processed them twice in one transaction (3 runs of 4 on Kafka) until point 19 of
streams/agents/transport.py.

The failure is injected into the worker processes through a `sitecustomize` module on their PYTHONPATH: the
third chunk record the window chunker sends raises once (a marker file keeps the restarted worker from failing
again). The pipeline is supervised, so a worker that stops is started again, as in `streams up`.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.runtime.clients import group_id
from streams.runtime.lag import group_lag
from streams.settings import Settings
from tests.integration.conftest import pipeline_settings
from tests.reliability.clean_run import documents, expected_chunks

pytestmark = pytest.mark.integration

FAIL_ONCE = textwrap.dedent(
    """
    import os
    from pathlib import Path

    import faust.topics

    _marker = Path(os.environ["STREAMS_TEST_FAIL_SEND_ONCE"])
    _original = faust.topics.Topic.send
    _sent = [0]


    async def send(self, *args, **kwargs):
        if self.get_topic_name().endswith("chunks.created") and not _marker.exists():  # under any deployment
            _sent[0] += 1
            if _sent[0] == 3:
                _marker.write_text("raised")
                raise RuntimeError("injected: a send that raises")
        return await _original(self, *args, **kwargs)


    faust.topics.Topic.send = send
    """
)


def drained(settings: Settings) -> bool:
    """The window chunker has committed everything there is on the document topic, which holds at least six
    offsets (the documents, and under exactly-once their commit markers too)."""
    rows = group_lag(settings, group_id(settings, "chunker-window"), [settings.topics.documents])
    return bool(rows) and not any(r.lag for r in rows) and sum(r.end for r in rows) >= 6


@pytest.mark.parametrize("guarantee", ["at_least_once", pytest.param("exactly_once", marks=pytest.mark.kafka_only)])
def test_a_send_that_raises_halfway_through_a_document_loses_none_of_it(
    tmp_path: Path, bus: str, guarantee: str
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FAIL_ONCE)
    marker = tmp_path / "raised"
    docs = documents(6, "failed-send", pages=(2, 3), page_words=(300, 500))
    expected = expected_chunks(docs)
    assert all(len(expected_chunks([d])) >= 3 for d in docs)  # the third send falls inside a document
    settings = pipeline_settings(tmp_path / "run", processing_guarantee=guarantee, assembly_timeout_s=120.0)
    env = {"PYTHONPATH": str(site), "STREAMS_TEST_FAIL_SEND_ONCE": str(marker)}
    with LocalPipeline(settings, ["window"], supervise=True, worker_env=env) as pipeline:
        live = pipeline.settings
        first = pipeline.workers["chunker:window"].pid
        publish_pages(live, [p for d in docs for p in d])
        deadline = time.monotonic() + 180
        while not (marker.exists() and pipeline.workers["chunker:window"].pid != first and drained(live)):
            assert time.monotonic() < deadline, f"the chunker failed ({marker.exists()}), restarted and drained"
            pipeline.check_workers()  # supervised: starts the stopped chunker again
            time.sleep(0.5)
        # Read once the restarted chunker is done: on noida-db a read_committed reader that was already reading
        # when the failed transaction was left open saw nothing after it, although the transactions that followed
        # committed (the chunker's lag 0, every record readable by a new reader).
        collector = Collector(live)
        try:
            wanted = [(d[0].doc_id, 0) for d in docs]
            result = collector.wait(wanted, ["window"], timeout=120, drain=True)
        finally:
            collector.close()
    assert marker.exists(), "the injected send never ran"
    assert not result.dead, [(d.reason_code, d.reason) for d in result.dead]
    assert {r.chunk_id: r.checksum for r in result.records()} == expected
    if guarantee == "exactly_once":  # read_committed: each chunk once (transport.py, point 19)
        assert result.duplicates == 0, f"{result.duplicates} chunk records committed twice"
