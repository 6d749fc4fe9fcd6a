"""Stage 3, pieces (docs/strategies.md#letter-5-tiers-and-sizes): each section as tier-1 candidates, a section above the
maximum cut at the allowed paragraph boundary nearest the target (at a sentence end when no paragraph boundary is
allowed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from streams.core.chunkers.letter.cuts import SENTENCE_CUT, Unit, colon, finer_all, nearest_cut
from streams.core.chunkers.letter.layout import Block
from streams.core.chunkers.letter.measure import Tiers, Tokens
from streams.core.chunkers.letter.sections import Section


@dataclass(frozen=True, slots=True)
class Piece:
    """A tier-1 candidate: whole units of one or more sections. `label` (S<major>.<n>) names it in the
    `merged_from` of whatever it is merged into; `exception` says why it may stay below the minimum."""

    major: int
    title: str
    hierarchy: tuple[str, ...]
    units: tuple[Unit, ...]
    tokens: int
    label: str
    section_final: bool = False
    merged_from: tuple[str, ...] = ()
    boundary_note: str | None = None
    exception: str | None = None

    @property
    def blocks(self) -> list[Block]:
        return [b for u in self.units for b in u]


def pieces(text: str, found: Sequence[Section], tokens: Tokens, tiers: Tiers) -> tuple[Piece, ...]:
    """Every section's pieces, labelled S<major>.<n>: unique in the letter, since sections that share a
    major (a separator or a page break between them) number on."""
    out: list[Piece] = []
    per_major: dict[int, int] = {}
    for section in found:
        for p in split(text, section, tokens, tiers):
            per_major[p.major] = per_major.get(p.major, 0) + 1
            out.append(replace(p, label=f"S{p.major:02d}.{per_major[p.major]}"))
    return tuple(out)


def split(text: str, section: Section, tokens: Tokens, tiers: Tiers) -> list[Piece]:
    """A section above 800 tokens splits at the paragraph boundary nearest 500
    (docs/strategies.md#letter-5-tiers-and-sizes)."""
    units = _units(text, section, tokens, tiers)
    out: list[Piece] = []
    while units:
        costs = tokens.costs(units)
        cut = len(units)
        if sum(costs) > tiers.t1_limit:
            found = nearest_cut(text, units, costs, tiers.t1_target, left_high=tiers.t1_limit)
            if found is None:  # no clean paragraph cut keeps the piece within 800: try sentence ends
                finer = finer_all(text, units)
                fine = tokens.costs(finer)
                found = nearest_cut(text, finer, fine, tiers.t1_target, tiers.t2_min, left_high=tiers.t1_limit)
                if found is not None:
                    units, costs = finer, fine
            if found is None:
                found = nearest_cut(text, units, costs, tiers.t1_target)
            cut = found or len(units)
        chunk_units, units = units[:cut], units[cut:]
        label = f"S{section.major:02d}.{len(out) + 1}"
        out.append(Piece(section.major, section.title, section.hierarchy, tuple(chunk_units), sum(costs[:cut]), label))
    if out:
        out[-1] = replace(out[-1], section_final=True)
    return out


def _units(text: str, section: Section, tokens: Tokens, tiers: Tiers) -> list[Unit]:
    """Blocks that must stay together: header + next block, lead-in ending ':' + table, signature."""
    units: list[list[Block]] = []
    glue_next = False
    for b in section.blocks:
        for part in _sentence_parts(text, b, tokens, tiers) if b.kind == "para" else [b]:
            if units and (glue_next or part.kind == "signature" or (part.kind == "table" and colon(units[-1]))):
                units[-1].append(part)
            else:
                units.append([part])
            glue_next = part.kind == "header"
    return [tuple(u) for u in units]


def _sentence_parts(text: str, b: Block, tokens: Tokens, tiers: Tiers) -> list[Block]:
    """A paragraph above the T1 maximum splits at the sentence boundary nearest the target."""
    if tokens.block(b) <= tiers.t1_max:
        return [b]
    body = text[b.start : b.end]
    best, best_gap = None, None
    for m in SENTENCE_CUT.finditer(body):
        gap = abs(tokens.count(b.start, b.start + m.end()) - tiers.t1_target)
        if best_gap is None or gap < best_gap:
            best, best_gap = m.end(), gap
    if best is None:
        return [b]
    left_end = b.start + len(body[:best].rstrip())
    left = Block("para", b.first, b.last, b.start, left_end, lines=tuple(body[:best].rstrip().split("\n")))
    right = Block("para", b.first, b.last, b.start + best, b.end, lines=tuple(body[best:].split("\n")))
    return [*_sentence_parts(text, left, tokens, tiers), *_sentence_parts(text, right, tokens, tiers)]
