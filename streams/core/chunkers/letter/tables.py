"""table_data of seed 000 §2.5.4: name, one-sentence summary, header columns, rows split on 2+ spaces."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from streams.core.chunkers.letter.layout import DOT_LEADER, numeric_tokens

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
