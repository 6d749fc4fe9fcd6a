"""Lag against known offsets, and /metrics scraped during a real run."""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from streams.ops.embedded import ServiceError, broker
from streams.ops.lag import active_groups, lag_report
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages
from streams.ops.topics import ensure_topics
from streams.runtime.clients import group_id
from streams.settings import Settings
from tests.conftest import make_pages
from tests.integration.conftest import pipeline_settings

pytestmark = pytest.mark.integration


def test_lag_is_produced_minus_consumed_per_partition(tmp_path) -> None:
    with broker(tmp_path) as service:
        settings = Settings(broker=service.address, partitions=2, data_dir=tmp_path)
        ensure_topics(settings)
        producer = Producer({"bootstrap.servers": service.address})
        for i in range(10):
            producer.produce(settings.topics.chunks, key=b"k", value=b"v", partition=i % 2)  # 5 per partition
        producer.flush(10)
        consumer = Consumer(
            {
                "bootstrap.servers": service.address,
                "group.id": group_id(settings, "sink-mongo"),
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe([settings.topics.chunks])
        taken: dict[int, int] = {}
        deadline = time.monotonic() + 30
        while sum(taken.values()) < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                consumer.commit(message, asynchronous=False)
                taken[message.partition()] = taken.get(message.partition(), 0) + 1
        consumer.close()
        report = lag_report(settings, group_id(settings, "sink-mongo"))
        rows = {(r["topic"], r["partition"]): r for r in report["partitions"]}
        for partition in (0, 1):
            row = rows[(settings.topics.chunks, partition)]
            assert row["end"] == 5
            assert row["lag"] == 5 - taken.get(partition, 0)
        assert report["totals"][group_id(settings, "sink-mongo")] == 10 - sum(taken.values()) == 7
        window = group_id(settings, "chunker-window")
        assert lag_report(settings, window)["totals"][window] == 0


def test_lag_is_read_while_a_transaction_holds_offsets_for_the_group(tmp_path) -> None:
    """Under exactly-once a worker sends its input offsets inside its transaction; SIGKILLed before the commit,
    it leaves them pending until a successor fences it or the transaction times out. Kafka then answers a
    request for stable offsets with "unstable" for that long: the lag must still read the committed ones."""
    from streams.runtime.lag import group_lag

    with broker(tmp_path) as service:
        settings = Settings(broker=service.address, partitions=2, data_dir=tmp_path)
        ensure_topics(settings)
        topic, group = settings.topics.documents, group_id(settings, "chunker-window")
        plain = Producer({"bootstrap.servers": service.address})
        for _ in range(4):
            plain.produce(topic, key=b"k", value=b"v", partition=0)
        plain.flush(10)
        consumer = Consumer({"bootstrap.servers": service.address, "group.id": group, "enable.auto.commit": False})
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        worker = Producer({"bootstrap.servers": service.address, "transactional.id": f"{group}-0-0"})
        worker.init_transactions(10)
        worker.begin_transaction()
        worker.produce(topic, key=b"k", value=b"out", partition=1)
        worker.send_offsets_to_transaction([TopicPartition(topic, 0, 3)], consumer.consumer_group_metadata(), 10)
        worker.flush(10)  # offsets pending in an open transaction, as a worker killed before its commit leaves them
        # a read that waited for the transaction instead would time out and raise
        rows = {r.partition: r for r in group_lag(settings, group, [topic], timeout=8)}
        worker.abort_transaction(10)
        consumer.close()
    assert rows[0].committed == 1 and rows[0].lag == 3  # the committed offset, not the pending one


def _scrape(port: int, path: str = "/metrics") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def _value(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_a_group_that_has_joined_but_not_committed_is_listed_and_reported(tmp_path) -> None:
    """A worker between its first records and its first commit is running: the broker's group list says so
    (the admin client made for the listing was dropped before its answer, so the list was always empty)."""
    with broker(tmp_path) as service:
        settings = Settings(broker=service.address, partitions=2, data_dir=tmp_path)
        ensure_topics(settings)
        window = group_id(settings, "chunker-window")
        consumer = Consumer({"bootstrap.servers": service.address, "group.id": window})
        consumer.subscribe([settings.topics.documents])
        try:
            deadline = time.monotonic() + 60
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(0.2)
            assert consumer.assignment()
            assert window in active_groups(settings)
            assert window in lag_report(settings)["totals"]
        finally:
            consumer.close()


def test_a_collector_that_times_out_says_where_each_group_stood(tmp_path) -> None:
    with broker(tmp_path) as service:
        settings = Settings(broker=service.address, partitions=2, data_dir=tmp_path)
        ensure_topics(settings)
        producer = Producer({"bootstrap.servers": service.address})
        producer.produce(settings.topics.pages, key=b"never", value=b"{}")
        producer.flush(10)
        collector = Collector(settings)
        try:
            with pytest.raises(ServiceError, match=r"never@0/window; lag .*streams-assembler 1 \(not listed\)"):
                collector.wait([("never", 0)], ["window"], timeout=1)
        finally:
            collector.close()


def _scrape_until(port: int, done, timeout: float = 60) -> str:
    """The metrics of `port` once `done(text)` holds (they lag the bus by a batch or a commit)."""
    deadline = time.monotonic() + timeout
    while True:
        _, text = _scrape(port)
        if done(text) or time.monotonic() > deadline:
            return text
        time.sleep(0.5)


@pytest.fixture(scope="module")
def metered(bus: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """A pipeline with a sink, every process serving its metrics, after three documents and a bad page."""
    docs = [make_pages(f"m{n}", ["word " * 300] * (n + 1)) for n in range(3)]
    pages = [p for d in docs for p in d]
    settings = pipeline_settings(tmp_path_factory.mktemp("metrics"), sink_assignment="manual")
    with LocalPipeline(settings, ["window"], sinks=["mongo"], metrics=True) as pipeline:
        publish_pages(pipeline.settings, [*pages, (b"bad", b'{"doc_id": "bad", ')])  # one invalid JSON page
        collector = Collector(pipeline.settings)
        result = collector.wait([(d[0].doc_id, 0) for d in docs], ["window"], timeout=120)
        while not result.dead and collector.poll(1.0):
            pass
        collector.close()
        yield {"pipeline": pipeline, "pages": pages, "result": result}


def test_metrics_endpoint_counts_what_was_processed(metered: dict) -> None:
    """Every worker and sink serves /metrics and /healthz; the counters match what went through."""
    pipeline, pages, result = metered["pipeline"], metered["pages"], metered["result"]
    chunks = len(result.records())
    ports = pipeline.metrics_ports
    assembler, chunker, sink = ports["assembler"], ports["chunker:window"], ports["sink:mongo"]
    text = _scrape_until(chunker, lambda t: _value(t, "streams_chunks_total", strategy="window") >= chunks)
    # The sink reports a batch's documents indexed before it commits the batch and counts its records in:
    # a scrape between the two saw the documents and none of their records.
    stored = _scrape_until(
        sink,
        lambda t: (
            _value(t, "streams_documents_indexed_total", store="mongo", outcome="indexed") >= 3
            and _value(t, "streams_records_in_total", role="sink-mongo", topic="chunks.created") >= chunks
        ),
    )
    _, assembled = _scrape(assembler)
    assert _value(assembled, "streams_records_in_total", role="assembler", topic="pages.cleaned") == len(pages) + 1
    assert _value(assembled, "streams_records_out_total", role="assembler", topic="documents.assembled") == 3
    [letter] = result.dead
    assert (letter.stage, letter.reason_code) == ("assembly", "invalid_json")
    assert _value(assembled, "streams_dead_letters_total", stage="assembly", reason="invalid_json") == 1
    assert _value(text, "streams_chunks_total", strategy="window") == chunks
    assert _value(text, "streams_processing_latency_seconds_count", stage="page_to_chunk") == 3
    assert re.search(
        r'streams_consumer_lag\{group="streams-chunker-window",partition="\d",topic="documents.assembled"\}', text
    )
    # the sink: every chunk consumed and stored, every document reported indexed in its store
    assert _value(stored, "streams_records_in_total", role="sink-mongo", topic="chunks.created") == chunks
    assert _value(stored, "streams_documents_indexed_total", store="mongo", outcome="indexed") == 3
    assert _value(stored, "streams_processing_latency_seconds_count", stage="chunk_to_stored") == chunks
    for port in (assembler, chunker, sink):
        assert _scrape(port, "/healthz")[0] == 200
    for port in (assembler, chunker):
        assert _scrape(port, "/readyz")[0] == 200
    assert _scrape(chunker, "/nope")[0] == 404


def test_a_sink_answers_readyz_while_it_waits_for_records(metered: dict) -> None:
    """What a readiness probe (deploy/k8s gives it 3 s) needs: an answer while the sink idles on a caught-up topic."""
    sink = metered["pipeline"].metrics_ports["sink:mongo"]
    assert _scrape(sink, "/healthz")[0] == 200
    assert _scrape(sink, "/readyz")[0] == 200
