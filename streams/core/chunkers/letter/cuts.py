"""Where a tier-1 chunk may end (docs/strategies.md#letter-10-the-validation-gate): the rules both splitting and merging
cut by.

A unit is a run of blocks that must stay together; a cut falls between two units."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from streams.core.chunkers.letter import gate
from streams.core.chunkers.letter.layout import LIST_MARKER, Block

Unit = tuple[Block, ...]
SENTENCE_CUT = re.compile(r"(?<=[.?!])[”\"’)]?\s+(?=[A-Z“\"(])")


def colon(unit: Sequence[Block]) -> bool:
    """The unit ends with a lead-in (a paragraph ending ':'), which stays with what follows it."""
    last = unit[-1]
    return last.kind == "para" and last.lines[-1].rstrip().endswith(":")


def nearest_cut(
    text: str,
    units: Sequence[Unit],
    tokens: Sequence[int],
    target: int,
    low: int = 0,
    high: int | None = None,
    left_high: int | None = None,
) -> int | None:
    """The allowed cut nearest `target` tokens whose two sides both hold `low` to `high` tokens (the left
    one at most `left_high`), or None when no cut is allowed: an over-long piece is better than one that
    breaks a sentence or a list."""
    best, best_gap, running, total = None, None, 0, sum(tokens)
    floor = units[0][0].start
    for k in range(1, len(units)):
        running += tokens[k - 1]
        if not cut_allowed(text, units[k - 1], units[k], floor):
            continue
        if min(running, total - running) < low or (high is not None and max(running, total - running) > high):
            continue
        if left_high is not None and running > left_high:
            break
        gap = abs(running - target)
        if best_gap is None or gap < best_gap:
            best, best_gap = k, gap
    return best


def cut_allowed(text: str, before: Sequence[Block], after: Sequence[Block], floor: int) -> bool:
    """Never between items of one list, nor after a lead-in that ends with a colon, nor mid-sentence."""
    if colon(before):
        return False
    first, last = after[0], before[-1]
    if (
        first.kind == "para"
        and last.kind == "para"
        and LIST_MARKER.match(first.lines[0].strip())
        and LIST_MARKER.match(last.lines[0].strip())
    ):
        return False
    return bad_cut(text, before, after, floor) is None


def bad_cut(text: str, before: Sequence[Block], after: Sequence[Block], floor: int) -> str | None:
    """The gate's coherence verdict (docs/strategies.md#letter-10-the-validation-gate) on a cut between two runs of
    blocks (a table ends in its placeholder), for a chunk that would start at `floor`."""
    last, first = before[-1], after[0]
    if last.kind in {"table", "signature"}:
        return None
    start = _para_start(text, last.start, floor)
    return gate.bad_cut(text[start : last.end], text[first.start : first.end], False)


def _para_start(text: str, pos: int, floor: int) -> int:
    """Start of the paragraph (text after the last blank line) holding `pos`, not before `floor`: the gate
    judges a chunk's last line and last paragraph, so a sentence cut is judged with what precedes it."""
    line = text.rfind("\n", 0, pos) + 1
    while line > floor:
        prev = text.rfind("\n", 0, line - 1) + 1
        if not text[prev : line - 1].strip():
            break
        line = prev
    return max(line, floor)


def finer(text: str, unit: Unit) -> list[Unit]:
    """A unit as one unit per sentence of its last paragraph (a heading before it stays with the first
    sentence, a signature after it with the last); a unit without a paragraph as it is."""
    at = max((i for i, x in enumerate(unit) if x.kind == "para"), default=None)
    if at is None:
        return [unit]
    b = unit[at]
    body = text[b.start : b.end]
    cuts = [0, *(m.end() for m in SENTENCE_CUT.finditer(body)), len(body)]
    parts: list[Unit] = []
    for lo, hi in itertools.pairwise(cuts):
        piece = body[lo:hi].rstrip()
        if piece.strip():
            start = b.start + lo
            parts.append((Block("para", b.first, b.last, start, start + len(piece), lines=tuple(piece.split("\n"))),))
    if not parts:
        return [unit]
    parts[0] = (*unit[:at], *parts[0])
    parts[-1] = (*parts[-1], *unit[at + 1 :])  # a signature stays with the last sentence
    return parts


def finer_all(text: str, units: Sequence[Unit]) -> list[Unit]:
    """Every unit cut at its sentence ends (see `finer`)."""
    return [f for u in units for f in finer(text, u)]
