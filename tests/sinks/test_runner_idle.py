"""The sink's idle hold: after an empty poll its partitions are paused for a moment (librdkafka would
otherwise re-fetch in a tight loop against the embedded broker, 37% of a core idle), and resumed without
losing what arrived meanwhile."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from confluent_kafka import Producer

from streams.codec.avro import AvroCodec
from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.events import ChunkRecord, ChunkStatus
from streams.core.records import build_records
from streams.ops.embedded import broker
from streams.ops.topics import client_config, ensure_topics
from streams.settings import Settings
from streams.sinks.runner import IDLE_HOLD_S, SinkRunner
from tests.conftest import make_pages

pytestmark = pytest.mark.integration


class MemorySink:
    name = "memory"

    def __init__(self) -> None:
        self.chunks: dict[str, ChunkRecord] = {}

    def write_chunks(self, records: Sequence[ChunkRecord]) -> int:
        self.chunks.update({r.chunk_id: r for r in records})
        return len(records)

    def apply_status(self, statuses: Sequence[ChunkStatus]) -> int:
        return 0

    def close(self) -> None:
        pass


def test_chunks_arriving_during_the_idle_hold_are_stored(tmp_path: Path) -> None:
    server = broker(tmp_path).start()
    try:
        settings = Settings(data_dir=tmp_path, broker=server.address, sink_assignment="manual")
        ensure_topics(settings)
        sink = MemorySink()
        runner = SinkRunner(settings, sink)
        stop = threading.Event()
        deadline = time.monotonic() + 30
        while not runner.consumer.assignment() and time.monotonic() < deadline:
            runner.step(stop)
        started = time.monotonic()
        assert runner.step(stop) == 0  # nothing there: polled, then held
        assert time.monotonic() - started >= IDLE_HOLD_S

        doc = assemble(make_pages("held", ["A paragraph that becomes one chunk. " * 20]))
        chunker = get_chunker("window")
        records = build_records(doc, chunker, chunker.chunk(doc))
        codec = AvroCodec(None)
        producer = Producer(client_config(settings))

        def publish_during_hold() -> None:
            time.sleep(IDLE_HOLD_S / 3)
            for record in records:
                value = codec.encode("chunk_record", record.model_dump(), settings.topics.chunks)
                producer.produce(settings.topics.chunks, key=record.chunk_id.encode(), value=value)
            producer.flush(10)

        publisher = threading.Thread(target=publish_during_hold)
        publisher.start()
        while not sink.chunks and time.monotonic() < deadline:
            runner.step(stop)  # the first of these holds while the records are published
        publisher.join()
        runner.close()
        assert set(sink.chunks) == {r.chunk_id for r in records}
    finally:
        server.stop()
