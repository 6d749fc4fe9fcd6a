"""`streams dead-letters list` and `replay`: dead letters chosen by reason, stage, strategy, document and time,
and their original bytes sent back to the topic they came from, once.

A re-sent record carries headers naming its dead letter, its attempt and the stage that refused it
(streams.runtime.redrive), so that only that stage takes it again. Each re-drive is marked on the compacted
`STREAMS_TOPIC_REDRIVEN` topic, keyed by the dead letter (`partition:offset`): a second replay of the same
letters sends nothing, and the audit stops counting a re-driven letter as a gap (what became of the record is
what counts: stored, or dead-lettered again with its attempt).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from streams.core.events import DeadLetter
from streams.runtime import redrive
from streams.runtime.keyring import codec_for
from streams.settings import ConfigError, Settings


@dataclass(frozen=True)
class Letter:
    id: str  # partition:offset on the dead-letter topic
    letter: DeadLetter


@dataclass
class Choice:
    """Which dead letters: every condition given must hold (times are ISO-8601, UTC when no zone)."""

    reasons: Sequence[str] = ()
    stages: Sequence[str] = ()
    strategies: Sequence[str] = ()
    doc_ids: Sequence[str] = ()
    since: str | None = None
    until: str | None = None
    _since_ms: int | None = field(default=None, init=False)
    _until_ms: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._since_ms, self._until_ms = _ms(self.since, "--since"), _ms(self.until, "--until")

    def takes(self, letter: DeadLetter) -> bool:
        stages = [*self.stages, *(f"chunk:{s}" for s in self.strategies)]
        return (
            (not self.reasons or letter.reason_code in self.reasons)
            and (not stages or letter.stage in stages)
            and (not self.doc_ids or letter.doc_id in self.doc_ids)
            and (self._since_ms is None or letter.timestamp_ms >= self._since_ms)
            and (self._until_ms is None or letter.timestamp_ms <= self._until_ms)
        )


def _ms(value: str | None, option: str) -> int | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"{option} {value!r}: give an ISO-8601 time, such as 2026-12-02T14:00") from None
    return int((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() * 1000)


def letters(
    settings: Settings, choice: Choice | None = None, on_message: Callable[[], None] | None = None
) -> list[Letter]:
    """The dead letters on the topic that `choice` takes, oldest first within each partition; a record that
    is no dead letter this project wrote is passed over (nothing to re-drive, nothing for the ledger)."""
    from streams.ops.tail import read_topic

    codec = codec_for(settings)
    out: list[Letter] = []
    for message in read_topic(settings, settings.topics.dead_letter, on_message=on_message):
        try:
            letter = DeadLetter(**codec.decode("dead_letter", message.value()))
        except Exception:
            continue
        if choice is None or choice.takes(letter):
            out.append(Letter(f"{message.partition()}:{message.offset()}", letter))
    return out


def redriven(settings: Settings) -> dict[str, dict]:
    """Dead letter id -> its re-drive mark (attempt, when, where to), from the compacted marks topic."""
    from streams.ops.tail import read_topic

    marks: dict[str, dict] = {}
    for message in read_topic(settings, settings.topics.redriven):
        key = (message.key() or b"").decode()
        if message.value() is None:
            marks.pop(key, None)
        else:
            marks[key] = json.loads(message.value())
    return marks


def _sources(settings: Settings) -> set[str]:
    """The topics a dead letter can go back to: each refusing stage's own input."""
    t = settings.topics
    return {t.pages, t.documents, t.chunks, t.status}


@dataclass
class Replayed:
    sent: list[Letter] = field(default_factory=list)
    already: list[Letter] = field(default_factory=list)  # re-driven before: left alone
    unsendable: list[tuple[Letter, str]] = field(default_factory=list)  # no bytes, or no source topic to go to


def replay(settings: Settings, choice: Choice, dry_run: bool = False) -> Replayed:
    """Send the chosen dead letters back once each; with `dry_run`, only say what would be sent."""
    from streams.ops.pipeline import Refusals, producer

    done = redriven(settings)
    result = Replayed()
    sources = _sources(settings)
    for item in letters(settings, choice):
        letter = item.letter
        if item.id in done:
            result.already.append(item)
        elif not letter.value:
            result.unsendable.append((item, "it kept no bytes (a document that timed out incomplete, say)"))
        elif letter.source_topic not in sources:
            result.unsendable.append((item, f"it came from {letter.source_topic!r}, no topic of this deployment"))
        else:
            result.sent.append(item)
    if dry_run or not result.sent:
        return result
    refusals = Refusals()
    out = producer(settings, refusals)
    stamp = int(time.time() * 1000)
    marks: list[tuple[bytes, bytes]] = []
    for item in result.sent:
        letter, attempt = item.letter, item.letter.attempt + 1
        headers = redrive.headers(item.id, attempt, letter.stage)
        out.produce(letter.source_topic, key=letter.key, value=letter.value, headers=headers)
        mark = {"attempt": attempt, "at_ms": stamp, "to": letter.source_topic}
        marks.append((item.id.encode(), json.dumps(mark).encode()))
    refusals.check(out, "re-driven record(s)")  # every record acknowledged before any is marked
    for key, value in marks:
        out.produce(settings.topics.redriven, key=key, value=value)
    refusals.check(out, "re-drive mark(s)")
    return result
