"""A document the assembler could not yet deliver is not marked done: killed then, its successor assembles
it again (streams/agents/delivery.py).

On Apache Kafka the document topic is made to refuse the document (its max.message.bytes set below the record's
size), so the assembler completes a document it cannot deliver, while its table writes go to a topic that still
takes them. Before the gate, the document's done mark reached the changelog
at once; SIGKILLed and restarted, the assembler dropped the redelivered pages as duplicates of a document done,
and the document was lost with no dead letter (as a full-suite run of test_faults.py caught on 2026-11-27).
"""

from __future__ import annotations

import os
import re
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.events import PageEvent
from streams.core.records import build_records
from streams.ops.pipeline import Collected, Collector, LocalPipeline, publish_pages
from streams.runtime.clients import group_id
from streams.settings import Settings
from tests.cli import streams
from tests.conftest import make_pages
from tests.integration.conftest import pipeline_settings
from tests.reliability.clean_run import wait_split

pytestmark = pytest.mark.integration


def max_message_bytes(address: str, topic: str, value: str | None = None) -> str:
    """The topic's max.message.bytes, set to `value` first when one is given."""
    admin = AdminClient({"bootstrap.servers": address})
    if value is not None:
        entry = ConfigEntry("max.message.bytes", value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(30)
    deadline = time.monotonic() + 30
    while True:  # the broker applies an altered config a moment after it answers
        (described,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
        now = str(described.result(30)["max.message.bytes"].value)
        if value is None or now == value or time.monotonic() > deadline:
            return now
        time.sleep(0.2)


def changelog(settings: Settings) -> list[tuple[bytes, bytes | None]]:
    """Every record of the assembler's headers changelog: (key, value)."""
    consumer = Consumer({"bootstrap.servers": settings.broker, "group.id": "reader", "enable.auto.commit": False})
    topic = f"{group_id(settings, 'assembler')}-assembly-headers-changelog"
    try:
        parts = [TopicPartition(topic, p, 0) for p in range(settings.partitions)]
        ends = {p.partition: consumer.get_watermark_offsets(p, timeout=10)[1] for p in parts}
        consumer.assign(parts)
        records: list[tuple[bytes, bytes | None]] = []
        seen = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + 30
        while any(seen[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            records.append((message.key(), message.value()))
            seen[message.partition()] = message.offset() + 1
        return records
    finally:
        consumer.close()


def held_document() -> tuple[list[PageEvent], dict[str, str]]:
    """Two pages whose document is larger than the 200 bytes the tests lower the document topic to, and the
    chunks `window` makes of it."""
    pages = make_pages("held-doc", ["harbour ledger " * 60 + ".", "granite lantern " * 60 + "."])
    chunker = get_chunker("window")
    doc = assemble(pages)
    return pages, {r.chunk_id: r.checksum for r in build_records(doc, chunker, chunker.chunk(doc))}


def restarted_with_limit(pipeline: LocalPipeline, collector: Collector, limit: str) -> Collected:
    """The document topic's limit back, the assembler started again: what became of the held document."""
    live = pipeline.settings
    max_message_bytes(live.broker, live.topics.documents, limit)
    pipeline.start_worker("assembler")
    return collector.wait([("held-doc", 0)], ["window"], timeout=180, drain=True)


def assert_chunked_once(result: Collected, expected: dict[str, str]) -> None:
    assert not result.dead, [(d.reason_code, d.reason) for d in result.dead]
    assert {r.chunk_id: r.checksum for r in result.records()} == expected
    assert result.duplicates == 0


@pytest.mark.kafka_only  # noida-db has no per-topic max.message.bytes to refuse one topic's writes
def test_a_document_not_yet_delivered_is_not_marked_done_and_survives_a_kill(tmp_path, bus: str) -> None:
    pages, expected = held_document()
    # The gate of at-least-once, whatever the environment asks for: exactly-once has a test of its own below.
    settings = pipeline_settings(tmp_path, assembly_timeout_s=120.0, processing_guarantee="at_least_once")
    with LocalPipeline(settings, ["window"]) as pipeline:
        live = pipeline.settings
        collector = Collector(live, watch_documents=True)
        try:
            wait_split(live, 1, timeout=120)  # the assembler joined: it read the topic's limit before it did
            limit = max_message_bytes(live.broker, live.topics.documents)
            assert max_message_bytes(live.broker, live.topics.documents, "200") == "200"  # the document is larger
            publish_pages(live, pages)
            # Until the pages are read and the document completed: its first page is on the changelog (an
            # open header), and the assembler then completes it within a fetch.
            deadline = time.monotonic() + 120
            while not any(k and b"held-doc" in k for k, _ in changelog(live)):
                pipeline.check_workers()
                assert time.monotonic() < deadline, "the assembler never read the document's first page"
                time.sleep(0.5)
            time.sleep(5)  # the completing page is in the same fetch: a done mark has every chance to leak
            marks = [v for k, v in changelog(live) if k and b"held-doc" in k]
            assert marks and all(b'"done"' not in (v or b"") for v in marks), marks
            assert collector.produced(live.topics.documents) == 0
            pipeline.stop_worker("assembler", kill=True)
            result = restarted_with_limit(pipeline, collector, limit)
        finally:
            collector.close()
    assert_chunked_once(result, expected)


@pytest.mark.kafka_only  # and noida-db has no per-topic max.message.bytes to refuse one topic's writes
def test_under_exactly_once_a_refused_document_commits_nothing_and_is_assembled_after_a_restart(tmp_path) -> None:
    """Under exactly-once nothing is held: the document, its done mark and the pages' offsets share one
    transaction. aiokafka committed that transaction although the broker refused the document (transport point
    16): the done mark committed, the document lost. Now the commit fails instead, the assembler stops with
    nothing committed, and restarted with the topic's limit back it assembles the document, chunked once."""
    pages, expected = held_document()
    settings = pipeline_settings(tmp_path, assembly_timeout_s=120.0, processing_guarantee="exactly_once")
    with LocalPipeline(settings, ["window"]) as pipeline:
        live = pipeline.settings
        collector = Collector(live, watch_documents=True)
        try:
            wait_split(live, 1, timeout=120)
            limit = max_message_bytes(live.broker, live.topics.documents)
            assert max_message_bytes(live.broker, live.topics.documents, "200") == "200"  # the document is larger
            publish_pages(live, pages)
            assembler = pipeline.workers["assembler"]
            deadline = time.monotonic() + 120
            while assembler.poll() is None:  # its next commit fails on the refusal: it stops
                assert time.monotonic() < deadline, "the assembler went on after the broker refused its document"
                time.sleep(0.5)
            log = (live.data_dir / "logs" / "assembler.log").read_text(errors="replace")
            assert "refused a record of an open transaction" in log
            marks = [v for k, v in changelog(live) if k and b"held-doc" in k]
            assert all(b'"done"' not in (v or b"") for v in marks), marks
            assert collector.produced(live.topics.documents) == 0
            pipeline.stop_worker("assembler")
            result = restarted_with_limit(pipeline, collector, limit)
        finally:
            collector.close()
    assert_chunked_once(result, expected)


def test_a_document_topic_that_refuses_a_document_refuses_to_start_the_assembler(tmp_path, bus: str) -> None:
    """A topic whose max.message.bytes is below STREAMS_MAX_DOCUMENT_BYTES would refuse a document the assembler
    accepts: with the delivery gate that document is neither delivered nor dead-lettered, and the worker restarts
    into the same refusal. So the assembler refuses to start, in one line naming both limits (exit 78, which
    supervisors do not retry); with the topic as `streams topics` makes it, it starts."""
    from streams.ops.embedded import broker
    from streams.ops.topics import ensure_topics
    from streams.runtime.clients import TopicTooSmall, check_document_topic

    with broker(tmp_path) as server:
        settings = Settings(broker=server.address, data_dir=tmp_path, partitions=1)
        ensure_topics(settings)
        check_document_topic(settings)  # the project's own topics take its largest document
        with pytest.raises(TopicTooSmall, match="STREAMS_MAX_DOCUMENT_BYTES"):
            check_document_topic(settings.model_copy(update={"max_message_bytes": 1000, "max_document_bytes": 2000}))
        if bus != "kafka":
            return  # noida-db has no per-topic max.message.bytes to lower
        max_message_bytes(settings.broker, settings.topics.documents, "100000")
        with pytest.raises(TopicTooSmall, match=r"takes records of at most 100000 bytes"):
            check_document_topic(settings)
        check_document_topic(settings.model_copy(update={"max_document_bytes": 100_000}))  # documents fit now
        env = {**os.environ, "STREAMS_BROKER": settings.broker, "STREAMS_DATA_DIR": str(tmp_path), "CI": "1"}
        done = streams("worker", "--role", "assembler", env=env, timeout=120)
        assert done.returncode == 78, done.stderr
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "max.message.bytes" in lines[0] and "16000000" in lines[0], done.stderr


def test_a_dead_letter_topic_that_refuses_a_dead_letter_refuses_to_start_workers_and_sinks(tmp_path, bus: str) -> None:
    """A dead-letter topic made before dead letters had their headroom keeps its old limit (`streams topics`
    alters no topic that exists): a dead letter of a record at the record limit would be refused, neither
    delivered nor set aside. So a worker of any role, and a sink, refuse to start in one line (exit 78)."""
    from streams.ops.embedded import broker
    from streams.ops.topics import ensure_topics
    from streams.runtime.clients import TopicTooSmall, check_dead_letter_topic, dead_letter_limit

    with broker(tmp_path) as server:
        settings = Settings(broker=server.address, data_dir=tmp_path, partitions=1)
        ensure_topics(settings)
        check_dead_letter_topic(settings)  # the project's own topics take its largest dead letter
        if bus != "kafka":
            return  # noida-db has no per-topic max.message.bytes to lower
        max_message_bytes(settings.broker, settings.topics.dead_letter, str(settings.max_message_bytes))
        with pytest.raises(TopicTooSmall, match=rf"at least {dead_letter_limit(settings)}"):
            check_dead_letter_topic(settings)
        env = {**os.environ, "STREAMS_BROKER": settings.broker, "STREAMS_DATA_DIR": str(tmp_path), "CI": "1"}
        for command in (["worker", "--role", "chunker:window"], ["sink", "vectors"]):
            done = streams(*command, env=env, timeout=120)
            assert done.returncode == 78, (command, done.stderr)
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            assert len(lines) == 1 and settings.topics.dead_letter in lines[0], (command, done.stderr)
        max_message_bytes(settings.broker, settings.topics.dead_letter, str(dead_letter_limit(settings)))
        check_dead_letter_topic(settings)


def edge_page(limit: int) -> tuple[PageEvent, bytes]:
    """One page of letters at random (compression does not shrink it), Avro-encoded within `limit` bytes but
    so close to it that the document it makes, or the batch that carries it, passes the limit."""
    import random
    import string

    from streams.codec.avro import AvroCodec

    rng = random.Random(7)
    text = "".join(rng.choice(string.ascii_letters + "      ") for _ in range(limit - 100))
    (page,) = make_pages("edge-doc", [text])
    raw = AvroCodec().encode("page_event", page.model_dump(mode="json"))
    assert len(raw) <= limit
    return page, raw


@pytest.mark.kafka_only  # noida-db holds every topic to one limit: a page it takes makes a document within it
def test_a_document_whose_record_is_over_the_topic_limit_is_dead_lettered_and_the_rest_flows(
    tmp_path, bus: str
) -> None:
    """A document within STREAMS_MAX_DOCUMENT_BYTES can still make a record past the document topic's limit when
    the two are equal (the start-up check's own advice): the record adds a page map, timestamps and the batch's
    header. Sent, the broker refuses it on every retry, and the worker never gets past it. So it is
    dead-lettered with its page's bytes (a dead letter may pass the record limit), and the next document is
    chunked."""
    limit = 30_000
    _, raw = edge_page(limit)
    after = make_pages("after-doc", ["harbour ledger " * 40 + ".", "granite lantern " * 40 + "."])
    chunker = get_chunker("window")
    doc = assemble(after)
    expected = {r.chunk_id: r.checksum for r in build_records(doc, chunker, chunker.chunk(doc))}
    settings = pipeline_settings(tmp_path, max_document_bytes=limit, max_page_bytes=limit)
    with LocalPipeline(settings, ["window"]) as pipeline:
        live = pipeline.settings
        # The topic as a user's Kafka may have it; the assembler restarted reads its limit.
        wait_split(live, 1, timeout=120)
        pipeline.stop_worker("assembler")
        max_message_bytes(live.broker, live.topics.documents, str(limit))
        pipeline.start_worker("assembler")
        collector = Collector(live)
        try:
            publish_pages(live, [(b"edge-doc", raw), *after])
            result = collector.wait([("edge-doc", 0), ("after-doc", 0)], ["window"], timeout=180, drain=True)
            pipeline.check_workers()  # none exited
        finally:
            collector.close()
    (letter,) = result.dead
    assert (letter.reason_code, letter.doc_id, letter.stage) == ("document_too_large", "edge-doc", "assembly")
    assert letter.value == raw
    assert f"over the {limit} bytes" in letter.reason
    assert {r.chunk_id: r.checksum for r in result.records()} == expected


def test_a_page_the_broker_refuses_fails_the_publish_in_one_line(tmp_path, bus: str) -> None:
    """A record the broker refuses is no longer queued, so the producer's flush() counted it delivered:
    `streams publish` said it had published a page the topic never held."""
    from streams.ops.embedded import broker
    from streams.ops.processes import ServiceError
    from streams.ops.topics import ensure_topics

    limit = 30_000
    _, raw = edge_page(limit)  # with its batch's header, over the topic's limit
    with broker(tmp_path) as server:
        settings = Settings(broker=server.address, data_dir=tmp_path, max_message_bytes=limit, compression="none")
        ensure_topics(settings)
        with pytest.raises(ServiceError, match=r"the broker refused 1 page events: .*(?i:too large)"):
            publish_pages(settings, [(b"edge-doc", raw)])
        assert publish_pages(settings, make_pages("small-doc", ["a page that fits."])) == 1
        # Readers take the same small limit: librdkafka refused a consumer whose fetch.max.bytes was below
        # its own default message.max.bytes (1,000,000), so the collector, `tail`, the audit and the sinks
        # could not start with STREAMS_MAX_MESSAGE_BYTES under a megabyte.
        Collector(settings).close()


@pytest.mark.kafka_only  # noida-db has no per-topic max.message.bytes to refuse one topic's writes
def test_a_sink_commits_past_no_record_whose_dead_letter_or_indexed_event_the_broker_refused(
    tmp_path, bus: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A sink's producer flush() counts a refused record as gone, so as delivered: a bad record was committed
    past with its dead letter refused (lost, silently), and a document whose `documents.indexed` event was
    refused was marked reported. Here the dead-letter and indexed topics are made with limits below those
    records, as topics made before may be: nothing is committed past until the broker takes them."""
    import logging
    import threading

    from streams.codec.avro import AvroCodec
    from streams.core.events import DeadLetter, DocumentIndexed
    from streams.core.records import manifest_for
    from streams.ops.audit import read_topic
    from streams.ops.embedded import broker
    from streams.ops.topics import ensure_topics
    from streams.runtime.clients import client_config, dead_letter_limit, producer
    from streams.sinks.lance_target import LanceTarget
    from streams.sinks.runner import SinkRunner
    from streams.sinks.vectors import VectorSink
    from tests.conftest import HashEmbedder

    caplog.set_level(logging.WARNING, logger="streams.sinks")
    garbage = b"\x00 not an avro chunk record " * 200
    doc = assemble(make_pages("sunk-doc", ["harbour ledger " * 40 + ".", "granite lantern " * 40 + "."]))
    chunker = get_chunker("window")
    records = build_records(doc, chunker, chunker.chunk(doc))
    manifest = manifest_for(records)

    def until(condition, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.2)

    def warned(text: str) -> bool:
        return any(text in r.getMessage() for r in caplog.records)

    with broker(tmp_path) as server:
        settings = Settings(
            broker=server.address, data_dir=tmp_path, partitions=1, sink_assignment="manual", compression="none"
        )
        topics = settings.topics
        ensure_topics(settings)
        max_message_bytes(server.address, topics.dead_letter, "2000")
        max_message_bytes(server.address, topics.indexed, "64")
        codec = AvroCodec(settings.schema_registry_url)
        out = producer(settings)
        out.produce(topics.chunks, key=b"bad", value=garbage)
        for record in records:
            value = codec.encode("chunk_record", record.model_dump(), topics.chunks)
            out.produce(topics.chunks, key=record.chunk_id.encode(), value=value)
        out.produce(
            topics.manifests,
            key=manifest.key.encode(),
            value=codec.encode("document_manifest", manifest.model_dump(), topics.manifests),
        )
        assert out.flush(30) == 0
        target = LanceTarget(tmp_path / "lance")
        sink = VectorSink(target, tmp_path / "state.sqlite", embedder=HashEmbedder())
        runner = SinkRunner(settings, sink, recheck_s=0.3, max_backoff_s=1.0)
        reader = Consumer({**client_config(settings), "group.id": runner.group, "enable.auto.commit": False})

        def committed(topic: str) -> int:
            [tp] = reader.committed([TopicPartition(topic, 0)], timeout=10)
            return tp.offset

        def letters() -> list[DeadLetter]:
            found = read_topic(settings, topics.dead_letter)
            return [DeadLetter(**codec.decode("dead_letter", m.value())) for m in found]

        def events() -> list[DocumentIndexed]:
            found = read_topic(settings, topics.indexed)
            return [DocumentIndexed(**codec.decode("document_indexed", m.value())) for m in found]

        stop = threading.Event()
        thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
        thread.start()
        try:
            # The dead letter refused: sent again and again, and neither the store nor the offsets move on.
            until(lambda: runner.progress.retries >= 2, "the refused dead letter to be sent again")
            assert warned("the broker refused 1 dead letters")
            assert letters() == [] and committed(topics.chunks) < 0 and target.count() == 0
            max_message_bytes(server.address, topics.dead_letter, str(dead_letter_limit(settings)))
            until(lambda: committed(topics.chunks) == len(records) + 1, "the batch to be committed")
            [letter] = letters()
            assert (letter.reason_code, letter.value, letter.stage) == ("invalid_record", garbage, "sink:vectors")
            assert target.count() == len(records)
            # The indexed event refused: the document stays pending and its manifest uncommitted.
            until(lambda: warned("the broker refused 1 indexed events"), "the indexed event to be refused")
            time.sleep(1.0)  # a few rechecks; the commit stops at the manifest (offset 0), not past it
            assert events() == [] and committed(topics.manifests) < 1 and manifest.key in runner.tracker.pending
            max_message_bytes(server.address, topics.indexed, str(settings.max_message_bytes))
            until(lambda: committed(topics.manifests) == 1, "the manifest to be committed once reported")
            [event] = events()
            assert (event.doc_id, event.store, event.outcome, event.chunk_count) == (
                "sunk-doc",
                "vectors",
                "indexed",
                len(records),
            )
            assert runner.progress.indexed == 1 and runner.progress.dead == 1
        finally:
            stop.set()
            thread.join(30)
            reader.close()


@pytest.mark.kafka_only  # noida-db has no per-topic max.message.bytes to refuse one topic's writes
def test_a_repair_record_the_broker_refuses_fails_the_repair_in_one_line(tmp_path, bus: str) -> None:
    """`streams audit --repair` re-chunks a version no chunker took and publishes its chunks; one the broker
    refused (a chunk topic whose limit was lowered by hand) must fail the repair, not count as repaired."""
    from streams.ops.embedded import broker, document_store
    from streams.ops.topics import ensure_topics

    with broker(tmp_path) as service, document_store(tmp_path) as store:
        settings = Settings(
            broker=service.address, mongo_url=f"mongodb://{store.address}", data_dir=tmp_path, partitions=1
        )
        ensure_topics(settings)
        publish_pages(settings, make_pages("unchunked-doc", ["harbour ledger " * 80 + ".", "granite lantern " * 80]))
        max_message_bytes(settings.broker, settings.topics.chunks, "400")  # below any chunk record
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("STREAMS_") or k == "STREAMS_BROKER_KIND"},
            "STREAMS_DEPLOYMENT": settings.deployment,
            "STREAMS_BROKER": settings.broker,
            "STREAMS_MONGO_URL": settings.mongo_url,
            "STREAMS_DATA_DIR": str(tmp_path),
            "STREAMS_PARTITIONS": "1",
        }
        done = streams("audit", "--repair", "-s", "window", "--stores", "mongo", env=env, timeout=180)
        assert done.returncode == 1, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and re.search(r"the broker refused \d+ repair records: .*(?i:too large)", errors[0])
        assert "re-chunked" not in done.stdout + done.stderr  # no repair is reported
