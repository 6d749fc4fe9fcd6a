"""Section types by keyword (docs/strategies.md#section-3-section-types-and-requirement-flags): what a heading or a body
says it is, and the requirement words."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

from streams.core.chunkers.section.headings import _inside, _running_lines
from streams.core.text import (
    FOLD_TRAPS,
    Span,
    sentence_spans,
)

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
# The wording rule of docs/strategies.md#section-5-tables, as written: a chunk that contains `|`, a tab, pricing, CLIN
# or line item is a table.
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


def classify_section(heading: str, body: str) -> str:
    """Section types (docs/strategies.md#section-3-section-types-and-requirement-flags): heading keywords decide, else
    the body's dominant keyword (>= 2 hits)."""
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


@dataclass(frozen=True, slots=True)
class _Sentences:
    """A paragraph's sentence spans with their starts and ends (for bisecting)."""

    spans: list[Span]
    starts: list[int]
    ends: list[int]
