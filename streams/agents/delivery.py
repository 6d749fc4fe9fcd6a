"""State after output: a worker's table writes reach their changelog only once the records it sent for the
same input are delivered.

Why: a table write and an output record go to different partitions, and Kafka orders nothing across
partitions. The assembler marks a document done (so a redelivered page of it is dropped as a duplicate) in
the same step that sends the document; SIGKILLed between the two deliveries, it left the mark on the
changelog and no document on the topic, and its successor dropped the redelivered pages as duplicates: pages
committed, no document, no dead letter (tests/reliability/test_faults.py on Apache Kafka, 2026-11-27).

`DeliveryGate.capture()` holds the changelog sends of the tables written while it is open; `Held.after()`
releases them when the given output futures are done, in the order the inputs came. A worker's commit
flushes its producer first (faust), and the gated producer then waits for every held write that was
waiting on what it flushed, and flushes again: an offset is committed only with its state on the changelog.
The in-memory table changes at once, so the worker reads its own writes as before.

Under exactly-once the outputs and the changelog share one transaction, so nothing is held. There the
other order matters: a commit must not fall inside an input's processing. Its outputs sent so far would
commit in the transaction while its offset, not acked yet, would not, and a worker killed before the next
commit did them again. `DeliveryGate.step()` holds the gate's lock over one input and acks it before letting
go; the consumer's commit takes the same lock (transport.py, point 15). A step that raises (a send that
failed) leaves part of its input's outputs in the open transaction, and faust restarts the agent and acks the
input anyway, so no commit may follow: the worker stops at its next commit, and its successor aborts the
transaction and takes the input again (a document's first chunks committed, the rest and its manifest never,
on both brokers, before). And an input already processed in the open transaction, or committed, is fetched again
after a seek (transport.py, point 19): `run()` does not process it twice.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import faust
from faust.transport.drivers import aiokafka as driver

Write = Callable[[], Any]
log = logging.getLogger("streams.agents")


class DeliveryFailed(RuntimeError):
    """An output a held write waited for was not delivered: the write must never land."""


class Held:
    """The table writes of one input, waiting for that input's outputs."""

    def __init__(self, gate: DeliveryGate) -> None:
        self.gate = gate
        self.writes: list[Write] = []
        self.pending = 0  # outputs not delivered yet
        self.error: BaseException | None = None  # an output failed, or the input did: never release
        self.repeat = False  # exactly-once: the input's outputs are committed or in the open transaction already

    def after(self, futures: Sequence[Awaitable[Any]]) -> None:
        """Release the writes once every one of `futures` is done (at once when there are none)."""
        for future in map(asyncio.ensure_future, futures):  # faust's sends return futures already
            self.pending += 1
            future.add_done_callback(self._delivered)

    def _delivered(self, future: asyncio.Future[Any]) -> None:
        self.pending -= 1
        if self.error is None and (future.cancelled() or future.exception() is not None):
            self.error = asyncio.CancelledError() if future.cancelled() else future.exception()
        self.gate.release()

    def done(self) -> bool:
        return self.pending == 0


class DeliveryGate:
    """Holds changelog sends made inside `capture()` until `Held.after`'s futures are done, in FIFO order."""

    def __init__(self, enabled: bool = True, atomic: bool = False) -> None:
        self.enabled = enabled
        self.atomic = atomic  # exactly-once: an input is processed and acked between two commits
        self.lock = asyncio.Lock()
        self._queue: deque[Held] = deque()
        # Per task: only the writes of the coroutine that opened `capture()` are held.
        self._capturing: contextvars.ContextVar[Held | None] = contextvars.ContextVar("capturing", default=None)
        self._changed = asyncio.Event()
        self.appended = 0  # entries ever queued
        self.released = 0  # entries whose writes were sent
        self.failed: BaseException | None = None  # atomic: an input's step raised; no commit may follow

    @contextmanager
    def capture(self) -> Iterator[Held]:
        """Table writes inside the block are held; call `.after(futures)` on the result once sent."""
        held = Held(self)
        if not self.enabled:
            yield held
            return
        token = self._capturing.set(held)
        try:
            yield held
        except BaseException as exc:
            # The input failed midway (a send raised): its outputs may be missing, so its writes never land.
            held.error = exc
            raise
        finally:
            self._capturing.reset(token)
            # Queued only when the block is over: `after` has counted every output by then.
            if held.writes or held.error is not None:
                self._queue.append(held)
                self.appended += 1
            self.release()

    @asynccontextmanager
    async def step(self, event: faust.EventT) -> AsyncIterator[Held]:
        """One input's processing, inside `capture()`. When `atomic`, under the lock a commit takes too, and the
        input is acked before the lock is let go, so a commit sees every input whole or not at all."""
        if not self.atomic:
            with self.capture() as held:
                yield held
            return
        async with self.lock:
            try:
                with self.capture() as held:
                    held.repeat = _already_processed(event)
                    yield held
            except Exception as exc:
                # Part of its outputs are in the open transaction, and faust will ack the input when its stream's
                # iterator is finalised, or commit past it with the inputs after it: never commit again here.
                self.failed = self.failed or exc
                raise
            message = event.message
            if event.ack():  # faust's own ack after the agent's step is then a no-op: report it as faust would
                event.app.sensors.on_message_out(message.tp, message.offset, message)

    async def run(self, event: faust.EventT, work: Callable[[faust.EventT], Awaitable[Sequence[Any]]]) -> None:
        """`work` on one input inside `step()`, unless the input is a repeat; its result is the delivery futures
        of what it sent, which its table writes wait for."""
        async with self.step(event) as held:
            if held.repeat:
                log.debug("%s-%s@%s: processed already in this transaction", *event.message.tp, event.message.offset)
            else:
                held.after(await work(event))

    def hold(self, write: Write) -> bool:
        """Called for every changelog send: True when it is held (inside `capture`), else send it now."""
        held = self._capturing.get()
        if held is None:
            return False
        held.writes.append(write)
        return True

    def release(self) -> None:
        """Send the writes of every entry at the head of the queue whose outputs are delivered."""
        while self._queue and self._queue[0].done():
            held = self._queue[0]
            if held.error is not None:
                break  # never sent: the producer has failed, and the worker restarts from its commit
            self._queue.popleft()
            for write in held.writes:
                write()
            self.released += 1
        self._changed.set()

    async def drained(self, upto: int) -> None:
        """Wait until the first `upto` entries are released; raise if one of them can never be."""
        while self.released < upto:
            head = self._queue[0] if self._queue else None
            if head is not None and head.error is not None:
                raise DeliveryFailed(f"an output was not delivered ({head.error!r}); its state is not written")
            self._changed.clear()
            await self._changed.wait()


def _already_processed(event: faust.EventT) -> bool:
    """Asked of the consumer (transport.py, point 19); an app without that consumer has no repeats."""
    check = getattr(getattr(event.app, "consumer", None), "already_processed", None)
    return bool(check is not None and check(event.message))


@dataclass(frozen=True)
class _HeldMessage:
    partition: int


@dataclass(frozen=True)
class _HeldSend:
    """What faust's table reads back from a changelog send: the partition it goes to (known before sending)."""

    message: _HeldMessage


class GatedTable(faust.Table):
    """A faust table whose changelog sends pass through the transport's DeliveryGate."""

    def send_changelog(self, partition: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        gate: DeliveryGate | None = getattr(self.app.transport, "delivery_gate", None)
        parent = super().send_changelog
        if (
            partition is not None
            and gate is not None
            and gate.hold(lambda: parent(partition, key, value, *args, **kwargs))
        ):
            return _HeldSend(_HeldMessage(partition))
        return parent(partition, key, value, *args, **kwargs)


class GatedProducer(driver.Producer):
    """faust flushes the producer before it commits offsets; this flush also waits for the held table writes
    whose outputs it delivered, then sends those writes too.

    Every producer is idempotent with acks=all, at-least-once too: faust asks for idempotence only inside a
    transaction, so a retried send after a leader moved could write a record twice."""

    def _settings_extra(self) -> Mapping[str, Any]:
        return {**super()._settings_extra(), "acks": "all", "enable_idempotence": True}

    async def flush(self) -> None:
        gate: DeliveryGate | None = getattr(self.transport, "delivery_gate", None)
        upto = gate.appended if gate is not None else 0
        await super().flush()
        if gate is not None and gate.released < upto:
            await gate.drained(upto)
            await super().flush()
