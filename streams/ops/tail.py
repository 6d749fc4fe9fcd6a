"""Read a topic from the beginning and decode whatever is on it: Avro (either framing) or JSON."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from streams.codec.avro import AvroCodec, AvroDecodeError, is_avro
from streams.polling import quiet_consumer
from streams.runtime.clients import client_config, end_offsets, fetch_config, reached_ends
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


def tail_topic(settings: Settings, topic: str, idle_timeout: float = 5.0, limit: int = 0) -> Iterator[dict[str, Any]]:
    """All records currently on `topic`, in partition order, stopping when idle for `idle_timeout`."""
    codec = AvroCodec(settings.schema_registry_url)
    consumer = quiet_consumer(
        Consumer(
            {
                **client_config(settings),
                "group.id": f"streams-tail-{os.getpid()}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                **fetch_config(settings),
            }
        ),
        settings.broker_kind,
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise ValueError(f"topic {topic!r} does not exist on {settings.broker}")
        partitions = sorted(metadata.partitions)
        ends = end_offsets(consumer, topic, partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        remaining = {p for p, end in ends.items() if end > 0}
        subject = subject_for(settings, topic)
        count = 0
        idle_since = time.monotonic()
        while remaining and time.monotonic() - idle_since < idle_timeout:
            message = consumer.poll(0.2)
            if message is None or message.error():
                remaining -= reached_ends(consumer, topic, ends, remaining)  # past its last commit markers
                continue
            idle_since = time.monotonic()
            if message.offset() + 1 >= ends[message.partition()]:
                remaining.discard(message.partition())
            yield decode_any(codec, subject, message.value())
            count += 1
            if limit and count >= limit:
                return
        if remaining:
            log.warning(
                "%s: stopped after %.0f s without a record, before the end of partitions %s",
                topic,
                idle_timeout,
                sorted(remaining),
            )
    finally:
        consumer.close()
