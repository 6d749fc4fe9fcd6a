"""Shared span helpers for chunkers: lines, paragraphs, sentences and token-bounded packing.

Every helper works on character spans `(start, end)` (end exclusive) of one text, so chunkers keep
exact ranges into the document stream instead of re-locating substrings afterwards. The patterns
more than one chunker reads text with live here too, so they cannot drift apart.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence

Span = tuple[int, int]
Splitter = Callable[[str, int, int], list[Span]]
Counter = Callable[[str], int]

_PARA_BREAK = re.compile(r"\n[ \t\r\f\v\u00a0]*\n")
WORD = re.compile(r"\S+")
# A sentence ends at . ! ? (plus closing quotes/brackets) before whitespace and a capital, digit or quote.
_SENT_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9$])")
# In text without case (lowercased by an extraction step) no sentence starts with a capital: any letter.
_SENT_END_CASELESS = re.compile(r"[.!?][\"'”’)\]]*(?=\s+[\"'“‘(\[]?[a-z0-9$])")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_ABBREVIATIONS = frozenset(
    {
        *("mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "inc", "co", "corp"),
        *("ltd", "no", "nos", "approx", "fig", "sec", "art", "u.s", "u.k", "jan", "feb", "mar", "apr", "jun"),
        *("jul", "aug", "sep", "sept", "oct", "nov", "dec", "p", "pp", "vol", "est", "dept", "govt", "para"),
    }
)


# --- patterns several chunkers share -------------------------------------------------------------
# Only patterns that match the same for every user are here; look-alikes that differ (list markers,
# page numbers, numeric cells, the Markdown heading of hybrid.blocks) stay with their chunker.

#: Two or more ASCII letters: a word worth counting, figures and initials aside.
LETTER_WORD = re.compile(r"[A-Za-z]{2,}")
#: The gap between two table columns: a run of two or more spaces, or a tab.
COLUMN_GAP = re.compile(r" {2,}|\t")
#: A column gap with text on both sides: aligned columns, not indentation or trailing blanks.
ALIGNED_GAP = re.compile(rf"\S(?:{COLUMN_GAP.pattern})\S")
#: A Markdown heading (hashes, title) on a stripped line.
MD_HEADING = re.compile(r"^(?P<marks>#{1,6})\s+(?P<title>\S.*?)\s*#*\s*$")
# MediaWiki's `== Title ==`, also as tokenised dumps (WikiText) write it, `= = Title = =`.
WIKI_HEADING = re.compile(r"^[ \t]*(?P<marks>(?:=[ \t]*)+)(?P<title>[^=\s].*?)[ \t]*(?:=[ \t]*)+$")
# The same marks inside a line: wiki text whose line breaks were collapsed (a dump pasted as one paragraph)
# still closes each title with the marks that opened it.
INLINE_WIKI_HEADING = re.compile(
    r"(?<!\S)(?P<marks>=(?:[ \t]?=){0,5})[ \t]+(?P<title>[^=.!?\n]{1,100}?)[ \t]+(?P=marks)(?=\s|$)"
)
# Markdown's `## TITLE` inside a line: Markdown whose line breaks were collapsed. Nothing closes the title,
# so only a run of capitalised words (no lowercase letter, up to twelve) is taken for one: a mixed-case
# title cannot be told from the sentence after it.
INLINE_MD_HEADING = re.compile(
    r"(?<!\S)(?P<marks>#{1,6})[ \t]+"
    r"(?P<title>[^\sa-z#]*[A-Z][^\sa-z#]*(?:[ \t]+[^\sa-z#]*[A-Z0-9][^\sa-z#]*){0,11})(?=\s|$)"
)
#: A line longer than this that opens with heading marks is a document whose line breaks were collapsed,
#: not a heading: its own title would be the whole text, and the headings inside it are found inline.
MAX_HEADING_LINE = 300
#: What a one-mark inline heading must follow (after spaces): a sentence's end or another heading's marks,
#: so `a = b = c` in running text is no heading.
_HEADING_AFTER = frozenset(".!?\"')]=\n")
# Characters that re.I matches to an ASCII letter but str.lower() does not map to it (or that change
# length when lowered); without them a lowercase pattern over the lowered text finds exactly what the
# re.I pattern finds in the text, and Python's re is several times faster without re.I.
FOLD_TRAPS = re.compile("[\u0130\u0131\u017f\u212a]")
#: English month names as one alternation, for building date patterns.
MONTH_NAMES = "January|February|March|April|May|June|July|August|September|October|November|December"
_DIGITS = re.compile(r"\d+")


def running_key(line: str) -> str:
    """The line lowered with its figures masked: a running header or footer that differs only by its page
    number gets one key on every page."""
    return _DIGITS.sub("#", line.lower())


def trim_span(text: str, start: int, end: int) -> Span:
    """Shrink a span past leading/trailing whitespace (an all-blank span collapses to (end, end))."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else (end, end)


def line_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Every line in [start, end) without its newline (and without a trailing carriage return)."""
    stop = len(text) if end is None else end
    spans: list[Span] = []
    cursor = start
    while cursor < stop:
        newline = text.find("\n", cursor, stop)
        line_end = stop if newline < 0 else newline
        trimmed_end = line_end - 1 if line_end > cursor and text[line_end - 1] == "\r" else line_end
        spans.append((cursor, trimmed_end))
        cursor = line_end + 1
    return spans


def _add_trimmed(spans: list[Span], text: str, start: int, end: int) -> None:
    """Append [start, end) trimmed of surrounding whitespace, unless nothing is left."""
    s, e = trim_span(text, start, end)
    if e > s:
        spans.append((s, e))


def paragraph_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Blank-line separated paragraphs, trimmed, non-empty."""
    stop = len(text) if end is None else end
    spans: list[Span] = []
    cursor = start
    for match in _PARA_BREAK.finditer(text, start, stop):
        _add_trimmed(spans, text, cursor, match.start())
        cursor = match.end()
    _add_trimmed(spans, text, cursor, stop)
    return spans


def caseless(text: str) -> bool:
    """True for text that has lost its case (fewer than one capital in 500 ASCII letters): a lowercased
    export, where a capital can no longer tell where a sentence starts."""
    upper = len(_UPPER.findall(text))
    return upper * 500 < upper + len(_LOWER.findall(text))


def sentence_spans(text: str, start: int = 0, end: int | None = None, *, uncased: bool = False) -> list[Span]:
    """Regex sentences (abbreviation and decimal aware), trimmed; always covers every word of the span.
    `uncased` (see `caseless`): a sentence may start with a lowercase letter too."""
    stop = len(text) if end is None else end
    spans: list[Span] = []
    cursor = start
    for match in (_SENT_END_CASELESS if uncased else _SENT_END).finditer(text, start, stop):
        # The word before the stop starts after the last whitespace of any kind: after a line break too
        # ("home.\nMr. Smith" keeps "Mr." with its name).
        word_start = max(text.rfind(c, cursor, match.start()) for c in " \n\t") + 1
        word = text[max(word_start, cursor) : match.start()].lower().lstrip("(\"'“")
        if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
            continue
        _add_trimmed(spans, text, cursor, match.end())
        cursor = match.end()
    _add_trimmed(spans, text, cursor, stop)
    return spans


def word_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Whitespace-delimited words; a very long 'word' (a blob without spaces) is cut every 200 characters."""
    stop = len(text) if end is None else end
    spans: list[Span] = []
    for match in WORD.finditer(text, start, stop):
        s, e = match.span()
        while e - s > 200:
            spans.append((s, s + 200))
            s += 200
        spans.append((s, e))
    return spans


def non_empty_line_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Trimmed non-blank lines: the paragraph unit of transcripts and PDF text without blank lines."""
    out = []
    for s, e in line_spans(text, start, end):
        ts, te = trim_span(text, s, e)
        if te > ts:
            out.append((ts, te))
    return out


DEFAULT_SPLITTERS: tuple[Splitter, ...] = (sentence_spans, word_spans)


def pack_spans(
    text: str,
    units: Sequence[Span],
    count: Counter,
    min_tokens: int,
    max_tokens: int,
    splitters: Sequence[Splitter] = DEFAULT_SPLITTERS,
    span_count: Callable[[int, int], int] | None = None,
) -> list[Span]:
    """Group ordered units into chunks of min..max tokens; a unit that does not fit is refined.

    Greedy: a unit joins the open chunk while the total stays <= max. When it would overflow and the
    open chunk already has >= min tokens, the chunk closes; when the open chunk is still short, the unit
    is split with the next finer splitter (sentences, then words) so the chunk can be filled. Every
    chunk but the last therefore lands in [min, max] unless a single word exceeds max. A unit's cost is
    counted on the text from the previous unit's end, so whitespace between units is included.
    `span_count(start, end)`, when given, must equal `count(text[start:end])` (it saves the slices).
    """
    cost_of = span_count or (lambda start, end: count(text[start:end]))
    queue: list[tuple[Span, int]] = [(u, 0) for u in units if u[1] > u[0]]
    queue.reverse()  # pop() from the end = next unit in reading order
    chunks: list[Span] = []
    open_start = open_end = -1
    open_tokens = 0
    while queue:
        (s, e), level = queue.pop()
        gap_start = open_end if open_end >= 0 else s
        cost = cost_of(gap_start, e)
        if open_end < 0 and cost <= max_tokens:
            open_start, open_end, open_tokens = s, e, cost
        elif open_end >= 0 and open_tokens + cost <= max_tokens:
            open_end, open_tokens = e, open_tokens + cost
        elif open_end >= 0 and open_tokens >= min_tokens:
            chunks.append((open_start, open_end))
            open_start = open_end = -1
            open_tokens = 0
            queue.append(((s, e), level))
        else:
            pieces = _refine(text, s, e, level, splitters)
            if pieces is None:
                # Nothing finer to try: close what is open and let the unit stand alone.
                if open_end >= 0:
                    chunks.append((open_start, open_end))
                chunks.append((s, e))
                open_start = open_end = -1
                open_tokens = 0
                continue
            queue.extend(reversed(pieces))
    if open_end >= 0:
        chunks.append((open_start, open_end))
    return chunks


def _refine(text: str, s: int, e: int, level: int, splitters: Sequence[Splitter]) -> list[tuple[Span, int]] | None:
    """The unit split by the first splitter (from `level` on) that yields more than one piece."""
    for index in range(level, len(splitters)):
        pieces = splitters[index](text, s, e)
        if len(pieces) > 1:
            return [(p, index + 1) for p in pieces]
    return None


def collapse_whitespace(text: str) -> str:
    """Normalise whitespace but keep line structure: spaces collapsed per line, at most one blank line. A
    carriage return is whitespace like any other (the one of a CRLF ends up at a line's end and goes): deleting
    it outright joined the two words around a lone one."""
    lines = [" ".join(line.split()) for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


# --- sentence units for embedding strategies (semantic, cluster) ---------------------------------

# A line opens a block: list item, Markdown heading (#), wikitext/AsciiDoc heading (= Title =), table row.
_BLOCK_LINE = re.compile(r"\n(?=[ \t]*(?:[-*+•]\s|\d{1,3}[.)]\s|#{1,6}\s|={1,6}\s|\|))")
#: A line at least this long was never wrapped at a column (hard-wrapped text and PDF lines stay well under it),
#: so its line break ends a paragraph even without a blank line or a stop: a record, a chat turn, a paragraph
#: of text whose blank lines were stripped.
UNWRAPPED_LINE = 300
_UNWRAPPED_END = re.compile(rf"(?<=[^\n]{{{UNWRAPPED_LINE}}})\n")
#: Between serialized records (a chat log's turns, JSON objects, one list of them after another): a closing brace
#: (and bracket), an optional comma, spaces, an opening brace (after a bracket). Prose never has it (a run of
#: citations "[1] [2]" has no brace); without it, a turn that ends without a stop runs into the next.
_RECORD_GAP = re.compile(r"(?<=\})\]?,?[ \t]+(?=\[?\{)")


def block_sentence_spans(text: str, start: int = 0, end: int | None = None, *, uncased: bool = False) -> list[Span]:
    """Sentences that never cross a paragraph, a list item, a heading or a table row.

    Paragraphs first (blank lines, so also page breaks of the document stream), then lines that
    open a new block or close an unwrapped line (UNWRAPPED_LINE), and the gaps between serialized
    records, then `sentence_spans` inside each block (`uncased` as there).
    """
    spans: list[Span] = []
    for p_start, p_end in paragraph_spans(text, start, end):
        cursor = p_start
        opens = {m.start() for m in _BLOCK_LINE.finditer(text, p_start, p_end)}
        closes = {m.start() for m in _UNWRAPPED_END.finditer(text, p_start, p_end)}
        records = {m.end() for m in _RECORD_GAP.finditer(text, p_start, p_end)}
        for cut in [*sorted(opens | closes | records), p_end]:
            spans.extend(sentence_spans(text, cursor, cut, uncased=uncased))
            cursor = cut
    return spans


def crosses_line_break(text: str, left: Span, right: Span) -> bool:
    """True when a newline separates two ordered spans."""
    return "\n" in text[left[1] : right[0]]


def split_span_by_tokens(
    text: str,
    span: Span,
    max_tokens: int,
    encode: Callable[[str], list[int]],
    decode_with_offsets: Callable[[list[int]], tuple[str, list[int]]],
) -> list[Span]:
    """Hard-split an over-long span into pieces of at most max_tokens (tiktoken's `decode_with_offsets`
    gives exact offsets). The cut goes at the last token boundary in the second half of the window that
    touches whitespace (a token may start with a space, or end with a newline: `)\n` is one token), else
    at one that is not inside a word, and only when there is neither, anywhere."""
    start, end = span
    ids = encode(text[start:end])
    if len(ids) <= max_tokens:
        return [span]
    _, offsets = decode_with_offsets(ids)
    pieces: list[Span] = []
    index = 0
    while index < len(ids):
        stop = min(index + max_tokens, len(ids))
        if stop < len(ids):
            stop = _best_cut(text, start, offsets, index, stop, max_tokens) or stop
        piece_end = start + offsets[stop] if stop < len(ids) else end
        _add_trimmed(pieces, text, start + offsets[index], piece_end)
        index = stop
    return pieces


def _best_cut(text: str, start: int, offsets: Sequence[int], index: int, stop: int, max_tokens: int) -> int | None:
    """The token boundary to cut at in (index + max_tokens / 2, stop]: by whitespace, else between words."""
    window = range(stop, index + max(1, max_tokens // 2), -1)
    for back in window:
        at = start + offsets[back]
        if text[at].isspace() or text[at - 1].isspace():
            return back
    for back in window:
        at = start + offsets[back]
        if not (text[at - 1].isalnum() and text[at].isalnum()):
            return back
    return None


def pack_units_exact(
    units: Sequence[Span], counts: Sequence[int], max_tokens: int, count_range: Callable[[int, int], int]
) -> list[list[int]]:
    """Greedy packing of consecutive units into index groups whose exact joined count fits max_tokens.

    The running sum of `counts` proposes a group; `count_range(start, end)` then checks the real
    count of the joined range (tokenization is not additive) and shrinks the group until it fits,
    so the maximum is hard as long as every single unit fits.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    estimate = 0
    for index, tokens in enumerate(counts):
        if current and estimate + tokens + 1 > max_tokens:
            groups.append(current)
            current, estimate = [], 0
        current.append(index)
        estimate += tokens + (1 if len(current) > 1 else 0)
    if current:
        groups.append(current)
    out: list[list[int]] = []
    for group in groups:
        rest = group
        while rest:
            size = len(rest)
            while size > 1 and count_range(units[rest[0]][0], units[rest[size - 1]][1]) > max_tokens:
                size -= 1
            out.append(rest[:size])
            rest = rest[size:]
    return out


def heading_lines(text: str) -> list[tuple[int, str]]:
    """(offset, title) of every line that reads as a heading: a Markdown or MediaWiki heading, or a short
    line that opens a paragraph and does not end like a sentence (PDF and plain-text titles, table captions)."""
    found: list[tuple[int, str]] = []
    for match in _ANY_LINE.finditer(text):
        line = match.group(0).strip()
        marked = markup_heading(line)
        if marked:
            found.append((match.start(), marked[1]))
            continue
        opens = match.start() == 0 or text[max(0, match.start() - 2) : match.start()] == "\n\n"
        words = line.split()
        if opens and 2 <= len(words) <= 12 and not line.endswith((".", ",", ";", ":")) and _A_LETTER.search(line):
            found.append((match.start(), line))
    return found


def markup_heading(line: str) -> tuple[int, str] | None:
    """(level, title) of a line whose own markup makes it a heading (Markdown `#` or MediaWiki `=`
    marks), else None: a heading guessed from its shape has no level to place it in a path."""
    line = line.strip()
    heading = MD_HEADING.match(line) or WIKI_HEADING.match(line)
    if heading is None or not any(c.isalnum() for c in heading["title"]):
        return None
    return heading["marks"].count("#") or heading["marks"].count("="), heading["title"]


def heading_paths(text: str, share: float = 0.8) -> list[tuple[int, tuple[str, ...]]]:
    """(offset, path) at every heading with markup: the titles of the sections open there, outermost
    first, leaving out any heading whose section covers more than `share` of the text.

    A title over the whole document is the same for every chunk of it, so it tells a chunk from no
    other chunk in the document and only dilutes each vector; the titles of articles in a collection,
    and of sections, are what tell chunks apart (docs/benchmarks.md, Retrieval quality)."""
    found = [
        (m.start(), *h)
        for m in _ANY_LINE.finditer(text)
        if len(m.group(0)) <= MAX_HEADING_LINE and (h := markup_heading(m.group(0)))
    ]
    found = sorted(found + inline_headings(text, found))
    ends = [len(text)] * len(found)
    chains: list[list[int]] = []  # per heading: the indices of the sections open there, outermost first
    open_at: list[int] = []
    for i, (offset, level, _) in enumerate(found):
        while open_at and found[open_at[-1]][1] >= level:
            ends[open_at.pop()] = offset
        open_at.append(i)
        chains.append(list(open_at))
    return [
        (found[i][0], tuple(found[j][2] for j in chain if ends[j] - found[j][0] <= share * len(text)))
        for i, chain in enumerate(chains)
    ]


def inline_headings(text: str, lines: Sequence[tuple[int, int, str]] = ()) -> list[tuple[int, int, str]]:
    """(offset, level, title) of headings inside a line, MediaWiki's (INLINE_WIKI_HEADING) and Markdown's
    (INLINE_MD_HEADING), leaving out those on a line that is a heading itself (`lines`, as heading_paths
    finds them).

    Why: with its line breaks collapsed, a collection of wiki articles, or a contract converted to
    Markdown, loses the titles that tell one section's chunks from another's, and retrieval falls to what
    a splitter without them gets (docs/benchmarks.md, Retrieval quality)."""
    if "=" not in text and "#" not in text:
        return []
    # The heading lines' spans, to leave out a match on one (bisected: a long line may hold many matches).
    spans = sorted((offset, end if (end := text.find("\n", offset)) >= 0 else len(text)) for offset, _, _ in lines)
    found = []
    for m in _inline_marks(text):
        if m.re is INLINE_WIKI_HEADING:
            heading = markup_heading(m.group(0))  # the marks and title a heading line would have
            if heading is None:
                continue
            level, title = heading
        else:
            level, title = len(m["marks"]), m["title"]
        k = bisect_right(spans, (m.start(), len(text))) - 1
        if k >= 0 and spans[k][0] <= m.start() < spans[k][1]:
            continue
        if level == 1:
            i = m.start() - 1
            while i >= 0 and text[i] in " \t":
                i -= 1
            if i >= 0 and text[i] not in _HEADING_AFTER:
                continue
        found.append((m.start(), level, title))
    return sorted(found)


def _inline_marks(text: str) -> Iterator[re.Match[str]]:
    """The candidate inline headings of both markups (each pattern only where its mark occurs at all)."""
    if "=" in text:
        yield from INLINE_WIKI_HEADING.finditer(text)
    if "#" in text:
        yield from INLINE_MD_HEADING.finditer(text)


def path_at(paths: Sequence[tuple[int, tuple[str, ...]]], position: int) -> tuple[str, ...]:
    """The heading path in force at `position` (empty before the first heading)."""
    index = bisect_right(paths, (position, ("\uffff",))) - 1
    return paths[index][1] if index >= 0 else ()


def nearest_heading(headings: Sequence[tuple[int, str]], position: int) -> str:
    """The title of the last heading at or before `position` ("" when there is none)."""
    index = bisect_right(headings, (position, "\uffff")) - 1
    return headings[index][1] if index >= 0 else ""


_ANY_LINE = re.compile(r"(?m)^[^\n]+$")
_A_LETTER = re.compile(r"[A-Za-z]")
