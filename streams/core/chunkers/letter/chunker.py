"""Tier-1 section chunks and tier-2 table chunks for shareholder letters (seed 000)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from streams.core.chunkers.base import ChunkDraft, Chunker, ChunkingError
from streams.core.chunkers.letter import enrich, gate
from streams.core.chunkers.letter.blocks import read
from streams.core.chunkers.letter.layout import LIST_MARKER, Block, ends_sentence, is_tabular
from streams.core.chunkers.letter.measure import Tiers, Tokens
from streams.core.chunkers.letter.summary import Facts, compose
from streams.core.chunkers.letter.tables import table_data
from streams.core.events import AssembledDocument, ChunkRecord
from streams.core.options import LetterOptions
from streams.core.tokenizers import Tokenizer

_SENTENCE_CUT = re.compile(r"(?<=[.?!])[”\"’)]?\s+(?=[A-Z“\"(])")
PLACEHOLDER = "[TABLE — see child chunk {}]"
STOP = set(
    [
        "that",
        "this",
        "with",
        "have",
        "from",
        "they",
        "their",
        "there",
        "which",
        "would",
        "been",
        "were",
        "will",
        "what",
        "when",
        "about",
        "into",
        "than",
        "then",
        "them",
        "these",
        "those",
        "also",
        "more",
        "most",
        "some",
        "such",
        "only",
        "over",
        "other",
        "very",
        "just",
        "each",
        "year",
        "years",
        "last",
    ]
)


@dataclass(slots=True)
class Section:
    major: int
    title: str
    hierarchy: tuple[str, ...]
    blocks: list[Block] = field(default_factory=list)


@dataclass(slots=True)
class Piece:
    """A T1 candidate: whole units of one or more sections."""

    major: int
    title: str
    hierarchy: tuple[str, ...]
    units: list[list[Block]]
    tokens: int
    label: str
    section_final: bool = False
    merged_from: list[str] = field(default_factory=list)
    boundary_note: str | None = None
    exception: str | None = None

    @property
    def blocks(self) -> list[Block]:
        return [b for u in self.units for b in u]


class LetterChunker(Chunker):
    name: ClassVar[str] = "letter"
    version: str = "1.1.1"  # plus the lineage tag, per instance, when options differ from the seed's
    metadata_record: ClassVar[str] = "streams.meta.LetterMetadata"
    options: LetterOptions

    def __init__(self, tokenizer: Tokenizer, **options: Any) -> None:
        """Options by LetterOptions' names: defaults, ranges and the tier order are the model's, declared once."""
        super().__init__(tokenizer)
        self.options = cast(LetterOptions, self.take_options(options))
        o = self.options
        self.tiers = Tiers(o.section_min_tokens, o.section_max_tokens, o.section_target_tokens, o.min_tokens)

    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        if not doc.text.strip():
            return []
        try:
            return _Run(self.tokenizer, doc, self.tiers).drafts()
        except ChunkingError:
            raise
        except Exception as exc:  # any other failure is a bug, but the agent must still dead-letter it
            raise ChunkingError(f"letter chunker failed: {type(exc).__name__}: {exc}", "letter_internal") from exc


class _Run:
    """State of one chunk() call; nothing survives it."""

    def __init__(self, tokenizer: Tokenizer, doc: AssembledDocument, tiers: Tiers) -> None:
        self.tiers = tiers
        self.doc = doc
        self.text = doc.text
        self.tokens = Tokens(tokenizer, doc.text)
        self.count = self.tokens.count
        self.block_tokens = self.tokens.block
        self.unit_costs = self.tokens.costs

    # ---- pipeline -----------------------------------------------------------------------------
    def drafts(self) -> list[ChunkDraft]:
        letter = read(self.doc, self.tokens, self.tiers.t2_min)
        blocks = list(letter.blocks)
        self.blocks = list(letter.body)
        self.year, self.date = letter.year, letter.date
        sections = self._sections(blocks)
        pieces = [p for s in sections for p in self._split(s)]
        per_major: dict[int, int] = {}
        for p in pieces:  # labels name pre-merge pieces in merged_from: S<major>.<n>, unique per letter
            per_major[p.major] = per_major.get(p.major, 0) + 1
            p.label = f"S{p.major:02d}.{per_major[p.major]}"
        pieces = self._repair(self._merge(pieces))
        return self._emit(pieces)

    def _sections(self, blocks: Sequence[Block]) -> list[Section]:
        """§2.2: headers, separators, page breaks on topic change, signature = end."""
        sections: list[Section] = []
        major, title, root = 1, "Introduction", "Letter Body"
        current = Section(major, title, (root, title))
        after_signature = False
        prev_para: Block | None = None
        for b in blocks:
            if b.kind == "header":
                if current.blocks:
                    sections.append(current)
                    major += 1
                title = b.title
                root = "Appendix" if after_signature else "Letter Body"
                current = Section(major, title, (root, title), [b])
            elif b.kind == "separator":
                if current.blocks:
                    sections.append(current)
                    current = Section(major, title, current.hierarchy)
            elif b.kind == "signature":
                current.blocks.append(b)
                sections.append(current)
                after_signature, major = True, major + 1
                title, root = "Postscript", "Appendix"
                current = Section(major, title, (root, title))
            else:
                if (
                    b.page_break_before
                    and prev_para is not None
                    and current.blocks
                    and self._topic_changed(prev_para, b)
                ):
                    sections.append(current)
                    current = Section(major, title, current.hierarchy)
                current.blocks.append(b)
            if b.kind == "para":
                prev_para = b
        if current.blocks:
            sections.append(current)
        return [s for s in sections if any(b.kind in {"para", "table"} for b in s.blocks)] or sections

    def _topic_changed(self, before: Block, after: Block) -> bool:
        if after.kind != "para" or not ends_sentence(before.lines[-1]):
            return False
        if LIST_MARKER.match(after.lines[0].strip()):  # a list that runs on to the next page is one topic
            return False
        a, b = (
            _content_words(self.text[before.start : before.end]),
            _content_words(self.text[after.start : after.end]),
        )
        if not a or not b:
            return False
        return len(a & b) / len(a | b) < 0.05

    def _units(self, section: Section) -> list[list[Block]]:
        """Blocks that must stay together: header + next block, lead-in ending ':' + table, signature."""
        units: list[list[Block]] = []
        glue_next = False
        for b in section.blocks:
            for part in self._sentence_parts(b) if b.kind == "para" else [b]:
                if units and (glue_next or part.kind == "signature" or (part.kind == "table" and _colon(units[-1]))):
                    units[-1].append(part)
                else:
                    units.append([part])
                glue_next = part.kind == "header"
        return units

    def _finer(self, unit: list[Block]) -> list[list[Block]]:
        """A unit as one unit per sentence of its last paragraph (a heading before it stays with the first
        sentence, a signature after it with the last); a unit without a paragraph as it is."""
        at = max((i for i, x in enumerate(unit) if x.kind == "para"), default=None)
        if at is None:
            return [unit]
        b = unit[at]
        body = self.text[b.start : b.end]
        cuts = [0, *(m.end() for m in _SENTENCE_CUT.finditer(body)), len(body)]
        parts = []
        for lo, hi in itertools.pairwise(cuts):
            piece = body[lo:hi].rstrip()
            if piece.strip():
                parts.append([Block("para", b.first, b.last, b.start + lo, b.start + lo + len(piece),
                                    lines=tuple(piece.split("\n")))])  # fmt: skip
        if not parts:
            return [unit]
        parts[0] = [*unit[:at], *parts[0]]
        parts[-1] = [*parts[-1], *unit[at + 1 :]]  # a signature stays with the last sentence
        return parts

    def _sentence_parts(self, b: Block) -> list[Block]:
        """A paragraph above the T1 maximum splits at the sentence boundary nearest the target."""
        if self.block_tokens(b) <= self.tiers.t1_max:
            return [b]
        body = self.text[b.start : b.end]
        cuts = [m.end() for m in _SENTENCE_CUT.finditer(body)]
        best, best_gap = None, None
        for c in cuts:
            gap = abs(self.count(b.start, b.start + c) - self.tiers.t1_target)
            if best_gap is None or gap < best_gap:
                best, best_gap = c, gap
        if best is None:
            return [b]
        left_end = b.start + len(body[:best].rstrip())
        left = Block("para", b.first, b.last, b.start, left_end, lines=tuple(body[:best].rstrip().split("\n")))
        right = Block("para", b.first, b.last, b.start + best, b.end, lines=tuple(body[best:].split("\n")))
        return [*self._sentence_parts(left), *self._sentence_parts(right)]

    def _split(self, section: Section) -> list[Piece]:
        """§2.3: a section above 800 tokens splits at the paragraph boundary nearest 500."""
        units = self._units(section)
        pieces: list[Piece] = []
        while units:
            tokens = self.unit_costs(units)
            cut = len(units)
            if sum(tokens) > self.tiers.t1_limit:
                found = self._nearest_cut(units, tokens, self.tiers.t1_target, left_high=self.tiers.t1_limit)
                if found is None:  # no clean paragraph cut keeps the piece within 800: try sentence ends
                    finer = [f for u in units for f in self._finer(u)]
                    fine = self.unit_costs(finer)
                    found = self._nearest_cut(
                        finer, fine, self.tiers.t1_target, self.tiers.t2_min, left_high=self.tiers.t1_limit
                    )
                    if found is not None:
                        units, tokens = finer, fine
                if found is None:
                    found = self._nearest_cut(units, tokens, self.tiers.t1_target)
                cut = found or len(units)
            chunk_units, units = units[:cut], units[cut:]
            label = f"S{section.major:02d}.{len(pieces) + 1}"
            pieces.append(Piece(section.major, section.title, section.hierarchy, chunk_units, sum(tokens[:cut]), label))
        if pieces:
            pieces[-1].section_final = True
        return pieces

    def _nearest_cut(
        self,
        units: Sequence[list[Block]],
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
        cut_allowed, floor = self._cut_allowed, units[0][0].start
        for k in range(1, len(units)):
            running += tokens[k - 1]
            if not cut_allowed(units[k - 1], units[k], floor):
                continue
            if min(running, total - running) < low or (high is not None and max(running, total - running) > high):
                continue
            if left_high is not None and running > left_high:
                break
            gap = abs(running - target)
            if best_gap is None or gap < best_gap:
                best, best_gap = k, gap
        return best

    # ---- §2.4 merge decision tree ---------------------------------------------------------------
    def _merge(self, pieces: list[Piece]) -> list[Piece]:
        guard = 0
        while guard < 10 * (len(pieces) + 1):
            guard += 1
            idx = next((i for i, p in enumerate(pieces) if p.tokens < self.tiers.t1_min and not self._exempt(p)), None)
            if idx is None or len(pieces) == 1:
                break
            direction, why = self._direction(pieces, idx)
            if direction == "backward" and idx == 0:
                direction, why = "forward", why + "; no earlier chunk, merged forward"
            if direction == "forward" and idx == len(pieces) - 1:
                direction, why = "backward", why + "; no later chunk, merged backward"
            a, b = (idx - 1, idx) if direction == "backward" else (idx, idx + 1)
            merged = self._join(
                pieces[a],
                pieces[b],
                f"merged {direction}: {pieces[idx].label} had {pieces[idx].tokens} tokens "
                f"(<{self.tiers.t1_min}); {why}",
            )
            pieces[a : b + 1] = self._rebalance(merged)
        return pieces

    def _direction(self, pieces: Sequence[Piece], idx: int) -> tuple[str, str]:
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

    def _join(self, a: Piece, b: Piece, note: str) -> Piece:
        sources = (a.merged_from or [a.label]) + (b.merged_from or [b.label])
        notes = "; ".join(n for n in (a.boundary_note, b.boundary_note, note) if n)
        return Piece(
            a.major,
            a.title,
            a.hierarchy,
            a.units + b.units,
            sum(self.unit_costs(a.units + b.units)),  # the gap between them counts (page furniture, blanks)
            a.label,
            section_final=b.section_final,
            merged_from=sources,
            boundary_note=notes,
        )

    def _rebalance(self, p: Piece, low: int | None = None) -> list[Piece]:
        """A join above 800 tokens re-splits at the allowed cut nearest its middle that leaves both halves
        within `low`-800 tokens; when no paragraph boundary does, at a sentence end inside a paragraph.
        The merge tree keeps `low` at 250, or it would undo its own merge."""
        low = self.tiers.t1_min if low is None else low
        if p.tokens <= self.tiers.t1_limit:
            return [p]
        units, how = p.units, ""
        tokens = self.unit_costs(units)
        cut = self._nearest_cut(units, tokens, sum(tokens) // 2, low, self.tiers.t1_limit)
        if cut is None:
            units, how = [f for u in p.units for f in self._finer(u)], " at a sentence end inside a paragraph"
            tokens = self.unit_costs(units)
            cut = self._nearest_cut(units, tokens, sum(tokens) // 2, low, self.tiers.t1_limit)
        if cut is None:
            return [p]
        p = Piece(p.major, p.title, p.hierarchy, units, p.tokens, p.label, p.section_final, p.merged_from,
                  p.boundary_note, p.exception)  # fmt: skip
        left, right = sum(tokens[:cut]), sum(tokens[cut:])
        note = (p.boundary_note or "") + f"; rebalanced {p.tokens} tokens into {left} + {right}{how}"
        first = Piece(
            p.major,
            p.title,
            p.hierarchy,
            p.units[:cut],
            left,
            p.label,
            merged_from=list(p.merged_from),
            boundary_note=note,
        )
        second_head = p.units[cut][0]
        title = second_head.title if second_head.kind == "header" else p.title
        second = Piece(
            p.major,
            title,
            p.hierarchy if title == p.title else (p.hierarchy[0], title),
            p.units[cut:],
            right,
            p.label + "b",
            section_final=p.section_final,
            merged_from=list(p.merged_from),
            boundary_note=note,
        )
        return [first, second]

    def _cut_allowed(self, before: Sequence[Block], after: Sequence[Block], floor: int) -> bool:
        """Never between items of one list, nor after a lead-in that ends with a colon, nor mid-sentence."""
        if _colon(before):
            return False
        first, last = after[0], before[-1]
        if (
            first.kind == "para"
            and last.kind == "para"
            and LIST_MARKER.match(first.lines[0].strip())
            and LIST_MARKER.match(last.lines[0].strip())
        ):
            return False
        return self._bad_cut(before, after, floor) is None

    def _bad_cut(self, before: Sequence[Block], after: Sequence[Block], floor: int) -> str | None:
        """The gate's §5.2 verdict on a cut between two runs of blocks (a table ends in its placeholder), for
        a chunk that would start at `floor`."""
        last, first = before[-1], after[0]
        if last.kind in {"table", "signature"}:
            return None
        start = self._para_start(last.start, floor)
        return gate.bad_cut(self.text[start : last.end], self.text[first.start : first.end], False)

    def _para_start(self, pos: int, floor: int) -> int:
        """Start of the paragraph (text after the last blank line) holding `pos`, not before `floor`: the gate
        judges a chunk's last line and last paragraph, so a sentence cut is judged with what precedes it."""
        text = self.text
        line = text.rfind("\n", 0, pos) + 1
        while line > floor:
            prev = text.rfind("\n", 0, line - 1) + 1
            if not text[prev : line - 1].strip():
                break
            line = prev
        return max(line, floor)

    def _repair(self, pieces: list[Piece]) -> list[Piece]:
        """§5.2 describes what the output must be, so a cut that would end mid-sentence or split a list
        (a heading mistaken mid-sentence, a page break inside a list) is undone: the two pieces join,
        and a join above 800 tokens re-splits only at a clean cut."""
        i = 0
        while i + 1 < len(pieces):
            a, b = pieces[i], pieces[i + 1]
            why = self._bad_cut(a.units[-1], b.units[0], a.blocks[0].start)
            if why is None:
                i += 1
                continue
            joined = self._join(a, b, f"joined {b.label} to {a.label}: the cut between them {why}")
            joined.exception = None
            parts = self._rebalance(joined, self.tiers.t2_min)
            pieces[i : i + 2] = parts
            i += len(parts) - 1
        return pieces

    def _exempt(self, p: Piece) -> bool:
        """§4: a short mistake confession or principle statement with a complete thought stays alone."""
        if p.exception is not None:
            return True
        body = self.text[p.blocks[0].start : p.blocks[-1].end]
        ctype = enrich.content_type(body, False)
        if ctype in {"mistake_confession", "principle_statement"} and enrich.complete_thought(body):
            p.exception = f"{ctype} with a complete thought below {self.tiers.t1_min} tokens"
            return True
        return False

    # ---- output -----------------------------------------------------------------------------------
    def _emit(self, pieces: list[Piece]) -> list[ChunkDraft]:
        ids = self._assign_ids(pieces)
        titles = sorted({p.title for p in pieces})
        taken: set[str] = set()
        objects: list[tuple[dict[str, Any], ChunkDraft, bool]] = []
        for p, (_sec, t1_id) in zip(pieces, ids, strict=True):
            tables = [b for b in p.blocks if b.kind == "table"]
            t2_ids = self._t2_ids[id(p)]
            t1_text = self._t1_text(p, tables, t2_ids)
            start, end = p.blocks[0].start, p.blocks[-1].end
            meta = self._meta(t1_id, p, t1_text, start, end, titles, taken, tier=1)
            meta["child_chunk_ids"] = list(t2_ids)
            transform = "table_placeholder" if tables else None
            draft = ChunkDraft(
                t1_text, start, end, p.hierarchy, meta["content_type"], meta, (t1_id,), transform, meta["token_count"]
            )
            objects.append((meta, draft, p.blocks[-1].kind == "signature"))
            for table, t2_id in zip(tables, t2_ids, strict=True):
                objects.append((*self._t2(table, t2_id, t1_id, p, titles, taken), False))
        self._gate(objects)
        return [d for _, d, _ in objects]

    def _assign_ids(self, pieces: Sequence[Piece]) -> list[tuple[int, str]]:
        """S## numbers the sections that survive merging; ### restarts per section, contiguous."""
        out: list[tuple[int, str]] = []
        self._t2_ids: dict[int, list[str]] = {}
        sec, last_major, n1, n2 = 0, None, 0, 0
        year4 = f"{self.year:04d}"[-4:]
        for p in pieces:
            if p.major != last_major:
                sec, last_major, n1, n2 = sec + 1, p.major, 0, 0
            n1 += 1
            if sec > 99 or n1 > 999:
                raise ChunkingError(
                    "letter validation failed: more than 99 sections or 999 chunks", "letter_validation"
                )
            out.append((sec, f"{year4}-S{sec:02d}-T1-{n1:03d}"))
            t2 = []
            for _ in (b for b in p.blocks if b.kind == "table"):
                n2 += 1
                t2.append(f"{year4}-S{sec:02d}-T2-{n2:03d}")
            self._t2_ids[id(p)] = t2
        return out

    def _t1_text(self, p: Piece, tables: Sequence[Block], t2_ids: Sequence[str]) -> str:
        start = p.blocks[0].start
        out, cursor = [], start
        for table, t2_id in zip(tables, t2_ids, strict=True):
            out.append(self.text[cursor : table.start])
            out.append(PLACEHOLDER.format(t2_id))
            cursor = table.end
        out.append(self.text[cursor : p.blocks[-1].end])
        return "".join(out)

    def _t2(self, table: Block, t2_id: str, parent: str, p: Piece, titles: list[str], taken: set[str]):
        """§2.5.3: lead-in + table + interpretation, absorbing neighbours until >= 150 tokens."""
        i = next(k for k, b in enumerate(self.blocks) if b is table)
        lo = hi = i
        lead = i > 0 and self.blocks[i - 1].kind == "para"
        interp = i + 1 < len(self.blocks) and self.blocks[i + 1].kind == "para"
        lo -= 1 if lead else 0
        hi += 1 if interp else 0
        context = ["lead-in"] * lead + ["interpretation"] * interp
        if not context:  # a heading or another table between: reach for the nearest paragraph (§5.2)
            near = self._nearest_para(i)
            if near is not None:
                lo, hi = min(lo, near), max(hi, near)
                context = ["nearby paragraph"]
        absorbed = 0
        grows = {"para", "table", "header"}
        while self.count(self.blocks[lo].start, self.blocks[hi].end) < self.tiers.t2_min:
            grew = False
            if lo > 0 and self.blocks[lo - 1].kind in grows:
                lo, grew = lo - 1, True
            if self.count(self.blocks[lo].start, self.blocks[hi].end) >= self.tiers.t2_min:
                absorbed += grew
                break
            if hi + 1 < len(self.blocks) and self.blocks[hi + 1].kind in grows:
                hi, grew = hi + 1, True
            if not grew:
                break
            absorbed += 1
        if not context:
            paras = [b for b in self.blocks[lo : hi + 1] if b.kind == "para"]
            context = ["nearby paragraph"] if paras else []
        start, end = self.blocks[lo].start, self.blocks[hi].end
        text = self.text[start:end]
        lead_text = self.text[self.blocks[i - 1].start : self.blocks[i - 1].end] if lead else ""
        data = table_data(table.lines, lead_text, self.year)
        meta = self._meta(t2_id, p, text, start, end, titles, taken, tier=2, table=data)
        meta["parent_chunk_id"] = parent
        note = f"narrative context: {' + '.join(context)}" if context else "no narrative context"
        meta["boundary_note"] = note + (
            f"; absorbed {absorbed} neighbouring blocks to reach {self.tiers.t2_min} tokens" if absorbed else ""
        )
        draft = ChunkDraft(text, start, end, p.hierarchy, "financial_table", meta, (t2_id,), tokens=meta["token_count"])
        return meta, draft

    def _nearest_para(self, i: int, reach: int = 3) -> int | None:
        """The paragraph nearest block i across headings and tables, the one before preferred."""
        for step in (-1, 1):
            for k in range(i + step, i + step * (reach + 1), step):
                if not 0 <= k < len(self.blocks) or self.blocks[k].kind == "signature":
                    break
                if self.blocks[k].kind == "para":
                    return k
        return None

    def _meta(
        self,
        cid: str,
        p: Piece,
        text: str,
        start: int,
        end: int,
        titles: list[str],
        taken: set[str],
        tier: int,
        table: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        plain = re.sub(r"\[TABLE — see child chunk [^\]]+\]", "", text) if "[TABLE" in text else text
        ents = enrich.entities(plain)
        ctype = "financial_table" if table else enrich.content_type(plain, False)
        exception = p.exception if tier == 1 else None
        priority = "high" if table or exception else enrich.retrieval_priority(plain, ctype)
        temporal = enrich.temporal(plain, self.year)
        themes = enrich.themes(plain)
        facts = Facts(
            key=cid,
            year=self.year,
            topics=_topics(p.title, table, themes),
            tier=tier,
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
        summary = compose(facts, text, taken if tier == 1 else set())
        if tier == 1:
            taken.add(summary)
        return {
            "seed_chunk_id": cid,
            "letter_year": self.year,
            "letter_date": self.date,
            "source_file": self.doc.document_name,
            "section_title": p.title,
            "section_hierarchy": list(p.hierarchy),
            "chunk_tier": tier,
            "parent_chunk_id": None,
            "child_chunk_ids": [],
            "content_type": ctype,
            "contextual_summary": summary,
            "has_table": table is not None,
            "table_data": [table] if table else [],
            "has_financial_data": bool(table) or enrich.has_financial_data(plain),
            "entities": ents,
            "themes": themes,
            "buffett_concepts": enrich.buffett_concepts(plain),
            "principles": enrich.principles(plain),
            "temporal_references": temporal,
            "cross_references": enrich.cross_references(plain, self.year, p.title, titles),
            "retrieval_priority": priority,
            "abstraction_level": enrich.abstraction_level(plain, ents),
            "token_count": self.count(start, end) if text == self.text[start:end] else self.tokens.of_text(text),
            "char_count": len(text),
            "source_span": {"start_char": start, "end_char_exclusive": end},
            "standalone_exception": exception is not None,
            "exception_reason": exception,
            "boundary_note": p.boundary_note if tier == 1 else None,
            "merged_from": list(p.merged_from) if tier == 1 else [],
        }

    def _gate(self, objects: Sequence[tuple[dict[str, Any], ChunkDraft, bool]]) -> None:
        """§5 on the whole letter; the composer already rewrote summaries, anything left is fatal."""
        seeds = [seed_object(d.text, m) for m, d, _ in objects]
        problems: list[str] = []
        for s in seeds:
            try:
                gate.validate(s)
            except AssertionError as exc:
                problems.append(f"{s['chunk_id']}: validate: {exc}")
            problems.extend(f"{s['chunk_id']}: {p}" for p in gate.invariants(s))
        problems.extend(gate.coherence(seeds, [sig for _, _, sig in objects], self.tiers.t2_min))
        if problems:
            shown = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
            raise ChunkingError(f"letter validation failed: {shown}", "letter_validation")


def _topics(title: str, table: dict[str, Any] | None, themes: Sequence[str]) -> list[str]:
    """What a summary may name as the chunk's subject, most specific first. A subject is never a row of
    figures, never 8 or more words (the heading is in the chunk, so it would be copied verbatim) and never
    ends on a cut word; the last candidates name only the themes, so one always fits."""
    out: list[str] = []
    if table:
        out.append(_phrase(table["table_name"]))
        if themes:
            out.append(f"figures on {themes[0]}")
        out.append("Berkshire's operating figures")
    elif title in {"Introduction", "Postscript"}:
        out.append(f"{themes[0]} and the year's results" if themes else "Berkshire's results and outlook")
    else:
        out += [_phrase(title), _phrase(re.sub(r"\s*[(\[].*$", "", title), limit=5)]
        if themes:
            out.append(f"Berkshire's thinking on {themes[0]}")
    out.append(f"{themes[0]} at Berkshire" if themes else "Berkshire's affairs that year")
    return [t for t in dict.fromkeys(out) if t]


def _phrase(raw: str, limit: int = 7) -> str:
    """A title or table name as a noun phrase for a summary, or "" when it is not one."""
    words = [w for w in re.split(r"\s+", re.sub(r"\.{2,}|…|[|*_#]", " ", raw).strip().rstrip(":")) if w]
    words = [w for w in words if re.search(r"[A-Za-z]{2}", w) and not re.search(r"\d", w)]
    while words and (words[-1].lower() in _TRAILING or words[-1].endswith("-")):
        words.pop()
    if not 1 <= len(words) <= limit or (is_tabular(raw) and len(words) < 2):
        return ""
    return _lower_title(" ".join(words))


_TRAILING = {"the", "of", "and", "to", "a", "an", "in", "for", "with", "or", "on", "by", "at", "as", "&", "-"}


def _lower_title(title: str) -> str:
    words = title.split()
    keep = set(enrich.COMPANIES) | {"Berkshire", "Buffett", "Munger", "GEICO", "S&P"}
    out = [
        w if (w in keep or w.isupper() or (i and w[:1].isupper() and w not in _COMMON)) else w.lower()
        for i, w in enumerate(words)
    ]
    return " ".join(out)


_COMMON = {
    "Of",
    "And",
    "The",
    "In",
    "On",
    "For",
    "To",
    "A",
    "An",
    "Value",
    "Values",
    "Operations",
    "Earnings",
    "Reported",
    "Sources",
    "Insurance",
    "Investments",
    "Investment",
    "Business",
    "Businesses",
    "Annual",
    "Meeting",
    "Results",
    "Products",
    "Finance",
    "Financial",
    "Utility",
    "Regulated",
    "Stock",
    "Stocks",
    "Common",
    "Taxes",
    "Acquisitions",
    "Miscellaneous",
    "Underwriting",
    "Industry",
    "Conditions",
    "Textile",
    "Banking",
    "General",
    "Review",
    "Intrinsic",
    "Book",
    "Market",
    "Securities",
    "Marketable",
    "Designated",
    "Contributions",
    "Shareholder",
    "Debt",
    "Risk",
    "Governance",
    "Corporate",
    "Accounting",
    "Changes",
    "Preferred",
    "Convertible",
    "Retailing",
    "Manufacturing",
    "Service",
    "Operating",
    "Policy",
    "Dividend",
    "Mistake",
    "Reports",
    "Shareholders",
    "Management",
    "Succession",
    "Sector",
    "Foreign",
    "Currencies",
    "Derivatives",
    "Yardsticks",
    "How",
    "We",
    "Measure",
    "Ourselves",
    "Performance",
    "Long",
    "Term",
    "Prospects",
    "Capital",
    "Allocation",
    "Compensation",
    "Taxation",
    "Financing",
    "Arbitrage",
}


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{5,}", text.lower()) if w not in STOP}


def _colon(unit: Sequence[Block]) -> bool:
    last = unit[-1]
    return last.kind == "para" and last.lines[-1].rstrip().endswith(":")


def seed_object(content: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """The seed's canonical chunk object: chunk_id, content and exactly the 28 metadata keys."""
    return {
        "chunk_id": metadata["seed_chunk_id"],
        "content": content,
        "metadata": {k: metadata[k] for k in sorted(gate.REQUIRED_META)},
    }


def seed_objects(records: list[ChunkRecord]) -> list[dict[str, Any]]:
    """Canonical seed objects for `streams chunk --format seed` (letter records only)."""
    return [seed_object(r.text, r.metadata) for r in records if r.strategy == LetterChunker.name]
