"""The consumer loop of a sink: its own consumer group on the chunk and status topics, batched writes,
offsets committed only after the store has the batch, retries with backoff while the store is down."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from streams.codec.avro import AvroDecodeError
from streams.core.events import ChunkRecord, ChunkStatus, DeadLetter, DocumentManifest
from streams.core.sealed import Shredded
from streams.polling import quiet_consumer
from streams.runtime import metrics
from streams.runtime.clients import (
    DeliveryReports,
    client_config,
    client_id,
    committed_offsets,
    dead_letter_limit,
    fetch_config,
    group_id,
    producer,
)
from streams.runtime.keyring import codec_for
from streams.runtime.redrive import letter_fields, skips
from streams.settings import Settings, mask_url
from streams.sinks.base import ChunkSink
from streams.sinks.ledger import Tracker

log = logging.getLogger("streams.sinks")


@dataclass
class SinkProgress:
    chunks: int = 0
    statuses: int = 0
    batches: int = 0
    retries: int = 0
    dead: int = 0
    indexed: int = 0


class SinkRunner:
    def __init__(
        self,
        settings: Settings,
        sink: ChunkSink,
        batch_size: int = 256,
        max_backoff_s: float = 30.0,
        recheck_s: float = 2.0,
    ) -> None:
        self.settings = settings
        self.sink = sink
        self.batch_size = batch_size
        self.max_backoff_s = max_backoff_s
        self.codec = codec_for(settings)
        self.progress = SinkProgress()
        self.has_partitions = False  # what /readyz reports: set by the consuming thread (`step`)
        self.owned: frozenset[tuple[str, int]] = frozenset()
        self.tracker = Tracker(sink)
        self.purged: set[str] = set()  # documents whose chunks arrived sealed under a deleted key
        self.recheck_s = recheck_s
        self._next_recheck = 0.0
        self._committed: dict[tuple[str, int], int] = {}  # what this process last committed, per partition
        self.group = group_id(settings, f"sink-{sink.name}")
        self.consumer = quiet_consumer(
            Consumer(
                {
                    **client_config(settings),
                    "group.id": self.group,
                    "client.id": client_id(f"sink-{sink.name}"),
                    "session.timeout.ms": int(settings.session_timeout_s * 1000),
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    **fetch_config(settings),
                }
            ),
            settings.broker_kind,
        )
        topics = [settings.topics.chunks, settings.topics.status, settings.topics.manifests]
        if settings.sink_assignment == "manual":
            self._assign_all(topics)
        else:
            self.consumer.subscribe(topics)
        # Dead letters and `documents.indexed` events; a record it did not deliver is sent again, never
        # counted as sent (flush() alone counts a refused record as gone, so as delivered).
        self.reports = DeliveryReports()
        self.out = producer(settings, self.reports, max_bytes=dead_letter_limit(settings))

    def _assign_all(self, topics: list[str]) -> None:
        """One replica owns every partition and commits under the group id, without group membership.

        For single-replica sinks (the embedded default): a restarted sink resumes at once from the
        committed offsets instead of waiting for the broker to evict its killed predecessor.
        """
        metadata = self.consumer.list_topics(timeout=10).topics
        wanted = [TopicPartition(t, p) for t in topics if t in metadata for p in sorted(metadata[t].partitions)]
        committed = committed_offsets(self.consumer, wanted, timeout=10)
        self.consumer.assign(
            [
                TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING)
                for tp in committed
            ]
        )

    def _decode(self, messages: list) -> tuple[list[ChunkRecord], list[ChunkStatus], list[DeadLetter]]:
        records: list[ChunkRecord] = []
        statuses: list[ChunkStatus] = []
        dead: list[DeadLetter] = []
        for message in messages:
            value = message.value()
            if value is None:
                continue  # a compaction tombstone on the status topic
            if skips(message.headers(), self.stage):
                continue  # the other sink's dead letter, re-driven for that sink alone
            try:
                if message.topic() == self.settings.topics.chunks:
                    record = ChunkRecord(**self.codec.decode("chunk_record", value))
                    self.purged.discard(record.doc_id)  # published again since its purge
                    refused = self.sink.refusal(record)
                    if refused is not None:  # never storable here: dead-lettered, and the batch goes on
                        dead.append(self._dead_letter(message, refused[1], refused[0], record.doc_id))
                        continue
                    records.append(record)
                elif message.topic() == self.settings.topics.manifests:
                    manifest = DocumentManifest(**self.codec.decode("document_manifest", value))
                    if manifest.doc_id not in self.purged:
                        self.tracker.add(manifest, message.partition(), message.offset())
                else:
                    statuses.append(ChunkStatus(**self.codec.decode("chunk_status", value)))
            except Shredded as exc:  # a purged document's chunk (a backfill or replay reads them): nothing to store
                self.purged.add(exc.key_id)
                self.tracker.drop_documents({exc.key_id})
            except (AvroDecodeError, ValueError) as exc:
                dead.append(self._dead_letter(message, str(exc)))
        return records, statuses, dead

    @property
    def stage(self) -> str:
        return f"sink:{self.sink.name}"

    def _dead_letter(self, message, reason: str, code: str = "invalid_record", doc_id: str | None = None) -> DeadLetter:
        return DeadLetter(
            reason_code=code,
            doc_id=doc_id,
            **letter_fields(message.headers()),
            reason=reason,
            stage=self.stage,
            source_topic=message.topic(),
            source_partition=message.partition(),
            source_offset=message.offset(),
            key=message.key(),
            value=message.value(),
            timestamp_ms=int(time.time() * 1000),
        )

    def _send_dead(self, letters: list[DeadLetter], stop: threading.Event) -> bool:
        """Dead letters acknowledged before the batch's offsets are committed: one the broker refused (a
        dead-letter topic made with a smaller limit, say) is sent again with backoff, as a batch the store
        refuses is written again, so a bad record is never committed past without its dead letter."""
        topic = self.settings.topics.dead_letter
        records = [(letter.key, self.codec.encode("dead_letter", letter.model_dump(), topic)) for letter in letters]
        if not self._retry(lambda: self._deliver(topic, records, "dead letters", timeout=10), stop):
            return False
        self.progress.dead += len(letters)
        return True

    def _retry(self, attempt: Callable[[], str | None], stop: threading.Event) -> bool:
        """Run `attempt` until it reports no problem (None) or `stop` is set, backing off and counting each retry."""
        backoff = 0.5
        while not stop.is_set():
            problem = attempt()
            if problem is None:
                return True
            self.progress.retries += 1
            log.warning("sink %s: %s; retrying in %.1fs", self.sink.name, problem, backoff)
            stop.wait(backoff)
            backoff = min(backoff * 2, self.max_backoff_s)
        return False

    def _deliver(self, topic: str, records: list[tuple[bytes | None, bytes]], what: str, timeout: float) -> str | None:
        """Produce and flush; what went wrong in one line (refused, unacknowledged, or not even queued)."""
        try:
            for key, value in records:
                self.out.produce(topic, key=key, value=value)
        except (BufferError, KafkaException) as exc:
            self.reports.problem(self.out, what, timeout)  # what was queued goes out; it is sent again anyway
            return f"{what} not queued: {exc}"
        return self.reports.problem(self.out, what, timeout)

    def _write(self, records: list[ChunkRecord], statuses: list[ChunkStatus], stop: threading.Event) -> bool:
        def attempt() -> str | None:
            try:
                # Latest wins per chunk id within a batch; chunks first so flips find them.
                self.sink.write_chunks(list({r.chunk_id: r for r in records}.values()))
                self.sink.apply_status(statuses)
                return None
            except Exception as exc:  # the store is down or refusing: keep the batch, do not commit
                return f"write failed ({mask_url(str(exc))})"

        return self._retry(attempt, stop)

    def _report(self, keys: list[str] | None) -> None:
        """Publish `documents.indexed` for the pending manifests (`keys`, or all) now complete in the store."""
        try:
            events = self.tracker.check(keys)
        except Exception as exc:  # the store is away: the manifests stay pending, the timer asks again
            log.warning("sink %s: ledger check failed (%s)", self.sink.name, mask_url(str(exc)))
            return
        topic = self.settings.topics.indexed
        records = [(e.key.encode(), self.codec.encode("document_indexed", e.model_dump(), topic)) for e in events]
        # Not delivered (still queued, or refused): the manifests stay pending, the timer sends their events
        # again, and commits stop below them.
        if events and (problem := self._deliver(topic, records, "indexed events", timeout=30)):
            log.warning("sink %s: %s; rechecking later", self.sink.name, problem)
            return
        for event in events:
            metrics.INDEXED.labels(self.sink.name, event.outcome).inc()
        self.tracker.done(events)
        self.progress.indexed += len(events)
        metrics.LEDGER_PENDING.labels(self.sink.name).set(len(self.tracker.pending))

    def _commit_offsets(self, messages: list) -> list[TopicPartition]:
        """Past every message consumed, and past the commit markers consume() stepped over after the last of
        them (its position), except manifests: those stop at the oldest one still pending."""
        latest: dict[tuple[str, int], int] = {}
        for message in messages:
            key = (message.topic(), message.partition())
            latest[key] = max(latest.get(key, -1), message.offset() + 1)
        for tp in self.consumer.position([TopicPartition(t, p) for t, p in latest]):
            latest[(tp.topic, tp.partition)] = max(latest[(tp.topic, tp.partition)], tp.offset)
        return self._held_at_pending(latest)

    def _held_at_pending(self, offsets: dict[tuple[str, int], int]) -> list[TopicPartition]:
        low = self.tracker.low_water()
        manifests = self.settings.topics.manifests
        return [
            TopicPartition(topic, partition, min(offset, low.get(partition, offset)) if topic == manifests else offset)
            for (topic, partition), offset in offsets.items()
        ]

    def _commit(self, offsets: list[TopicPartition]) -> None:
        self.consumer.commit(offsets=offsets, asynchronous=False)
        self._committed.update({(tp.topic, tp.partition): tp.offset for tp in offsets})

    def _commit_when_idle(self, offsets: list[TopicPartition]) -> None:
        """A commit between batches; one that fails only warns: a later batch or idle step commits past it."""
        if not offsets:
            return
        try:
            self._commit(offsets)
        except KafkaException as exc:
            log.warning("sink %s: commit failed (%s)", self.sink.name, exc)

    def _past_markers(self) -> None:
        """Under exactly-once the chunk, status and manifest topics end in commit markers: offsets without a
        record, which consume() steps over without returning anything. A marker that arrives after the last
        batch was committed would keep the group's lag above 0 for good; with nothing returned since, the
        position is past markers alone, so it is committed."""
        if not self._committed:
            return
        positions = self.consumer.position([TopicPartition(t, p) for t, p in self._committed])
        ahead = {(tp.topic, tp.partition): tp.offset for tp in positions}
        moved = [tp for tp in self._held_at_pending(ahead) if tp.offset > self._committed[(tp.topic, tp.partition)]]
        self._commit_when_idle(moved)

    def _recheck(self) -> None:
        """While manifests are pending, ask the store again now and then (another replica may write)."""
        if not self.tracker.pending or time.monotonic() < self._next_recheck:
            return
        self._next_recheck = time.monotonic() + self.recheck_s
        owned = {tp.partition for tp in self.consumer.assignment() if tp.topic == self.settings.topics.manifests}
        self.tracker.forget({item.partition for item in self.tracker.pending.values()} - owned)
        before = self.tracker.low_water()
        self._report(None)
        after = self.tracker.low_water()
        moved = [
            TopicPartition(self.settings.topics.manifests, p, after.get(p, self._position(p)))
            for p in before
            if after.get(p) != before[p]
        ]
        self._commit_when_idle(moved)

    def _position(self, partition: int) -> int:
        [tp] = self.consumer.position([TopicPartition(self.settings.topics.manifests, partition)])
        return tp.offset

    def step(self, stop: threading.Event, timeout: float = 0.5) -> int:
        messages = [m for m in self.consumer.consume(self.batch_size, timeout) if not m.error()]
        # Read here, in the thread that owns the consumer: confluent-kafka lets one thread at a time into
        # a consumer, so a probe asking it from another thread waits for consume() to return.
        assigned = self.consumer.assignment()
        self.has_partitions = bool(assigned)
        self.owned = frozenset((tp.topic, tp.partition) for tp in assigned)  # the stall watchdog's
        if not messages:
            self._recheck()
            self._past_markers()
            return 0
        with self.consumer.busy():
            return self._handle(messages, stop)

    def _handle(self, messages: list, stop: threading.Event) -> int:
        records, statuses, dead = self._decode(messages)
        if dead and not self._send_dead(dead, stop):
            return 0
        if not self._write(records, statuses, stop):
            return 0
        manifests = self.settings.topics.manifests
        touched = {(r.doc_id, r.amendment_number, r.strategy, r.chunker_version) for r in records}
        arrived = [m.key().decode() for m in messages if m.topic() == manifests and m.key()]
        self._report([*arrived, *self.tracker.keys_for(touched)])
        try:
            self._commit(self._commit_offsets(messages))
        except KafkaException as exc:  # e.g. rebalanced while writing: the batch is redelivered, harmlessly
            log.warning("sink %s: commit failed (%s); the batch will be redelivered", self.sink.name, exc)
            return len(messages)
        now = time.time()
        role = f"sink-{self.sink.name}"
        for message in messages:
            metrics.RECORDS_IN.labels(role, message.topic()).inc()
            kind, stamp = message.timestamp()
            if kind and message.topic() == self.settings.topics.chunks and stamp > 0:
                metrics.LATENCY.labels("chunk_to_stored").observe(max(0.0, now - stamp / 1000))
        self.progress.chunks += len(records)
        self.progress.statuses += len(statuses)
        self.progress.batches += 1
        return len(messages)

    def run(self, stop: threading.Event, on_batch: Callable[[SinkProgress], None] | None = None) -> None:
        try:
            while not stop.is_set():
                if self.step(stop) and on_batch:
                    on_batch(self.progress)
        finally:
            self.close()

    def close(self) -> None:
        self.consumer.close()
        self.out.flush(5)
        self.sink.close()
