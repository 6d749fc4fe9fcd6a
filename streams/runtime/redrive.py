"""The headers a re-driven dead letter carries back to its source topic, read by every stage that consumes it.

`streams dead-letters replay` (streams.ops.redrive) sends a dead letter's original bytes to the topic they came
from with three headers: which dead letter it was (`partition:offset` on the dead-letter topic), the attempt
(1 for its first re-drive), and the stage that refused it (`assembly`, `chunk:<strategy>`, `sink:<name>`).
Other consumers of that topic skip it (another strategy, the other sink), so a re-drive reaches only the stage
that refused it; a record refused again is dead-lettered with the attempt and the letter it came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

OF = "streams-redrive-of"
ATTEMPT = "streams-redrive-attempt"
FOR = "streams-redrive-for"


@dataclass(frozen=True)
class Redrive:
    of: str  # the dead letter, "partition:offset" on the dead-letter topic
    attempt: int
    stage: str


def _pairs(headers: Any) -> Iterable[tuple[str, Any]]:
    if not headers:
        return ()
    return headers.items() if isinstance(headers, Mapping) else headers


def read(headers: Any) -> Redrive | None:
    """The re-drive a message's headers describe (faust's dict or list, librdkafka's list), or None."""
    found: dict[str, str] = {}
    for name, value in _pairs(headers):
        if name in (OF, ATTEMPT, FOR) and value is not None:
            found[name] = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if OF not in found:
        return None
    try:
        attempt = int(found.get(ATTEMPT, "1"))
    except ValueError:
        attempt = 1
    return Redrive(found[OF], attempt, found.get(FOR, ""))


def headers(of: str, attempt: int, stage: str) -> list[tuple[str, bytes]]:
    return [(OF, of.encode()), (ATTEMPT, str(attempt).encode()), (FOR, stage.encode())]


def skips(headers_: Any, stage: str) -> bool:
    """Whether a consumer at `stage` leaves this message alone: re-driven for another stage."""
    redrive = read(headers_)
    return redrive is not None and bool(redrive.stage) and redrive.stage != stage


def letter_fields(headers_: Any) -> dict[str, Any]:
    """A dead letter's `attempt` and `redriven_from` for a refused message: its re-drive, or a first refusal."""
    redrive = read(headers_)
    return {"attempt": redrive.attempt, "redriven_from": redrive.of} if redrive else {}
