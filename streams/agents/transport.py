"""The faust Kafka transport with three corrections for at-least-once across rebalances.

During a rebalance faust drops the messages it had fetched but not yet processed (its stream skips them
while flow control is off, or when they belong to an older generation) and relies on fetching them
again from the committed offsets. Three things break that, each silently:

1. The stream *acks* a message it skips, so its offset is committed as if it had been processed. The
   consumer here refuses those acks: the message stays uncommitted and is fetched again.
2. aiokafka's `seek_to_committed` only seeks when the committed offset is above 0, so a partition without
   a commit (or committed at 0) keeps the fetch position of the previous assignment and the dropped
   messages are never fetched again. Here such a partition goes back to the beginning, which is what
   `auto_offset_reset=earliest` promises for a partition without a committed offset. Changelog
   partitions are left alone: faust's recovery positions them itself.
3. faust's fetcher discards records of a partition it does not consider active yet (paused while it
   rebalances) although aiokafka already fetched them and moved past them. For a changelog that is
   fatal: recovery sought it to 0, the records 0..n were fetched a moment before recovery resumed the
   partition and thrown away, and recovery then waits for them forever ("No event received for active
   tp ... since recovery start"). Here such records are not dropped: the partition is rewound to the
   first of them, unless something sought it elsewhere meanwhile.

All three happen whenever a rebalance comes before or between commits (a replica joining, a broker restart
that forgets the group). Redelivered messages are harmless: every output id is deterministic.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from aiokafka import TopicPartition
from faust.transport.drivers import aiokafka as driver
from faust.types import TP, Message

log = logging.getLogger("streams.agents")


class SeekingConsumerThread(driver.AIOKafkaConsumerThread):
    async def seek_to_committed(self) -> Mapping[TP, int]:
        return await self.call_thread(self._seek_to_committed)

    async def _seek_to_committed(self) -> Mapping[TP, int]:
        consumer = self._ensure_consumer()
        changelogs = self.app.tables.changelog_topics
        committed: dict[TP, int] = {}
        for tp in consumer.assignment():
            offset = await consumer.committed(tp)
            committed[tp] = offset
            if offset is not None and offset >= 0:
                consumer.seek(tp, offset)
            elif tp.topic not in changelogs:
                await consumer.seek_to_beginning(TopicPartition(tp.topic, tp.partition))
        return committed

    async def rewind(self, tp: TP, first: int, after: int) -> bool:
        return await self.call_thread(self._rewind, TopicPartition(tp.topic, tp.partition), first, after)

    async def _rewind(self, tp: TopicPartition, first: int, after: int) -> bool:
        consumer = self._ensure_consumer()
        if tp not in consumer.assignment() or await consumer.position(tp) != after:
            return False  # reassigned or sought meanwhile: that position wins
        consumer.seek(tp, first)
        return True


class SeekingConsumer(driver.Consumer):
    def _new_consumer_thread(self) -> driver.AIOKafkaConsumerThread:
        return SeekingConsumerThread(self, loop=self.loop, beacon=self.beacon)

    _thread: SeekingConsumerThread

    async def _wait_next_records(self, timeout: float) -> tuple[Any, Any]:
        records, active = await super()._wait_next_records(timeout)
        if not records or active is None:
            return records, active
        idle = {
            tp: batch
            for tp, batch in records.items()
            if batch and tp not in active and tp not in self._buffered_partitions
        }
        for tp, batch in idle.items():  # faust would discard these; fetch them again once tp is active
            if await self._thread.rewind(tp, batch[0].offset, batch[-1].offset + 1):
                log.warning("rewound %s-%s to %s: fetched while paused", tp.topic, tp.partition, batch[0].offset)
        return {tp: batch for tp, batch in records.items() if tp not in idle}, active

    def ack(self, message: Message) -> bool:
        # The same test faust's stream makes before it skips (and then acks) a message mid-rebalance.
        if not self.app.flow_control.is_active() or message.generation_id != self.app.consumer_generation_id:
            log.debug("not acking %s-%s@%s: skipped mid-rebalance", message.topic, message.partition, message.offset)
            return False
        return super().ack(message)


class Transport(driver.Transport):
    """Set as `app.transport` right after the app is created (before any topic is declared)."""

    Consumer = SeekingConsumer
