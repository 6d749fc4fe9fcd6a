"""Structure-based section chunking for solicitations (seed 002).

Phase 1: headings are detected line by line (Markdown `#`, `SECTION 1:` / `ARTICLE II` / `PART 3`
style labels, numbered titles such as `1.2 Title`, short ALL-CAPS lines, short lines ending in a colon).
Each section (heading plus body) is classified by keywords into requirement, specification, condition,
evaluation_criteria, scope_of_work or other: keywords in the heading decide; otherwise the body keyword
with the most hits (at least two) decides. A section of at most `max_tokens` is one chunk; a longer one
is packed at paragraph boundaries toward `min_tokens`..`max_tokens`, refining to sentences, then words.
Phase 2: `requirement_flag` is set when the chunk text contains shall/must/required/requirement/mandatory
(or the chunk is part of a sentence that does). Tables (pipe tables, tab-separated rows, aligned
numeric columns, CLIN / line item rows) are cut out of the prose as their own chunks with
`is_table=True` and `table_kind` "pricing_table" when pricing, CLIN or line item wording is present;
sinks keep them out of the vector store.
Phase 3: without any heading the paragraph fallback packs paragraphs to the same token bounds.
`is_critical` = the section is a requirement or evaluation_criteria section, or the chunk carries the
requirement flag: the chunks a bid team must not miss.
File filtering (`file_filter_decision`) is a pure function the agent applies at publish time.
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from streams.core.chunkers.base import ChunkDraft, Chunker
from streams.core.events import AssembledDocument
from streams.core.options import SectionOptions
from streams.core.text import (
    ALIGNED_GAP,
    FOLD_TRAPS,
    MD_HEADING,
    Span,
    line_spans,
    pack_spans,
    paragraph_spans,
    running_key,
    sentence_spans,
    trim_span,
)
from streams.core.tokenizers import SpanCount, Tokenizer, span_counter

SECTION_TYPES = ("requirement", "specification", "condition", "evaluation_criteria", "scope_of_work", "other")

# Priority order matters on ties: the more specific types first.
_TYPE_WORDS: dict[str, str] = {
    "evaluation_criteria": r"evaluation|evaluated|criteria|criterion|scoring",
    "scope_of_work": r"scope|statement of work|sow|performance work statement|pws|statement of objectives|soo"
    r"|work to be performed",
    "specification": r"specifications?|specs?|technical spec\w*",
    "requirement": r"requirements?|shall|must",
    "condition": r"conditions?|terms|clauses?",
}
_TYPE_KEYWORDS: dict[str, re.Pattern[str]] = {
    kind: re.compile(rf"\b({words})\b", re.I) for kind, words in _TYPE_WORDS.items()
}
# One pass over the lowered body counts every type (no keyword of one type overlaps another's), and the
# first-letter lookahead skips most positions; re.I is slow in Python's re.
_TYPE_ANY = re.compile(
    r"(?=[cemprstw])\b(?:" + "|".join(f"(?P<{kind}>{words})" for kind, words in _TYPE_WORDS.items()) + r")\b"
)
_REQUIREMENT = re.compile(r"\b(shall|must|required|requirements?|mandatory)\b", re.I)
_REQUIREMENT_LOW = re.compile(_REQUIREMENT.pattern)  # the same on lowered text
_EDGE = len("requirements") + 1  # an edge window: the longest requirement word plus the character after it
# Section-type keywords plus the requirement words that are no type keyword: on the lowered text, the
# "requirement" group and `_FLAG_ONLY` together find exactly what `_REQUIREMENT` finds.
_FLAG_ONLY = "flag_only"
_FLAG_GROUPS = frozenset({"requirement", _FLAG_ONLY})
_KEYWORDS_LOW = re.compile(
    r"(?=[cemprstw])\b(?:"
    + "|".join(f"(?P<{kind}>{words})" for kind, words in _TYPE_WORDS.items())
    + rf"|(?P<{_FLAG_ONLY}>required|mandatory))\b"
)
_PRICING = re.compile(r"\b(pricing|price schedule|clins?|line items?)\b", re.I)
_REFERENCE_HEADING = re.compile(
    r"^[\W\d.]*(?:[A-Z]\.\d*\s+)?"
    r"(?:glossary|abbreviations|acronyms|table of contents|list of attachments|attachments)\b",
    re.I,
)
# A running header or footer ("PWS / Dated: 05.05.04") repeats on every page: its keywords say nothing
# about the section it interrupts.
_RUNNING_MIN_REPEATS = 3
# Seed 002 phase 2, as written: a chunk that contains `|`, a tab, pricing, CLIN or line item is a table.
_SEED_TABLE = re.compile(r"[|\t]|\b(?:pricing|clin|line item)\b", re.I)
_SHALL = re.compile(r"\b(?:shall|must)\b", re.I)


def _leading_literal(alternative: str) -> str:
    """The text every match of a keyword alternative starts with ("specifications?" -> "specification")."""
    for index, char in enumerate(alternative):
        if char in "?*":
            return alternative[: index - 1]
        if char in "\\+([{.|":
            return alternative[:index]
    return alternative


_KEYWORD_LITERALS = tuple(
    sorted({_leading_literal(a) for words in (*_TYPE_WORDS.values(), "required|mandatory") for a in words.split("|")})
)


def _keyword_matches(low: str) -> list[re.Match[str]]:
    """`list(_KEYWORDS_LOW.finditer(low))`, trying the pattern only where one of its alternatives can begin.

    Every alternative starts with a literal, so a match can only start where one occurs; finditer tries
    every position from the end of its last match on, and so does this, over those positions only.
    """
    starts: set[int] = set()
    for literal in _KEYWORD_LITERALS:
        at = low.find(literal)
        while at >= 0:
            starts.add(at)
            at = low.find(literal, at + 1)
    found: list[re.Match[str]] = []
    resume = 0
    for at in sorted(starts):
        if at < resume:
            continue
        match = _KEYWORDS_LOW.match(low, at)
        if match:
            found.append(match)
            resume = match.end()
    return found


_LABEL_WORDS = ("SECTION", "ARTICLE", "PART", "ATTACHMENT", "APPENDIX", "EXHIBIT", "ANNEX", "CHAPTER")
_LABEL_HEADING = re.compile(
    rf"^({'|'.join(_LABEL_WORDS)})\s+[0-9IVXLC]+[A-Z]?(\.[0-9]+)*\b[.:\-–—]?",
    re.I,
)
_NUMBERED_HEADING = re.compile(r"^((?:[A-Z]\.)?(?:\d{1,3}\.)*\d{1,3})\.?\)?\s+([A-Z][^\n]*)$")
_BOLD_LEAD = re.compile(r"\s*\*\*([^*\n]{2,120}?)\*\*")  # used with match(text, pos): anchored at pos
_SETEXT_RULE = re.compile(r"^(=+|-+)$")
_ENUMERATED = re.compile(r"^(?:[A-Z]\.)?\d{1,3}(?:\.\d{1,3})*\.?\s|^[A-Z]\.\s|^(SECTION|ARTICLE|PART)\b", re.I)
_LETTERED_HEADING = re.compile(r"^([A-Z])\.\s+([A-Z][^\n]*)$")
_NUMERIC_CELL = re.compile(r"^[($\-–]?\$?\s?\d[\d,]*(\.\d+)?%?\)?$")
_CLIN_ROW = re.compile(r"^\s*(CLIN\s*)?\d{4}[A-Z]{0,2}\b")
_LETTERS = re.compile(r"[^\W\d_]")

_INCLUDE = (
    "scope",
    "requirement",
    "specification",
    "solicitation",
    "terms",
    "condition",
    "work",
    "technical",
    "statement",
    "criteria",
    "evaluation",
)
# Acronyms of the included words (statement of work, performance work statement, objectives, RFx).
_INCLUDE_ACRONYMS = ("sow", "pws", "soo", "rfp", "rfq", "rfi")
_EXCLUDE = ("questionnaire", "form", "template", "blank", "example", "sample")


def _name_words(document_name: str) -> list[str]:
    """Words of a file name: split at non-letters and at lower->Upper case changes."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", document_name)
    return [w.lower() for w in re.split(r"[^A-Za-z]+", spaced) if w]


def file_filter_decision(document_name: str) -> tuple[bool, str]:
    """Seed 002 file filter: (allowed, reason). Excludes win over includes; words match by prefix."""
    words = _name_words(document_name)
    for word in words:
        for bad in _EXCLUDE:
            if word in (bad, bad + "s"):
                return False, f"excluded: file name contains '{bad}'"
    for word in words:
        for good in _INCLUDE:
            if word.startswith(good):
                return True, f"included: file name contains '{good}'"
        if word in _INCLUDE_ACRONYMS:
            return True, f"included: file name contains '{word}'"
    return False, "excluded: file name has none of the include keywords"


@dataclass(frozen=True, slots=True)
class _Heading:
    start: int
    end: int
    title: str
    level: int


@dataclass(frozen=True, slots=True)
class _Sentences:
    """A paragraph's sentence spans with their starts and ends (for bisecting)."""

    spans: list[Span]
    starts: list[int]
    ends: list[int]


def _running_lines(text: str) -> list[Span]:
    """Spans of short lines that recur, figures aside, three or more times: page headers and footers."""
    seen: dict[str, list[Span]] = {}
    for start, end in line_spans(text, 0, len(text)):
        line = text[start:end].strip()
        if line and len(line) <= 80 and len(line.split()) <= 10 and not line.startswith("|"):
            seen.setdefault(running_key(line), []).append((start, end))
    return sorted(span for spans in seen.values() if len(spans) >= _RUNNING_MIN_REPEATS for span in spans)


def _inside(spans: list[Span], position: int) -> bool:
    k = bisect_right(spans, (position, 1 << 62)) - 1
    return k >= 0 and spans[k][0] <= position < spans[k][1]


class _Keywords:
    """Section-type and requirement keywords of one document, found in one pass, and its paragraphs'
    sentences on demand.

    Every piece asks whether a sentence it cuts carries a keyword; searching each paragraph again per
    piece was quadratic on transcripts, whose paragraphs are long. Sections and pieces then count
    keywords by bisecting the match positions instead of scanning their text again.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        # re.I is slow in Python's re: search the lowered text with a lowercase twin unless a code point
        # folds differently under lower() and re.I (then lower() may even change the length).
        self.low = None if FOLD_TRAPS.search(text) else text.lower()
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.kinds: dict[str, list[int]] = {kind: [] for kind in _TYPE_WORDS}
        running = _running_lines(text)
        if self.low is None:
            for match in _REQUIREMENT.finditer(text):
                self.starts.append(match.start())
                self.ends.append(match.end())
        else:
            # No keyword of one group overlaps another's, so one scan finds what each pattern would.
            for match in _keyword_matches(self.low):
                group = match.lastgroup or ""
                if group != _FLAG_ONLY and not _inside(running, match.start()):
                    self.kinds[group].append(match.start())
                if group in _FLAG_GROUPS:
                    self.starts.append(match.start())
                    self.ends.append(match.end())
        self.sentences: dict[Span, _Sentences] = {}

    def classify(self, heading: str, start: int, end: int) -> str:
        """`classify_section(heading, text[start:end])` for a section body (it starts and ends at a line)."""
        if self.low is None:
            return classify_section(heading, self.text[start:end])
        return _classify(
            heading, lambda: {kind: bisect_left(at, end) - bisect_left(at, start) for kind, at in self.kinds.items()}
        )

    def in_piece(self, start: int, end: int) -> bool:
        """`_REQUIREMENT.search(text[start:end])`: the slice's ends count as word boundaries.

        Keywords are whole words, so a match inside the slice is one of the document's matches unless
        the slice's own ends make its boundary: then it touches an end, and only the two edges (`_EDGE`
        characters: the longest keyword and the character after it) need searching.
        """
        if self.low is None:
            return bool(_REQUIREMENT.search(self.text[start:end]))
        if self.any_in(start, end):
            return True
        low = self.low
        if _REQUIREMENT_LOW.match(low[start : min(end, start + _EDGE)]):
            return True
        tail_start = max(start, end - _EDGE)
        return any(m.end() == end - tail_start for m in _REQUIREMENT_LOW.finditer(low[tail_start:end]))

    def any_in(self, start: int, end: int) -> bool:
        """A keyword match lies wholly inside [start, end)."""
        index = bisect_left(self.starts, start)
        return index < len(self.starts) and self.ends[index] <= end

    def of_paragraph(self, start: int, end: int) -> _Sentences:
        found = self.sentences.get((start, end))
        if found is None:
            spans = sentence_spans(self.text, start, end)
            found = self.sentences[(start, end)] = _Sentences(spans, [ss for ss, _ in spans], [se for _, se in spans])
        return found


@dataclass(slots=True)
class _Section:
    path: tuple[str, ...]
    start: int  # first pending heading line (so the range covers the heading)
    body_start: int
    end: int
    section_type: str = "other"


@dataclass
class _Piece:
    """A chunk in the making: its range, the sections it covers and their share of its tokens."""

    span: Span
    is_table: bool
    requirement_flag: bool
    sections: list[_Section]
    tokens: int
    seed_table: bool = False  # a table by seed 002's wording rule (|, tab, pricing, CLIN, line item)
    shares: list[int] | None = None  # tokens per section, in `sections` order

    def joins(self, other: _Piece) -> bool:
        """Only prose with prose that the seed's table rule treats alike: a merge never spreads "pricing"
        into a chunk that would then leave the vector store."""
        return not self.is_table and not other.is_table and self.seed_table == other.seed_table

    def absorb(self, other: _Piece, tokens: int, keywords: _Keywords) -> _Piece:
        shares = (self.shares or [self.tokens]) + (other.shares or [other.tokens])
        sections = self.sections + other.sections
        flag = self.requirement_flag or other.requirement_flag or keywords.in_piece(self.span[0], other.span[1])
        seed_table = self.is_table or _SEED_TABLE.search(keywords.text, self.span[0], other.span[1]) is not None
        return _Piece((self.span[0], other.span[1]), self.is_table, flag, sections, tokens, seed_table, shares)

    def part(self, span: Span, tokens: int, keywords: _Keywords) -> _Piece:
        """A re-packed part: the sections whose headings it covers, else the one it lies in."""
        inside = [x for x in self.sections if span[0] <= x.start < span[1]]
        owner = max((x for x in self.sections if x.start <= span[0]), key=lambda x: x.start, default=self.sections[0])
        sections = inside if inside and inside[0].start <= span[0] else [owner, *inside]
        seed_table = self.is_table or _SEED_TABLE.search(keywords.text, *span) is not None
        return _Piece(span, self.is_table, keywords.in_piece(*span), sections or [owner], tokens, seed_table)

    def section_type(self, body: str) -> str:
        """The type of the section that holds most of the chunk's tokens, "other" only when none has a
        type; shall/must in an untyped chunk makes it a requirement (seed 002's requirement keywords)."""
        shares = self.shares or [self.tokens] * len(self.sections)
        typed: dict[str, int] = {}
        for section, share in zip(self.sections, shares, strict=False):
            if section.section_type != "other":
                typed[section.section_type] = typed.get(section.section_type, 0) + share
        if typed:
            return max(typed, key=lambda t: (typed[t], -SECTION_TYPES.index(t)))
        return "requirement" if _SHALL.search(body) else "other"


def _is_tabular(line: str) -> bool:
    """A table row: pipes, tabs, aligned numeric columns, or a CLIN row."""
    stripped = line.strip()
    if stripped.count("|") >= 2 or "\t" in stripped or stripped.startswith(("---", "|---", "| ---", ":--")):
        return True
    if "  " not in stripped:
        return False
    cells = re.split(r" {2,}", line.strip())
    numeric = sum(1 for c in cells if _NUMERIC_CELL.match(c.strip()))
    return (len(cells) >= 3 and numeric >= 2) or bool(_CLIN_ROW.match(line) and ALIGNED_GAP.search(line))


def _mostly_letters(text: str) -> bool:
    """At least four letters and letters are 60% of the non-space characters (not a code or number)."""
    letters = len(_LETTERS.findall(text))
    return letters >= 4 and letters >= 0.6 * len(text.replace(" ", ""))


def _can_start_heading(char: str) -> bool:
    """The first character of any heading `detect_heading` accepts."""
    return char.isupper() or char.isdigit() or char == "#"


def detect_heading(line: str) -> tuple[str, int] | None:
    """(title, level) when the stripped line is a heading, else None."""
    text = line.strip()
    if not text or len(text) > 120 or not _can_start_heading(text[0]):
        return None
    if text[0].isupper() and not _may_be_capital_heading(text):
        return None  # most prose lines: no branch below can match them
    if _is_tabular(line):
        return None
    md = MD_HEADING.match(text)
    if md:
        return md.group(2).strip().strip("*_").strip(), len(md.group(1))
    if _LABEL_HEADING.match(text) and len(text.split()) <= 14:
        return text, 1
    words = text.split()
    sentence_like = text[-1] in ".;,?!" and not re.search(r"\d\.$", text)
    numbered = _NUMBERED_HEADING.match(text)
    if numbered and len(words) <= 12 and not sentence_like:
        return text, numbered.group(1).count(".") + 1
    if _LETTERED_HEADING.match(text) and len(words) <= 10 and not sentence_like:
        return text, 2
    if text.upper() == text and len(words) <= 12 and _mostly_letters(text):
        return None if sentence_like else (text, 1)
    if text.endswith(":") and len(words) <= 6 and text[0].isupper():
        return text.rstrip(":").strip(), 3
    return None


_LABEL_STARTS = frozenset(word[:3].lower() for word in _LABEL_WORDS)


def _may_be_capital_heading(text: str) -> bool:
    """Whether a line starting with a capital can match any heading form of `detect_heading`: a label word
    (its first three letters, unless they are not ASCII: re.I folds a few other letters onto them), a
    capital-dot numbering ("A." / "A.1"), all capitals, or a closing colon."""
    head = text[:3]
    return (
        text[1:2] == "."
        or not head.isascii()
        or head.lower() in _LABEL_STARTS
        or text.endswith(":")
        or text.upper() == text
    )


def find_headings(text: str, max_repeats: int = 3) -> list[_Heading]:
    """Heading lines of the document, in order (table rows and long lines never count).

    A title repeated more than `max_repeats` times is a form label ("Name:", "Values") or a running
    header, not structure, so it is dropped.
    """
    found: list[_Heading] = []
    lines = [span for span in (trim_span(text, s, e) for s, e in line_spans(text)) if span[1] > span[0]]
    for index, (ts, te) in enumerate(lines):
        after = lines[index + 1] if index + 1 < len(lines) else None
        first = text[ts]
        if not (_can_start_heading(first) or first == "*") and (after is None or text[after[0]] not in "=-"):
            continue  # no bold lead, no heading by `detect_heading`, no setext rule below: a prose line
        bold = _bold_heading(text, ts, te)
        hit = (bold[0], bold[1]) if bold else detect_heading(text[ts:te])
        if not hit and after and _is_setext(text, (ts, te), after):
            hit = (text[ts:te], 1 if text[after[0]] == "=" else 2)
        if not hit:
            continue
        heading = _Heading(ts, bold[2] if bold else te, hit[0], hit[1])
        if found and _continues(text, found[-1], heading):
            last = found.pop()
            heading = _Heading(last.start, heading.end, f"{last.title} {heading.title}", last.level)
        found.append(heading)
    seen = Counter(h.title.lower() for h in found)
    return [h for h in found if seen[h.title.lower()] <= max_repeats]


def _bold_heading(text: str, start: int, end: int) -> tuple[str, int, int] | None:
    """Markdown bold headings: a wholly bold line, or an enumerated bold lead-in ("**3. Period.** The...").

    Returns (title, level, end of the heading part); a run-in heading's body starts on the same line.
    """
    match = _BOLD_LEAD.match(text, start, end)
    if not match:
        return None
    title = match.group(1).strip().rstrip(".:").strip()
    rest = text[match.end() : end].strip(" .:*")
    if not title or len(title.split()) > 14:
        return None
    numbering = re.match(r"^((?:[A-Z]\.)?\d{1,3}(?:\.\d{1,3})*)", title)
    level = numbering.group(1).count(".") + 1 if numbering else 2
    if not rest:
        return title, level, end
    if _ENUMERATED.match(title + " "):
        return title, level, match.end()
    return None


def _is_setext(text: str, line: Span, after: Span) -> bool:
    """A short line underlined with === or --- (Markdown setext heading)."""
    rule = text[after[0] : after[1]]
    title = text[line[0] : line[1]]
    return len(rule) >= 3 and bool(_SETEXT_RULE.match(rule)) and len(title) <= 120 and not _is_tabular(title)


def _continues(text: str, previous: _Heading, heading: _Heading) -> bool:
    """An ALL-CAPS heading wrapped onto a second line ("TERMINATION FOR" / "CONVENIENCE")."""
    between = text[previous.end : heading.start]
    if between.count("\n") != 1 or between.strip():
        return False
    first, second = previous.title, heading.title
    wrapped = first.isupper() and second.isupper() and not first.endswith((":", ".")) and previous.level == 1
    return wrapped and not _ENUMERATED.match(second + " ") and not _LABEL_HEADING.match(second)


def classify_section(heading: str, body: str) -> str:
    """Seed 002 section types: heading keywords decide, else the body's dominant keyword (>= 2 hits)."""
    return _classify(heading, lambda: _keyword_hits(body))


def _classify(heading: str, body_hits: Callable[[], dict[str, int]]) -> str:
    """`body_hits` (keyword matches per type, in priority order) is only asked when the heading says nothing.
    A glossary, a list of attachments or a table of contents names every kind of section and is none."""
    if _REFERENCE_HEADING.search(heading):
        return "other"
    for kind, pattern in _TYPE_KEYWORDS.items():
        if pattern.search(heading):
            return kind
    best, best_hits = "other", 1
    for kind, hits in body_hits().items():
        if hits > best_hits:
            best, best_hits = kind, hits
    return best


def _keyword_hits(body: str) -> dict[str, int]:
    """Keyword matches per section type, in priority order (same counts as each pattern's findall)."""
    if FOLD_TRAPS.search(body):
        return {kind: len(pattern.findall(body)) for kind, pattern in _TYPE_KEYWORDS.items()}
    hits = dict.fromkeys(_TYPE_WORDS, 0)
    for match in _TYPE_ANY.finditer(body.lower()):
        hits[match.lastgroup or ""] += 1
    return hits


def _sections(text: str, headings: list[_Heading]) -> list[_Section]:
    """Heading-delimited sections with a heading path; headings without body merge into the next one."""
    sections: list[_Section] = []
    stack: list[_Heading] = []
    pending_start: int | None = None
    first = headings[0].start if headings else len(text)
    if trim_span(text, 0, first)[1] > trim_span(text, 0, first)[0]:
        sections.append(_Section((), 0, 0, first))
    for index, heading in enumerate(headings):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        end = headings[index + 1].start if index + 1 < len(headings) else len(text)
        start = heading.start if pending_start is None else pending_start
        body = trim_span(text, heading.end, end)
        if body[1] <= body[0] and index + 1 < len(headings):
            pending_start = start
            continue
        pending_start = None
        sections.append(_Section(tuple(h.title for h in stack), start, heading.end, end))
    return sections


def _segments(text: str, start: int, end: int) -> list[tuple[Span, bool]]:
    """Split [start, end) into prose and table runs (a table needs two or more tabular lines)."""
    lines = [(s, e, _is_tabular(text[s:e])) for s, e in line_spans(text, start, end)]
    segments: list[tuple[Span, bool]] = []
    index = 0
    cursor = start
    while index < len(lines):
        if not lines[index][2]:
            index += 1
            continue
        run_end = index
        while run_end + 1 < len(lines) and (lines[run_end + 1][2] or not text[slice(*lines[run_end + 1][:2])].strip()):
            run_end += 1
        while not lines[run_end][2]:
            run_end -= 1
        if run_end > index:
            table_start, table_end = lines[index][0], lines[run_end][1]
            segments.append((trim_span(text, cursor, table_start), False))
            segments.append((trim_span(text, table_start, table_end), True))
            cursor = table_end
        index = run_end + 1
    segments.append((trim_span(text, cursor, end), False))
    return [(span, is_table) for span, is_table in segments if span[1] > span[0]]


class SectionChunker(Chunker):
    name = "section"
    version = "1.1.1"
    metadata_record = "streams.meta.SectionMetadata"
    options: SectionOptions

    def __init__(self, tokenizer: Tokenizer, **options: Any) -> None:
        """Options by SectionOptions' names: defaults, ranges and checks are the model's, declared once."""
        super().__init__(tokenizer)
        self.options = cast(SectionOptions, self.take_options(options))

    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        text = doc.text
        if not text.strip():
            return []
        headings = find_headings(text)
        sections = _sections(text, headings) if headings else [_Section((), 0, 0, len(text))]
        notice_id = doc.metadata.get("notice_id") or doc.doc_id
        drafts: list[ChunkDraft] = []
        counter = span_counter(self.tokenizer, text)
        keywords = _Keywords(text)
        pieces: list[_Piece] = []
        for section in sections:
            heading = section.path[-1] if section.path else ""
            section.section_type = keywords.classify(heading, section.body_start, section.end)
            for span, is_table, requirement_flag in self._pieces(text, section, counter, keywords):
                seed_table = is_table or _SEED_TABLE.search(text, *span) is not None
                pieces.append(_Piece(span, is_table, requirement_flag, [section], counter(*span), seed_table))
        pieces = self._merge_runs(self._no_fragments(text, self._merge_runs(pieces, counter, keywords), counter,
                                                     keywords), counter, keywords)  # fmt: skip
        for piece in pieces:
            drafts.append(self._draft(text, piece, headings != []))
        return [
            ChunkDraft(
                text=d.text,
                char_start=d.char_start,
                char_end=d.char_end,
                section_path=d.section_path,
                content_type=d.content_type,
                metadata={
                    **d.metadata,
                    "chunk_index": i,
                    "noticeId": notice_id,
                    "filename": doc.document_name,
                },
                tokens=counter(d.char_start, d.char_end),  # the text is that range
            )
            for i, d in enumerate(drafts)
        ]

    def _pieces(
        self, text: str, section: _Section, counter: SpanCount, keywords: _Keywords
    ) -> list[tuple[Span, bool, bool]]:
        """(span, is_table, requirement forced) pieces of one section in reading order."""
        out: list[tuple[Span, bool, bool]] = []
        count = self.tokenizer.count
        whole = trim_span(text, section.start, section.end)
        if whole[1] <= whole[0]:
            return out
        segments = _segments(text, *whole)
        if len(segments) == 1 and not segments[0][1] and counter(*whole) <= self.options.max_tokens:
            return [(whole, False, keywords.in_piece(*whole))]
        for (s, e), is_table in segments:
            units = [ls for ls in line_spans(text, s, e) if ls[1] > ls[0]] if is_table else paragraph_spans(text, s, e)
            for piece in pack_spans(
                text, units, count, self.options.min_tokens, self.options.max_tokens, span_count=counter
            ):
                flag = keywords.in_piece(*piece) or (not is_table and self._inside_requirement(text, piece, keywords))
                out.append((piece, is_table, flag))
        return out

    @staticmethod
    def _inside_requirement(text: str, piece: Span, keywords: _Keywords) -> bool:
        """True when the piece cuts through a sentence whose other part carries a requirement keyword.

        Asked only of pieces without a keyword of their own.
        """
        s, e = piece
        para_start = text.rfind("\n\n", 0, s) + 1
        para_end_raw = text.find("\n\n", e)
        para_end = len(text) if para_end_raw < 0 else para_end_raw
        if not keywords.any_in(para_start, para_end):
            return False  # no sentence of the paragraph has a keyword (sentences lie inside it)
        before, after = trim_span(text, para_start, s), trim_span(text, e, para_end)
        if before[0] == before[1] and after[0] == after[1]:
            return False  # only whitespace around the piece: trimmed sentences cannot stick out of it
        found = keywords.of_paragraph(para_start, para_end)
        # Sentences are disjoint and ordered: those overlapping the piece are a run, and only its first
        # (may start before s) and last (may end after e) can stick out.
        first = bisect_right(found.ends, s)
        last = bisect_left(found.starts, e) - 1
        for index in {first, last}:
            if first <= index <= last:
                ss, se = found.spans[index]
                if (ss < s or se > e) and _REQUIREMENT.search(text, ss, se):
                    return True
        return False

    def _merge_runs(self, pieces: list[_Piece], counter: SpanCount, keywords: _Keywords) -> list[_Piece]:
        """Target 400-600: a text piece under `min_tokens` absorbs the next text pieces, across section
        boundaries, while the union stays within `max_tokens` (a short section is a heading and a line or
        two: a form field, a cover-page label); a short last piece of a run joins backward."""
        low = self.options.min_tokens
        forward = self._merge_pass(pieces, counter, keywords, lambda prev, piece: prev.tokens < low)
        return self._merge_pass(forward, counter, keywords, lambda prev, piece: piece.tokens < low)

    def _merge_pass(
        self, pieces: list[_Piece], counter: SpanCount, keywords: _Keywords, short: Callable[[_Piece, _Piece], bool]
    ) -> list[_Piece]:
        """One left-to-right pass: a piece joins the one before it when `short` says so and the union fits."""
        out: list[_Piece] = []
        for piece in pieces:
            prev = out[-1] if out else None
            if prev is not None and prev.joins(piece) and short(prev, piece):
                joined = counter(prev.span[0], piece.span[1])
                if joined <= self.options.max_tokens:
                    out[-1] = prev.absorb(piece, joined, keywords)
                    continue
            out.append(piece)
        return out

    def _no_fragments(self, text: str, pieces: list[_Piece], counter: SpanCount, keywords: _Keywords) -> list[_Piece]:
        """A piece under 30 tokens joins a neighbour and the pair is packed again, so it never stands alone
        and 600 stays a hard limit. A two-line "table" between prose is prose."""
        out = list(pieces)
        i = 0
        while i < len(out):
            piece = out[i]
            if piece.tokens >= self.options.fragment_tokens or len(out) == 1:
                i += 1
                continue
            near = [k for k in (i + 1, i - 1) if 0 <= k < len(out)]
            if piece.is_table and not any(out[k].is_table for k in near):
                seed_table = _SEED_TABLE.search(text, *piece.span) is not None
                piece = out[i] = dataclasses.replace(piece, is_table=False, seed_table=seed_table)
            # Prose of its kind first, then anything that fits (a table's header line joins its table).
            near.sort(key=lambda k: (not piece.joins(out[k]), out[k].is_table != piece.is_table))
            unions = []
            for k in near:
                a, b = sorted((i, k))
                union = out[a].absorb(out[b], counter(out[a].span[0], out[b].span[1]), keywords)
                unions.append((a, b, dataclasses.replace(union, is_table=out[a].is_table or out[b].is_table)))
            fits = next((u for u in unions if u[2].tokens <= self.options.max_tokens), None)
            if fits is not None:
                a, b, union = fits
                out[a : b + 1] = [union]
                i = a
                continue
            a, b, union = unions[0]
            units = paragraph_spans(text, *union.span) if not union.is_table else line_spans(text, *union.span)
            spans = pack_spans(text, [u for u in units if u[1] > u[0]], self.tokenizer.count, self.options.min_tokens,
                               self.options.max_tokens, span_count=counter)  # fmt: skip
            if spans == [out[a].span, out[b].span]:  # packing cannot do better: leave it and move on
                i += 1
                continue
            repacked = [union.part(sp, counter(*sp), keywords) for sp in spans]
            out[a : b + 1] = repacked
            i = a + len(repacked) if all(p.tokens >= self.options.fragment_tokens for p in repacked) else a + 1
        return out

    def _draft(self, text: str, piece: _Piece, has_headings: bool) -> ChunkDraft:
        s, e = piece.span
        body = text[s:e]
        section = piece.sections[0]
        heading = section.path[-1] if section.path else ""
        section_type = piece.section_type(body)
        seed_table = _SEED_TABLE.search(body)
        is_table = piece.is_table or seed_table is not None
        table_kind = ""
        if is_table:
            table_kind = "pricing_table" if _PRICING.search(body) or _PRICING.search(heading) else "table"
        requirement_flag = piece.requirement_flag
        names = list(dict.fromkeys(x.path[-1] for x in piece.sections if x.path))
        return ChunkDraft(
            text=body,
            char_start=s,
            char_end=e,
            section_path=section.path,
            content_type=table_kind or "text",
            metadata={
                "section_name": heading,
                "section_type": section_type,
                "is_critical": section_type in ("requirement", "evaluation_criteria") or requirement_flag,
                "requirement_flag": requirement_flag,
                "is_table": is_table,
                "table_kind": table_kind,
                "table_reason": ""
                if not is_table
                else ("layout" if piece.is_table else f"mentions {seed_table.group(0)!r}"),
                "merged_sections": names[1:],
                "structure": "headings" if has_headings else "paragraph_fallback",
            },
        )
