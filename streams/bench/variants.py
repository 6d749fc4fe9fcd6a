"""The shapes a document comes in, generated from a gold corpus with its evidence spans carried along.

Extraction pipelines hand over the same text in different shapes: lowercased, with headings and blank
lines stripped, hard-wrapped, or as one run-on paragraph. A strategy tuned on well-formed markdown can
change its chunk sizes (and its scores) on those shapes, so `streams bench quality --variants` scores
every corpus in each of them too. Every transform keeps, for each character it outputs, the offset of
the source character it came from, so a question's gold ranges map onto the variant exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from streams.bench import BenchError

Mapped = tuple[str, np.ndarray]  # the variant's text, and each of its characters' source offset

ORIGINAL = "original"
WRAP_COLUMNS = 80
_HEADING = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")
_SETEXT = re.compile(r"[ \t]{0,3}(?:=+|-{2,})[ \t]*$")


def _identity(text: str) -> np.ndarray:
    return np.arange(len(text), dtype=np.int64)


def lowercased(text: str) -> Mapped:
    """Every character lowercased where that keeps one character (so offsets stay put)."""
    chars = [c.lower() if len(c.lower()) == 1 else c for c in text]
    return "".join(chars), _identity(text)


def flat(text: str) -> Mapped:
    """Markdown headings (ATX and setext underlines) and blank lines removed: paragraphs then touch,
    one newline apart, and nothing marks a section."""
    out: list[str] = []
    where: list[np.ndarray] = []
    at = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if body.strip() and not _HEADING.match(body) and not _SETEXT.match(body):
            out.append(line)
            where.append(np.arange(at, at + len(line), dtype=np.int64))
        at += len(line)
    joined = "".join(out)
    return joined, (np.concatenate(where) if where else np.zeros(0, dtype=np.int64))


def wrapped(text: str, columns: int = WRAP_COLUMNS) -> Mapped:
    """Lines longer than `columns` broken at their last space before it (a space becomes a newline,
    so the length and the offsets stay the same), as a plain-text export or an email does."""
    chars = list(text)
    line_start = 0
    last_space = -1
    for i, c in enumerate(chars):
        if c == "\n":
            line_start, last_space = i + 1, -1
            continue
        if c == " ":
            last_space = i
        if i - line_start >= columns and last_space > line_start:
            chars[last_space] = "\n"
            line_start, last_space = last_space + 1, -1
    return "".join(chars), _identity(text)


def one_paragraph(text: str) -> Mapped:
    """Every run of whitespace holding a line break becomes one space: the document as one paragraph."""
    out: list[str] = []
    where: list[int] = []
    at = 0
    for match in re.finditer(r"[ \t]*\n\s*", text):
        out.append(text[at : match.start()])
        where.extend(range(at, match.start()))
        out.append(" ")
        where.append(match.start())
        at = match.end()
    out.append(text[at:])
    where.extend(range(at, len(text)))
    return "".join(out), np.array(where, dtype=np.int64)


def plain(text: str) -> Mapped:
    """All of the above at once: lowercased, no headings, one paragraph (a filing pasted as plain text)."""
    flat_text, flat_map = flat(text)
    lower_text, _ = lowercased(flat_text)
    joined, join_map = one_paragraph(lower_text)
    return joined, flat_map[join_map] if len(join_map) else join_map


VARIANTS: dict[str, Callable[[str], Mapped]] = {
    "lowercased": lowercased,
    "flat": flat,
    "wrapped80": wrapped,
    "one_paragraph": one_paragraph,
    "plain": plain,
}


def map_range(source_offsets: np.ndarray, start: int, end: int) -> tuple[int, int] | None:
    """The variant's range covering what it kept of the source range [start, end); None when it kept
    nothing of it (a question about a removed heading)."""
    a = int(np.searchsorted(source_offsets, start, side="left"))
    b = int(np.searchsorted(source_offsets, end, side="left"))
    return (a, b) if b > a else None


def trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The range without whitespace at its ends (a mapped span can start at a joining space)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def parse_variants(selection: Sequence[str]) -> list[str]:
    """`--variants` values (comma lists allowed; `all`) -> variant names in a stable order."""
    tokens = [t.strip() for item in selection for t in item.split(",") if t.strip()]
    if "all" in tokens:
        return [ORIGINAL, *VARIANTS]
    unknown = [t for t in tokens if t != ORIGINAL and t not in VARIANTS]
    if unknown:
        raise BenchError(f"unknown variant {unknown[0]!r}; known: all, {ORIGINAL}, {', '.join(VARIANTS)}")
    return [v for v in (ORIGINAL, *VARIANTS) if v in tokens]


__all__ = ["ORIGINAL", "VARIANTS", "map_range", "parse_variants", "trimmed"]
