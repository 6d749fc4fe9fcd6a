"""Chunk boundaries laid over a document's text, for the console's document view.

Pure: text, page map and chunk rows in, a flat list of pieces out (the template only loops). Chunks may
overlap (window strategies) or leave gaps (whitespace a strategy drops), so the text is cut at every chunk
start and end and each piece carries the chunks that cover it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streams.core.events import PageSpan

_PIPE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_GAP = re.compile(r"\t+| {2,}")


@dataclass(frozen=True)
class Cut:
    """One chunk as drawn: where it starts and ends in the document stream and what to label it with."""

    chunk_id: str
    position: int
    start: int
    end: int
    section: str = ""
    content_type: str = "text"
    token_count: int = 0
    state: str = ""  # "kept" or "changed" against the previous amendment, "" when there is none

    @property
    def shade(self) -> int:
        return self.position % 2


@dataclass
class Piece:
    """A run of text covered by the same chunks, or a marker (page break, chunk start) or a table."""

    kind: str  # "text" | "page" | "cut" | "table"
    start: int = 0
    end: int = 0
    text: str = ""
    chunks: tuple[int, ...] = ()
    page: int = 0
    cut: Cut | None = None
    rows: list[list[str]] = field(default_factory=list)

    @property
    def css(self) -> str:
        if self.kind != "text":
            return self.kind
        if not self.chunks:
            return "gap"
        return "overlap" if len(self.chunks) > 1 else f"c{self.chunks[0] % 2}"


def cuts_from_rows(rows: Iterable[Mapping[str, Any]], previous_hashes: set[str] | None = None) -> list[Cut]:
    """Chunk rows (MongoDB documents or bus records) as cuts, in document order."""
    cuts = []
    for row in rows:
        state = ""
        if previous_hashes is not None:
            state = "kept" if row.get("content_hash") in previous_hashes else "changed"
        cuts.append(
            Cut(
                chunk_id=str(row.get("chunk_id") or row.get("_id")),
                position=int(row.get("position", 0)),
                start=int(row["char_start"]),
                end=int(row["char_end"]),
                section=" › ".join(row.get("section_path") or []),
                content_type=str(row.get("content_type") or "text"),
                token_count=int(row.get("token_count", 0)),
                state=state,
            )
        )
    return sorted(cuts, key=lambda c: (c.start, c.position))


def table_rows(text: str) -> list[list[str]]:
    """A table chunk's text as rows of cells (Markdown pipes, or columns split by tabs or 2+ spaces);
    empty when it does not read as a table, and the text is shown as text."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip() or (_PIPE_RULE.match(line) and set(line.strip()) <= set("|:- ")):
            continue
        if "|" in line:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
        else:
            cells = [c.strip() for c in _GAP.split(line.strip())]
        rows.append(cells)
    if len(rows) < 2 or max(len(r) for r in rows) < 2:
        return []
    width = max(len(r) for r in rows)
    return [r + [""] * (width - len(r)) for r in rows]


def layout(text: str, page_map: Sequence[PageSpan], cuts: Sequence[Cut]) -> list[Piece]:
    """The document as pieces: page markers, a marker where each chunk starts, and text runs tagged with
    the chunks covering them. A table chunk that nothing else cuts into is one table piece."""
    n = len(text)
    bounds = {0, n}
    for cut in cuts:
        bounds.update((max(0, min(cut.start, n)), max(0, min(cut.end, n))))
    page_starts = {p.start_char: p.page_number for p in page_map}
    bounds.update(s for s in page_starts if 0 <= s <= n)
    ordered = sorted(bounds)
    starts: dict[int, list[int]] = {}
    for index, cut in enumerate(cuts):
        starts.setdefault(max(0, min(cut.start, n)), []).append(index)
    tables = _whole_tables(text, cuts, ordered)
    pieces: list[Piece] = []
    skip_until = -1
    active: set[int] = set()  # a sweep: chunks covering the current run, so a 300-page view stays linear
    ends: dict[int, list[int]] = {}
    for index, cut in enumerate(cuts):
        ends.setdefault(max(0, min(cut.end, n)), []).append(index)
    for a, b in zip(ordered, [*ordered[1:], n + 1], strict=False):
        active.difference_update(ends.get(a, ()))
        active.update(i for i in starts.get(a, ()) if cuts[i].end > cuts[i].start)
        if a in page_starts and (a > 0 or len(page_map) > 1):
            pieces.append(Piece("page", start=a, end=a, page=page_starts[a]))
        for index in starts.get(a, []):
            pieces.append(Piece("cut", start=a, end=cuts[index].end, cut=cuts[index], chunks=(index,)))
            if index in tables:
                pieces.append(Piece("table", cuts[index].start, cuts[index].end, chunks=(index,), rows=tables[index]))
                skip_until = max(skip_until, cuts[index].end)
        if b > n or a < skip_until:
            continue
        covering = tuple(sorted(active))
        pieces.append(Piece("text", a, b, text[a:b], covering))
    return pieces


def _whole_tables(text: str, cuts: Sequence[Cut], bounds: Sequence[int]) -> dict[int, list[list[str]]]:
    tables: dict[int, list[list[str]]] = {}
    for index, cut in enumerate(cuts):
        if cut.content_type != "table" or cut.end <= cut.start:
            continue
        if any(cut.start < b < cut.end for b in bounds):
            continue  # another chunk or a page starts inside: keep it as text so every boundary shows
        rows = table_rows(text[cut.start : cut.end])
        if rows:
            tables[index] = rows
    return tables
