"""Consumer lag of one group: committed offset against the end offset, per partition.

A worker's or sink's metrics endpoint reports its own group's lag at scrape time; `streams lag`
(`streams.ops.lag`) reports every group's.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from streams.core.chunkers import STRATEGIES
from streams.runtime.clients import asked_again, client_config, committed_offsets, group_id
from streams.settings import Settings


def known_groups(settings: Settings, strategies: list[str] | None = None) -> dict[str, list[str]]:
    """group -> topics it consumes, for every role this project runs."""
    t = settings.topics
    groups = {group_id(settings, "assembler"): [t.pages]}
    for strategy in strategies or list(STRATEGIES):
        groups[group_id(settings, f"chunker-{strategy}")] = [t.documents]
    for sink in ("mongo", "vectors"):
        groups[group_id(settings, f"sink-{sink}")] = [t.chunks, t.status]
    return groups


@dataclass(frozen=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    committed: int  # -1 when the group never committed on this partition
    end: int
    lag: int


def group_lag(settings: Settings, group: str, topics: list[str], timeout: float = 10.0) -> list[PartitionLag]:
    """Committed offset against the end offset, per partition of `topics`, for one group.

    A partition without a committed offset counts from the log start, which is what a new consumer with
    `auto.offset.reset=earliest` will read.
    """
    # read_uncommitted: librdkafka's default read_committed asks for stable offsets only, and while a worker's
    # transaction holds uncommitted offsets for the group (one SIGKILLed between sending them and its commit)
    # the broker answers "unstable" until the transaction ends, up to its timeout: the lag is the committed
    # offsets either way.
    consumer = Consumer(
        {
            **client_config(settings),
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )
    try:
        wanted: list[TopicPartition] = []
        metadata = consumer.list_topics(timeout=timeout).topics
        for topic in topics:
            if topic in metadata:
                wanted += [TopicPartition(topic, p) for p in sorted(metadata[topic].partitions)]
        committed = committed_offsets(consumer, wanted, timeout=timeout) if wanted else []
        rows = []
        for tp in committed:
            at = TopicPartition(tp.topic, tp.partition)
            # A new partition's metadata can name a leader before that broker has taken it: asked again.
            low, high = asked_again(lambda left, at=at: consumer.get_watermark_offsets(at, timeout=left), timeout)
            position = tp.offset if tp.offset >= 0 else low
            committed_offset = tp.offset if tp.offset >= 0 else -1
            rows.append(PartitionLag(group, tp.topic, tp.partition, committed_offset, high, max(0, high - position)))
        return rows
    finally:
        consumer.close()
