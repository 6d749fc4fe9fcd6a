"""The commit rule of the faust transport: a commit never moves past a message that was not processed.

These drive the consumer's offset bookkeeping directly (no broker): the rule is pure logic, and the
failure it prevents (a replay from offset 0 losing its first document) only shows under load otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faust.transport.drivers import aiokafka as driver
from faust.types import TP

from streams.agents.app import make_app
from streams.agents.transport import SeekingConsumer, holes_between
from streams.settings import Settings

TOPIC = "documents.assembled"
tp = TP(TOPIC, 1)


@pytest.fixture
def consumer(tmp_path: Path) -> SeekingConsumer:
    app = make_app("chunker-test", Settings(data_dir=tmp_path, broker="127.0.0.1:9"))
    app.topic(TOPIC)  # acks are enabled for the topics an agent reads
    consumer = app.consumer
    assert isinstance(consumer, SeekingConsumer)
    return consumer


def stock_consumer(consumer: SeekingConsumer) -> driver.Consumer:
    """faust's own consumer on the same transport: what a correction changes is measured against it."""
    return driver.Consumer(
        consumer.transport,
        callback=consumer.callback,
        on_partitions_revoked=consumer._on_partitions_revoked,
        on_partitions_assigned=consumer._on_partitions_assigned,
    )


def sparse_topic(consumer: SeekingConsumer) -> TP:
    """A partition of documents.versions, a compacted topic an agent reads: offsets there may hold no record."""
    versions = TP("documents.versions", 0)
    assert versions.topic in consumer.transport.sparse_topics
    consumer.app.topics.acking_topics.add(versions.topic)
    return versions


def committed_at(each: driver.Consumer, offset: int, at: TP) -> None:
    """Sought to and committed at `offset`, as after an assignment (the seek only the corrected consumer notes)."""
    if isinstance(each, SeekingConsumer):
        each.on_sought({at: offset})
    each._committed_offset[at] = offset


def processed(consumer: driver.Consumer, *offsets: int, at: TP = tp) -> None:
    for offset in offsets:
        consumer._acked[at].append(offset)
        consumer._acked_index[at].add(offset)


def test_stock_faust_commits_past_a_skipped_first_message(consumer: SeekingConsumer) -> None:
    """Why the override exists: after a seek to 0 faust forgets the position and commits 2 although
    message 0 was never processed. If this starts failing, faust fixed it and the override can go."""
    stock = stock_consumer(consumer)
    processed(stock, 1)
    assert stock._new_offset(tp) == 2


def test_no_commit_until_the_sought_offset_is_processed(consumer: SeekingConsumer) -> None:
    consumer.on_sought({tp: 0})
    processed(consumer, 1, 2)
    assert consumer._new_offset(tp) is None
    processed(consumer, 0)
    assert consumer._new_offset(tp) == 3


def test_the_head_of_a_committed_position_is_not_skipped(consumer: SeekingConsumer) -> None:
    consumer.on_sought({tp: 7})
    consumer._committed_offset[tp] = 7
    processed(consumer, 8)
    assert consumer._new_offset(tp) is None  # stock faust would commit 9 here
    processed(consumer, 7)
    assert consumer._new_offset(tp) == 9


def test_redelivered_offsets_below_the_position_do_not_move_the_commit_back(consumer: SeekingConsumer) -> None:
    consumer.on_sought({tp: 5})
    processed(consumer, 3, 5, 6)
    assert consumer._new_offset(tp) == 7
    assert 3 not in consumer._acked_index[tp]


def test_offsets_missing_from_the_log_count_as_processed(consumer: SeekingConsumer) -> None:
    """A compacted topic (documents.versions) has holes: the first record after the seek may be later."""
    consumer.on_sought({tp: 5})
    consumer._gap[tp].addi(5, 8)  # what _wait_next_records records when the first fetched offset is 8
    processed(consumer, 8, 9)
    assert consumer._new_offset(tp) == 10


def test_a_skipped_message_is_queued_for_fetching_again(consumer: SeekingConsumer) -> None:
    from faust.types import Message

    consumer.on_sought({tp: 0})
    message = Message(TOPIC, 1, 4, 0.0, 0, [], b"k", b"v", None, generation_id=1)
    consumer.app.consumer_generation_id = 2  # fetched in an older generation: the stream skips it
    assert consumer.ack(message) is False
    assert consumer._refetch == {tp: 4}
    consumer.on_sought({tp: 3})  # a new assignment fetches everything after its position anyway
    assert consumer._refetch == {}


def test_streams_use_the_iterator_that_acks_skipped_messages(consumer: SeekingConsumer) -> None:
    """faust's Cython iterator drops a skipped message without a word to the consumer."""
    import faust.streams

    assert faust.streams._CStreamIterator is None
    stream = consumer.app.stream(consumer.app.topic(TOPIC))
    assert stream.__aiter__().__qualname__.startswith("Stream._py_aiter")


def test_messages_cleared_from_stream_queues_on_resume_are_fetched_again(consumer: SeekingConsumer) -> None:
    """faust empties the stream queues when flow resumes after a rebalance; what they held was fetched
    (the read offset moved past it) but never processed, so it must be fetched again."""
    from faust.events import Event
    from faust.types import Message
    from mode.utils.queues import FlowControlQueue

    app = consumer.app
    queue: FlowControlQueue = FlowControlQueue(maxsize=10, flow_control=app.flow_control, clear_on_resume=True)
    for offset in (6, 5):
        message = Message(TOPIC, 1, offset, 0.0, 0, [], b"k", b"v", None)
        queue.put_nowait(Event(app, b"k", b"v", {}, message))
    app.topics._acking_topics.add(TOPIC)
    app.flow_control.resume()
    assert queue.empty()
    assert consumer._refetch == {tp: 5}


def test_a_jump_in_a_dense_topic_is_fetched_again_not_committed_through(consumer: SeekingConsumer) -> None:
    """documents.assembled has no holes: 11..17 missing from a fetch were lost on the way, not absent."""
    import asyncio

    consumer.on_sought({tp: 10})
    asyncio.run(consumer._add_gap(tp, 11, 18))  # what faust's fetch loop calls when 18 follows 10
    assert not consumer._gap[tp]
    assert consumer._refetch == {tp: 10}
    processed(consumer, 10, 18)
    assert consumer._new_offset(tp) == 11  # never 19


def test_a_jump_in_a_compacted_topic_is_a_hole_in_the_log(consumer: SeekingConsumer) -> None:
    """The hole is what the consumer thread stepped over (point 18), not faust's jump in its read offset."""
    import asyncio

    versions = sparse_topic(consumer)
    committed_at(consumer, 10, versions)
    asyncio.run(consumer._add_gap(versions, 11, 18))
    assert not consumer._gap[versions]
    consumer._thread.holes.append((versions, 11, 17))  # handed out 10 then 18: the position passed 11..17
    consumer._note_holes()
    processed(consumer, 10, 18, at=versions)
    assert consumer._refetch == {}
    assert consumer._new_offset(versions) == 19


def test_holes_are_committed_through_in_one_commit(consumer: SeekingConsumer) -> None:
    """Point 14: faust's fetch loop reports a hole as `_add_gap(tp, last read + 1, offset read now)`. Stock
    faust's gap then holds the record read now, which is acked too: the duplicate ends its consecutive run,
    and the commit stops at the first hole (16 here, where 22 is right). Under exactly-once each such event's
    outputs were already committed in the transaction: a kill then gave them twice."""
    import asyncio

    versions = sparse_topic(consumer)
    stock = stock_consumer(consumer)
    for each in (stock, consumer):
        committed_at(each, 10, versions)
        processed(each, 10, 11, 12, at=versions)
        asyncio.run(each._add_gap(versions, 13, 15))  # read 12, then 15: 13 and 14 hold no record
        processed(each, 15, 16, at=versions)
        asyncio.run(each._add_gap(versions, 17, 20))  # then 20
        processed(each, 20, 21, at=versions)
    consumer._thread.holes.extend([(versions, 13, 14), (versions, 17, 19)])  # what the position passed (point 18)
    consumer._note_holes()
    assert stock._new_offset(versions) == 16
    assert consumer._new_offset(versions) == 22


def test_a_seek_while_fetched_records_are_handed_out_makes_no_hole(consumer: SeekingConsumer) -> None:
    """Point 20: faust's recovery resumes the stream partitions, then seeks them to their committed offsets while
    its fetch loop still hands out records fetched before the seek. The seek resets faust's read offset, so the
    next record handed out looks like a jump, and faust records the records between as a hole: under
    exactly-once (every topic has holes there) a commit then passed records never processed, and on Kafka a
    rebalance left 3 of 40 documents never assembled with every page committed. Here a hole is only what the
    consumer thread stepped over, and a record the commit is held before while later ones are done is fetched
    again, as on a topic without holes (point 7)."""
    import asyncio

    versions = sparse_topic(consumer)  # a topic with holes, as every topic is under exactly-once
    stock = stock_consumer(consumer)
    for each in (stock, consumer):
        committed_at(each, 20, versions)
        processed(each, 20, at=versions)  # handed out before the seek, from a fetch of 20..56
        # The seek sets the read offset back to 20; resuming flow clears 21 and 22 from the stream's queue (point
        # 5 fetches them again), and the loop hands out 23: to faust, 21 and 22 are a hole.
        asyncio.run(each._add_gap(versions, 21, 23))
        processed(each, *range(23, 57), at=versions)
    assert stock._new_offset(versions) == 24  # past 21 and 22, never processed (and stopped at 23, point 14)
    assert consumer._new_offset(versions) == 21
    consumer._committed_offset[versions] = 21
    assert consumer._new_offset(versions) is None  # held before 21 while 23..56 are done: fetched again
    assert consumer._refetch == {versions: 21}
    processed(consumer, 21, 22, at=versions)
    assert consumer._new_offset(versions) == 57


def test_holes_after_the_last_record_are_committed_through(consumer: SeekingConsumer) -> None:
    """Point 18: the commit markers after a drained partition's last record are holes no later record reveals.
    Stock faust commits up to them and never past (lag 1 or 2 for good); the noted holes take the commit to the
    end, in the same commit or, for markers stepped over after it, in the next one with nothing new acked."""
    versions = TP("documents.versions", 0)
    consumer.app.topics.acking_topics.add(versions.topic)  # as for the topics an agent reads
    stock = stock_consumer(consumer)
    for each in (stock, consumer):
        each._committed_offset[versions] = 10
        processed(each, 10, 11, at=versions)
    consumer._thread.holes.append((versions, 12, 13))  # stepped over after record 11: two markers
    consumer._note_holes()
    assert stock._filter_committable_offsets([versions]) == {versions: 12}
    assert consumer._filter_committable_offsets([versions]) == {versions: 14}
    consumer._committed_offset[versions] = 14
    assert consumer._filter_committable_offsets([versions]) == {}
    consumer._thread.holes.extend([(versions, 14, 14), (versions, 9, 9)])  # a later marker; one below the commit
    consumer._note_holes()
    assert consumer._filter_committable_offsets([versions]) == {versions: 15}


def test_a_hole_is_not_committed_through_before_an_unprocessed_record(consumer: SeekingConsumer) -> None:
    """Point 18 moves a commit only from where it lands: a record before the hole not processed yet holds it,
    and on a topic without holes (at-least-once, not compacted) a jump is never taken as one."""
    versions = TP("documents.versions", 0)
    consumer.app.topics.acking_topics.add(versions.topic)  # as for the topics an agent reads
    consumer.on_sought({versions: 10, tp: 10})
    consumer._committed_offset[versions] = consumer._committed_offset[tp] = 10
    processed(consumer, 12, at=versions)  # 10 and 11 not processed yet
    processed(consumer, 10, 11, at=tp)
    consumer._thread.holes.extend([(versions, 13, 13), (tp, 12, 13)])
    consumer._note_holes()
    assert not consumer._gap[tp]
    assert consumer._filter_committable_offsets([versions, tp]) == {tp: 12}
    processed(consumer, 10, 11, at=versions)
    assert consumer._filter_committable_offsets([versions]) == {versions: 14}


def test_the_holes_stepped_over_are_what_the_position_passed_less_the_records() -> None:
    assert holes_between(5, 10, [5, 7, 8]) == [(6, 6), (9, 9)]
    assert holes_between(5, 7, []) == [(5, 6)]
    assert holes_between(5, 8, [5, 6, 7]) == []


def test_a_hand_over_cut_short_by_a_rebalance_is_fetched_again(consumer: SeekingConsumer) -> None:
    """faust's own fetch loop races each hand-over to the streams against a flow suspension and marks the
    message read whichever wins: a cut-short hand-over is a message no stream sees. If the read offset
    assertion starts failing, faust fixed it; the refetch must hold either way."""
    import asyncio
    from types import SimpleNamespace

    from faust.types import Message

    message = Message(TOPIC, 1, 21, 0.0, 0, [], b"k", b"v", None)

    async def full_queue(_message: Message) -> None:
        await asyncio.Event().wait()  # the stream's queue is full: the hand-over waits

    async def run() -> SeekingConsumer:
        fresh = SeekingConsumer(
            consumer.transport,
            callback=full_queue,
            on_partitions_revoked=consumer._on_partitions_revoked,
            on_partitions_assigned=consumer._on_partitions_assigned,
        )
        fresh.app.topics._acking_topics.add(TOPIC)
        fetcher = SimpleNamespace(_stopped=asyncio.Event())

        async def getmany(timeout: float):  # one fetch of one record, then the fetcher stops
            fetcher._stopped.set()
            yield tp, message

        fresh.getmany = getmany  # type: ignore[method-assign]
        asyncio.get_running_loop().call_later(0.05, fresh.suspend_flow.set)  # a rebalance starts
        await fresh._drain_messages(fetcher)  # faust's loop, unchanged
        await asyncio.sleep(0)  # let the cancelled hand-over run its handler
        return fresh

    fresh = asyncio.run(run())
    assert fresh._read_offset[tp] == 21  # faust: read, although no stream ever got it
    assert fresh._refetch == {tp: 21}  # here: fetched again once flow resumes


def test_a_commit_held_before_a_lost_message_fetches_it_again(consumer: SeekingConsumer) -> None:
    """Processing is in order, so later offsets done while the commit waits on 21 means 21 was lost."""
    consumer.on_sought({tp: 21})
    consumer._committed_offset[tp] = 21
    processed(consumer, 22, 23)
    assert consumer._new_offset(tp) is None
    assert consumer._refetch == {tp: 21}
    consumer._refetch.clear()
    assert consumer._new_offset(tp) is None and consumer._refetch == {}  # not again at every commit
    processed(consumer, 21)
    assert consumer._new_offset(tp) == 24


@pytest.mark.integration
def test_an_idle_consumer_does_not_spin_on_empty_fetches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """noida-db answers an empty fetch at once; without the hold this consumer sent 5,373 fetches in 2 s
    and an idle worker burnt 93% of a core. The hold grows while idle and ends with the first record."""
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.client import AIOKafkaClient

    from streams.agents.transport import IDLE_FETCH_BACKOFF_S
    from streams.ops.embedded import broker
    from streams.ops.topics import ensure_topics

    make_app("chunker-idle", Settings(data_dir=tmp_path, broker="127.0.0.1:9"))  # its transport installs the hold
    fetches = 0
    send = AIOKafkaClient.send

    async def counting_send(self, node_id, request, *args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal fetches
        fetches += type(request).__name__.startswith("FetchRequest")
        return await send(self, node_id, request, *args, **kwargs)

    monkeypatch.setattr(AIOKafkaClient, "send", counting_send)
    server = broker(tmp_path / "broker").start()
    try:
        settings = Settings(data_dir=tmp_path, broker=server.address)
        ensure_topics(settings)

        async def idle(seconds: float) -> tuple[int, float]:
            nonlocal fetches
            consumer = AIOKafkaConsumer(settings.topics.pages, bootstrap_servers=server.address, group_id=None)
            await consumer.start()
            await consumer.getmany(timeout_ms=1000)  # assignment and first fetches settled
            fetches = 0
            await consumer.getmany(timeout_ms=int(seconds * 1000))
            idle_fetches = fetches
            producer = AIOKafkaProducer(bootstrap_servers=server.address)
            await producer.start()
            await producer.send_and_wait(settings.topics.pages, b"after a long idle spell")
            fetches = 0
            got: dict = {}
            for _ in range(60):  # generous: what is asserted is how many fetches it took, not how long
                got = await consumer.getmany(timeout_ms=500)
                if got:
                    break
            fetched_after = fetches
            await producer.stop()
            await consumer.stop()
            assert [m.value for batch in got.values() for m in batch] == [b"after a long idle spell"]
            return idle_fetches, fetched_after

        idle_fetches, fetched_after = asyncio.run(idle(3.0))
    finally:
        server.stop()
    assert 0 < idle_fetches <= 3.0 / IDLE_FETCH_BACKOFF_S + 2
    assert fetched_after <= 2, fetched_after  # the next fetch after the idle hold brings the record


def test_an_idle_worker_wakes_on_the_longer_timers(consumer: SeekingConsumer) -> None:
    """Point 9: faust's monitor sampler, the consumer thread's keep-alives and aiokafka's fetch loop wake
    on this module's intervals, not on faust's, mode's and aiokafka's sub-second ones."""
    import asyncio

    from streams.agents import transport

    app = consumer.app
    assert type(app.monitor) is transport.QuietMonitor
    sampler = [task.fun for task in app.monitor._get_tasks() if task.fun.__name__ == "_sampler"]
    assert sampler == [transport.QuietMonitor._sampler.fun]
    thread = consumer._thread
    assert isinstance(thread, transport.SeekingConsumerThread)
    keepalives = {t.fun.__qualname__ for t in thread._get_tasks() if "keepalive" in t.fun.__name__}
    assert keepalives == {"SeekingConsumerThread._thread_keepalive"}
    assert type(thread)._keepalive2 is transport.SeekingConsumerThread._keepalive2

    async def create() -> float:
        aio = thread._create_consumer(asyncio.get_running_loop())
        return aio._consumer_timeout  # what the fetcher's wake-up is made from when it starts

    assert asyncio.run(create()) == transport.FETCH_LOOP_WAKE_S


def test_the_hold_on_empty_fetches_stops_doubling_at_the_longest_wait() -> None:
    """After about 1,030 empty fetches in a row (nine idle minutes) the unbounded 2 ** n could not be made a
    float: the error ended aiokafka's fetch routine, and a worker left idle that long never fetched again."""
    from streams.agents.transport import EMPTY_FETCH_BACKOFF_S, IDLE_FETCH_BACKOFF_S, empty_fetch_backoff

    waits = [empty_fetch_backoff(n) for n in range(0, 8)]
    assert waits[0] == 0.0 and waits[1] == EMPTY_FETCH_BACKOFF_S and waits[2] == 2 * EMPTY_FETCH_BACKOFF_S
    assert waits == sorted(waits) and waits[-1] == IDLE_FETCH_BACKOFF_S
    assert empty_fetch_backoff(1_100) == empty_fetch_backoff(10**9) == IDLE_FETCH_BACKOFF_S


@pytest.mark.parametrize("atomic", [True, False])
def test_an_exactly_once_commit_waits_for_the_input_in_process(
    consumer: SeekingConsumer, monkeypatch: pytest.MonkeyPatch, atomic: bool
) -> None:
    """Point 15: under exactly-once a commit that comes while the agent awaits halfway through an input's sends
    waits until the input is done and acked; its offset then commits with its sends. Without the step
    (at-least-once) the commit runs at once, before the ack."""
    import asyncio
    from types import SimpleNamespace

    from streams.agents.delivery import DeliveryGate

    acked: list[int] = []
    seen: list[list[int]] = []

    async def commit(self: driver.Consumer, topics: object = None, start_new_transaction: bool = True) -> bool:
        seen.append(list(acked))
        return True

    monkeypatch.setattr(driver.Consumer, "force_commit", commit)
    gate = DeliveryGate(enabled=not atomic, atomic=atomic)
    consumer.transport.delivery_gate = gate
    event = SimpleNamespace(
        message=SimpleNamespace(tp=tp, offset=5),
        app=SimpleNamespace(sensors=SimpleNamespace(on_message_out=lambda *_: None)),
        ack=lambda: acked.append(5) is None,
    )

    async def run() -> None:
        halfway, resume = asyncio.Event(), asyncio.Event()

        async def agent() -> None:
            async with gate.step(event):
                halfway.set()
                await resume.wait()  # a send that yields to the loop
            if not atomic:
                event.ack()  # faust's stream acks it when the agent asks for the next input

        step = asyncio.create_task(agent())
        await halfway.wait()
        committing = asyncio.create_task(consumer.force_commit())
        await asyncio.sleep(0.05)
        assert committing.done() is not atomic
        resume.set()
        await asyncio.gather(step, committing)

    asyncio.run(run())
    assert seen == ([[5]] if atomic else [[]])


@pytest.mark.parametrize("refused", [True, False])
def test_an_exactly_once_commit_flushes_first_and_never_commits_a_refused_record(
    consumer: SeekingConsumer, monkeypatch: pytest.MonkeyPatch, refused: bool
) -> None:
    """Point 16: aiokafka commits a transaction without waiting for its records, and commits it even when the
    broker refused one. The commit flushes first; after a refusal it fails and commits nothing."""
    import asyncio
    from types import SimpleNamespace

    from faust.streams import _current_event

    from streams.agents.delivery import DeliveryFailed
    from streams.agents.transport import SourceTransactionManager

    calls: list[str] = []

    class Producer:
        def __init__(self) -> None:
            self._transaction_producers = {"tid": object()}

        async def send(self, *_args: object, transactional_id: str | None = None) -> asyncio.Future[None]:
            calls.append(f"send {transactional_id}")
            self.delivery = asyncio.get_running_loop().create_future()
            return self.delivery

        async def flush(self) -> None:
            calls.append("flush")
            if refused:
                self.delivery.set_exception(RuntimeError("MessageSizeTooLargeError"))
            else:
                self.delivery.set_result(None)
            await asyncio.sleep(0)  # the delivery's callbacks run

        async def commit_transactions(self, *_args: object, **_kwargs: object) -> None:
            calls.append("commit")

    producer = Producer()
    manager = SourceTransactionManager(consumer.transport, consumer=consumer, producer=producer)
    monkeypatch.setattr(manager, "_transaction_of", lambda *_: "tid")
    monkeypatch.setattr(manager.app.assignor, "group_for_topic", lambda _topic: 0)
    event = SimpleNamespace(message=SimpleNamespace(tp=tp))

    async def run() -> None:
        _current_event.set(lambda: event)
        await manager.send("chunks.created", b"k", b"v", None, None, None)
        await manager.commit({tp: 6})

    if refused:
        with pytest.raises(DeliveryFailed, match="MessageSizeTooLargeError"):
            asyncio.run(run())
        assert calls == ["send tid", "flush"]
    else:
        asyncio.run(run())
        assert calls == ["send tid", "flush", "commit"]


def test_under_exactly_once_no_commit_follows_an_input_that_failed_halfway(
    consumer: SeekingConsumer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An input whose step raised (a send that failed) has part of its outputs in the open transaction, and
    faust acks it anyway once the agent restarts: every commit after it fails, so the worker stops and its
    successor aborts the transaction. An input that went through commits as before."""
    import asyncio
    from types import SimpleNamespace

    from streams.agents.delivery import DeliveryFailed, DeliveryGate

    commits: list[str] = []

    async def commit(self: driver.Consumer, topics: object = None, start_new_transaction: bool = True) -> bool:
        commits.append("commit")
        return True

    monkeypatch.setattr(driver.Consumer, "force_commit", commit)
    gate = DeliveryGate(enabled=False, atomic=True)
    consumer.transport.delivery_gate = gate
    event = SimpleNamespace(
        message=SimpleNamespace(tp=tp, offset=5),
        app=SimpleNamespace(sensors=SimpleNamespace(on_message_out=lambda *_: None)),
        ack=lambda: True,
    )

    async def step(fail: bool) -> None:
        async with gate.step(event):
            if fail:
                raise RuntimeError("a send that raises")

    async def run() -> None:
        await step(fail=False)
        await consumer.force_commit()
        with pytest.raises(RuntimeError):
            await step(fail=True)
        for _ in range(2):
            with pytest.raises(DeliveryFailed, match="a send that raises"):
                await consumer.force_commit()

    asyncio.run(run())
    assert commits == ["commit"]


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
def test_under_exactly_once_an_input_is_processed_once_however_often_it_is_fetched(
    tmp_path: Path, guarantee: str
) -> None:
    """Point 19: faust's recovery fetched inputs before it sought their partitions to the committed offsets, and
    then fetched them again; both outputs committed in one transaction. Under exactly-once an input already acked
    in the open transaction, or below the committed offset, is not processed again, and its repeat never sends
    its partition back to fetch it once more. Under at-least-once repeats are processed (their ids are
    deterministic) as before."""
    import asyncio

    from faust.events import Event
    from faust.types.tuples import ConsumerMessage

    app = make_app(
        "chunker-test",
        Settings(data_dir=tmp_path, broker="127.0.0.1:9", broker_kind="kafka", processing_guarantee=guarantee),
    )
    app.in_worker = True  # as faust's worker sets it: transactions are a worker's
    app.flow_control.resume()  # as after recovery
    app.topics.acking_topics.add(TOPIC)  # as for the topics an agent reads
    consumer = app.consumer
    assert isinstance(consumer, SeekingConsumer)
    consumer.on_sought({tp: 3})
    consumer._committed_offset[tp] = 3
    worked: list[int] = []

    async def work(event: Event) -> list[object]:
        worked.append(event.message.offset)
        return []

    def fetched(offset: int) -> Event:
        message = ConsumerMessage(TOPIC, tp.partition, offset, 0.0, 0, None, b"k", b"v", None, tp=tp, generation_id=0)
        return Event(app, b"k", b"v", None, message)

    async def run() -> None:
        for offset in (2, 3, 4, 3, 4, 5):  # 2 committed already; 3 and 4 fetched again after a seek
            await app.transport.delivery_gate.run(fetched(offset), work)

    asyncio.run(run())
    if guarantee == "exactly_once":
        assert worked == [3, 4, 5]
        assert consumer._acked[tp] == [3, 4, 5]
        assert not consumer._refetch
    else:  # the step does not ack there: faust's stream does, when the agent asks for the next input
        assert worked == [2, 3, 4, 3, 4, 5]
