"""Tier-1 section chunks and tier-2 table chunks for shareholder letters (seed 000)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar, cast

from streams.core.chunkers.base import ChunkDraft, Chunker, ChunkingError
from streams.core.chunkers.letter import enrich, gate
from streams.core.chunkers.letter.blocks import read
from streams.core.chunkers.letter.layout import Block, is_tabular
from streams.core.chunkers.letter.measure import Tiers, Tokens
from streams.core.chunkers.letter.merge import merge, repair
from streams.core.chunkers.letter.pieces import Piece, pieces
from streams.core.chunkers.letter.sections import sections
from streams.core.chunkers.letter.summary import Facts, compose
from streams.core.chunkers.letter.tables import table_data
from streams.core.events import AssembledDocument, ChunkRecord
from streams.core.options import LetterOptions
from streams.core.tokenizers import Tokenizer

PLACEHOLDER = "[TABLE — see child chunk {}]"


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
        self.blocks = list(letter.body)
        self.year, self.date = letter.year, letter.date
        found = sections(letter)
        split = pieces(self.text, found, self.tokens, self.tiers)
        merged = merge(self.text, split, self.tokens, self.tiers)
        return self._emit(list(repair(self.text, merged, self.tokens, self.tiers)))

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
