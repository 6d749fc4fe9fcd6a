"""Plain-text releases: headings, wrapped paragraphs and aligned numeric tables with their captions."""

from __future__ import annotations

import re
from collections.abc import Sequence

from streams.core.chunkers.finance.blocks import Block, Context, Table
from streams.core.chunkers.finance.dates import MONTHS
from streams.core.chunkers.finance.pages import DOC_LABEL, kept_lines
from streams.core.document import pages_for_range
from streams.core.text import LETTER_WORD, Span

_NUM_CELL = re.compile(r"\(?[$€£]?[-–+]?\d(?:[\d,]*\d)?(?:\.\d+)?%?\)?%?x?|[—–-]|n/?m|nm|%|\*{1,3}|bps|pts|pp", re.I)
_UNITS = re.compile(r"\b(?:in|dollars in|amounts in)\s+(thousands|millions|billions)\b", re.I)
BULLET = re.compile(r"^\s*([•·▪◦●○\-–*]|\d{1,2}[.)])\s+")
_TERMINAL = re.compile(r"[.!?:;\"”’)]$")


def _split_row(line: str) -> tuple[str, list[str]] | None:
    """(label, cells) when the line ends in two or more numeric cells (one with digits), else None.

    Walks whitespace tokens from the right, so a currency sign standing alone joins its number and
    text such as "425/313-8203" or "May 8, 2022" never counts as cells.
    """
    tokens = line.split()
    cells: list[str] = []
    index = len(tokens)
    while index > 0:
        token = tokens[index - 1]
        if token in ("$", "€", "£") and cells:
            cells[0] = f"{token} {cells[0]}"
        elif _NUM_CELL.fullmatch(token):
            cells.insert(0, token)
        else:
            break
        index -= 1
    if sum(1 for c in cells if any(ch.isdigit() for ch in c)) < 2:
        return None
    return " ".join(tokens[:index]), cells


def _numeric_row(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) <= 200 and _split_row(stripped) is not None


def _is_heading_line(line: str) -> bool:
    s = line.strip()
    words = s.split()
    if not words or len(words) > 10 or len(s) > 90 or _TERMINAL.search(s) or BULLET.match(s):
        return False
    if not s[0].isupper() or _numeric_row(s) or re.search(r"\d{2,}", s) or DOC_LABEL.match(s):
        return False
    small = {"and", "of", "the", "for", "in", "to", "a", "an", "on", "by", "with", "&", "-", "–"}
    caps = sum(1 for w in words if w[0].isupper() or w.lower() in small or not w[0].isalpha())
    return (caps == len(words) and len(words) >= 2) or (s.isupper() and len(s) >= 4)


def release_blocks(ctx: Context) -> list[Block]:
    """Plain-text release -> headings, paragraphs and aligned numeric tables.

    Tables are found first (runs of numeric rows), then up to six short lines above each are taken as
    its caption (title, units, period headers), so the caption never ends up as a stray paragraph.
    """
    text = ctx.doc.text
    lines = kept_lines(text, 0, len(text), ctx.dropped)
    flags = [_numeric_row(text[s:e]) for s, e in lines]
    tables: dict[int, tuple[int, int]] = {}  # caption start -> (first row, end)
    index = 0
    floor = 0
    while index < len(lines):
        run_end = _table_run(text, lines, flags, index)
        if run_end > index:
            tables[_title_start(text, lines, index, floor)] = (index, run_end)
            index = floor = run_end
        else:
            index += 1
    widths = sorted(e - s for s, e in lines) or [80]
    wrap_width = widths[int(len(widths) * 0.9)]
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        if index in tables:
            first_row, run_end = tables[index]
            number = sum(1 for b in blocks if b.kind == "table") + 1
            blocks.extend(_text_table(ctx, lines, index, first_row, run_end, number))
            index = run_end
            continue
        s, e = lines[index]
        line = text[s:e]
        if _is_heading_line(line) and index + 1 < len(lines) and not flags[index + 1]:
            blocks.append(Block("heading", s, e, title=" ".join(line.split()), level=1 if line.isupper() else 2))
            index += 1
            continue
        para = blocks[-1] if blocks and blocks[-1].kind == "para" and blocks[-1].title == "open" else None
        if para is None or BULLET.match(line):
            para = Block("para", s, e, title="open")
            blocks.append(para)
        para.units.append((s, e))
        para.end = e
        if _TERMINAL.search(line.strip()) and (e - s) < 0.85 * wrap_width:
            para.title = ""  # paragraph closed
        index += 1
    for block in blocks:
        if block.kind == "para":
            block.title = ""
    return blocks


def _table_run(text: str, lines: Sequence[Span], flags: Sequence[bool], index: int) -> int:
    """End index (exclusive) of a table starting at `index`, or `index` when none: >= 3 numeric rows,
    label-only lines allowed in between when a numeric row follows within three lines."""
    if not flags[index]:
        return index
    end = index
    numeric = 0
    probe = index
    while probe < len(lines):
        if flags[probe]:
            numeric += 1
            end = probe + 1
            probe += 1
            continue
        line = text[slice(*lines[probe])].strip()
        ahead = any(flags[probe + k] for k in range(1, 4) if probe + k < len(lines))
        if ahead and len(line) <= 90 and not (_TERMINAL.search(line) and line.endswith(".")):
            probe += 1
            continue
        break
    return end if numeric >= 3 else index


def _title_start(text: str, lines: Sequence[Span], index: int, floor: int) -> int:
    """First of up to six short lines right above a table (title, units, period headers)."""
    start = index
    while start > floor and index - start < 6:
        line = text[slice(*lines[start - 1])].strip()
        if len(line) > 100 or line.endswith(".") or BULLET.match(line):
            break
        start -= 1
    return start


def _text_table(
    ctx: Context, lines: Sequence[Span], title_start: int, index: int, end: int, table_no: int
) -> list[Block]:
    text = ctx.doc.text
    header = [" ".join(text[s:e].split()) for s, e in lines[title_start:index]]
    rows: list[list[str]] = []
    for s, e in lines[index:end]:
        split = _split_row(text[s:e].strip())
        if split:
            rows.append([split[0], *split[1]])
        else:
            rows.append([" ".join(text[s:e].split())])
    title = next((h for h in header if _caption_like(h)), "")
    blob = " ".join(header) + " " + text[lines[index][0] : lines[end - 1][1]]
    start, stop = lines[title_start][0], lines[end - 1][1]
    page = pages_for_range(ctx.doc.page_map, start, stop)
    table_id = f"tbl_p{page[0] if page else 1}_{table_no:02d}"
    table = Table(
        table_id=table_id,
        title=title,
        rows=rows,
        units=units_of(blob),
        currency=currency_of(blob),
        payload_ref=f"doc://{ctx.doc.doc_id}#chars={start}-{stop}",
    )
    return [Block("table", start, stop, title=title, table=table)]


def _caption_like(line: str) -> bool:
    """A table caption: two or more words, no units line, not just a date or period header."""
    words = LETTER_WORD.findall(line)
    if len(words) < 2 or _UNITS.search(line) or line.startswith("("):
        return False
    return not all(w.lower() in MONTHS or w.lower() in _PERIOD_WORDS for w in words)


_PERIOD_WORDS = frozenset({"three", "six", "nine", "twelve", "months", "weeks", "ended", "ending", "quarter", "year"})


def units_of(blob: str) -> str:
    m = _UNITS.search(blob)
    return m.group(1).lower() if m else ""


def currency_of(blob: str) -> str:
    for sign, code in (("$", "USD"), ("€", "EUR"), ("£", "GBP"), ("¥", "JPY")):
        if sign in blob:
            return code
    m = re.search(r"\b(USD|EUR|GBP|JPY|CHF|CAD|AUD)\b", blob)
    return m.group(1) if m else ""
