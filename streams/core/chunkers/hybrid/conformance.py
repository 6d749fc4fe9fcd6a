"""hybrid's own conformance rule: a table cell chunk holds a table (pipe rows or aligned columns of figures)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from streams.core.chunkers.base import Violation
from streams.core.events import ChunkRecord
from streams.core.tokenizers import Tokenizer

_CELL_GAP = re.compile(r" {2,}|\t|(?:\s?\.){3,}\s*")


def rules(records: Sequence[ChunkRecord], tokenizer: Tokenizer) -> list[Violation]:
    """A table cell chunk holds a table: pipe rows or aligned columns of figures."""
    out = []
    for r in records:
        if r.content_type == "table_cell" and not (_has_pipe_rows(r.text) or _has_figure_rows(r.text)):
            out.append(Violation("table cell", r.position, f"no table in {r.text.strip()[:40]!r}"))
    return out


def _has_pipe_rows(text: str) -> bool:
    """A row with two cell pipes ("||" is an operator in code, not a cell)."""
    return any(line.count("|") >= 2 for line in text.replace("||", "").splitlines())


def _has_figure_rows(text: str) -> bool:
    """A row of columns (cells apart by two spaces, a tab or a dot leader) with a figure in a later cell."""
    for line in text.splitlines():
        cells = [c for c in _CELL_GAP.split(line.strip()) if c.strip()]
        if len(cells) >= 2 and any(ch.isdigit() for c in cells[1:] for ch in c):
            return True
    return False
