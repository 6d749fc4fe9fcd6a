"""Replay: move a strategy's consumer group back on the documents topic so it re-chunks.

Kafka only lets a group's offsets be moved while the group has no members, so the strategy's workers
are stopped first (`streams up` does it for you; in a cluster, scale the deployment to zero).
"""

from __future__ import annotations

import time
from datetime import datetime

from confluent_kafka import Consumer, KafkaException, TopicPartition

from streams.runtime.clients import asked_again, client_config, group_id
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


def _watermarks(consumer: Consumer, topic: str, partition: int) -> tuple[int, int]:
    """One partition's low and high watermark, asked again while its leader is still moving."""
    at = TopicPartition(topic, partition)
    return asked_again(lambda left: consumer.get_watermark_offsets(at, timeout=left), 10)


def _commit_until_accepted(
    consumer: Consumer, offsets: list[TopicPartition], strategy: str, timeout_s: float
) -> dict[int, int]:
    """The broker refuses per partition while the stopped workers still count as members; retry until
    it accepts, never report a reset that did not happen."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            result = consumer.commit(offsets=offsets, asynchronous=False) or offsets
            failed = [tp for tp in result if tp.error is not None]
        except KafkaException as exc:
            failed, result = [exc], []
        if not failed:
            return {tp.partition: tp.offset for tp in result}
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the broker refused to move the group of {strategy!r}: {failed[0]}; are its workers stopped?"
            )
        time.sleep(1.0)


def reset_offsets(
    settings: Settings, strategy: str, start: str = "earliest", timeout_s: float = 120.0
) -> dict[int, int]:
    """Commit the group's new positions; returns partition -> offset."""
    topic = settings.topics.documents
    consumer = Consumer(
        {**client_config(settings), "group.id": group_id(settings, f"chunker-{strategy}"), "enable.auto.commit": False}
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        partitions = sorted(metadata.partitions)
        when = parse_from(start)
        if when is None:
            offsets = [TopicPartition(topic, p, _watermarks(consumer, topic, p)[0]) for p in partitions]
        else:
            wanted = [TopicPartition(topic, p, when) for p in partitions]
            found = asked_again(lambda left: consumer.offsets_for_times(wanted, timeout=left), 10)
            offsets = []
            for tp in found:
                if tp.offset < 0:  # nothing at or after that time: start at the end
                    tp.offset = _watermarks(consumer, topic, tp.partition)[1]
                offsets.append(tp)
        return _commit_until_accepted(consumer, offsets, strategy, timeout_s)
    finally:
        consumer.close()
