"""Layout analysis of a shareholder letter: lines -> skip, tables, headers, paragraphs
(docs/strategies.md#letter-4-section-boundaries, docs/strategies.md#letter-7-finding-tables).

Everything works on the document stream itself so that every block carries an exact [start, end) range.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from streams.core.events import PageSpan
from streams.core.text import ALIGNED_GAP, MD_HEADING, MONTH_NAMES, running_key

PAGE_MARKER = "[[PAGE_BREAK]]"

SEED_HEADER = re.compile(r"^[A-Z][A-Za-z\s]+$")
# Real letters also title sections "GEICO (1-800-847-7536)" or "Insurance Operations -- Overview".
LOOSE_HEADER = re.compile(r"^[A-Z][A-Za-z0-9\s’'&/\-–—(),]*[A-Za-z)]$")
INITIALS_HEADER = re.compile(r"^(?:[A-Z]\.\s?){1,3}[A-Z][A-Za-z’'&\- ]+$")
BOLD_HEADER = re.compile(r"^\*\*(?P<title>[^*]{2,80})\*\*$")  # titled like MD_HEADING
SEPARATOR = re.compile(r"^(?:\*\s*){3,}$")
PAGE_NUMBER = re.compile(r"^[-–]?\s*\d{1,3}\s*[-–]?$")
SIGNATURE = re.compile(r"(?:^|\s{2,})(?:/s/\s*)?Warren\s+E\.\s+Buffett\s*$")
CHAIRMAN = re.compile(r"^Chairman(?: of the Board)?$")
DATE_LINE = re.compile(rf"^(?:{MONTH_NAMES})\s+\d{{1,2}},\s+\d{{4}}$")
# The seed names Berkshire's titles; any issuer's letter opening with the same table reads the same way.
SP_TITLE = re.compile(
    r"\b[A-Z][\w&.-]*(?: [A-Z][\w&.-]*){0,3}[’']s\s+(?:Corporate\s+)?Performance\s+vs\.?\s+the\s+S&P\s+500"
)
DOT_LEADER = re.compile(r"\.{3,}|(?:\.\s){3,}")
# Found exactly where DOT_LEADER is found (presence only), but led by a literal "." that re can skip to
# instead of trying both alternatives at every position.
_DOT_LEADER_PROBE = re.compile(r"\.(?:\.\.|\s\.\s\.\s)")
NUMERIC_TOKEN = re.compile(r"^[\$(]*[-–]?\$?\.?\d[\d,.]*%?\)?%?\*?$")
SENTENCE_PUNCT = re.compile(r"[A-Za-z)\]”\"’'][.?!](?:\s|$|[”\"’')])")
ALPHA_WORD = re.compile(r"[A-Za-z][A-Za-z’'\-]*")
# "1." never before a digit: "2.357" in a column of figures is not a list item ("5.*" is).
LIST_MARKER = re.compile(r"^(?:\(?[a-z0-9]{1,2}\)|\d{1,2}\.(?!\d)|[•\-–*]\s)")
FOLIO = re.compile(r"^(?:page\s+\d{1,3}(?:\s+of\s+\d{1,3})?|\d{1,3}\s+of\s+\d{1,3})$", re.I)
# A closing quote or bracket ends a sentence only after its punctuation or on its own: "shareholders’"
# (a possessive at a line end) does not.
TERMINAL_END = re.compile(r"(?:[.?!:;][”\"’')\]]*|(?<![A-Za-z])[’']|[”\")\]])$")
DANGLING_END = {"the", "of", "and", "to", "a", "an", "in", "for", "with", "or", "on", "by", "at", "as"}


@dataclass(slots=True)
class Line:
    """One physical line of the stream: [start, end) without its newline."""

    idx: int
    start: int
    end: int
    raw: str
    kind: str = "text"  # blank, marker, pagenum, separator, signature, header, table, text

    @property
    def text(self) -> str:
        return self.raw.strip()

    @property
    def indent(self) -> int:
        return len(self.raw) - len(self.raw.lstrip())


@dataclass(frozen=True, slots=True)
class Block:
    """A unit the chunker packs: paragraph, table, header, separator, signature or page-break marker.

    Frozen: every stage of the chunker reads the same blocks, so none may change one under another."""

    kind: str
    first: int
    last: int
    start: int
    end: int
    title: str = ""
    page_break_before: bool = False
    lines: tuple[str, ...] = ()


def split_lines(text: str) -> list[Line]:
    lines: list[Line] = []
    pos = 0
    for idx, raw in enumerate(text.split("\n")):
        lines.append(Line(idx, pos, pos + len(raw), raw))
        pos += len(raw) + 1
    return lines


def numeric_tokens(s: str) -> int:
    return sum(1 for tok in s.replace("|", " ").split() if NUMERIC_TOKEN.match(tok))


def is_aligned(s: str) -> bool:
    """Two fields apart (ALIGNED_GAP needs two spaces or a tab, checked first as substrings) or a pipe row."""
    gap = "  " in s or "\t" in s
    return (gap and bool(ALIGNED_GAP.search(s.strip()))) or s.count("|") >= 2


def has_dot_leader(s: str) -> bool:
    return bool(_DOT_LEADER_PROBE.search(s))


def is_normal_line(s: str) -> bool:
    """A normal paragraph line has >= 8 alphabetic words or sentence punctuation
    (docs/strategies.md#letter-7-finding-tables)."""
    s = s.strip()
    if not s or s.count("|") >= 2:
        return False
    if has_dot_leader(s) and numeric_tokens(s) >= 1:
        return False
    return len(ALPHA_WORD.findall(s)) >= 8 or bool(SENTENCE_PUNCT.search(s))


def is_tabular(s: str) -> bool:
    """A strong table row: a dot leader with figures, or aligned fields with two or more figures."""
    s = s.strip()
    if not s:
        return False
    if s.startswith("|") and s.count("|") >= 2:
        return numeric_tokens(s) >= 1 or set(s) <= set("|-: ")
    if has_dot_leader(s) and numeric_tokens(s) >= 1:
        return True
    return is_aligned(s) and numeric_tokens(s) >= 2  # alignment first: it is the cheap, rarer test


def _tableish(line: Line) -> bool:
    s = line.text
    if line.kind != "text" or not s:
        return False
    if is_tabular(s):
        return True
    if is_normal_line(s):
        return False
    return is_aligned(s) or numeric_tokens(s) >= 1 or len(s.split()) <= 6


def ends_sentence(s: str) -> bool:
    return bool(TERMINAL_END.search(s.rstrip()))


def skip_performance_table(lines: Sequence[Line], page_starts: set[int]) -> int:
    """Index of the first line after the opening S&P table, or 0 when there is none
    (docs/strategies.md#letter-7-finding-tables).

    The table ends at the first blank line followed by a normal paragraph line, or at the first page
    break after it (page marker, page-number line, or a page boundary), whichever comes first.
    """
    nonblank = [ln for ln in lines if ln.text][:5]
    title = next((ln for ln in nonblank if SP_TITLE.search(ln.text)), None)
    if title is None:
        return 0
    i = title.idx + 1
    while i < len(lines):
        ln = lines[i]
        if ln.text == PAGE_MARKER or (PAGE_NUMBER.match(ln.text) and not ln.text.startswith("(")):
            return i + 1
        if i in page_starts and i > title.idx + 1:
            return i
        if not ln.text:
            nxt = next((x for x in lines[i + 1 :] if x.text), None)
            if nxt is None or (is_normal_line(nxt.text) and not is_tabular(nxt.text)):
                return i + 1
        i += 1
    return len(lines)


def classify_lines(lines: Sequence[Line], begin: int) -> None:
    """Assign the line kinds that do not depend on context."""
    for ln in lines[begin:]:
        s = ln.text
        if not s:
            ln.kind = "blank"
        elif s == PAGE_MARKER:
            ln.kind = "marker"
        elif (PAGE_NUMBER.match(s) and (ln.indent >= 8 or (len(s) <= 3 and s.isdigit()))) or FOLIO.match(s):
            ln.kind = "pagenum"
        elif SEPARATOR.match(s):
            ln.kind = "separator"
        elif ("Buffett" in ln.raw and SIGNATURE.search(ln.raw) and len(s.split()) <= 8) or CHAIRMAN.match(s):
            ln.kind = "signature"


def mark_running_lines(lines: Sequence[Line], begin: int, page_starts: set[int]) -> None:
    """Running headers and footers ("BERKSHIRE HATHAWAY INC.", "Page 3 of the Annual Report") become page
    furniture: a short line that recurs, figures aside, three or more times, mostly next to a page break.
    Left as text, such a line reads as a heading and cuts the sentence it interrupts."""
    boundary = {ln.idx for ln in lines[begin:] if ln.kind in {"marker", "pagenum"}} | page_starts
    if not boundary:
        return
    groups: dict[str, list[int]] = {}
    for ln in lines[begin:]:
        s = ln.text
        if ln.kind == "text" and len(s) <= 80 and len(s.split()) <= 10 and not is_tabular(s):
            groups.setdefault(running_key(s), []).append(ln.idx)
    for idxs in groups.values():
        if len(idxs) < 3:
            continue
        near = sum(1 for i in idxs if _near(lines, i, boundary))
        if 2 * near >= len(idxs):
            for i in idxs:
                lines[i].kind = "pagenum"


def _near(lines: Sequence[Line], i: int, boundary: set[int], reach: int = 2) -> bool:
    """Whether a page boundary lies within `reach` non-blank lines of line i (either side)."""
    for step in (-1, 1):
        j, seen = i, 0
        while 0 <= j < len(lines) and seen <= reach:
            if j in boundary or (j + 1 in boundary and step == 1 and j == i):
                return True
            j += step
            if 0 <= j < len(lines) and lines[j].text:
                seen += 1
    return i in boundary


def _prev_content(lines: Sequence[Line], i: int, begin: int) -> Line | None:
    j = i - 1
    while j >= begin and lines[j].kind in {"blank"}:
        j -= 1
    return lines[j] if j >= begin else None


def _next_content(lines: Sequence[Line], i: int) -> Line | None:
    j = i + 1
    while j < len(lines) and lines[j].kind == "blank":
        j += 1
    return lines[j] if j < len(lines) else None


def header_title(line: Line) -> str | None:
    """The heading text if the line is shaped like a heading (context is checked separately)."""
    s = line.text
    md = MD_HEADING.match(s) or BOLD_HEADER.match(s)
    if md:
        return md.group("title").strip().strip("*").strip()
    if len(s) > 80 or len(s.split()) > 10 or ALIGNED_GAP.search(s):
        return None
    if not (SEED_HEADER.match(s) or LOOSE_HEADER.match(s) or INITIALS_HEADER.match(s)):
        return None
    if s.split()[-1].lower() in DANGLING_END or sum(c.isalpha() for c in s) < 0.6 * len(s.replace(" ", "")):
        return None
    return s


def detect_headers(lines: Sequence[Line], begin: int) -> None:
    """The first boundary rule (docs/strategies.md#letter-4-section-boundaries): a heading line plus a blank line; in
    letters without blank lines, a heading between a finished sentence and an indented paragraph start."""
    for i in range(begin, len(lines)):
        ln = lines[i]
        if ln.kind != "text":
            continue
        title = header_title(ln)
        if title is None:
            continue
        if MD_HEADING.match(ln.text) or BOLD_HEADER.match(ln.text):
            ln.kind = "header"
            continue
        prev = lines[i - 1] if i - 1 >= begin else None
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        prev_ok = prev is None or prev.kind in {"blank", "pagenum", "marker", "separator"} or ends_sentence(prev.raw)
        if not prev_ok:
            continue
        if nxt is None or nxt.kind in {"blank", "marker", "pagenum"}:
            after = _next_content(lines, i)
            if after is None or after.kind != "text" or not is_tabular(after.text):
                ln.kind = "header"
        elif nxt.kind == "text" and nxt.indent >= 2 and nxt.indent > ln.indent and is_normal_line(nxt.text):
            ln.kind = "header"


def detect_tables(lines: Sequence[Line], begin: int) -> list[tuple[int, int]]:
    """Table blocks as (first_line, last_line); lines inside get kind "table"
    (docs/strategies.md#letter-7-finding-tables)."""
    tables: list[tuple[int, int]] = []
    i = begin
    while i < len(lines):
        ln = lines[i]
        if ln.kind == "text" and not is_tabular(ln.text) and (i == begin or not _cell(lines[i - 1])):
            last = _cell_run(lines, i)
            if last is not None:
                for x in lines[i : last + 1]:
                    x.kind = "table"
                tables.append((i, last))
                i = last + 1
                continue
        if ln.kind != "text" or not is_tabular(ln.text):
            i += 1
            continue
        first = _extend_back(lines, i, begin)
        last = _extend_forward(lines, i)
        body = [x.text for x in lines[first : last + 1] if x.text]
        if _seed_table(body):
            for x in lines[first : last + 1]:
                if x.kind in {"text", "header"}:
                    x.kind = "table"
            tables.append((first, last))
            i = last + 1
        else:
            i += 1
    return tables


_RULE = set("-=_ ")


def _cell(line: Line) -> bool:
    """A line that can be one cell of a table extracted one cell per line: short and not prose."""
    s = line.text
    return line.kind == "text" and 0 < len(s) <= 40 and len(s.split()) <= 6 and not is_normal_line(s)


def _cell_run(lines: Sequence[Line], i: int) -> int | None:
    """Last line of a table whose cells came out one per line (text extraction that loses the columns):
    eight or more cell lines in a row, at least half of them figures or rules. The two patterns of
    docs/strategies.md#letter-7-finding-tables need two figures on a line, which such a table never has."""
    j, figures = i, 0
    while j < len(lines) and _cell(lines[j]):
        s = lines[j].text
        figures += numeric_tokens(s) >= 1 or set(s) <= _RULE
        j += 1
    rows = j - i
    return j - 1 if rows >= 8 and figures >= 4 and 2 * figures >= rows else None


def _extend_back(lines: Sequence[Line], i: int, begin: int) -> int:
    first = i
    j = i - 1
    steps = 0
    while j >= begin and steps < 8:
        x = lines[j]
        if x.kind == "blank":
            j -= 1
            steps += 1
            continue
        if not _tableish(x):
            break
        first = j
        j -= 1
        steps += 1
    return first


def _extend_forward(lines: Sequence[Line], i: int) -> int:
    last = i
    k = i + 1
    footnote = False
    while k < len(lines):
        x = lines[k]
        if x.kind == "blank":
            footnote = False
            nxt = _next_content(lines, k)
            if nxt is None or nxt.kind not in {"text", "header"} or is_normal_line(nxt.text):
                break
            k += 1
            continue
        if x.kind == "header":
            nxt = _next_content(lines, k)
            if nxt is None or nxt.kind != "text" or not is_tabular(nxt.text):
                break
        elif x.kind != "text":
            break
        elif not (_tableish(x) or footnote):
            if x.text.startswith(("*", "Note")):
                footnote = True
            else:
                break
        last = k
        k += 1
    return last


def _seed_table(body: Sequence[str]) -> bool:
    """The two deterministic patterns of docs/strategies.md#letter-7-finding-tables over >= 3 non-empty lines."""
    if len(body) < 3:
        return False
    numeric = sum(1 for s in body if numeric_tokens(s) >= 2)
    dots = any(has_dot_leader(s) for s in body)
    aligned = sum(1 for s in body if is_aligned(s))
    return (dots and numeric >= 2) or (numeric >= 3 and aligned >= 2)


def page_start_lines(lines: Sequence[Line], page_map: Sequence[PageSpan]) -> set[int]:
    """Line indices at which a new page of the stream starts (pages after the first)."""
    starts = [ln.start for ln in lines]
    found: set[int] = set()
    for span in page_map[1:]:
        idx = bisect_left(starts, span.start_char)
        if idx < len(lines):
            found.add(idx)
    return found


def build_blocks(lines: Sequence[Line], begin: int, page_starts: set[int]) -> list[Block]:
    """Group classified lines into blocks; paragraphs never break mid-sentence."""
    blocks: list[Block] = []
    para: list[Line] = []
    para_break = False
    gap = False
    pending_break = False
    i = begin
    while i < len(lines):
        ln = lines[i]
        pending_break = pending_break or i in page_starts
        kind = ln.kind
        if kind in {"blank", "pagenum", "marker"}:
            gap = True
            pending_break = pending_break or kind != "blank"
            i += 1
            continue
        if kind == "text" and para and _continues(para[-1], ln, gap, pending_break):
            para.append(ln)
            gap = False
            i += 1
            continue
        if para:
            blocks.append(_block("para", para, para_break))
            para = []
        if kind == "text":
            para, para_break = [ln], pending_break
        elif kind == "table":
            j = i
            while j + 1 < len(lines) and lines[j + 1].kind in {"table", "blank"}:
                j += 1
            while lines[j].kind == "blank":
                j -= 1
            blocks.append(_block("table", [x for x in lines[i : j + 1] if x.text], pending_break))
            i = j
        elif kind == "signature" and blocks and blocks[-1].kind == "signature":
            prev = blocks[-1]
            blocks[-1] = _block("signature", [*_lines_of(lines, prev), ln], prev.page_break_before)
        else:
            title = (header_title(ln) or "") if kind == "header" else ""
            blocks.append(_block(kind, [ln], pending_break, title=title))
        pending_break, gap = False, False
        i += 1
    if para:
        blocks.append(_block("para", para, para_break))
    return blocks


def _lines_of(lines: Sequence[Line], block: Block) -> list[Line]:
    return [x for x in lines[block.first : block.last + 1] if x.text]


def _continues(prev: Line, ln: Line, gap: bool, page_break: bool) -> bool:
    """Whether `ln` continues the paragraph ending with `prev`."""
    finished = ends_sentence(prev.raw)
    starts_lower = ln.text[:1].islower() or ln.text[:1] in {",", ";", ")"}
    if not finished:
        if page_break or starts_lower:
            return True
        return not gap
    if gap:
        return False
    if ln.indent >= 2 and ln.indent > prev.indent:
        return False
    return not LIST_MARKER.match(ln.text) or starts_lower


def _block(kind: str, lns: Sequence[Line], page_break: bool, title: str = "") -> Block:
    start = lns[0].start + lns[0].indent
    end = lns[-1].start + len(lns[-1].raw.rstrip())
    return Block(
        kind=kind,
        first=lns[0].idx,
        last=lns[-1].idx,
        start=start,
        end=end,
        title=title,
        page_break_before=page_break,
        lines=tuple(x.raw for x in lns),
    )


def analyse(text: str, page_map: Sequence[PageSpan]) -> tuple[list[Block], int]:
    """Blocks of the letter after the opening S&P table, and the char offset where chunking starts."""
    lines = split_lines(text)
    page_starts = page_start_lines(lines, page_map)
    begin = skip_performance_table(lines, page_starts)
    classify_lines(lines, begin)
    mark_running_lines(lines, begin, page_starts)
    detect_headers(lines, begin)
    detect_tables(lines, begin)
    blocks = build_blocks(lines, begin, page_starts)
    offset = lines[begin].start if begin < len(lines) else len(text)
    return blocks, offset
