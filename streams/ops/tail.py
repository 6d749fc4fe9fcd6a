"""Read a topic up to its end: the one reader of the audit, the console and `streams tail`, which also decodes
whatever is on it (Avro in either framing, or JSON)."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing
from typing import Any

from confluent_kafka import Consumer, Message, TopicPartition

from streams.codec.avro import AvroCodec, AvroDecodeError, is_avro
from streams.core.sealed import Shredded, is_sealed
from streams.runtime.clients import asked_again, client_config, fetch_config, group_id, reached_ends
from streams.runtime.keyring import codec_for
from streams.settings import Settings


def subject_for(settings: Settings, topic: str) -> str | None:
    t = settings.topics
    return {
        t.chunks: "chunk_record",
        t.documents: "assembled_document",
        t.dead_letter: "dead_letter",
        t.pages: "page_event",
    }.get(topic)


def decode_any(codec: AvroCodec, subject: str | None, value: bytes) -> dict[str, Any]:
    if is_sealed(value):  # a document key's record: opened when this deployment has its key
        try:
            if codec.unseal is None:
                codec.decode(subject or "chunk_record", value)  # says why it cannot be read here
            value = codec.unseal(value)  # type: ignore[misc]
        except Shredded as exc:
            return {"sealed": str(exc)}
    if value and is_avro(value):
        for candidate in [subject] if subject else ["chunk_record", "assembled_document", "dead_letter", "page_event"]:
            try:
                return codec.decode(candidate, value)
            except AvroDecodeError:
                continue
    try:
        data = json.loads(value)
        return data if isinstance(data, dict) else {"value": data}
    except (ValueError, TypeError):
        return {"undecodable": value[:200].decode("utf-8", "replace") if value else ""}


log = logging.getLogger("streams.tail")

READ_IDLE_S = 30.0  # a read of a topic gives up on a partition after this long without a record


def reader(settings: Settings) -> Consumer:
    """A consumer that reads by assignment and never commits: a read leaves no trace in any group."""
    return Consumer(
        {
            **client_config(settings),
            "group.id": group_id(settings, f"reader-{os.getpid()}-{time.monotonic_ns()}"),
            "enable.auto.commit": False,
            **fetch_config(settings),
        }
    )


def read_topic(
    settings: Settings,
    topic: str,
    since_ms: int | None = None,
    on_message: Callable[[], None] | None = None,
    starts: Mapping[int, int] | None = None,
    idle_s: float = READ_IDLE_S,
    must_exist: bool = False,
) -> Iterator[Message]:
    """Every record on `topic` up to the high watermarks taken at the start (from `since_ms` if given, or
    from the offset `starts` gives a partition: a reader that keeps its place between calls). A partition is
    done when the reader's position reaches its end: under exactly-once a topic ends in commit markers, which
    librdkafka steps over without returning anything, so the last record's offset never did (each read waited
    `idle_s` for nothing: `streams audit` and the console's refresh, 30 s a topic). A topic that does not exist
    reads as empty, or is refused with `must_exist`."""
    consumer = reader(settings)
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            if must_exist:
                raise ValueError(f"topic {topic!r} does not exist on {settings.broker}")
            return
        ends: dict[int, int] = {}
        assigned: list[TopicPartition] = []
        for p in sorted(metadata.partitions):
            tp = TopicPartition(topic, p)
            # A broker just (re)started answers NOT_LEADER_FOR_PARTITION a while: asked again, not raised.
            low, high = asked_again(lambda left, tp=tp: consumer.get_watermark_offsets(tp, timeout=left, cached=False))
            start = max(low, (starts or {}).get(p, low))
            if high > start:
                ends[p] = high
                assigned.append(TopicPartition(topic, p, start))
        if since_ms is not None and assigned:
            wanted = [TopicPartition(topic, tp.partition, since_ms) for tp in assigned]
            found = asked_again(lambda left: consumer.offsets_for_times(wanted, left))
            assigned = [tp for tp in found if 0 <= tp.offset < ends[tp.partition]]
            ends = {tp.partition: ends[tp.partition] for tp in assigned}
        consumer.assign(assigned)
        remaining = set(ends)
        idle = time.monotonic()
        while remaining and time.monotonic() - idle < idle_s:
            for message in consumer.consume(500, 0.5):
                if message.error():
                    continue
                idle = time.monotonic()
                if message.offset() + 1 >= ends.get(message.partition(), 0):
                    remaining.discard(message.partition())
                if on_message:
                    on_message()
                yield message
            remaining -= reached_ends(consumer, topic, ends, remaining)
        if remaining:
            log.warning(
                "%s: stopped reading partitions %s after %.0f s without a record, before their end offsets",
                topic,
                sorted(remaining),
                idle_s,
            )
    finally:
        consumer.close()


def tail_topic(settings: Settings, topic: str, idle_timeout: float = 5.0, limit: int = 0) -> Iterator[dict[str, Any]]:
    """The records on `topic` up to its end when the read began, decoded, stopping when idle for `idle_timeout`
    or after `limit` records: `streams tail` reads a topic as the audit does, commit markers and a restarted
    broker's answers included."""
    codec = codec_for(settings)
    subject = subject_for(settings, topic)
    with closing(read_topic(settings, topic, idle_s=idle_timeout, must_exist=True)) as messages:
        for count, message in enumerate(messages, 1):
            yield decode_any(codec, subject, message.value())
            if limit and count >= limit:
                return
