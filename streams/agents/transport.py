"""The faust Kafka transport, corrected for at-least-once across rebalances (points 1-7), for the
embedded broker's empty fetches (point 8) and for exactly-once transactions (points 11 and 13 to 20).

During a rebalance faust drops the messages it had fetched but not yet processed (its stream skips them
while flow control is off, or when they belong to an older generation) and relies on fetching them
again from the committed offsets. Seven things break that, each silently:

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
4. faust's commit rule skips a missing message at the head of the acked offsets: it treats the committed
   offset as the last one processed (it is the next one to read) and forgets a committed offset of 0. So
   when the first message after an assignment was skipped and the next one processed, the commit moved
   past the skipped one and it was lost (a replay from offset 0 lost a whole document this way). Here a
   commit only moves through a contiguous run that starts at the committed position, and a skipped
   message is fetched again: its partition is rewound to it once flow resumes. faust's Cython stream
   iterator skips such a message without telling the consumer at all, so the pure-Python iterator,
   which acks it (and so reaches the refusal here), is used instead.
5. When flow resumes at the end of a rebalance, faust empties the stream queues. Their messages were
   fetched (faust's read offset is past them, so a later fetch of them is dropped too) but never
   processed; a replay lost its second document this way, fetched just before the seek to the
   committed offsets. Here each of them is noted and its partition rewound to it, like a skipped one.
6. faust (and point 4's head rule) take a jump in the fetched offsets as records that do not exist and
   commit through them. That holds for compacted topics and transaction markers only; on the other
   topics offsets are dense, and a jump means records were fetched and lost on the way (seen after a
   broker restart: seven documents committed, never chunked). There the partition is rewound instead.
7. faust's fetch loop hands each message to the streams racing a flow suspension (`wait_first`), and
   marks it read whichever wins: a message whose hand-over a rebalance cut short is dropped without a
   trace (a page that was never assembled; the commit rule of point 4 held the commit before it, so
   nothing was lost for good, but nothing fetched it again until the next rebalance either). Here a
   cut-short hand-over marks the message for fetching again, and, as a net under all of the above, a
   commit that stays held before a message while later ones of its partition are processed (in-order
   processing makes that impossible unless the message was lost) rewinds the partition to it.

8. Not faust's, and for noida-db only: it answers a fetch at once when it has nothing, instead of holding it for the
   consumer's `fetch_max_wait_ms`, so an idle aiokafka consumer asks again in a tight loop: an idle worker
   kept a core busy, slowing everything else and making timers late (figures: docs/benchmarks.md,
   Pipeline).
   Here a fetch that brought nothing waits before the next one to that broker: `EMPTY_FETCH_BACKOFF_S`
   after the first empty answer, doubling with each further one up to `IDLE_FETCH_BACKOFF_S` (what a
   Kafka broker would hold it for), and back to nothing as soon as a fetch brings records. Installed only
   when `STREAMS_BROKER_KIND` is noida: Kafka holds empty fetches itself, and its workers run aiokafka's
   fetcher as released.

9. Not a correction: an idle worker's wake-ups. With nothing to fetch, what remained of an idle worker's
   CPU was faust's and mode's own timers, each a wake-up of one or both event loops: the monitor's
   sampler (every second; its rates feed faust's web view, which is off here), the consumer thread's two
   keep-alives (every second each, one of them crossing threads) and aiokafka's fetch loop, which looks
   for work every 0.2 s although every event it waits for has a future of its own. Here the sampler runs
   every `MONITOR_SAMPLE_S`, the keep-alives every `KEEPALIVE_S` and the fetch loop looks every
   `FETCH_LOOP_WAKE_S` (a seek, which sets no future, so waits up to that long for its fetch). Commits,
   heartbeats and the held fetches of point 8 are unchanged. (Figures: docs/benchmarks.md, Idle.)

10. Not faust's: a SyncGroup answer with an empty member assignment (no bytes at all: the leader's
   assignment left this member out, or noida-db answered before the leader's) made aiokafka's coordinator
   routine die decoding it; the member then never synced again, noida-db never expires it, and the whole
   group waited in a completing rebalance forever (seen once in a clean-clone run: the pipeline bench's
   two assemblers). A real Kafka broker sends such an answer too. Here it means "join again", as aiokafka
   already does when a join yields no assignment.

11. faust's, with `processing_guarantee="exactly_once"` (faust-streaming/faust#177): its transaction manager
   picks the transaction of a record it sends by the *destination* partition, and only for topics the app
   consumes. A record for any other topic (the assembler's documents, a chunker's chunks, manifests, dead
   letters) found no transaction and went out on the plain producer, outside every transaction, so "exactly
   once" was at-least-once; and a destination partition assigned to another replica named a transaction this
   one does not have (a send error). Here a record sent while an event is processed joins the transaction of
   that event's source partition, the one its offset is committed in, as Kafka Streams does. A record sent
   without an event (the assembler's tick timer) consumed no input to commit with it, so it goes on the plain
   producer: faust's choice put it in the transaction of its destination partition, whose producer a rebalance
   may have left between transactions, and the assembler crashed ("Can't send messages while not in
   transaction"), stalling the pipeline after any rebalance. A worker's input then carries the upstream
   transactions' commit markers (and read_committed hides aborted records): offsets that hold no message, which
   a commit passes as holes (points 18 and 20).

13. With `processing_guarantee="exactly_once"`, a table's changelog write (faust's buffer sends it without an
   event) went on the plain producer by point 11's rule, outside every transaction: a done mark could outlive
   the aborted document it describes. Here it joins the transaction of its partition, which is its input's.

14. faust's, on a topic with holes (compaction, or transaction markers under `exactly_once`): its fetch loop
   records a hole as a gap that also holds the record after it; processed, that record is then twice in the
   acked list, and faust's consecutive run ends at the duplicate, so each commit moved only up to the next
   hole. Under exactly-once the outputs of every event after it were committed in the transaction while its
   offset was not: a worker killed then did them again (docs/bus.md). Here a gap is the hole alone, as point
   18 notes it (since point 20, faust's own gap is not used).

15. faust's, with `processing_guarantee="exactly_once"`: a commit runs whenever the agent awaits, also halfway
   through an input's sends. Those sends then commit in the transaction without the input's offset, which
   is acked only when the agent asks for the next input, and a worker killed before the next commit sent
   them again. Here an agent's step holds a lock that the commit takes too, and acks its input before
   letting go (`DeliveryGate.step`, delivery.py). A step that raises halfway (a send that failed) leaves part
   of its outputs in the open transaction, and faust restarts the agent and acks or commits past the input
   anyway: every commit after it fails, the worker stops, and its successor aborts the transaction.

16. aiokafka's, with `processing_guarantee="exactly_once"`: a transaction's commit is sent without waiting for its
   records, and a record the broker refuses (a topic's max.message.bytes lowered under a running worker) fails
   only its own future: the transaction still commits, with the table writes and offsets that describe the
   refused record as sent. The Java client flushes before committing and aborts after any refusal. Here the
   commit flushes first and, after a refusal, fails instead of committing, as the at-least-once commit does
   (delivery.py): the worker stops, and its successor aborts the transaction.

17. faust's, with `processing_guarantee="exactly_once"`: table recovery took a changelog's highwater from
   aiokafka's `last_stable_offset`, which is only what the last fetch of that partition said. A partition just
   assigned, never fetched, has none: its highwater read -1, recovery restored nothing, and the worker went on
   with empty tables: a replica joining, or any worker restarted, forgot the half-assembled documents, done
   marks and amendments of its partitions while their inputs stayed committed (a rebalance left 20 documents
   of 40 never assembled). Here the highwater is asked of the broker, whose answer under read_committed is
   the last stable offset.

18. faust's and aiokafka's, on a topic with holes (transaction markers under `exactly_once`, compaction): a hole
   after the last record is never committed through. aiokafka steps over markers without returning anything,
   and faust only learns of a hole from the next record after it, so a drained worker's commit stayed before
   the markers that ended its input's last transactions: its consumer lag stayed at 1 or 2 a partition for good,
   and a user (or an autoscaler) watching lag could not tell a drained worker from a stuck one. Here what
   aiokafka stepped over while it handed records out (the span its position moved, less the records it
   returned) is noted as a hole, and a commit moves through holes that begin where it lands.

19. faust's, with `processing_guarantee="exactly_once"`: the same input could be processed twice in one
   transaction. faust's recovery resumes the stream partitions before it seeks them to their committed offsets,
   so a worker starting after a restart fetched and processed inputs, and the seek then reset faust's read
   offsets and fetched them again (and point 5 fetched again what the resumed flow cleared from the queues).
   Both outputs committed in the transaction: a chunker restarted after a failed send wrote a document's chunks
   twice (3 runs of 4 on Kafka). Here an input whose offset is already committed, or acked in the open
   transaction, is not processed again (`DeliveryGate.run`, delivery.py). A transaction that aborts takes its
   acks with it: faust forgets a partition's acks when it is revoked, before its transaction is stopped.

20. faust's, on a topic with holes (every topic under `exactly_once`, and compacted ones): faust's recovery
   resumes the stream partitions, then seeks them to their committed offsets while its fetch loop still hands
   out records fetched before the seek. The seek resets faust's read offset, so the next record handed out
   looked like a jump, and faust recorded the records between as a hole, which a commit passes: on Kafka a
   rebalance under exactly-once left 3 documents of 40 never assembled, every page committed. And where the
   records cleared from the queues (point 5) were not fetched again because the seek had moved the position
   first, the commit stopped before them for good (12 documents, the assembler's lag stuck at 34). Here a hole is
   only what the consumer thread stepped over (point 18), whatever faust's read offset says, and a commit held
   before any other offset while later ones are done fetches it again, as point 7 does on dense topics; point
   19 keeps what is fetched again from being processed twice.

Points 1-7 happen whenever a rebalance comes before or between commits (a replica joining, a broker restart
that forgets the group). Redelivered messages are harmless: every output id is deterministic.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, cast
from weakref import WeakKeyDictionary

from aiokafka import TopicPartition
from aiokafka.consumer.fetcher import Fetcher, FetchResult
from aiokafka.consumer.group_coordinator import CoordinatorGroupRebalance
from faust import current_event
from faust import streams as faust_streams
from faust.sensors import Monitor
from faust.transport.consumer import TransactionManager
from faust.transport.drivers import aiokafka as driver
from faust.types import TP, Message
from intervaltree import IntervalTree
from mode import Service

from streams.agents.delivery import DeliveryFailed, GatedProducer

log = logging.getLogger("streams.agents")

EMPTY_FETCH_BACKOFF_S = 0.05  # the first wait after an empty fetch (point 8)
IDLE_FETCH_BACKOFF_S = 0.5  # the longest: aiokafka's default fetch_max_wait_ms
LOST_RETRY_S = 10.0  # a held commit rewinds its partition again only after this long (point 7)
MONITOR_SAMPLE_S = 10.0  # faust's monitor sampler (point 9); faust: 1 s
KEEPALIVE_S = 10.0  # the consumer thread's keep-alives (point 9); mode: 1 s and 1.1 s
FETCH_LOOP_WAKE_S = 1.0  # aiokafka's fetch loop without an event (point 9); aiokafka: 0.2 s


def empty_fetch_backoff(empties: int) -> float:
    """The wait after the `empties`-th empty fetch in a row (point 8). The doubling stops at the longest
    wait: 2 ** empties itself, unbounded, could not be made a float after about 1,030 empty fetches (nine
    idle minutes), and the error ended aiokafka's fetch routine, so an idle worker never fetched again."""
    if empties <= 0:
        return 0.0
    wait = EMPTY_FETCH_BACKOFF_S
    for _ in range(empties - 1):
        if wait >= IDLE_FETCH_BACKOFF_S:
            break
        wait *= 2
    return min(wait, IDLE_FETCH_BACKOFF_S)


def hold_empty_fetches() -> None:
    """Patch aiokafka's fetcher once per process (point 8 above): only for noida-db, which answers an
    empty fetch at once; Kafka holds it for `fetch_max_wait_ms` itself (`make_app` decides)."""
    if getattr(Fetcher._proc_fetch_request, "holds_empty_fetches", False):
        return
    original = Fetcher._proc_fetch_request

    async def proc_fetch_request(self: Fetcher, assignment: Any, node_id: int, request: Any) -> bool:
        started = time.monotonic()
        fetched = await original(self, assignment, node_id, request)
        empties: dict[int, int] = self.__dict__.setdefault("_streams_empty_fetches", {})
        empties[node_id] = 0 if fetched else empties.get(node_id, 0) + 1
        backoff = empty_fetch_backoff(empties[node_id])
        rest = backoff - (time.monotonic() - started)
        if not fetched and rest > 0:
            try:
                await asyncio.sleep(rest)
            except asyncio.CancelledError:  # closing: aiokafka awaits its cancelled fetches, as the original
                return False
        return fetched

    proc_fetch_request.holds_empty_fetches = True  # type: ignore[attr-defined]
    proc_fetch_request.__wrapped__ = original  # type: ignore[attr-defined]
    Fetcher._proc_fetch_request = proc_fetch_request  # type: ignore[method-assign]


def _rejoin_on_empty_assignment() -> None:
    """Patch aiokafka's group join once per process (point 10 above)."""
    if getattr(CoordinatorGroupRebalance.perform_group_join, "rejoins_on_empty_assignment", False):
        return
    original = CoordinatorGroupRebalance.perform_group_join

    async def perform_group_join(self: CoordinatorGroupRebalance) -> Any:
        assignment = await perform_group_join.__wrapped__(self)  # type: ignore[attr-defined]
        if assignment is not None and not assignment[1]:
            log.warning("group %s: empty assignment from SyncGroup; joining again", self.group_id)
            return None  # aiokafka waits its retry backoff and joins again
        return assignment

    perform_group_join.rejoins_on_empty_assignment = True  # type: ignore[attr-defined]
    perform_group_join.__wrapped__ = original  # type: ignore[attr-defined]
    CoordinatorGroupRebalance.perform_group_join = perform_group_join  # type: ignore[method-assign]


#: Holes aiokafka stepped over in each assignment's partitions, noted by `_note_stepped_over` (point 18).
_STEPPED_OVER: WeakKeyDictionary[Any, list[tuple[TopicPartition, int, int]]] = WeakKeyDictionary()


def holes_between(start: int, end: int, offsets: list[int]) -> list[tuple[int, int]]:
    """The offsets of [start, end) that are not in `offsets` (ascending), as inclusive (first, last) runs."""
    holes: list[tuple[int, int]] = []
    expected = start
    for offset in offsets:
        if offset > expected:
            holes.append((expected, offset - 1))
        expected = max(expected, offset + 1)
    if end > expected:
        holes.append((expected, end - 1))
    return holes


def _note_stepped_over() -> None:
    """Patch aiokafka's hand-out of fetched records once per process (point 18 above). Handing records out
    moves a partition's position from where it was over them and over any markers or aborted records after
    or between them, in one synchronous step: the span less the records returned holds no record."""
    if getattr(FetchResult.getall, "notes_holes", False):
        return
    original = FetchResult.getall

    def getall(self: FetchResult, max_records: int | None = None) -> list[Any]:
        assignment = self._assignment
        state = assignment.state_value(self._topic_partition) if assignment.active else None
        start = state.position if state is not None and state.has_valid_position else None
        records: list[Any] = original(self, max_records)
        end = state.position if state is not None and state.has_valid_position else None
        # The usual hand-out covers exactly its records (offsets are unique and within the span): nothing to note.
        if start is not None and end is not None and end - start > len(records):
            holes = holes_between(start, end, [record.offset for record in records])
            if holes:
                noted = _STEPPED_OVER.setdefault(assignment, [])
                noted.extend((self._topic_partition, first, last) for first, last in holes)
        return records

    getall.notes_holes = True  # type: ignore[attr-defined]
    getall.__wrapped__ = original  # type: ignore[attr-defined]
    FetchResult.getall = getall  # type: ignore[method-assign]


class QuietMonitor(Monitor):
    """faust's monitor, sampling every `MONITOR_SAMPLE_S` (point 9); set as the app's `Monitor`."""

    @Service.task
    async def _sampler(self) -> None:
        prev_event_total, prev_message_total = self.events_total, self.messages_received_total
        async for _ in self.itertimer(MONITOR_SAMPLE_S, name="Monitor.sampler"):
            prev_event_total, prev_message_total = self._sample(prev_event_total, prev_message_total)


class SeekingConsumerThread(driver.AIOKafkaConsumerThread):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.holes: deque[tuple[TP, int, int]] = deque()  # point 18: filled in this thread, taken by the consumer

    async def _fetch_records(
        self,
        consumer: Any,
        active_partitions: Any,
        timeout: float | None = None,
        max_records: int | None = None,
    ) -> Any:
        """Point 18: the holes stepped over while these records were handed out travel with them."""
        try:
            return await super()._fetch_records(consumer, active_partitions, timeout=timeout, max_records=max_records)
        finally:
            subscription = consumer._subscription.subscription
            if subscription is not None:
                for tp, first, last in _STEPPED_OVER.pop(subscription.assignment, ()):
                    self.holes.append((TP(tp.topic, tp.partition), first, last))

    def _create_consumer(self, loop: asyncio.AbstractEventLoop) -> Any:
        consumer = super()._create_consumer(loop)
        consumer._consumer_timeout = FETCH_LOOP_WAKE_S  # the fetcher's wake-up, read when it starts (point 9)
        return consumer

    async def _keepalive2(self) -> None:
        """mode's keep-alive of the thread's loop, every `KEEPALIVE_S` (point 9), with its lateness check."""
        while not self.should_stop:
            await self.sleep(KEEPALIVE_S)
            if self.last_wakeup_at and time.monotonic() - self.last_wakeup_at > KEEPALIVE_S + 2.0:
                self.log.error("Thread keepalive is not responding...")
            await self._wakeup_timer_in_thread()

    @Service.task
    async def _thread_keepalive(self) -> None:
        async for _ in self.itertimer(KEEPALIVE_S, name=f"_thread_keepalive-{self.label}"):
            pass

    async def _highwaters(self, partitions: list[TP]) -> Mapping[TP, int]:
        """Point 17: the broker's end offsets, asked for. The consumer reads with read_committed under
        exactly-once, so the answer is then the last stable offset."""
        return cast(Mapping[TP, int], await self._ensure_consumer().end_offsets(partitions))

    async def seek_to_committed(self) -> Mapping[TP, int]:
        return await self.call_thread(self._seek_to_committed)

    async def _seek_to_committed(self) -> Mapping[TP, int]:
        consumer = self._ensure_consumer()
        changelogs = self.app.tables.changelog_topics
        committed: dict[TP, int] = {}
        starts: dict[TP, int] = {}
        for tp in consumer.assignment():
            offset = await consumer.committed(tp)
            committed[tp] = offset
            if offset is not None and offset >= 0:
                consumer.seek(tp, offset)
                starts[TP(tp.topic, tp.partition)] = offset
            elif tp.topic not in changelogs:
                await consumer.seek_to_beginning(TopicPartition(tp.topic, tp.partition))
                starts[TP(tp.topic, tp.partition)] = await consumer.position(tp)
        self.consumer.on_sought(starts)
        return committed

    async def rewind(self, tp: TP, first: int, after: int | None) -> bool:
        """Seek back to `first` if the position is still `after` (or, with None, anywhere past `first`)."""
        return await self.call_thread(self._rewind, TopicPartition(tp.topic, tp.partition), first, after)

    async def _rewind(self, tp: TopicPartition, first: int, after: int | None) -> bool:
        consumer = self._ensure_consumer()
        if tp not in consumer.assignment():
            return False
        position = await consumer.position(tp)
        if position <= first if after is None else position != after:
            return False  # sought meanwhile: that position wins
        consumer.seek(tp, first)
        return True


class SeekingConsumer(driver.Consumer):
    """faust's consumer with points 1-7: each point is its own method (or hook installed by one), so that
    `streams bench corrections` (`streams.bench.corrections.uncorrect`) can take any one of them away."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._start: dict[TP, int] = {}  # where each partition was sought to on assignment (faust drops 0)
        self._head: dict[TP, int] = {}  # the offset the next fetched record of a partition should have
        self._refetch: dict[TP, int] = {}  # lowest skipped offset per partition, to fetch again
        self._head_rewound: dict[TP, int] = {}
        self._held: dict[TP, tuple[int, float]] = {}  # commit held before a lost message: (offset, when rewound)
        self._catch_cut_short_hand_overs()
        self._refetch_cleared_queues()

    def _catch_cut_short_hand_overs(self) -> None:
        """Point 7: a hand-over a flow suspension cut short marks its message for fetching again."""
        hand_over = self.callback

        async def hand_over_or_refetch(message: Message) -> None:
            try:
                await hand_over(message)
            except asyncio.CancelledError:  # cut short by a flow suspension: faust marks it read anyway
                if self.app.topics.acks_enabled_for(message.topic):
                    self._mark_refetch(message.tp, message.offset)
                raise

        self.callback = hand_over_or_refetch

    def _refetch_cleared_queues(self) -> None:
        """Point 5: what resuming flow empties from the stream queues is fetched again."""
        flow = self.app.flow_control
        clear = flow.clear

        def clear_and_refetch() -> None:
            # Resuming flow empties the stream queues; what was in them was fetched but never processed.
            for queue in list(flow._queues):
                for item in list(getattr(queue, "_queue", ())):
                    message = getattr(item, "message", None)
                    if message is not None and self.app.topics.acks_enabled_for(message.topic):
                        self._mark_refetch(message.tp, message.offset)
            clear()

        flow.clear = clear_and_refetch  # type: ignore[method-assign]

    def _dense(self, topic: str) -> bool:
        """Offsets without holes: no compaction, no transaction markers."""
        return topic not in self.transport.sparse_topics and not self.app.in_transaction

    async def _add_gap(self, tp: TP, offset_from: int, offset_to: int) -> None:
        if not self._dense(tp.topic):
            # Points 14 and 20: faust's gap (from its read offset, which a seek resets while records fetched
            # before it are still handed out) may hold records. The holes are what the consumer thread stepped
            # over, noted by point 18 with the position they were stepped over from.
            return
        # faust's read offset may be the next offset rather than the last read one: one more is harmless.
        log.warning("%s-%s jumped to %s: fetching from %s again", tp.topic, tp.partition, offset_to, offset_from - 1)
        self._mark_refetch(tp, max(0, offset_from - 1))

    def _mark_refetch(self, tp: TP, offset: int) -> None:
        self._refetch[tp] = min(self._refetch.get(tp, offset), offset)

    def _new_consumer_thread(self) -> driver.AIOKafkaConsumerThread:
        return SeekingConsumerThread(self, loop=self.loop, beacon=self.beacon)

    _thread: SeekingConsumerThread

    def on_sought(self, starts: Mapping[TP, int]) -> None:
        """Every partition was just sought to its committed position: all after it is fetched again."""
        self._start.update(starts)
        self._head.update(starts)
        for tp in starts:
            self._refetch.pop(tp, None)

    def _base(self, tp: TP) -> int | None:
        """Where the partition's commit stands: faust's committed offset, or where it was sought (faust drops 0)."""
        base = self._committed_offset[tp]
        return self._start.get(tp) if base is None else base

    def _new_offset(self, tp: TP) -> int | None:
        base = self._base(tp)
        acked = self._acked[tp]
        if base is not None and acked:
            stale = [offset for offset in acked if offset < base]
            if stale:  # redelivered before the seek; committing them would move the commit backwards
                acked[:] = [offset for offset in acked if offset >= base]
                self._acked_index[tp].difference_update(stale)
            gaps: IntervalTree = self._gap[tp]
            # A hole at the head (a transaction's marker, an aborted or compacted record) is a noted gap (point
            # 18); any other offset there is a record not processed yet, or lost (point 20).
            if base not in self._acked_index[tp] and not gaps.overlaps(base):
                self._held_before(tp, base)  # not processed yet, or skipped: the commit waits for it
                return None
        return super()._new_offset(tp)

    def _filter_committable_offsets(self, tps: Any) -> dict[TP, int]:
        """Point 18: a commit moves on through the holes that begin where it lands, also with nothing new acked
        (the markers after a drained partition's last record)."""
        tps = list(tps)
        offsets: dict[TP, int] = super()._filter_committable_offsets(tps)
        for tp in tps:
            if self._dense(tp.topic):
                continue
            start = offsets.get(tp)
            if start is None and not self._acked[tp]:
                start = self._base(tp)
            if start is not None and (end := self._through_holes(tp, start)) > start and self._should_commit(tp, end):
                offsets[tp] = end
        return offsets

    def _through_holes(self, tp: TP, offset: int) -> int:
        """The first offset at or after `offset` that is not in a hole (point 18)."""
        gaps: IntervalTree = self._gap[tp]
        end = offset
        while covering := gaps.at(end):
            end = max(interval.end for interval in covering)
        if end > offset:
            gaps.chop(0, end)
        return end

    def _note_holes(self) -> None:
        """Point 18: the holes the consumer thread stepped over, as gaps of the partitions that have them."""
        holes = self._thread.holes
        while holes:
            tp, first, last = holes.popleft()
            if self._dense(tp.topic) or not self.app.topics.acks_enabled_for(tp.topic):
                continue
            base = self._committed_offset[tp]
            if base is not None:
                first = max(first, base)
            if first <= last:
                self._gap[tp].addi(first, last + 1)

    def _held_before(self, tp: TP, base: int) -> None:
        """Point 7's net: a commit held before `base` while later offsets are done means `base` was lost."""
        held, now = self._held.get(tp), time.monotonic()
        if self._acked[tp] and (held is None or held[0] != base or now - held[1] > LOST_RETRY_S):
            self._held[tp] = (base, now)
            log.warning("%s-%s: commit held before %s, later offsets done; fetching again", *tp, base)
            self._mark_refetch(tp, base)

    async def _rewind(self, tp: TP, first: int, after: int | None, why: str) -> bool:
        """Seek back (see `SeekingConsumerThread.rewind`) so that faust takes the re-fetched records."""
        if not await self._thread.rewind(tp, first, after):
            return False
        self._read_offset[tp] = first or None  # else faust drops the re-fetch as already read
        log.warning("rewound %s-%s to %s: %s", tp.topic, tp.partition, first, why)
        return True

    async def _wait_next_records(self, timeout: float) -> tuple[Any, Any]:
        if self._refetch and self.flow_active and self.app.flow_control.is_active():
            # Taken as a whole: the consumer thread's seek (on_sought) may drop entries meanwhile.
            pending, self._refetch = self._refetch, {}
            for tp, offset in pending.items():
                if await self._rewind(tp, offset, None, "dropped mid-rebalance"):
                    self._head[tp] = offset
        records, active = await super()._wait_next_records(timeout)
        self._note_holes()
        if not records or active is None:
            return records, active
        records = await self._keep_paused_batches(records, active)
        self._check_heads(records)
        return records, active

    async def _keep_paused_batches(self, records: dict[TP, Any], active: Any) -> dict[TP, Any]:
        """Point 3: batches of partitions not active yet are fetched again once they are, not discarded."""
        idle = {
            tp: batch
            for tp, batch in records.items()
            if batch and tp not in active and tp not in self._buffered_partitions
        }
        for tp, batch in idle.items():  # faust would discard these; fetch them again once tp is active
            await self._rewind(tp, batch[0].offset, batch[-1].offset + 1, "fetched while paused")
        return {tp: batch for tp, batch in records.items() if tp not in idle}

    def _check_heads(self, records: dict[TP, Any]) -> None:
        """Point 6: the first batch after a seek must start where it was sought; a jump is fetched again."""
        for tp, batch in records.items():
            expected = self._head.get(tp)
            if batch and expected is not None and batch[0].offset >= expected:
                del self._head[tp]
                if batch[0].offset <= expected:
                    continue
                if not self._dense(tp.topic):
                    continue  # compacted away or control records: point 18 noted them as holes
                if self._head_rewound.get(tp) != expected:
                    self._head_rewound[tp] = expected  # once: a second jump means retention deleted them
                    self._mark_refetch(tp, expected)
                else:  # jumped again: retention deleted them, nothing to process there
                    self._gap[tp].addi(expected, batch[0].offset)

    async def force_commit(self, topics: Any = None, start_new_transaction: bool = True) -> bool:
        """Point 15: under exactly-once, between two inputs' processing, never inside one (delivery.py)."""
        gate = getattr(self.transport, "delivery_gate", None)
        if gate is None or not gate.atomic:
            return await super().force_commit(topics, start_new_transaction=start_new_transaction)
        async with gate.lock:
            if gate.failed is not None:
                raise DeliveryFailed(f"an input failed halfway ({gate.failed!r}); its transaction is not committed")
            return await super().force_commit(topics, start_new_transaction=start_new_transaction)

    def already_processed(self, message: Message) -> bool:
        """Point 19: under exactly-once, an input whose outputs are committed, or in the open transaction."""
        if not self.app.in_transaction:
            return False
        tp, offset = message.tp, message.offset
        base = self._base(tp)
        return (base is not None and offset < base) or offset in self._acked_index.get(tp, ())

    def ack(self, message: Message) -> bool:
        if self.already_processed(message):  # point 19: faust's own ack, a no-op; never fetched again
            return super().ack(message)
        # The same test faust's stream makes before it skips (and then acks) a message mid-rebalance.
        if not self.app.flow_control.is_active() or message.generation_id != self.app.consumer_generation_id:
            log.debug("not acking %s-%s@%s: skipped mid-rebalance", message.topic, message.partition, message.offset)
            self._mark_refetch(message.tp, message.offset)
            return False
        return super().ack(message)


class SourceTransactionManager(TransactionManager):
    """Point 11: a record sent while an event is processed goes in the transaction of its source partition.
    Point 16: a transaction commits only once its records are delivered, and never with one the broker refused."""

    refused: BaseException | None = None  # the first record of a transaction the broker refused

    async def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp: float | None,
        headers: Any,
        *,
        transactional_id: str | None = None,
    ) -> Any:
        event = current_event()
        if event is not None:
            source = event.message.tp
            tid = self._transaction_of(source.topic, source.partition)
            if tid is not None:
                return self._watch(
                    await self.producer.send(topic, key, value, partition, timestamp, headers, transactional_id=tid)
                )
            return await super().send(topic, key, value, partition, timestamp, headers)
        if partition is not None and topic in self.app.tables.changelog_topics:
            # A table write (faust's buffer sends it without an event): in the transaction of its partition, which
            # is its input's, so the state commits or aborts with the outputs it describes (point 13).
            tid = self._transaction_of(topic, partition)
            if tid is not None:
                return self._watch(
                    await self.producer.send(topic, key, value, partition, timestamp, headers, transactional_id=tid)
                )
        # No event: nothing consumed to commit with it. faust's choice (the destination partition's transaction)
        # crashed the assembler's tick timer after a rebalance ("Can't send messages while not in transaction").
        return await self.producer.send(topic, key, value, partition, timestamp, headers)

    def _watch(self, delivery: Any) -> Any:
        """Note a transactional record's refusal, so that its transaction is never committed."""

        def delivered(future: asyncio.Future[Any]) -> None:
            if self.refused is None and not future.cancelled() and future.exception() is not None:
                self.refused = future.exception()

        if isinstance(delivery, asyncio.Future):
            delivery.add_done_callback(delivered)
        return delivery

    async def commit(self, offsets: Mapping[TP, int], start_new_transaction: bool = True) -> bool:
        """Point 16: aiokafka sends a transaction's commit without waiting for its records, and commits it even
        when the broker refused one of them (the Java client flushes first, and aborts after a refusal). So the
        records are flushed first, and after a refusal nothing is committed: the commit fails, the worker stops,
        and its successor aborts the transaction and takes the input again from the last commit."""
        await self.producer.flush()
        if self.refused is not None:
            raise DeliveryFailed(
                f"the broker refused a record of an open transaction ({self.refused!r}); not committed"
            )
        return await super().commit(offsets, start_new_transaction)

    def _transaction_of(self, topic: str, partition: int) -> str | None:
        """The open transaction of this worker's partition `partition` of `topic`'s group, if it has one."""
        try:
            group = self.app.assignor.group_for_topic(topic)
        except KeyError:
            return None
        tid = f"{self.app.conf.id}-{group}-{partition}"  # faust's transactional_id_format
        return tid if tid in getattr(self.producer, "_transaction_producers", {}) else None


class Transport(driver.Transport):
    """Set as `app.transport` right after the app is created (before any topic is declared)."""

    Consumer = SeekingConsumer
    Producer = GatedProducer  # its flush before a commit also sends the table writes held on delivery
    TransactionManager = SourceTransactionManager

    sparse_topics: frozenset[str] = frozenset()  # compacted topics read by agents (point 6 above)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _use_python_stream_iterator()
        _rejoin_on_empty_assignment()
        _note_stepped_over()


def _use_python_stream_iterator() -> None:
    """Point 4: faust's Cython stream iterator skips a message without acking it; this one acks it."""
    faust_streams._CStreamIterator = None  # read per stream


#: The faust-streaming and aiokafka code the corrections above replace or lean on, by a digest of its source.
#: A new release that changes any of it may undo a correction silently; `changed_internals` names what moved.
#: After reading the new code against points 1-20, refresh with `python -m streams.agents.transport`.
PATCHED_INTERNALS: dict[str, str] = {
    "aiokafka.consumer.fetcher:Fetcher._proc_fetch_request": "59bf948fff47eed5",
    "aiokafka.consumer.consumer:AIOKafkaConsumer.seek_to_committed": "f6cd85c8b70a4ccf",
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread.seek_to_committed": "775ab0adc4b052ab",
    "faust.transport.drivers.aiokafka:Consumer._new_consumer_thread": "0870ec53dea75083",
    "faust.transport.consumer:Consumer._new_offset": "1d2c7ea89a7ad4f1",
    "faust.transport.consumer:Consumer._add_gap": "4df2573ded7c1c2c",
    "faust.transport.consumer:Consumer._wait_next_records": "6218e1969a636b3f",
    "faust.transport.consumer:Consumer.ack": "5fcf41cf45153475",
    "faust.transport.consumer:Consumer._drain_messages": "44a2500309e83c63",
    "faust.transport.consumer:Consumer.on_buffer_drop": "4b57e8a418d5ad9c",
    "faust.streams:Stream._py_aiter": "3a48ee257a65435b",
    "faust.sensors.monitor:Monitor._sampler": "e963a929bb77c3d0",
    "mode.threads:ServiceThread._keepalive2": "3bc84ca2133f05b0",
    "mode.threads:ServiceThread._thread_keepalive": "6ba5ca9dcbd62b0b",
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._create_consumer": "a4dc6ba0681a298c",
    "aiokafka.consumer.consumer:AIOKafkaConsumer.start": "2f1ba70443327538",
    "aiokafka.consumer.group_coordinator:CoordinatorGroupRebalance.perform_group_join": "ff2c2109b2e9868d",
    "aiokafka.consumer.group_coordinator:GroupCoordinator._do_rejoin_group": "3cb016c98a087a71",
    "faust.transport.consumer:TransactionManager.send": "b8d126be9f10fc69",
    "faust.transport.consumer:TransactionManager.commit": "fbb29c3467ac8bfa",
    "faust.transport.drivers.aiokafka:Producer.send": "0b5bd08f52e5e2a9",
    # Point 16: a commit without a flush, and a refused record that does not fail its transaction.
    "aiokafka.producer.producer:AIOKafkaProducer.commit_transaction": "c7f9677c89413f97",
    "aiokafka.producer.sender:SendProduceReqHandler.handle_response": "850323cc8f77abc3",
    # Point 15: the commit waits for the agent's step, which acks its input itself (faust's stream then does not).
    "faust.transport.consumer:Consumer.force_commit": "cc094614d22c70fb",
    "faust.streams:Stream.events": "c62f4dd3a73fe7aa",
    # streams/agents/delivery.py: table writes held until their input's outputs are delivered, and sent by the
    # flush faust runs before it commits.
    "faust.tables.table:Table.on_key_set": "a370e35ca55c2c7e",
    "faust.tables.table:Table.on_key_del": "4f2900b2f9d24a08",
    "faust.tables.base:Collection.send_changelog": "3dd3884e1b5fc0e1",
    "faust.transport.consumer:Consumer._commit_offsets": "1a69799041188441",
    "faust.transport.drivers.aiokafka:Producer.flush": "36d0cb3615f65b01",
    # Point 17: recovery's highwaters under exactly-once came from the last fetch, not the broker.
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._highwaters": "a7f4f97d9f32aca2",
    "faust.tables.recovery:Recovery._build_highwaters": "91b4cc0d3724ae7b",
    # Point 18: holes after the last record, which aiokafka steps over and faust's commit never passes.
    "aiokafka.consumer.fetcher:FetchResult.getall": "3e717e30de5068d5",
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._fetch_records": "39a2c6c79fc1455a",
    "faust.transport.consumer:Consumer._filter_committable_offsets": "dc5e9baf5d994485",
    # Point 20: recovery resumes the stream partitions before its seek, which resets faust's read offsets.
    "faust.tables.recovery:Recovery.on_recovery_completed": "6ef567acf072e46d",
    "faust.transport.consumer:Consumer.perform_seek": "0e8c130ff4b0afd8",
}


def _digest(name: str) -> str:
    import hashlib
    import importlib
    import inspect

    module_name, qualname = name.split(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part, None)
        if target is None:
            return "missing"
    target = getattr(target, "__wrapped__", target)
    target = getattr(target, "fun", target)  # a mode Service.task: its coroutine function
    return hashlib.sha256(inspect.getsource(target).encode()).hexdigest()[:16]


def changed_internals() -> list[str]:
    """The patched internals whose source is not the one the corrections were written against."""
    return [name for name, digest in PATCHED_INTERNALS.items() if _digest(name) != digest]


if __name__ == "__main__":  # pragma: no cover - the refresh step of a dependency upgrade
    for name in PATCHED_INTERNALS:
        print(f'    "{name}": "{_digest(name)}",')
