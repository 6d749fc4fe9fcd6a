"""Stage 5, tables: each table's tier-2 chunk, the table with its lead-in and its interpretation, and its table_data
(name, one-sentence summary, header columns, rows split on 2+ spaces):
docs/strategies.md#letter-8-tier-2-table-chunks."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streams.core.chunkers.letter.blocks import Letter
from streams.core.chunkers.letter.layout import DOT_LEADER, Block, numeric_tokens
from streams.core.chunkers.letter.measure import Tokens

_GROWS = {"para", "table", "header"}  # what a tier-2 chunk absorbs to reach the minimum


@dataclass(frozen=True, slots=True)
class TableChunk:
    """A table's tier-2 chunk before it has an id: the span of the letter it covers, the table's data and
    the boundary note that says which narrative came with it."""

    start: int
    end: int
    data: dict[str, Any]
    note: str


def table_chunks(letter: Letter, tokens: Tokens, min_tokens: int) -> Mapping[int, TableChunk]:
    """Every table of the letter's body by the char where the table starts."""
    return {b.start: table_chunk(letter, i, tokens, min_tokens) for i, b in enumerate(letter.body) if b.kind == "table"}


def table_chunk(letter: Letter, i: int, tokens: Tokens, min_tokens: int) -> TableChunk:
    """Lead-in + table + interpretation, absorbing neighbours until >= `min_tokens` tokens
    (docs/strategies.md#letter-8-tier-2-table-chunks)."""
    blocks = letter.body
    lo = hi = i
    lead = i > 0 and blocks[i - 1].kind == "para"
    interp = i + 1 < len(blocks) and blocks[i + 1].kind == "para"
    lo -= 1 if lead else 0
    hi += 1 if interp else 0
    context = ["lead-in"] * lead + ["interpretation"] * interp
    # A heading or another table between: reach for the nearest paragraph, so the chunk has narrative context
    # (docs/strategies.md#letter-10-the-validation-gate).
    if not context:
        near = _nearest_para(blocks, i)
        if near is not None:
            lo, hi = min(lo, near), max(hi, near)
            context = ["nearby paragraph"]
    absorbed = 0
    while tokens.count(blocks[lo].start, blocks[hi].end) < min_tokens:
        grew = False
        if lo > 0 and blocks[lo - 1].kind in _GROWS:
            lo, grew = lo - 1, True
        if tokens.count(blocks[lo].start, blocks[hi].end) >= min_tokens:
            absorbed += grew
            break
        if hi + 1 < len(blocks) and blocks[hi + 1].kind in _GROWS:
            hi, grew = hi + 1, True
        if not grew:
            break
        absorbed += 1
    if not context:
        paras = [b for b in blocks[lo : hi + 1] if b.kind == "para"]
        context = ["nearby paragraph"] if paras else []
    lead_text = letter.text[blocks[i - 1].start : blocks[i - 1].end] if lead else ""
    note = f"narrative context: {' + '.join(context)}" if context else "no narrative context"
    if absorbed:
        note += f"; absorbed {absorbed} neighbouring blocks to reach {min_tokens} tokens"
    return TableChunk(blocks[lo].start, blocks[hi].end, table_data(blocks[i].lines, lead_text, letter.year), note)


def _nearest_para(blocks: Sequence[Block], i: int, reach: int = 3) -> int | None:
    """The paragraph nearest block i across headings and tables, the one before preferred."""
    for step in (-1, 1):
        for k in range(i + step, i + step * (reach + 1), step):
            if not 0 <= k < len(blocks) or blocks[k].kind == "signature":
                break
            if blocks[k].kind == "para":
                return k
    return None


_FIELDS = re.compile(r"\s{2,}|\t")
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")


def _fields(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        return [c.strip() for c in s.strip("|").split("|")]
    s = DOT_LEADER.sub("  ", s)
    return [f for f in _FIELDS.split(s) if f.strip()]


def _is_rule(line: str) -> bool:
    return bool(line.strip()) and set(line.strip()) <= set("|-:=_ ")


def table_name(lines: Sequence[str], lead_in: str) -> str:
    """The lead-in's clause before a colon when there is one, else the table's first line."""
    if ":" in lead_in:
        clause = lead_in.split(":", 1)[0]
        clause = re.split(r"(?<=[.?!])\s+", " ".join(clause.split()))[-1]
        words = clause.split()
        if words:
            return " ".join(words[-12:]) if len(words) > 12 else clause
    first = next((ln for ln in lines if ln.strip() and not _is_rule(ln)), "")
    return " ".join(DOT_LEADER.sub(" ", first).split()).strip("|# ")


def table_data(lines: Sequence[str], lead_in: str, year: int) -> dict[str, Any]:
    rows_src = [ln for ln in lines if ln.strip() and not _is_rule(ln)]
    first_data = next((i for i, ln in enumerate(rows_src) if numeric_tokens(ln) >= 2), len(rows_src))
    header = None
    for ln in reversed(rows_src[:first_data]):
        cells = _fields(ln)
        if len(cells) >= 2:
            header = cells
            break
    data_lines = rows_src[first_data:] if header else rows_src
    rows = []
    for ln in data_lines:
        cells = _fields(ln)
        rows.append(cells if len(cells) >= 2 else [ln.strip()])
    name = table_name(lines, lead_in) or "Untitled table"
    years = sorted({int(y) for ln in data_lines for y in _YEAR.findall(ln)})
    span = f" for {years[0]} through {years[-1]}" if len(years) >= 2 else (f" for {year}" if year else "")
    return {
        "table_name": name,
        "summary": f"Figures on {_phrase(name)}{span}, set out in {len(rows)} rows.",
        "columns": header or ["raw_line"],
        "rows": rows,
        "row_count": len(rows),
    }


def _phrase(name: str) -> str:
    words = name.rstrip(":.").split()
    text = " ".join(words[:10])
    return (
        text[:1].lower() + text[1:] if text[:2].istitle() or (text[:1].isupper() and not text[1:2].isupper()) else text
    )
