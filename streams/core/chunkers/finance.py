"""Finance-aware chunking (seed 001): transcripts, earnings releases, slide decks, press releases.

Routing by `doc.doc_type`: transcript -> prepared_remarks + qna (+ a narrative Participants chunk);
release -> narrative + table; slides -> slide (+ table); press -> narrative (400-800 tokens); any other
type is read as a release. `content_type` is always the seed's chunk_type.

Structured input (`doc.elements`), kinds understood (anything else is read as a paragraph):
- "section_header": text, level (1 = top). A header containing "Q&A"/"Question" opens the Q&A part
  of a transcript; "Prepared Remarks"/"Presentation" opens prepared remarks.
- "paragraph", "text", "list_item", "bullet": narrative text.
- "speaker_segment": one speaker turn; speaker, role, firm; attrs["section"] = "prepared_remarks" | "qa"
  and attrs["turn"] = "question" | "answer" are optional hints. A turn with a firm, an analyst role or
  turn=question is a question.
- "table": element_id, title, rows (first row = header), attrs["units"], attrs["currency"].
- "slide_title": the title of the slide on its page.
- "page_header", "page_footer", "page_number": dropped (seed: strip headers/footers/page numbers).
Each element is located in the document stream by its text (from the previous element on, within its
page); an element that cannot be found gets an empty range at the current position of its page.

Plain text (no elements): transcripts in the common call-transcript layout (title line, executive
roster "Name - Title", analyst roster "Name - Firm", "Operator" and bare-name speaker lines, a
"Question-and-Answer Session" header); releases with headings, wrapped paragraphs and aligned numeric
tables; slides as one page per slide (first line = title). Repeated first/last lines of pages and bare
page numbers are dropped as headers/footers.

Transcript rules: a Q&A pair = one question turn plus every management turn up to the next question,
the next Operator turn or the end; Operator moderation inside Q&A (and a short management greeting
between the introduction and the question) is covered by the pair's range but left out of its text.
A greeting-only analyst turn folds into the same analyst's next question; a closing thank-you joins
the previous pair. When no analyst ever speaks (management reads out collected questions), the
moderator's turns that ask something are the questions (role "Moderator"). Prepared remarks never
cross a speaker change and are packed at paragraph (line) boundaries toward 500-1,200 tokens.
Narrative chunks start at their section's heading line (the heading path is also the preamble).
Text tables get `payload_ref` pointing into the document stream (`doc://{doc_id}#chars=start-end`)
because no table JSON exists for them upstream.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streams.core.chunkers.base import ChunkDraft, Chunker, ChunkingError
from streams.core.document import page_text_ranges, pages_for_range
from streams.core.events import AssembledDocument, Element
from streams.core.records import normalized_text
from streams.core.text import (
    Span,
    collapse_whitespace,
    line_spans,
    pack_spans,
    sentence_spans,
    trim_span,
    word_spans,
)
from streams.core.tokenizers import Tokenizer

CHUNK_TYPES = ("prepared_remarks", "qna", "narrative", "table", "slide")

_EXEC_HEADERS = re.compile(
    r"^(company participants|executives|company representatives|corporate participants|"
    r"management|company speakers)\s*:?$",
    re.I,
)
_ANALYST_HEADERS = re.compile(r"^(conference call participants|analysts|other participants)\s*:?$", re.I)
_QA_HEADER = re.compile(
    r"^(question[- ]and[- ]answer( session)?|questions? (and|&) answers?|q ?& ?a( session)?)\s*:?$", re.I
)
_REMARKS_HEADER = re.compile(r"^(prepared remarks|presentation|opening remarks)\s*:?$", re.I)
_ROSTER_LINE = re.compile(r"^([A-Z][\w.'’\-]*(?:\s+[A-Za-z][\w.'’\-]*){0,4})\s+[-–—]\s+(.+)$")
_SPEAKER_PREFIX = re.compile(r"^[AQ]\s+[-–—]\s+")
# A bare name line: capitalised words, where a word may end in a period only as an initial ("J."), an
# honorific or suffix ("Dr.", "Jr."), or at the very end ("Jane Doe."). "Yep. OK. Gotcha. Great." is a
# question's opening line, not a speaker.
_NAME_WORD = r"(?:[A-Z]\.|(?:Mr|Mrs|Ms|Dr|Jr|Sr|St)\.|[A-Z][\w'’\-]*)"
_NAME_LINE = re.compile(rf"^{_NAME_WORD}(?:\s+(?:{_NAME_WORD}|de|van|von|da|del|la|le)){{1,4}}\.?$")
_NOT_NAMES = frozenset(
    {
        "hey",
        "hi",
        "hello",
        "thanks",
        "thank",
        "good",
        "okay",
        "ok",
        "yes",
        "yeah",
        "sure",
        "great",
        "well",
        "so",
    }
    | {
        "and",
        "but",
        "the",
        "now",
        "next",
        "our",
        "we",
        "in",
        "on",
        "for",
        "with",
        "this",
        "that",
        "all",
        "question",
    }
)
_UNIDENTIFIED = re.compile(r"^(unidentified|unknown)\s+[a-z ]+$", re.I)
_PAGE_NUMBER = re.compile(r"^(page\s*)?[-–]?\s*\d{1,4}\s*[-–]?(\s*(of|/)\s*\d{1,4})?$", re.I)
_NUM_CELL = re.compile(r"\(?[$€£]?[-–+]?\d(?:[\d,]*\d)?(?:\.\d+)?%?\)?%?x?|[—–-]|n/?m|nm|%|\*{1,3}|bps|pts|pp", re.I)
_UNITS = re.compile(r"\b(?:in|dollars in|amounts in)\s+(thousands|millions|billions)\b", re.I)
_DOC_LABEL = re.compile(r"^(news|press|earnings) release$|^for immediate release$", re.I)
_BULLET = re.compile(r"^\s*([•·▪◦●○\-–*]|\d{1,2}[.)])\s+")
_TERMINAL = re.compile(r"[.!?:;\"”’)]$")
_QUALIFIER_START = re.compile(
    r"^(up|down|an? (increase|decrease)|compared|versus|vs\.?|excluding|including|on an? |"
    r"this (was|is|represents)|that (was|is)|or\b|which|reflecting|driven)",
    re.I,
)
_MONTH_NAMES = "january february march april may june july august september october november december"
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES.split())}
_DATE_WORDS = re.compile(
    r"\b(January|February|March|April|May|June|July|August|September|October|November|December)"
    r"\s+(\d{1,2}),\s+(\d{4})"
)
_DATE_SLASH = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_ORDINAL_Q = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_ROLE_ABBREV = (
    ("chief executive officer", "CEO"),
    ("chief financial officer", "CFO"),
    ("chief operating officer", "COO"),
    ("chief technology officer", "CTO"),
    ("investor relations", "IR"),
)


@dataclass(slots=True)
class _Table:
    table_id: str
    title: str
    rows: list[list[str]]
    units: str
    currency: str
    payload_ref: str


@dataclass(slots=True)
class _Block:
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
    table: _Table | None = None
    bullets: list[str] = field(default_factory=list)
    slide_no: int = 0


@dataclass(slots=True)
class _Context:
    """Per-document facts every draft needs (quarter, dropped lines, source info)."""

    doc: AssembledDocument
    quarter: str | None
    year: int | None
    published_date: str | None
    dropped: list[Span]
    extraction_method: str
    source_path: str


# ---------------------------------------------------------------------------------------------- dates


def _quarter_year(doc: AssembledDocument) -> tuple[str | None, int | None]:
    """Quarter ("2019-Q1") and year from metadata, then the document name, then the first lines of text."""
    meta_q = doc.metadata.get("quarter", "").strip()
    meta_y = doc.metadata.get("year", "").strip()
    year = int(meta_y) if meta_y.isdigit() else None
    q = None
    m = re.search(r"([1-4])\s*$", meta_q) if meta_q else None
    if m:
        q = int(m.group(1))
        ym = re.search(r"(19|20)\d{2}", meta_q)
        year = year or (int(ym.group(0)) if ym else None)
    if q is None or year is None:
        name = doc.document_name
        m2 = re.search(r"(?i)((?:19|20)\d{2})[\s_\-]?q([1-4])", name) or re.search(
            r"(?i)q([1-4])[\s_\-]?((?:19|20)\d{2})", name
        )
        if m2:
            a, b = m2.groups()
            yq = (int(a), int(b)) if len(a) == 4 else (int(b), int(a))
            year, q = year or yq[0], q or yq[1]
    if q is None or year is None:
        head = doc.text[:3000]
        m3 = re.search(r"\bQ([1-4])\s+(?:fiscal\s+)?((?:19|20)\d{2})\b", head) or re.search(
            r"(?i)\b(first|second|third|fourth) quarter(?: of)?(?: fiscal(?: year)?)?\s+((?:19|20)\d{2})\b",
            head,
        )
        if m3:
            qq = m3.group(1)
            q = q or (int(qq) if qq.isdigit() else _ORDINAL_Q[qq.lower()])
            year = year or int(m3.group(2))
    if year is None:
        ym = re.search(r"(?<!\d)((?:19|20)\d{2})(?!\d)", doc.document_name)
        year = int(ym.group(1)) if ym else None
    quarter = None if q is None else (f"{year}-Q{q}" if year else f"Q{q}")
    return quarter, year


def _published_date(doc: AssembledDocument) -> str | None:
    """ISO date from metadata or the first date in the opening text."""
    for key in ("published_date", "date"):
        if doc.metadata.get(key):
            return doc.metadata[key]
    head = doc.text[:1500]
    m = _DATE_WORDS.search(head)
    if m:
        return f"{int(m.group(3)):04d}-{_MONTHS[m.group(1).lower()]:02d}-{int(m.group(2)):02d}"
    m2 = _DATE_SLASH.search(head)
    if m2 and 1 <= int(m2.group(1)) <= 12 and 1 <= int(m2.group(2)) <= 31:
        return f"{int(m2.group(3)):04d}-{int(m2.group(1)):02d}-{int(m2.group(2)):02d}"
    return None


# ------------------------------------------------------------------------------------ headers/footers


def _dropped_lines(doc: AssembledDocument) -> list[Span]:
    """Page numbers and running headers/footers (first/last line repeated on many pages)."""
    pages = page_text_ranges(doc.page_map)
    text = doc.text
    edges: list[tuple[str, Span]] = []
    dropped: list[Span] = []
    for _page, start, end in pages:
        lines = [trim_span(text, s, e) for s, e in line_spans(text, start, end)]
        lines = [sp for sp in lines if sp[1] > sp[0]]
        for sp in lines:
            if _PAGE_NUMBER.match(text[sp[0] : sp[1]]):
                dropped.append(sp)
        dropped.extend(sp for sp in lines[:3] if _DOC_LABEL.match(text[sp[0] : sp[1]].strip()))
        for sp in lines[:2] + lines[-2:]:
            edges.append((re.sub(r"\d+", "#", text[sp[0] : sp[1]].lower()), sp))
    marked = {
        (e.page_number, " ".join(e.text.split()))
        for e in doc.elements
        if e.kind in ("page_header", "page_footer", "page_number") and e.text.strip()
    }
    for page, start, end in pages if marked else ():
        for sp in line_spans(text, start, end):
            ts, te = trim_span(text, *sp)
            if te > ts and (page, " ".join(text[ts:te].split())) in marked:
                dropped.append((ts, te))
    if len(pages) >= 3:
        freq = Counter(key for key, _ in edges)
        threshold = max(3, len(pages) // 2)
        dropped.extend(sp for key, sp in edges if freq[key] >= threshold and len(key) < 120)
    return sorted(set(dropped))


def _kept_lines(text: str, start: int, end: int, dropped: Sequence[Span]) -> list[Span]:
    """Trimmed non-blank lines of [start, end) that are not headers, footers or page numbers."""
    out = []
    for s, e in line_spans(text, start, end):
        ts, te = trim_span(text, s, e)
        if te <= ts:
            continue
        i = bisect_left(dropped, (ts, te))
        if i < len(dropped) and dropped[i] == (ts, te):
            continue
        out.append((ts, te))
    return out


def _clean_text(text: str, spans: Sequence[Span], joiner: str = "\n") -> str:
    return collapse_whitespace(joiner.join(text[s:e] for s, e in spans))


# ------------------------------------------------------------------------------------- transcripts


def _speaker_name(line: str) -> str:
    """'A - Jane Doe.' / 'Jane Doe - Acme Corp.' -> 'Jane Doe' (typographic apostrophes made plain)."""
    name = _SPEAKER_PREFIX.sub("", line.strip()).strip()
    m = _ROSTER_LINE.match(name)
    if m:
        name = m.group(1)
    return " ".join(name.rstrip(".").replace("’", "'").split())


def _match_name(name: str, names: Sequence[str]) -> str | None:
    """The roster name for a speaker line: exact, else a unique same-last-name entry (Jeff/Jeffrey), else a
    unique entry with the same first name and a last name differing by one letter (roster typos)."""
    if name in names:
        return name
    last = _last_name(name)
    same_last = [n for n in names if _last_name(n) == last]
    if len(same_last) == 1:
        return same_last[0]
    first = name.split()[0].lower() if name.split() else ""
    close = [n for n in names if n.split()[0].lower() == first and _one_edit(_last_name(n), last)]
    return close[0] if len(close) == 1 else None


def _one_edit(a: str, b: str) -> bool:
    """True when a and b differ by at most one inserted, deleted or replaced character."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) <= 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def _abbreviate_role(title: str) -> str:
    out = title.strip()
    for long, short in _ROLE_ABBREV:
        out = re.sub(long, short, out, flags=re.I)
    return out


@dataclass(slots=True)
class _Roster:
    executives: dict[str, str] = field(default_factory=dict)  # name -> role
    analysts: dict[str, str] = field(default_factory=dict)  # name -> firm
    end: int = 0  # index of the first line after the roster
    spans: list[Span] = field(default_factory=list)


def _parse_roster(text: str, lines: Sequence[Span]) -> _Roster:
    roster = _Roster()
    mode = ""
    for index, (s, e) in enumerate(lines[:200]):
        line = text[s:e].strip()
        if _EXEC_HEADERS.match(line):
            mode = "exec"
        elif _ANALYST_HEADERS.match(line):
            mode = "analyst"
        elif mode and line.startswith("[") and line.endswith("]"):
            continue  # transcription artefact inside a roster
        elif mode and (m := _ROSTER_LINE.match(line)):
            name, detail = " ".join(m.group(1).replace("’", "'").split()), m.group(2).strip()
            if mode == "exec":
                roster.executives[name] = _abbreviate_role(detail)
            else:
                roster.analysts[name] = detail.rstrip(".").strip()
        elif mode:
            roster.end = index
            break
        else:
            continue
        roster.spans.append((s, e))
        roster.end = index + 1
    return roster


def _is_speaker_line(line: str, roster: _Roster, known: set[str]) -> bool:
    """Speaker lines: Operator, roster names, 'A - Name', unidentified speakers, bare 2-5 word names."""
    raw = line.strip()
    name = _speaker_name(raw)
    if not name or len(raw) > 60:
        return False
    if name == "Operator" or name in known or _match_name(name, [*roster.executives, *roster.analysts]):
        return True
    if _UNIDENTIFIED.match(name) or _SPEAKER_PREFIX.match(raw):
        return True
    first = raw.split()[0].lower().strip(".,")
    return bool(_NAME_LINE.match(raw)) and not raw.endswith(("?", "!", ",")) and first not in _NOT_NAMES


def _last_name(name: str) -> str:
    parts = name.split()
    return parts[-1].lower() if parts else ""


def _firm_from_operator(operator_text: str, analyst: str) -> str:
    """The firm an Operator names when introducing this analyst ("... from Jane Doe with Acme Bank")."""
    last = _last_name(analyst)
    if not last:
        return ""
    pattern = re.compile(
        rf"{re.escape(last)}\s*(?:,\s*)?(?:from|with|of|at)\s+(?:the\s+line\s+of\s+)?"
        r"([A-Z][\w&.'’\-]*(?:\s+(?:[A-Z][\w&.'’\-]*|&|and|de|du))*)",
        re.I,
    )
    m = pattern.search(operator_text)
    return m.group(1).strip().rstrip(".") if m else ""


def _transcript_blocks(ctx: _Context) -> list[_Block]:
    """Text transcript -> participants para, speaker turns (with Q&A flags)."""
    text = ctx.doc.text
    lines = _kept_lines(text, 0, len(text), ctx.dropped)
    roster = _parse_roster(text, lines)
    blocks: list[_Block] = []
    head_end = roster.end
    if not roster.spans:
        head_end = 0
        while head_end < len(lines) and not _is_speaker_line(text[slice(*lines[head_end])], roster, set()):
            head_end += 1
    if head_end:
        blocks.append(
            _Block(
                "para",
                lines[0][0],
                lines[head_end - 1][1],
                title="Participants",
                units=list(lines[:head_end]),
            )
        )
    known: set[str] = set()
    in_qa = False
    current: _Block | None = None
    last_operator = ""
    for s, e in lines[head_end:]:
        line = text[s:e]
        if _QA_HEADER.match(line.strip()):
            in_qa, current = True, None
            continue
        if _REMARKS_HEADER.match(line.strip()):
            current = None
            continue
        if _is_speaker_line(line, roster, known):
            name = _speaker_name(line)
            known.add(name)
            current = _turn_block(name, line, (s, e), roster, last_operator, in_qa)
            blocks.append(current)
            continue
        if current is None:
            current = _Block("turn", s, e, speaker="Unknown speaker", in_qa=in_qa)
            blocks.append(current)
        current.units.append((s, e))
        current.end = e
        if current.is_operator:
            last_operator = text[current.start : current.end]
    _mark_first_question(blocks)
    _mark_moderated_questions(text, blocks)
    return blocks


def _turn_block(name: str, line: str, span: Span, roster: _Roster, operator_text: str, in_qa: bool) -> _Block:
    """A speaker turn: Operator, an executive (roster role) or, in Q&A, an analyst (roster firm)."""
    block = _Block("turn", span[0], span[1], speaker=name, in_qa=in_qa)
    prefix = line.strip()[:1] if _SPEAKER_PREFIX.match(line.strip()) else ""
    if name == "Operator":
        block.is_operator, block.role = True, "Operator"
        return block
    executive = _match_name(name, list(roster.executives)) if prefix != "Q" else None
    analyst = _match_name(name, list(roster.analysts)) if prefix != "A" else None
    if executive and analyst != name:
        block.speaker, block.role = executive, roster.executives[executive]
        return block
    if analyst or prefix == "Q" or (in_qa and prefix != "A" and not re.match(r"(?i)unidentified company", name)):
        block.is_analyst, block.role = True, "Analyst"
        block.speaker = analyst or name
        block.firm = roster.analysts.get(analyst or "", "") or _firm_from_operator(operator_text, name)
    return block


def _mark_first_question(blocks: list[_Block]) -> None:
    """Without a Q&A header the Q&A starts at the first analyst (question) turn."""
    if any(b.in_qa for b in blocks):
        return
    started = False
    for block in blocks:
        if block.kind == "turn" and block.is_analyst:
            started = True
        if started and block.kind == "turn":
            block.in_qa = True


def _mark_moderated_questions(text: str, blocks: list[_Block]) -> None:
    """A Q&A where management reads out collected questions (no analyst ever speaks): the moderator's
    turns that ask something become the questions, attributed to the moderator with role "Moderator"."""
    qa_turns = [b for b in blocks if b.kind == "turn" and b.in_qa and not b.is_operator]
    if not qa_turns or any(b.is_analyst for b in qa_turns):
        return
    moderator = qa_turns[0].speaker
    for block in qa_turns:
        if block.speaker == moderator and "?" in text[_body(block)[0] : _body(block)[1]]:
            block.is_analyst, block.role = True, "Moderator"


# ------------------------------------------------------------------------------ releases (plain text)


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
    if not words or len(words) > 10 or len(s) > 90 or _TERMINAL.search(s) or _BULLET.match(s):
        return False
    if not s[0].isupper() or _numeric_row(s) or re.search(r"\d{2,}", s) or _DOC_LABEL.match(s):
        return False
    small = {"and", "of", "the", "for", "in", "to", "a", "an", "on", "by", "with", "&", "-", "–"}
    caps = sum(1 for w in words if w[0].isupper() or w.lower() in small or not w[0].isalpha())
    return (caps == len(words) and len(words) >= 2) or (s.isupper() and len(s) >= 4)


def _release_blocks(ctx: _Context) -> list[_Block]:
    """Plain-text release -> headings, paragraphs and aligned numeric tables.

    Tables are found first (runs of numeric rows), then up to six short lines above each are taken as
    its caption (title, units, period headers), so the caption never ends up as a stray paragraph.
    """
    text = ctx.doc.text
    lines = _kept_lines(text, 0, len(text), ctx.dropped)
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
    blocks: list[_Block] = []
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
            blocks.append(_Block("heading", s, e, title=" ".join(line.split()), level=1 if line.isupper() else 2))
            index += 1
            continue
        para = blocks[-1] if blocks and blocks[-1].kind == "para" and blocks[-1].title == "open" else None
        if para is None or _BULLET.match(line):
            para = _Block("para", s, e, title="open")
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
        if len(line) > 100 or line.endswith(".") or _BULLET.match(line):
            break
        start -= 1
    return start


def _text_table(
    ctx: _Context, lines: Sequence[Span], title_start: int, index: int, end: int, table_no: int
) -> list[_Block]:
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
    table = _Table(
        table_id=table_id,
        title=title,
        rows=rows,
        units=_units(blob),
        currency=_currency(blob),
        payload_ref=f"doc://{ctx.doc.doc_id}#chars={start}-{stop}",
    )
    return [_Block("table", start, stop, title=title, table=table)]


def _caption_like(line: str) -> bool:
    """A table caption: two or more words, no units line, not just a date or period header."""
    words = re.findall(r"[A-Za-z]{2,}", line)
    if len(words) < 2 or _UNITS.search(line) or line.startswith("("):
        return False
    return not all(w.lower() in _MONTHS or w.lower() in _PERIOD_WORDS for w in words)


_PERIOD_WORDS = frozenset({"three", "six", "nine", "twelve", "months", "weeks", "ended", "ending", "quarter", "year"})


def _units(blob: str) -> str:
    m = _UNITS.search(blob)
    return m.group(1).lower() if m else ""


def _currency(blob: str) -> str:
    for sign, code in (("$", "USD"), ("€", "EUR"), ("£", "GBP"), ("¥", "JPY")):
        if sign in blob:
            return code
    m = re.search(r"\b(USD|EUR|GBP|JPY|CHF|CAD|AUD)\b", blob)
    return m.group(1) if m else ""


# --------------------------------------------------------------------------------------- elements


def _locate(text: str, needle: str, cursor: int, page_range: tuple[int, int]) -> Span:
    """Range of an element's text in the stream, searched from `cursor` within its page."""
    lo = max(cursor, page_range[0])
    probe = needle.strip()
    for candidate in (probe, probe.split("\n")[0][:80]):
        if candidate:
            found = text.find(candidate, lo, page_range[1])
            if found >= 0:
                return found, found + (len(probe) if candidate == probe else len(candidate))
    return lo, lo


def _element_blocks(ctx: _Context) -> list[_Block]:
    """Structured elements -> blocks with stream ranges, in reading order."""
    doc = ctx.doc
    pages = {p: (s, e) for p, s, e in page_text_ranges(doc.page_map)}
    cursor = 0
    in_qa = False
    blocks: list[_Block] = []
    table_no = 0
    for element in doc.elements:
        kind = element.kind.lower()
        if kind in ("page_header", "page_footer", "page_number"):
            continue
        page_range = pages.get(element.page_number or 1, (0, len(doc.text)))
        needle = element.text or element.title or (element.rows[0][0] if element.rows and element.rows[0] else "")
        s, e = _locate(doc.text, needle, cursor, page_range)
        cursor = max(cursor, e)
        if kind == "section_header":
            title = " ".join((element.text or element.title or "").split())
            in_qa = bool(re.search(r"(?i)q ?& ?a|question", title)) or (in_qa and not _REMARKS_HEADER.match(title))
            blocks.append(_Block("heading", s, e, title=title, level=element.level or 1))
        elif kind == "speaker_segment":
            blocks.append(_element_turn(element, s, e, in_qa))
        elif kind == "table":
            table_no += 1
            blocks.append(_element_table(ctx, element, s, e, table_no))
        elif kind == "slide_title":
            blocks.append(_Block("heading", s, e, title=" ".join(element.text.split()), level=1))
        else:
            blocks.append(_Block("para", s, e, units=[(s, e)] if e > s else []))
    return blocks


def _element_turn(element: Element, s: int, e: int, in_qa: bool) -> _Block:
    section = element.attrs.get("section", "").lower()
    qa = section in ("qa", "q&a", "qna", "questions") or (in_qa and section != "prepared_remarks")
    role = element.role or ""
    speaker = element.speaker or "Unknown speaker"
    analyst = bool(element.firm) or "analyst" in role.lower() or element.attrs.get("turn") == "question"
    return _Block(
        "turn",
        s,
        e,
        speaker=speaker,
        role=_abbreviate_role(role) if role else ("Analyst" if analyst else ""),
        firm=element.firm or "",
        is_analyst=analyst,
        is_operator=speaker.lower() == "operator",
        in_qa=qa,
        units=[(s, e)] if e > s else [],
    )


def _element_table(ctx: _Context, element: Element, s: int, e: int, table_no: int) -> _Block:
    page = element.page_number or 1
    table_id = element.element_id or f"tbl_p{page}_{table_no:02d}"
    blob = " ".join([element.title or "", element.text, *(" ".join(r) for r in element.rows[:3])])
    table = _Table(
        table_id=table_id,
        title=element.title or element.text.split("\n")[0][:120],
        rows=[list(r) for r in element.rows],
        units=element.attrs.get("units", "") or _units(blob),
        currency=element.attrs.get("currency", "") or _currency(blob),
        payload_ref=f"elements/{ctx.doc.doc_id}/tables/{table_id}.json",
    )
    return _Block("table", s, e, title=table.title, table=table)


@dataclass(slots=True)
class _Pair:
    """One question (possibly with a leading pleasantry) and every answer up to the next question."""

    start: int
    question: _Block
    answers: list[_Block] = field(default_factory=list)
    lead: list[_Block] = field(default_factory=list)
    lead_answers: list[_Block] = field(default_factory=list)  # management remarks before the question

    @property
    def questions(self) -> list[_Block]:
        return [*self.lead, self.question]


def _is_pleasantry(text: str, turn: _Block) -> bool:
    """A short analyst turn without a question mark ("Thanks, good morning.")."""
    said = text[_body(turn)[0] : _body(turn)[1]]
    return "?" not in said and len(said.split()) < 25


def _merge_pleasantries(text: str, pairs: list[_Pair]) -> list[_Pair]:
    """Fold greeting and thank-you exchanges into the same analyst's real question.

    A greeting pair followed by the same analyst's next turn joins that pair (its answers stay in
    order); a closing thank-you without answers joins the analyst's previous pair.
    """
    out: list[_Pair] = []
    carry: _Pair | None = None
    for pair in pairs:
        if carry is not None and carry.question.speaker == pair.question.speaker:
            pair = _Pair(carry.start, pair.question, [*carry.answers, *pair.answers], [*carry.lead, carry.question])
            carry = None
        elif carry is not None:
            out.append(carry)
            carry = None
        closing = not pair.answers and _is_pleasantry(text, pair.question)
        if closing and out and out[-1].question.speaker == pair.question.speaker:
            out[-1].answers.append(pair.question)
            continue
        if _is_pleasantry(text, pair.question) and all(_is_pleasantry(text, a) for a in pair.answers):
            carry = pair
            continue
        out.append(pair)
    if carry is not None:
        out.append(carry)
    return out


def _qa_count(drafts: list[ChunkDraft]) -> int:
    return sum(1 for d in drafts if d.content_type == "qna")


# ----------------------------------------------------------------------------------------- chunker


class FinanceChunker(Chunker):
    name = "finance"
    version = "1.0.0"
    metadata_record = "streams.meta.FinanceMetadata"

    def __init__(
        self,
        tokenizer: Tokenizer,
        min_tokens: int = 500,
        max_tokens: int = 1200,
        press_min_tokens: int = 400,
        press_max_tokens: int = 800,
        synopsis_rows: int = 4,
    ) -> None:
        super().__init__(tokenizer)
        if not (0 < min_tokens <= max_tokens and 0 < press_min_tokens <= press_max_tokens):
            raise ValueError("need 0 < min_tokens <= max_tokens for both ranges")
        self.min_tokens, self.max_tokens = min_tokens, max_tokens
        self.press_min, self.press_max = press_min_tokens, press_max_tokens
        self.synopsis_rows = synopsis_rows

    # -- entry point

    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        if not doc.text.strip() and not doc.elements:
            return []
        quarter, year = _quarter_year(doc)
        ctx = _Context(
            doc=doc,
            quarter=quarter,
            year=year,
            published_date=_published_date(doc),
            dropped=_dropped_lines(doc),
            extraction_method="elements" if doc.elements else doc.metadata.get("extraction_method", "text"),
            source_path=doc.metadata.get("source_path", f"raw/{doc.doc_id}/{doc.document_name}"),
        )
        kind = str(doc.doc_type)
        if kind == "transcript":
            blocks = _element_blocks(ctx) if doc.elements else _transcript_blocks(ctx)
            if not any(b.kind == "turn" for b in blocks):
                raise ChunkingError(
                    "transcript has no speaker turns (no roster, Operator or speaker lines)", "no_speakers"
                )
            drafts = self._transcript(ctx, blocks)
        elif kind == "slides":
            drafts = self._slides(ctx)
        else:
            blocks = _element_blocks(ctx) if doc.elements else _release_blocks(ctx)
            bounds = (self.press_min, self.press_max) if kind == "press" else (self.min_tokens, self.max_tokens)
            drafts = self._narrative(ctx, blocks, *bounds)
        return [self._finalise(ctx, d, order) for order, d in enumerate(drafts)]

    # -- transcripts

    def _transcript(self, ctx: _Context, blocks: list[_Block]) -> list[ChunkDraft]:
        """Participants, prepared remarks per speaker, then Q&A pairs, all in reading order.

        Operator moderation in the Q&A and management greetings between an introduction and the
        analyst's question are covered by the next pair's range; a moderation that no question follows
        is covered by the next remarks chunk (or the last chunk at the end of the call).
        """
        text = ctx.doc.text
        drafts: list[ChunkDraft] = []
        pending: list[_Block] = []  # same-speaker turns waiting to become prepared remarks
        pairs: list[_Pair] = []
        held: list[_Block] = []  # management turns after an Operator introduction, before the question
        moderation: int | None = None  # start of Operator moderation not yet attached to a chunk

        def flush_remarks() -> None:
            if pending:
                drafts.extend(self._remarks(ctx, pending))
                pending.clear()

        def flush_pairs() -> None:
            for number, pair in enumerate(_merge_pleasantries(text, pairs), start=_qa_count(drafts) + 1):
                drafts.append(self._qna(ctx, pair, number))
            pairs.clear()

        def to_remarks(turn: _Block) -> None:
            nonlocal moderation
            if moderation is not None:
                turn.start, moderation = min(turn.start, moderation), None
            if pending and pending[-1].speaker != turn.speaker:
                flush_remarks()
            pending.append(turn)

        def release_held() -> None:
            flush_pairs()
            for turn in held:
                to_remarks(turn)
            held.clear()

        for block in blocks:
            if block.kind == "heading":
                continue
            if block.kind in ("para", "table"):
                release_held()
                flush_remarks()
                base = (block.title,) if block.kind == "para" and block.title else ()
                drafts.extend(self._narrative(ctx, [block], self.min_tokens, self.max_tokens, base))
            elif block.in_qa and block.is_operator:
                release_held()
                flush_remarks()
                moderation = block.start if moderation is None else moderation
            elif block.in_qa and block.is_analyst:
                flush_remarks()
                start = block.start if moderation is None else moderation
                greeting = [h for h in held if not _is_pleasantry(text, h)]
                pairs.append(_Pair(min([start, *(h.start for h in held)]), block, [], []))
                pairs[-1].lead_answers = greeting
                held.clear()
                moderation = None
            elif block.in_qa and moderation is not None:
                held.append(block)
            elif block.in_qa and pairs:
                pairs[-1].answers.append(block)
            else:
                release_held()
                to_remarks(block)
        release_held()
        flush_remarks()
        if moderation is not None and drafts:
            drafts[-1] = _extend(drafts[-1], text, moderation)
        return drafts

    def _remarks(self, ctx: _Context, turns: list[_Block]) -> list[ChunkDraft]:
        """Prepared remarks of one speaker: paragraph-packed to min..max tokens, never across speakers."""
        text = ctx.doc.text
        first = turns[0]
        units = [u for t in turns for u in t.units]
        path = ("Q&A",) if first.in_qa else ("Prepared Remarks",)
        label = f"Speaker: {first.speaker}" + (f" ({first.role})" if first.role else "")
        if not units:
            return []
        out = []
        for s, e in pack_spans(text, units, self.tokenizer.count, self.min_tokens, self.max_tokens):
            body = _clean_text(text, _kept_lines(text, s, e, ctx.dropped))
            out.append(
                ChunkDraft(
                    # The speaker line itself belongs to the first chunk's range.
                    text=f"{label}\n{body}",
                    char_start=min(s, first.start) if not out else s,
                    char_end=e,
                    section_path=path,
                    content_type="prepared_remarks",
                    metadata={"speaker": first.speaker, "role": first.role or None},
                    identity=(first.speaker,),
                    text_transform="speaker_preamble",
                )
            )
        return out

    def _qna(self, ctx: _Context, pair: _Pair, qa_no: int) -> ChunkDraft:
        """`Question (Analyst, Firm): ...\nAnswer(s): Speaker1: ...; Speaker2: ...` for one exchange."""
        text = ctx.doc.text

        def said(turns: list[_Block]) -> str:
            return " ".join(_clean_text(text, _kept_lines(text, *_body(t), ctx.dropped), " ") for t in turns)

        question = pair.questions[0]
        parts = [f"{a.speaker}: {said([a])}" for a in [*pair.lead_answers, *pair.answers]]
        who = ", ".join(x for x in (question.speaker, question.firm) if x)
        qa_id = f"qa_{qa_no:03d}"
        speakers: list[str] = []
        for a in [*pair.lead_answers, *pair.answers]:
            if a.speaker not in speakers and not a.is_analyst:
                speakers.append(a.speaker)
        return ChunkDraft(
            text=f"Question ({who}): {said(pair.questions)}\nAnswer(s): " + "; ".join(parts),
            char_start=pair.start,
            char_end=max(b.end for b in [*pair.questions, *pair.answers, *pair.lead_answers]),
            section_path=("Q&A",),
            content_type="qna",
            metadata={
                "qa_id": qa_id,
                "analyst_name": question.speaker,
                "firm": question.firm or None,
                "answer_speakers": speakers,
            },
            identity=(qa_id,),
            text_transform="qna_format",
        )

    # -- releases, press and anything narrative

    def _narrative(
        self,
        ctx: _Context,
        blocks: list[_Block],
        min_tokens: int,
        max_tokens: int,
        base_path: tuple[str, ...] = (),
    ) -> list[ChunkDraft]:
        drafts: list[ChunkDraft] = []
        stack: list[tuple[int, str]] = []
        units: list[Span] = []
        text = ctx.doc.text

        def path() -> tuple[str, ...]:
            return base_path + tuple(t for _, t in stack)

        heading_start: list[int] = []  # first heading line not yet covered by a chunk range

        def covered(draft: ChunkDraft) -> ChunkDraft:
            """The first chunk after headings also covers the heading lines (they are in its preamble)."""
            if heading_start and heading_start[0] < draft.char_start:
                draft = ChunkDraft(**{**_fields(draft), "char_start": heading_start[0]})
            heading_start.clear()
            return draft

        def flush() -> None:
            if units:
                chunks = self._narrative_chunks(ctx, units, path(), min_tokens, max_tokens)
                if chunks:
                    chunks[0] = covered(chunks[0])
                drafts.extend(chunks)
                units.clear()

        for block in blocks:
            if block.kind == "heading":
                flush()
                while stack and stack[-1][0] >= block.level:
                    stack.pop()
                stack.append((block.level, block.title))
                if not heading_start:
                    heading_start.append(block.start)
                continue
            if block.kind == "table" and block.table is not None:
                flush()
                drafts.append(covered(self._table(ctx, block, path())))
                continue
            if block.kind == "turn":
                flush()
                drafts.extend(self._remarks(ctx, [block]))
                continue
            units.extend(u for u in block.units if u[1] > u[0])
        flush()
        if not drafts and text.strip():
            raise ChunkingError("no retrievable content found in the document", "empty_content")
        return drafts

    def _narrative_chunks(
        self, ctx: _Context, units: list[Span], path: tuple[str, ...], lo: int, hi: int
    ) -> list[ChunkDraft]:
        text = ctx.doc.text
        preamble = f"Section: {' > '.join(path)}\n" if path else ""
        budget = max(1, hi - self.tokenizer.count(preamble))
        out = []
        splitters = (_qualified_sentences, word_spans)
        for s, e in pack_spans(text, units, self.tokenizer.count, min(lo, budget), budget, splitters):
            body = _clean_text(text, _kept_lines(text, s, e, ctx.dropped))
            if not body:
                continue
            out.append(
                ChunkDraft(
                    text=preamble + body,
                    char_start=s,
                    char_end=e,
                    section_path=path,
                    content_type="narrative",
                    text_transform=_transform(preamble, body != text[s:e]),
                )
            )
        return out

    def _table(self, ctx: _Context, block: _Block, path: tuple[str, ...]) -> ChunkDraft:
        table = block.table
        assert table is not None
        return ChunkDraft(
            text=self._synopsis(ctx, table, path),
            char_start=block.start,
            char_end=block.end,
            section_path=path,
            content_type="table",
            metadata={
                "table_id": table.table_id,
                "table_title": table.title or None,
                "units": table.units or None,
                "currency": table.currency or None,
                "payload_ref": table.payload_ref,
            },
            identity=(table.table_id,),
            text_transform="table_synopsis",
        )

    def _synopsis(self, ctx: _Context, table: _Table, path: tuple[str, ...]) -> str:
        """`Table: quarter title (units, currency)` + the first rows: enough to retrieve, not the table."""
        label = " ".join(x for x in (ctx.quarter or "", table.title or (path[-1] if path else "Table")) if x)
        scale = ", ".join(x for x in (table.units, table.currency) if x)
        head = f"Table: {label}" + (f" ({scale})" if scale else "")
        body_rows = [r for r in table.rows if any(c.strip() for c in r)]
        lines = [head]
        for row in body_rows[: self.synopsis_rows]:
            cells = [" ".join(c.split()) for c in row if c.strip()]
            if cells:
                lines.append("- " + ": ".join([cells[0], " | ".join(cells[1:])]) if len(cells) > 1 else "- " + cells[0])
        if len(body_rows) > self.synopsis_rows:
            lines.append(f"({len(body_rows)} rows in total)")
        return "\n".join(lines)

    # -- slides

    def _slides(self, ctx: _Context) -> list[ChunkDraft]:
        doc = ctx.doc
        drafts: list[ChunkDraft] = []
        titles = {e.page_number: e.text for e in doc.elements if e.kind == "slide_title" and e.text.strip()}
        tables = [e for e in doc.elements if e.kind == "table"]
        table_no = 0
        for page, start, end in page_text_ranges(doc.page_map):
            lines = _kept_lines(doc.text, start, end, ctx.dropped)
            title = " ".join(titles.get(page, "").split())
            bullets = [_BULLET.sub("", doc.text[s:e]).strip() for s, e in lines]
            if not title and bullets:
                title = bullets.pop(0)
            elif title and bullets and " ".join(bullets[0].split()) == title:
                bullets.pop(0)
            if title or bullets:
                s0, e0 = (lines[0][0], lines[-1][1]) if lines else (start, start)
                drafts.append(
                    ChunkDraft(
                        text="\n".join([f"Slide: {title}", *(f"- {' '.join(b.split())}" for b in bullets if b)]),
                        char_start=s0,
                        char_end=e0,
                        section_path=(title,) if title else (),
                        content_type="slide",
                        metadata={"slide_no": page, "image_ref": f"pages/{doc.doc_id}/{page:04d}.png"},
                        identity=(str(page),),
                        text_transform="slide_format",
                    )
                )
            for element in (t for t in tables if (t.page_number or 1) == page):
                table_no += 1
                s, e = _locate(doc.text, element.text or element.title or "", start, (start, end))
                block = _element_table(ctx, element, s, e, table_no)
                drafts.append(self._table(ctx, block, (title,) if title else ()))
        return drafts

    # -- common metadata

    def _finalise(self, ctx: _Context, draft: ChunkDraft, order: int) -> ChunkDraft:
        doc = ctx.doc
        pages = pages_for_range(doc.page_map, draft.char_start, draft.char_end) or [1]
        meta: dict[str, Any] = {key: None for key in _OPTIONAL_KEYS}
        meta.update(
            {
                "chunk_type": draft.content_type,
                "doc_type": str(doc.doc_type),
                "quarter": ctx.quarter,
                "year": ctx.year,
                "section_path": list(draft.section_path),
                "answer_speakers": [],
                "page_start": pages[0],
                "page_end": pages[-1],
                "source_path": ctx.source_path,
                "extraction_method": ctx.extraction_method,
                "published_date": ctx.published_date,
                "order": order,
            }
        )
        meta.update(draft.metadata)
        ident = "|".join(draft.identity)
        meta["seed_chunk_id"] = hashlib.sha256(
            "|".join(
                [
                    doc.doc_id,
                    draft.content_type,
                    " > ".join(draft.section_path),
                    str(pages[0]),
                    str(pages[-1]),
                    ident,
                    normalized_text(draft.text),
                ]
            ).encode("utf-8", "surrogatepass")
        ).hexdigest()
        return ChunkDraft(**{**_fields(draft), "metadata": meta})


_OPTIONAL_KEYS = (
    "speaker",
    "role",
    "qa_id",
    "analyst_name",
    "firm",
    "table_id",
    "table_title",
    "units",
    "currency",
    "slide_no",
    "image_ref",
    "payload_ref",
)


def _fields(draft: ChunkDraft) -> dict[str, Any]:
    return {
        "text": draft.text,
        "char_start": draft.char_start,
        "char_end": draft.char_end,
        "section_path": draft.section_path,
        "content_type": draft.content_type,
        "metadata": draft.metadata,
        "identity": draft.identity,
        "text_transform": draft.text_transform,
    }


def _extend(draft: ChunkDraft, text: str, start: int) -> ChunkDraft:
    """Stretch the last chunk over trailing Operator moderation (closing remarks of the call)."""
    end = trim_span(text, start, len(text))[1]
    return ChunkDraft(**{**_fields(draft), "char_end": max(draft.char_end, end)})


def _body(turn: _Block) -> Span:
    """A turn without its speaker line."""
    if not turn.units:
        return turn.end, turn.end
    return turn.units[0][0], turn.units[-1][1]


def _qualified_sentences(text: str, start: int, end: int) -> list[Span]:
    """Sentences, with a sentence that qualifies a numeric one (`Up 5% YoY.`) glued to it."""
    out: list[Span] = []
    for s, e in sentence_spans(text, start, end):
        if out and re.search(r"\d", text[out[-1][0] : out[-1][1]]) and _QUALIFIER_START.match(text[s:e]):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _transform(preamble: str, cleaned: bool) -> str | None:
    """Name what was done to the source slice: a preamble line, and/or headers dropped and whitespace cleaned."""
    parts = (["section_preamble"] if preamble else []) + (["cleaned"] if cleaned else [])
    return "+".join(parts) or None
