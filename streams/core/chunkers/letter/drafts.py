"""Stage 6, drafts: ids for the final pieces, then each piece as a tier-1 chunk (its tables replaced by placeholders)
followed by its tables' tier-2 chunks, all with the seed's 28 metadata keys
(docs/strategies.md#letter-2-chunk-objects-ids-and-metadata,
docs/strategies.md#letter-9-content-type-priority-and-abstraction)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from streams.core.chunkers.base import ChunkDraft, ChunkingError
from streams.core.chunkers.letter import enrich
from streams.core.chunkers.letter.blocks import Letter
from streams.core.chunkers.letter.layout import Block
from streams.core.chunkers.letter.measure import Tokens
from streams.core.chunkers.letter.pieces import Piece
from streams.core.chunkers.letter.subjects import topics
from streams.core.chunkers.letter.summary import Facts, compose
from streams.core.chunkers.letter.tables import TableChunk

PLACEHOLDER = "[TABLE — see child chunk {}]"
_PLACEHOLDERS = re.compile(r"\[TABLE — see child chunk [^\]]+\]")


@dataclass(frozen=True, slots=True)
class Ids:
    """A piece's tier-1 id and its tables' tier-2 ids, in the order the tables appear."""

    t1: str
    t2: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LetterChunk:
    """One chunk as the gate judges it: the draft, and whether it ends with the signature (a cut after the
    signature needs no full stop)."""

    draft: ChunkDraft
    signature_end: bool


@dataclass(frozen=True, slots=True)
class _Spec:
    """What one chunk's metadata is computed from; the tier-2 fields stay empty for tier 1 and back."""

    cid: str
    piece: Piece
    text: str
    start: int
    end: int
    tier: int
    table: dict[str, Any] | None = None
    parent: str | None = None
    children: tuple[str, ...] = ()
    note: str | None = None


def number(pieces: Sequence[Piece], year: int) -> tuple[Ids, ...]:
    """YYYY-S##-T#-###: S## numbers the sections that survive merging; ### restarts per section, contiguous,
    tier 1 and tier 2 apart."""
    out: list[Ids] = []
    sec, last_major, n1, n2 = 0, None, 0, 0
    year4 = f"{year:04d}"[-4:]
    for p in pieces:
        if p.major != last_major:
            sec, last_major, n1, n2 = sec + 1, p.major, 0, 0
        n1 += 1
        if sec > 99 or n1 > 999:
            raise ChunkingError("letter validation failed: more than 99 sections or 999 chunks", "letter_validation")
        t2: list[str] = []
        for _ in (b for b in p.blocks if b.kind == "table"):
            n2 += 1
            t2.append(f"{year4}-S{sec:02d}-T2-{n2:03d}")
        out.append(Ids(f"{year4}-S{sec:02d}-T1-{n1:03d}", tuple(t2)))
    return tuple(out)


def drafts(
    letter: Letter, pieces: Sequence[Piece], tables: Mapping[int, TableChunk], tokens: Tokens
) -> tuple[LetterChunk, ...]:
    """Every chunk of the letter in reading order, each tier-1 chunk before its tables. A tier-1 summary
    must differ from every earlier one, so the summaries taken so far pass from chunk to chunk."""
    titles = sorted({p.title for p in pieces})
    taken: set[str] = set()
    out: list[LetterChunk] = []
    for p, ids in zip(pieces, number(pieces, letter.year), strict=True):
        inside = [b for b in p.blocks if b.kind == "table"]
        start, end = p.blocks[0].start, p.blocks[-1].end
        text = _t1_text(letter.text, start, end, inside, ids.t2)
        spec = _Spec(ids.t1, p, text, start, end, tier=1, children=ids.t2, note=p.boundary_note)
        meta = _metadata(letter, spec, titles, taken, tokens)
        taken.add(meta["contextual_summary"])
        transform = "table_placeholder" if inside else None
        draft = ChunkDraft(
            text, start, end, p.hierarchy, meta["content_type"], meta, (ids.t1,), transform, meta["token_count"]
        )
        out.append(LetterChunk(draft, p.blocks[-1].kind == "signature"))
        for table, t2_id in zip(inside, ids.t2, strict=True):
            out.append(LetterChunk(_t2_draft(letter, p, tables[table.start], t2_id, ids.t1, titles, tokens), False))
    return tuple(out)


def _t1_text(text: str, start: int, end: int, tables: Sequence[Block], t2_ids: Sequence[str]) -> str:
    """The piece's span with each table replaced by the placeholder that names its tier-2 chunk."""
    out, cursor = [], start
    for table, t2_id in zip(tables, t2_ids, strict=True):
        out.append(text[cursor : table.start])
        out.append(PLACEHOLDER.format(t2_id))
        cursor = table.end
    out.append(text[cursor:end])
    return "".join(out)


def _t2_draft(
    letter: Letter, p: Piece, table: TableChunk, t2_id: str, parent: str, titles: Sequence[str], tokens: Tokens
) -> ChunkDraft:
    """A table's tier-2 chunk, a child of the tier-1 chunk `parent` that holds its placeholder."""
    text = letter.text[table.start : table.end]
    spec = _Spec(t2_id, p, text, table.start, table.end, tier=2, table=table.data, parent=parent, note=table.note)
    meta = _metadata(letter, spec, titles, set(), tokens)
    return ChunkDraft(
        text, table.start, table.end, p.hierarchy, "financial_table", meta, (t2_id,), tokens=meta["token_count"]
    )


def _metadata(letter: Letter, s: _Spec, titles: Sequence[str], taken: Set[str], tokens: Tokens) -> dict[str, Any]:
    """The seed's 28 keys (plus seed_chunk_id) in the seed's order; the summary is one not in `taken`."""
    p, table, tier1 = s.piece, s.table, s.tier == 1
    plain = _PLACEHOLDERS.sub("", s.text) if "[TABLE" in s.text else s.text
    ents = enrich.entities(plain)
    ctype = "financial_table" if table else enrich.content_type(plain, False)
    exception = p.exception if tier1 else None
    temporal = enrich.temporal(plain, letter.year)
    themes = enrich.themes(plain)
    facts = Facts(
        key=s.cid,
        year=letter.year,
        topics=topics(p.title, table, themes),
        tier=s.tier,
        content_type=ctype,
        companies=ents["companies"][:3],
        people=ents["people"][:2],
        metrics=ents["metrics"][:2],
        themes=themes,
        amounts=enrich.amounts(plain)[:2],
        years=temporal["comparison_years"],
        future=temporal["future_outlook"],
        rows=table["row_count"] if table else 0,
    )
    verbatim = s.text == letter.text[s.start : s.end]
    return {
        "seed_chunk_id": s.cid,
        "letter_year": letter.year,
        "letter_date": letter.date,
        "source_file": letter.source_file,
        "section_title": p.title,
        "section_hierarchy": list(p.hierarchy),
        "chunk_tier": s.tier,
        "parent_chunk_id": s.parent,
        "child_chunk_ids": list(s.children),
        "content_type": ctype,
        "contextual_summary": compose(facts, s.text, taken),
        "has_table": table is not None,
        "table_data": [table] if table else [],
        "has_financial_data": bool(table) or enrich.has_financial_data(plain),
        "entities": ents,
        "themes": themes,
        "buffett_concepts": enrich.buffett_concepts(plain),
        "principles": enrich.principles(plain),
        "temporal_references": temporal,
        "cross_references": enrich.cross_references(plain, letter.year, p.title, titles),
        "retrieval_priority": "high" if table or exception else enrich.retrieval_priority(plain, ctype),
        "abstraction_level": enrich.abstraction_level(plain, ents),
        "token_count": tokens.count(s.start, s.end) if verbatim else tokens.of_text(s.text),
        "char_count": len(s.text),
        "source_span": {"start_char": s.start, "end_char_exclusive": s.end},
        "standalone_exception": exception is not None,
        "exception_reason": exception,
        "boundary_note": s.note,
        "merged_from": list(p.merged_from) if tier1 else [],
    }
