"""The delivery gate: a worker's table writes for an input wait for that input's outputs, in input order."""

from __future__ import annotations

import asyncio

import pytest

from streams.agents.delivery import DeliveryFailed, DeliveryGate


class Changelog:
    """What reached the changelog, in order: writes go through the gate as GatedTable sends them."""

    def __init__(self, gate: DeliveryGate) -> None:
        self.gate = gate
        self.sent: list[str] = []

    def write(self, key: str) -> None:
        if not self.gate.hold(lambda: self.sent.append(key)):
            self.sent.append(key)


def written_after_output(gate: DeliveryGate, log: Changelog, key: str) -> asyncio.Future[str]:
    """One input that writes `key` and sends one record: the record's (undelivered) future."""
    output: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    with gate.capture() as held:
        log.write(key)
        held.after([output])
    return output


async def settle() -> None:
    for _ in range(3):  # done callbacks run on the loop's next turns
        await asyncio.sleep(0)


def test_a_write_waits_for_the_outputs_of_its_input_and_reads_nothing_else() -> None:
    async def scenario() -> None:
        gate = DeliveryGate()
        log = Changelog(gate)
        document = written_after_output(gate, log, "doc-1 done")
        log.write("outside any input")  # a write outside capture is not held
        await settle()
        assert log.sent == ["outside any input"]
        document.set_result("delivered")
        await settle()
        assert log.sent == ["outside any input", "doc-1 done"]

    asyncio.run(scenario())


def test_writes_leave_in_input_order_even_when_a_later_input_sent_nothing() -> None:
    async def scenario() -> None:
        gate = DeliveryGate()
        log = Changelog(gate)
        first = written_after_output(gate, log, "doc-1 done")
        with gate.capture():  # a page stored: no output, but it must not overtake doc-1's mark
            log.write("doc-2 page 1")
        await settle()
        assert log.sent == []
        first.set_result("delivered")
        await settle()
        assert log.sent == ["doc-1 done", "doc-2 page 1"]

    asyncio.run(scenario())


def test_a_write_whose_output_failed_never_lands_and_the_commit_flush_fails() -> None:
    async def scenario() -> None:
        gate = DeliveryGate()
        log = Changelog(gate)
        document = written_after_output(gate, log, "doc-1 done")
        upto = gate.appended
        document.set_exception(RuntimeError("MessageSizeTooLarge"))
        await settle()
        assert log.sent == []
        with pytest.raises(DeliveryFailed, match="MessageSizeTooLarge"):
            await asyncio.wait_for(gate.drained(upto), 5)

    asyncio.run(scenario())


def test_an_input_that_failed_midway_never_writes() -> None:
    async def scenario() -> None:
        gate = DeliveryGate()
        log = Changelog(gate)
        with pytest.raises(RuntimeError), gate.capture():
            log.write("doc-1 done")
            raise RuntimeError("the producer crashed before the document was sent")
        await settle()
        assert log.sent == []
        with pytest.raises(DeliveryFailed, match="producer crashed"):
            await asyncio.wait_for(gate.drained(gate.appended), 5)

    asyncio.run(scenario())


def test_drained_waits_for_the_entries_queued_before_it_was_asked() -> None:
    async def scenario() -> None:
        gate = DeliveryGate()
        log = Changelog(gate)
        document = written_after_output(gate, log, "doc-1 done")
        waiting = asyncio.ensure_future(gate.drained(gate.appended))
        await settle()
        assert not waiting.done()
        document.set_result("delivered")
        await asyncio.wait_for(waiting, 5)
        assert log.sent == ["doc-1 done"]

    asyncio.run(scenario())


def test_only_the_capturing_task_is_held_and_exactly_once_holds_nothing() -> None:
    async def scenario() -> None:
        gate = DeliveryGate()
        log = Changelog(gate)
        document = asyncio.get_running_loop().create_future()

        go = asyncio.Event()

        async def other_task() -> None:  # a task of its own (faust's timers), started before the input
            await go.wait()
            log.write("another task's write")

        other = asyncio.create_task(other_task())
        with gate.capture() as held:
            go.set()
            await other  # it writes while this input's capture is open
            log.write("doc-1 done")
            held.after([document])
        assert log.sent == ["another task's write"]
        once = DeliveryGate(enabled=False)
        direct = Changelog(once)
        with once.capture() as held:
            direct.write("in the transaction")
            held.after([asyncio.get_running_loop().create_future()])
        assert direct.sent == ["in the transaction"]

    asyncio.run(scenario())
