"""Stage 4, merge and repair: the decision tree (docs/strategies.md#letter-6-merging-short-pieces) joins pieces below
the minimum to a neighbour, then every cut that would break a sentence or a list
(docs/strategies.md#letter-10-the-validation-gate) is undone. A join above the maximum re-splits only at a clean cut."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from streams.core.chunkers.letter import enrich
from streams.core.chunkers.letter.cuts import bad_cut, finer_all, nearest_cut
from streams.core.chunkers.letter.measure import Tiers, Tokens
from streams.core.chunkers.letter.pieces import Piece


def merge(text: str, pieces: Sequence[Piece], tokens: Tokens, tiers: Tiers) -> tuple[Piece, ...]:
    """The merge tree (docs/strategies.md#letter-6-merging-short-pieces): the first short piece that is not exempt joins
    the neighbour its case names, until none is left (or one piece is). A short piece found exempt keeps the reason in
    `exception`."""
    out = list(pieces)
    guard = 0
    while guard < 10 * (len(out) + 1):
        guard += 1
        idx = _first_short(text, out, tiers.t1_min)
        if idx is None or len(out) == 1:
            break
        direction, why = _direction(out, idx)
        if direction == "backward" and idx == 0:
            direction, why = "forward", why + "; no earlier chunk, merged forward"
        if direction == "forward" and idx == len(out) - 1:
            direction, why = "backward", why + "; no later chunk, merged backward"
        a, b = (idx - 1, idx) if direction == "backward" else (idx, idx + 1)
        short = out[idx]
        note = f"merged {direction}: {short.label} had {short.tokens} tokens (<{tiers.t1_min}); {why}"
        out[a : b + 1] = rebalance(text, join(out[a], out[b], note, tokens), tokens, tiers, tiers.t1_min)
    return tuple(out)


def _first_short(text: str, pieces: list[Piece], t1_min: int) -> int | None:
    """Index of the first piece below `t1_min` that the standalone exception
    (docs/strategies.md#letter-6-merging-short-pieces) does not exempt. Each short piece before it that is exempt is
    replaced in `pieces` by itself with its `exception` set, which later rounds then read."""
    for i, p in enumerate(pieces):
        if p.tokens >= t1_min:
            continue
        if p.exception is None:
            reason = _exemption(text, p, t1_min)
            if reason is None:
                return i
            pieces[i] = replace(p, exception=reason)
    return None


def _exemption(text: str, p: Piece, t1_min: int) -> str | None:
    """A short mistake confession or principle statement with a complete thought stays alone
    (docs/strategies.md#letter-6-merging-short-pieces)."""
    body = text[p.blocks[0].start : p.blocks[-1].end]
    ctype = enrich.content_type(body, False)
    if ctype in {"mistake_confession", "principle_statement"} and enrich.complete_thought(body):
        return f"{ctype} with a complete thought below {t1_min} tokens"
    return None


def _direction(pieces: Sequence[Piece], idx: int) -> tuple[str, str]:
    """Which neighbour a short piece joins, and the branch of the tree that says so."""
    p = pieces[idx]
    same_section_before = idx > 0 and pieces[idx - 1].major == p.major
    if p.section_final and (same_section_before or idx == len(pieces) - 1):
        return "backward", "section-final"
    paras = sum(1 for b in p.blocks if b.kind == "para")
    if p.blocks[0].kind == "header" and paras < 2:
        return "forward", "header with fewer than 2 paragraphs"
    if (idx > 0 and pieces[idx - 1].blocks[-1].kind == "table") or p.blocks[0].kind == "table":
        return "backward", "follows a table"
    return "forward", "default"


def join(a: Piece, b: Piece, note: str, tokens: Tokens) -> Piece:
    """Two neighbouring pieces as one, under the first one's section; the notes of both carry over."""
    return Piece(
        a.major,
        a.title,
        a.hierarchy,
        a.units + b.units,
        sum(tokens.costs(a.units + b.units)),  # the gap between them counts (page furniture, blanks)
        a.label,
        section_final=b.section_final,
        merged_from=(a.merged_from or (a.label,)) + (b.merged_from or (b.label,)),
        boundary_note="; ".join(n for n in (a.boundary_note, b.boundary_note, note) if n),
    )


def rebalance(text: str, p: Piece, tokens: Tokens, tiers: Tiers, low: int) -> list[Piece]:
    """A join above 800 tokens re-splits at the allowed cut nearest its middle that leaves both halves
    within `low`-800 tokens; when no paragraph boundary does, at a sentence end inside a paragraph.
    The merge tree keeps `low` at 250, or it would undo its own merge."""
    if p.tokens <= tiers.t1_limit:
        return [p]
    units, how = p.units, ""
    costs = tokens.costs(units)
    cut = nearest_cut(text, units, costs, sum(costs) // 2, low, tiers.t1_limit)
    if cut is None:
        units, how = tuple(finer_all(text, p.units)), " at a sentence end inside a paragraph"
        costs = tokens.costs(units)
        cut = nearest_cut(text, units, costs, sum(costs) // 2, low, tiers.t1_limit)
    if cut is None:
        return [p]
    left, right = sum(costs[:cut]), sum(costs[cut:])
    note = (p.boundary_note or "") + f"; rebalanced {p.tokens} tokens into {left} + {right}{how}"
    first = Piece(
        p.major, p.title, p.hierarchy, units[:cut], left, p.label, merged_from=p.merged_from, boundary_note=note
    )
    head = units[cut][0]
    title = head.title if head.kind == "header" else p.title
    second = Piece(
        p.major,
        title,
        p.hierarchy if title == p.title else (p.hierarchy[0], title),
        units[cut:],
        right,
        p.label + "b",
        section_final=p.section_final,
        merged_from=p.merged_from,
        boundary_note=note,
    )
    return [first, second]


def repair(text: str, pieces: Sequence[Piece], tokens: Tokens, tiers: Tiers) -> tuple[Piece, ...]:
    """The coherence check (docs/strategies.md#letter-10-the-validation-gate) describes what the output must be, so a
    cut that would end mid-sentence or split a list (a heading mistaken mid-sentence, a page break inside a list) is
    undone: the two pieces join, and a join above 800 tokens re-splits only at a clean cut."""
    out = list(pieces)
    i = 0
    while i + 1 < len(out):
        a, b = out[i], out[i + 1]
        why = bad_cut(text, a.units[-1], b.units[0], a.blocks[0].start)
        if why is None:
            i += 1
            continue
        joined = join(a, b, f"joined {b.label} to {a.label}: the cut between them {why}", tokens)
        parts = rebalance(text, joined, tokens, tiers, tiers.t2_min)
        out[i : i + 2] = parts
        i += len(parts) - 1
    return tuple(out)
