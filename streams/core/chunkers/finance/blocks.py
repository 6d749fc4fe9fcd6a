"""The structural units every finance reader produces, so the chunker packs one shape whatever the input."""

from __future__ import annotations

from dataclasses import dataclass, field

from streams.core.events import AssembledDocument
from streams.core.text import Span


@dataclass(slots=True)
class Table:
    table_id: str
    title: str
    rows: list[list[str]]
    units: str
    currency: str
    payload_ref: str


@dataclass(slots=True)
class Block:
    """One structural unit in reading order, with its range in the document stream."""

    kind: str  # heading | para | turn | table | slide
    start: int
    end: int
    title: str = ""
    level: int = 1
    speaker: str = ""
    role: str = ""
    firm: str = ""
    is_analyst: bool = False
    is_operator: bool = False
    in_qa: bool = False
    units: list[Span] = field(default_factory=list)
    table: Table | None = None
    bullets: list[str] = field(default_factory=list)
    slide_no: int = 0


@dataclass(slots=True)
class Context:
    """Per-document facts every draft needs (quarter, dropped lines, source info)."""

    doc: AssembledDocument
    quarter: str | None
    year: int | None
    published_date: str | None
    dropped: list[Span]
    extraction_method: str
    source_path: str


def turn_body(turn: Block) -> Span:
    """A turn without its speaker line."""
    if not turn.units:
        return turn.end, turn.end
    return turn.units[0][0], turn.units[-1][1]
