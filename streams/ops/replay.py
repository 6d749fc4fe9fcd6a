"""Replay: move a strategy's consumer group back on the documents topic so it re-chunks.

Kafka only lets a group's offsets be moved while the group has no members, so the strategy's workers
are stopped first (`streams up` does it for you; in a cluster, scale the deployment to zero).
"""

from __future__ import annotations

from datetime import datetime

from confluent_kafka import Consumer, TopicPartition

from streams.agents.app import group_id
from streams.ops.topics import client_config
from streams.settings import Settings


def parse_from(value: str) -> int | None:
    """'earliest' -> None (the log start), or an ISO-8601 time -> epoch milliseconds."""
    if value == "earliest":
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"--from must be 'earliest' or an ISO-8601 time, got {value!r}") from exc
    if moment.tzinfo is None:
        raise ValueError(f"--from needs a time zone (e.g. {value}Z or {value}+00:00)")
    return int(moment.timestamp() * 1000)


def reset_offsets(settings: Settings, strategy: str, start: str = "earliest") -> dict[int, int]:
    """Commit the group's new positions; returns partition -> offset."""
    topic = settings.topics.documents
    consumer = Consumer(
        {**client_config(settings), "group.id": group_id(f"chunker-{strategy}"), "enable.auto.commit": False}
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        partitions = sorted(metadata.partitions)
        when = parse_from(start)
        if when is None:
            offsets = [
                TopicPartition(topic, p, consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[0])
                for p in partitions
            ]
        else:
            found = consumer.offsets_for_times([TopicPartition(topic, p, when) for p in partitions], timeout=10)
            offsets = []
            for tp in found:
                if tp.offset < 0:  # nothing at or after that time: start at the end
                    tp.offset = consumer.get_watermark_offsets(TopicPartition(topic, tp.partition), timeout=10)[1]
                offsets.append(tp)
        committed = consumer.commit(offsets=offsets, asynchronous=False) or offsets
        return {tp.partition: tp.offset for tp in committed}
    finally:
        consumer.close()
