"""STREAMS_COMPRESSION and STREAMS_PRODUCER_LINGER_MS reach every worker producer; the broker and both client
libraries agree on the codec."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from pydantic import ValidationError

from streams.agents.app import make_app
from streams.ops.pipeline import producer
from streams.runtime.clients import client_config
from streams.settings import Settings


def test_the_setting_reaches_the_faust_app_and_the_librdkafka_producers(tmp_path: Path) -> None:
    default = Settings(data_dir=tmp_path, broker="127.0.0.1:9")
    assert default.compression == "lz4"
    assert make_app("chunker-lz4", default).conf.producer_compression_type == "lz4"
    off = Settings(data_dir=tmp_path, broker="127.0.0.1:9", compression="none")
    assert make_app("chunker-none", off).conf.producer_compression_type is None
    with pytest.raises(ValidationError):
        Settings(compression="brotli")


def test_the_linger_reaches_the_aiokafka_producer_of_a_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    default = Settings(data_dir=tmp_path, broker="127.0.0.1:9")
    assert make_app("assembler-linger", default).producer.linger_ms == 20
    monkeypatch.setenv("STREAMS_PRODUCER_LINGER_MS", "0")
    eager = Settings(data_dir=tmp_path, broker="127.0.0.1:9")
    assert make_app("assembler-eager", eager).producer.linger_ms == 0
    with pytest.raises(ValidationError):
        Settings(producer_linger_ms=-1)


def _stored_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_records_round_trip_through_the_broker_and_lz4_shrinks_them(tmp_path: Path) -> None:
    """aiokafka (workers) writes with the codec, librdkafka (sinks) and aiokafka read the same bytes back."""
    plain = _round_trip(tmp_path / "none", "none")
    packed = _round_trip(tmp_path / "lz4", "lz4")
    assert plain - packed > 100_000, (plain, packed)  # 124 KB of repeated prose shrinks to almost nothing


def _round_trip(tmp_path: Path, codec: str) -> int:
    """Bytes the broker stores after writing and reading back the same records with `codec`."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    from streams.ops.embedded import broker
    from streams.ops.topics import ensure_topics

    paragraph = "The harbour office keeps its tide tables on the second floor. " * 40
    values = [paragraph.encode() * 50, b"short", "naïve café — ünïcode".encode()]
    server = broker(tmp_path / "broker").start()
    try:
        settings = Settings(data_dir=tmp_path, broker=server.address, compression=codec)
        ensure_topics(settings)
        topic = settings.topics.documents
        app = make_app("chunker-codec", settings)

        async def write_then_read() -> list[bytes]:
            out = AIOKafkaProducer(
                bootstrap_servers=server.address,
                compression_type=app.conf.producer_compression_type,
                max_request_size=settings.max_message_bytes,
            )
            await out.start()
            for value in values:
                await out.send_and_wait(topic, value, key=b"doc", partition=0)
            await out.stop()
            reader = AIOKafkaConsumer(topic, bootstrap_servers=server.address, auto_offset_reset="earliest")
            await reader.start()
            got: list[bytes] = []
            while len(got) < len(values):
                for records in (await reader.getmany(timeout_ms=2000)).values():
                    got.extend(r.value for r in records)
            await reader.stop()
            return got

        assert asyncio.run(write_then_read()) == values
        librdkafka = producer(settings)  # the page publisher uses the same codec
        librdkafka.produce(topic, b"from librdkafka", key=b"doc", partition=0)
        assert librdkafka.flush(10) == 0
        reader = Consumer({**client_config(settings), "group.id": "codec-check", "auto.offset.reset": "earliest"})
        reader.subscribe([topic])
        got: list[bytes] = []
        for _ in range(40):
            message = reader.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
            if len(got) == len(values) + 1:
                break
        reader.close()
        assert got == [*values, b"from librdkafka"]
    finally:
        server.stop()
    return _stored_bytes(tmp_path / "broker")
