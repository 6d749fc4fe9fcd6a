"""Consuming with librdkafka without spinning when there is nothing to read.

A Kafka broker holds an empty fetch for the consumer's `fetch.wait.max.ms`; noida-db, the embedded broker,
answers it at once, so librdkafka's fetcher asks again in a tight loop and an idle sink (and the broker
answering it) burnt CPU doing nothing (figures: docs/benchmarks.md, Idle). librdkafka has no
setting that backs off on an empty fetch, so `QuietConsumer` does it from the outside: a partition that has
caught up with its high watermark is paused, and while partitions are paused one ListOffsets request for
all of them (`offsets_for_times` at "latest") every probe interval says which have new records; only those
are resumed. The interval grows from `probe_min_s` to `probe_max_s` while nothing arrives, so a busy stream
is read at once and an idle one costs a request every half second. Against Kafka it changes nothing but
that request.

The aiokafka side (faust workers) has its own correction in `streams.agents.transport` (point 8).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

LATEST = -1  # ListOffsets' timestamp for "the offset the next record will get"
HELD = 1 << 62  # the position recorded for a partition `hold` paused: nothing is ever past it


def _moved(end: int, position: int) -> bool:
    """Records past the position, or an end offset below it (a broker that lost records it had)."""
    return end > position or (end < position and position != HELD)


class QuietConsumer:
    """`consume` and `poll` of a confluent-kafka Consumer (assigned or subscribed) that pause while caught up."""

    def __init__(
        self,
        consumer: Consumer,
        window_s: float = 0.05,
        probe_min_s: float = 0.05,
        probe_max_s: float = 0.5,
    ) -> None:
        self.consumer = consumer
        self.window_s, self.probe_min_s, self.probe_max_s = window_s, probe_min_s, probe_max_s
        self._paused: dict[tuple[str, int], int] = {}  # partition -> its position (next offset) when paused
        self._reseek: dict[tuple[str, int], int] = {}  # resumed partitions whose wake-up seek has not taken yet
        self._starts: dict[tuple[str, int], int] = {}  # where assign() or our last seek put each partition
        # The end a probe saw when it resumed a partition, and until when to trust it (a broker that lost
        # records may never reach it again: librdkafka resets the position and the partition is judged anew)
        self._ends: dict[tuple[str, int], tuple[int, float]] = {}
        self._assigned: frozenset[tuple[str, int]] = frozenset()
        self._probe_s = probe_min_s
        self._next_probe = 0.0
        self.probes = 0  # ListOffsets requests sent, for tests and curiosity

    def __getattr__(self, name: str) -> Any:
        return getattr(self.consumer, name)

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.consumer.assign(partitions)
        self._starts = {(tp.topic, tp.partition): tp.offset for tp in partitions if tp.offset >= 0}

    def poll(self, timeout: float) -> Message | None:
        messages = self.consume(1, timeout)
        return messages[0] if messages else None

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        """Up to `num_messages` messages, returning as soon as any arrive or `timeout` passes."""
        deadline = time.monotonic() + timeout
        while True:
            self._track_assignment()
            for key, position in list(self._reseek.items()):
                if key in self._paused or key not in self._assigned:
                    self._reseek.pop(key)
                else:
                    self._seek(key, position)
            active = [tp for tp in self._assigned if tp not in self._paused]
            remaining = deadline - time.monotonic()
            if active:
                messages = self._take(num_messages, max(0.0, min(remaining, self.window_s)))
                if messages:
                    self._probe_s = self.probe_min_s
                    return messages
                self._pause_caught_up(active)
            elif time.monotonic() >= self._next_probe:
                self._probe()
                continue
            else:
                # Sleeps inside librdkafka, which serves rebalance callbacks meanwhile.
                wait = max(0.0, min(remaining, self._next_probe - time.monotonic()))
                messages = self._take(num_messages, wait)
                if messages:
                    return messages
            if time.monotonic() >= deadline:
                return []

    def _seek(self, key: tuple[str, int], position: int) -> None:
        """A seek wakes librdkafka's fetcher at once; a bare resume waited up to a second for it. Right
        after a resume the partition may not be fetchable yet and the seek fails: it is tried again at
        the next `consume` until it takes (or the partition is paused again)."""
        # After a seek librdkafka reports no position until it delivers a message; without this, a
        # partition caught up right after one was judged from where assign() put it, and a probe later
        # "resumed" it there: everything since was read again.
        self._starts[key] = position
        try:
            self.consumer.seek(TopicPartition(*key, position))
            self._reseek.pop(key, None)
        except KafkaException:
            self._reseek[key] = position

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Stop fetching while the caller works on what it consumed, then go on from where it stopped.

        librdkafka fetches ahead while the application is busy; once it holds the partition's end, every
        further fetch comes back empty at once from noida-db, so a sink embedding a batch for seconds kept
        the broker answering a fetch loop the whole time (figures: docs/benchmarks.md, The demo). The
        seek on the way out both wakes the fetcher and drops whatever was fetched ahead, which is fetched
        again from the position.
        """
        self._track_assignment()
        held = [key for key in self._assigned if key not in self._paused]
        if held:
            self.consumer.pause([TopicPartition(t, p) for t, p in held])
        try:
            yield
        finally:
            self._track_assignment()  # a rebalance meanwhile: only what is still ours is resumed
            held = [key for key in held if key in self._assigned and key not in self._paused]
            if held:
                positions = self._positions(held)
                self.consumer.resume([TopicPartition(t, p) for t, p in held])
                for key in held:
                    if key in positions:
                        self._seek(key, positions[key])

    def hold(self) -> None:
        """Stop fetching every assigned partition until `release` (a benchmark keeping its CPU to itself)."""
        self._track_assignment()
        self.consumer.pause([TopicPartition(t, p) for t, p in self._assigned])
        self._paused.update({tp: HELD for tp in self._assigned})  # no probe ever finds these grown

    def release(self) -> None:
        self.consumer.resume([TopicPartition(t, p) for t, p in self._assigned])
        self._paused.clear()

    def _take(self, num_messages: int, wait: float) -> list[Message]:
        messages = self._fetched(num_messages, wait)
        for message in messages:  # fetching again: a late seek would now rewind and duplicate
            self._reseek.pop((message.topic(), message.partition()), None)
        return messages

    def _fetched(self, num_messages: int, wait: float) -> list[Message]:
        messages = self.consumer.consume(num_messages, 0)
        if messages or wait <= 0:
            return messages
        first = self.consumer.poll(wait)
        if first is None:
            return []
        return [first, *self.consumer.consume(num_messages - 1, 0)] if num_messages > 1 else [first]

    def _track_assignment(self) -> None:
        assigned = frozenset((tp.topic, tp.partition) for tp in self.consumer.assignment())
        if assigned != self._assigned:  # a rebalance or a new assign(): judge every partition afresh
            self._assigned = assigned
            self._paused.clear()
            self._ends.clear()

    def _positions(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The next offset each partition will deliver: librdkafka's application position once a message
        was consumed, else where assign() or the group's commit put it; absent when nobody can say."""
        found: dict[tuple[str, int], int] = {}
        unknown: list[TopicPartition] = []
        for tp in self.consumer.position([TopicPartition(t, p) for t, p in keys]):
            key = (tp.topic, tp.partition)
            if tp.offset >= 0:
                found[key] = tp.offset
            elif key in self._starts:
                found[key] = self._starts[key]
            else:
                unknown.append(TopicPartition(tp.topic, tp.partition))
        if unknown:
            try:
                for tp in self.consumer.committed(unknown, timeout=5):
                    if tp.offset >= 0:
                        found[(tp.topic, tp.partition)] = tp.offset
            except KafkaException:
                pass
        return found

    def _pause_caught_up(self, active: list[tuple[str, int]]) -> None:
        """Pause the partitions whose position has reached their high watermark.

        Only a partition that looks caught up is paused, and it is judged again after the pause: a fetch
        answered between the empty consume and the pause has its records dropped by the pause and fetched
        again from the position on resume, and the position checked after the pause is below the high
        watermark it brought, so the partition is resumed at once. A partition known to be behind is never
        paused: a pause cancels the fetch in flight, so under load, with fetches slower than the window,
        records waited for a lucky fetch, for seconds or for ever.
        """
        behind, _ = self._judge(active)
        looks_caught_up = [key for key in active if key not in behind]
        if not looks_caught_up:
            return
        self.consumer.pause([TopicPartition(t, p) for t, p in looks_caught_up])
        behind, caught_up = self._judge(looks_caught_up)
        if behind:
            self.consumer.resume([TopicPartition(t, p) for t, p in behind])
        if caught_up:
            self._paused.update(caught_up)
            self._next_probe = time.monotonic() + self._probe_s

    def _judge(self, keys: list[tuple[str, int]]) -> tuple[list[tuple[str, int]], dict[tuple[str, int], int]]:
        """The partitions still behind, and those caught up with the position each has reached.

        A partition a probe resumed is behind until it reaches the end the probe saw: the cached watermark
        is the last fetch's, from before the pause, so by it the partition looked caught up already.
        """
        positions = self._positions(keys)
        now = time.monotonic()
        behind: list[tuple[str, int]] = []
        caught_up: dict[tuple[str, int], int] = {}
        for key in keys:
            try:
                low, high = self.consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
            except KafkaException:
                low = high = None
            # A partition with nothing in it has one possible position, whatever anyone committed.
            position = positions.get(key, high if high is not None and low == high else None)
            end, trusted_until = self._ends.get(key, (-1, 0.0))
            if position is not None and (position >= end or now > trusted_until):
                self._ends.pop(key, None)  # reached, or a broker that lost records never brings it back
            elif position is not None:
                high = max(high if high is not None else -1, end)
            if high is None or high < 0 or position is None or position < high:
                behind.append(key)
            else:
                caught_up[key] = position
        return behind, caught_up

    def _probe(self) -> None:
        paused = list(self._paused)
        self.probes += 1
        try:
            latest = self.consumer.offsets_for_times([TopicPartition(t, p, LATEST) for t, p in paused], timeout=5)
            grown = [
                (tp.topic, tp.partition)
                for tp in latest
                # moved either way: grown, or shrunk because a broker lost acknowledged records and came back
                # (librdkafka then resets an out-of-range position; staying paused would wait forever)
                if tp.error is not None or tp.offset < 0 or _moved(tp.offset, self._paused[(tp.topic, tp.partition)])
            ]
            trusted_until = time.monotonic() + 10 * self.probe_max_s
            for tp in latest:
                if tp.error is None and tp.offset > self._paused[(tp.topic, tp.partition)]:
                    self._ends[(tp.topic, tp.partition)] = (tp.offset, trusted_until)
        except KafkaException:  # the broker is away: let librdkafka fetch and reconnect as it would
            grown = paused
        if grown:
            self.consumer.resume([TopicPartition(t, p) for t, p in grown])
            for topic, partition in grown:
                # A seek wakes librdkafka's fetcher at once; a bare resume waited up to a second for it.
                position = self._paused.pop((topic, partition))
                self._seek((topic, partition), position)
            self._probe_s = self.probe_min_s
        else:
            self._probe_s = min(self._probe_s * 2, self.probe_max_s)
        self._next_probe = time.monotonic() + self._probe_s


class PlainConsumer:
    """librdkafka's consumer as released, behind `QuietConsumer`'s interface: for a broker that holds an
    empty fetch for `fetch.wait.max.ms` itself (Apache Kafka), where pausing and probing would only add
    requests. `busy` does nothing; `hold` and `release` pause and resume the assignment."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.consumer, name)

    @contextmanager
    def busy(self) -> Iterator[None]:
        yield

    def hold(self) -> None:
        self.consumer.pause(self.consumer.assignment())

    def release(self) -> None:
        self.consumer.resume(self.consumer.assignment())


def quiet_consumer(consumer: Consumer, broker_kind: str, **options: float) -> QuietConsumer | PlainConsumer:
    """The consumer a broker of `broker_kind` needs: noida-db answers empty fetches at once (QuietConsumer
    backs off for it); Kafka holds them (the consumer as released)."""
    return QuietConsumer(consumer, **options) if broker_kind == "noida" else PlainConsumer(consumer)
