"""Headings of a solicitation, line by line: Markdown, labels (`SECTION 1:`), numbered and lettered titles,
short capital lines and lines ending in a colon; running page headers and footers are never headings."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass

from streams.core.text import (
    ALIGNED_GAP,
    MD_HEADING,
    Span,
    line_spans,
    running_key,
    trim_span,
)

# A running header or footer ("PWS / Dated: 05.05.04") repeats on every page: its keywords say nothing
# about the section it interrupts.
_RUNNING_MIN_REPEATS = 3
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


@dataclass(frozen=True, slots=True)
class _Heading:
    start: int
    end: int
    title: str
    level: int


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
