"""The `section` chunker: sections cut at their headings, packed to the token bounds, tables cut out."""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from streams.core.chunkers.base import ChunkDraft, Chunker
from streams.core.chunkers.section.filter import file_filter_decision
from streams.core.chunkers.section.headings import _Heading, _is_tabular, find_headings
from streams.core.chunkers.section.keywords import (
    _PRICING,
    _REQUIREMENT,
    _SEED_TABLE,
    _SHALL,
    SECTION_TYPES,
    _Keywords,
)
from streams.core.chunkers.section.options import SectionOptions
from streams.core.events import AssembledDocument
from streams.core.text import (
    Span,
    line_spans,
    pack_spans,
    paragraph_spans,
    trim_span,
)
from streams.core.tokenizers import SpanCount, span_counter


@dataclass(slots=True)
class _Section:
    path: tuple[str, ...]
    start: int  # first pending heading line (so the range covers the heading)
    body_start: int
    end: int
    section_type: str = "other"


@dataclass
class _Piece:
    """A chunk in the making: its range, the sections it covers and their share of its tokens."""

    span: Span
    is_table: bool
    requirement_flag: bool
    sections: list[_Section]
    tokens: int
    seed_table: bool = False  # a table by the wording rule of docs/strategies.md#section-5-tables
    shares: list[int] | None = None  # tokens per section, in `sections` order

    def joins(self, other: _Piece) -> bool:
        """Only prose with prose that the seed's table rule treats alike: a merge never spreads "pricing"
        into a chunk that would then leave the vector store."""
        return not self.is_table and not other.is_table and self.seed_table == other.seed_table

    def absorb(self, other: _Piece, tokens: int, keywords: _Keywords) -> _Piece:
        shares = (self.shares or [self.tokens]) + (other.shares or [other.tokens])
        sections = self.sections + other.sections
        flag = self.requirement_flag or other.requirement_flag or keywords.in_piece(self.span[0], other.span[1])
        seed_table = self.is_table or _SEED_TABLE.search(keywords.text, self.span[0], other.span[1]) is not None
        return _Piece((self.span[0], other.span[1]), self.is_table, flag, sections, tokens, seed_table, shares)

    def part(self, span: Span, tokens: int, keywords: _Keywords) -> _Piece:
        """A re-packed part: the sections whose headings it covers, else the one it lies in."""
        inside = [x for x in self.sections if span[0] <= x.start < span[1]]
        owner = max((x for x in self.sections if x.start <= span[0]), key=lambda x: x.start, default=self.sections[0])
        sections = inside if inside and inside[0].start <= span[0] else [owner, *inside]
        seed_table = self.is_table or _SEED_TABLE.search(keywords.text, *span) is not None
        return _Piece(span, self.is_table, keywords.in_piece(*span), sections or [owner], tokens, seed_table)

    def section_type(self, body: str) -> str:
        """The type of the section that holds most of the chunk's tokens, "other" only when none has a type; shall/must
        in an untyped chunk makes it a requirement (docs/strategies.md#section-3-section-types-and-requirement-flags).
        """
        shares = self.shares or [self.tokens] * len(self.sections)
        typed: dict[str, int] = {}
        for section, share in zip(self.sections, shares, strict=False):
            if section.section_type != "other":
                typed[section.section_type] = typed.get(section.section_type, 0) + share
        if typed:
            return max(typed, key=lambda t: (typed[t], -SECTION_TYPES.index(t)))
        return "requirement" if _SHALL.search(body) else "other"


def _sections(text: str, headings: list[_Heading]) -> list[_Section]:
    """Heading-delimited sections with a heading path; headings without body merge into the next one."""
    sections: list[_Section] = []
    stack: list[_Heading] = []
    pending_start: int | None = None
    first = headings[0].start if headings else len(text)
    if trim_span(text, 0, first)[1] > trim_span(text, 0, first)[0]:
        sections.append(_Section((), 0, 0, first))
    for index, heading in enumerate(headings):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        end = headings[index + 1].start if index + 1 < len(headings) else len(text)
        start = heading.start if pending_start is None else pending_start
        body = trim_span(text, heading.end, end)
        if body[1] <= body[0] and index + 1 < len(headings):
            pending_start = start
            continue
        pending_start = None
        sections.append(_Section(tuple(h.title for h in stack), start, heading.end, end))
    return sections


def _segments(text: str, start: int, end: int) -> list[tuple[Span, bool]]:
    """Split [start, end) into prose and table runs (a table needs two or more tabular lines)."""
    lines = [(s, e, _is_tabular(text[s:e])) for s, e in line_spans(text, start, end)]
    segments: list[tuple[Span, bool]] = []
    index = 0
    cursor = start
    while index < len(lines):
        if not lines[index][2]:
            index += 1
            continue
        run_end = index
        while run_end + 1 < len(lines) and (lines[run_end + 1][2] or not text[slice(*lines[run_end + 1][:2])].strip()):
            run_end += 1
        while not lines[run_end][2]:
            run_end -= 1
        if run_end > index:
            table_start, table_end = lines[index][0], lines[run_end][1]
            segments.append((trim_span(text, cursor, table_start), False))
            segments.append((trim_span(text, table_start, table_end), True))
            cursor = table_end
        index = run_end + 1
    segments.append((trim_span(text, cursor, end), False))
    return [(span, is_table) for span, is_table in segments if span[1] > span[0]]


class SectionChunker(Chunker):
    name = "section"
    version = "1.1.1"
    metadata_record = "streams.meta.SectionMetadata"
    options_model = SectionOptions
    options: SectionOptions

    def refuses(self, doc: AssembledDocument) -> str:
        """The specification's file filter on a solicitation: an addendum's cover sheet or a blank form is
        not a solicitation's text (skipped, with the filter's reason)."""
        if str(doc.doc_type) != "solicitation":
            return ""
        options = self.options
        allowed, why = file_filter_decision(
            doc.document_name, doc.text, options.include_keywords, options.exclude_keywords
        )
        return "" if allowed else f"seed 002's file filter: {doc.document_name!r} {why}"

    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        text = doc.text
        if not text.strip():
            return []
        headings = find_headings(text)
        sections = _sections(text, headings) if headings else [_Section((), 0, 0, len(text))]
        notice_id = doc.meta("notice_id") or doc.doc_id
        drafts: list[ChunkDraft] = []
        counter = span_counter(self.tokenizer, text)
        keywords = _Keywords(text)
        pieces: list[_Piece] = []
        for section in sections:
            heading = section.path[-1] if section.path else ""
            section.section_type = keywords.classify(heading, section.body_start, section.end)
            for span, is_table, requirement_flag in self._pieces(text, section, counter, keywords):
                seed_table = is_table or _SEED_TABLE.search(text, *span) is not None
                pieces.append(_Piece(span, is_table, requirement_flag, [section], counter(*span), seed_table))
        pieces = self._merge_runs(self._no_fragments(text, self._merge_runs(pieces, counter, keywords), counter,
                                                     keywords), counter, keywords)  # fmt: skip
        for piece in pieces:
            drafts.append(self._draft(text, piece, headings != []))
        return [
            ChunkDraft(
                text=d.text,
                char_start=d.char_start,
                char_end=d.char_end,
                section_path=d.section_path,
                content_type=d.content_type,
                metadata={
                    **d.metadata,
                    "chunk_index": i,
                    "noticeId": notice_id,
                    "filename": doc.document_name,
                },
                tokens=counter(d.char_start, d.char_end),  # the text is that range
            )
            for i, d in enumerate(drafts)
        ]

    def _pieces(
        self, text: str, section: _Section, counter: SpanCount, keywords: _Keywords
    ) -> list[tuple[Span, bool, bool]]:
        """(span, is_table, requirement forced) pieces of one section in reading order."""
        out: list[tuple[Span, bool, bool]] = []
        count = self.tokenizer.count
        whole = trim_span(text, section.start, section.end)
        if whole[1] <= whole[0]:
            return out
        segments = _segments(text, *whole)
        if len(segments) == 1 and not segments[0][1] and counter(*whole) <= self.options.max_tokens:
            return [(whole, False, keywords.in_piece(*whole))]
        for (s, e), is_table in segments:
            units = [ls for ls in line_spans(text, s, e) if ls[1] > ls[0]] if is_table else paragraph_spans(text, s, e)
            for piece in pack_spans(
                text, units, count, self.options.min_tokens, self.options.max_tokens, span_count=counter
            ):
                flag = keywords.in_piece(*piece) or (not is_table and self._inside_requirement(text, piece, keywords))
                out.append((piece, is_table, flag))
        return out

    @staticmethod
    def _inside_requirement(text: str, piece: Span, keywords: _Keywords) -> bool:
        """True when the piece cuts through a sentence whose other part carries a requirement keyword.

        Asked only of pieces without a keyword of their own.
        """
        s, e = piece
        para_start = text.rfind("\n\n", 0, s) + 1
        para_end_raw = text.find("\n\n", e)
        para_end = len(text) if para_end_raw < 0 else para_end_raw
        if not keywords.any_in(para_start, para_end):
            return False  # no sentence of the paragraph has a keyword (sentences lie inside it)
        before, after = trim_span(text, para_start, s), trim_span(text, e, para_end)
        if before[0] == before[1] and after[0] == after[1]:
            return False  # only whitespace around the piece: trimmed sentences cannot stick out of it
        found = keywords.of_paragraph(para_start, para_end)
        # Sentences are disjoint and ordered: those overlapping the piece are a run, and only its first
        # (may start before s) and last (may end after e) can stick out.
        first = bisect_right(found.ends, s)
        last = bisect_left(found.starts, e) - 1
        for index in {first, last}:
            if first <= index <= last:
                ss, se = found.spans[index]
                if (ss < s or se > e) and _REQUIREMENT.search(text, ss, se):
                    return True
        return False

    def _merge_runs(self, pieces: list[_Piece], counter: SpanCount, keywords: _Keywords) -> list[_Piece]:
        """Target 400-600: a text piece under `min_tokens` absorbs the next text pieces, across section
        boundaries, while the union stays within `max_tokens` (a short section is a heading and a line or
        two: a form field, a cover-page label); a short last piece of a run joins backward."""
        low = self.options.min_tokens
        forward = self._merge_pass(pieces, counter, keywords, lambda prev, piece: prev.tokens < low)
        return self._merge_pass(forward, counter, keywords, lambda prev, piece: piece.tokens < low)

    def _merge_pass(
        self, pieces: list[_Piece], counter: SpanCount, keywords: _Keywords, short: Callable[[_Piece, _Piece], bool]
    ) -> list[_Piece]:
        """One left-to-right pass: a piece joins the one before it when `short` says so and the union fits."""
        out: list[_Piece] = []
        for piece in pieces:
            prev = out[-1] if out else None
            if prev is not None and prev.joins(piece) and short(prev, piece):
                joined = counter(prev.span[0], piece.span[1])
                if joined <= self.options.max_tokens:
                    out[-1] = prev.absorb(piece, joined, keywords)
                    continue
            out.append(piece)
        return out

    def _no_fragments(self, text: str, pieces: list[_Piece], counter: SpanCount, keywords: _Keywords) -> list[_Piece]:
        """A piece under 30 tokens joins a neighbour and the pair is packed again, so it never stands alone
        and 600 stays a hard limit. A two-line "table" between prose is prose."""
        out = list(pieces)
        i = 0
        while i < len(out):
            piece = out[i]
            if piece.tokens >= self.options.fragment_tokens or len(out) == 1:
                i += 1
                continue
            near = [k for k in (i + 1, i - 1) if 0 <= k < len(out)]
            if piece.is_table and not any(out[k].is_table for k in near):
                seed_table = _SEED_TABLE.search(text, *piece.span) is not None
                piece = out[i] = dataclasses.replace(piece, is_table=False, seed_table=seed_table)
            # Prose of its kind first, then anything that fits (a table's header line joins its table).
            near.sort(key=lambda k: (not piece.joins(out[k]), out[k].is_table != piece.is_table))
            unions = []
            for k in near:
                a, b = sorted((i, k))
                union = out[a].absorb(out[b], counter(out[a].span[0], out[b].span[1]), keywords)
                unions.append((a, b, dataclasses.replace(union, is_table=out[a].is_table or out[b].is_table)))
            fits = next((u for u in unions if u[2].tokens <= self.options.max_tokens), None)
            if fits is not None:
                a, b, union = fits
                out[a : b + 1] = [union]
                i = a
                continue
            a, b, union = unions[0]
            units = paragraph_spans(text, *union.span) if not union.is_table else line_spans(text, *union.span)
            spans = pack_spans(text, [u for u in units if u[1] > u[0]], self.tokenizer.count, self.options.min_tokens,
                               self.options.max_tokens, span_count=counter)  # fmt: skip
            if spans == [out[a].span, out[b].span]:  # packing cannot do better: leave it and move on
                i += 1
                continue
            repacked = [union.part(sp, counter(*sp), keywords) for sp in spans]
            out[a : b + 1] = repacked
            i = a + len(repacked) if all(p.tokens >= self.options.fragment_tokens for p in repacked) else a + 1
        return out

    def _draft(self, text: str, piece: _Piece, has_headings: bool) -> ChunkDraft:
        s, e = piece.span
        body = text[s:e]
        section = piece.sections[0]
        heading = section.path[-1] if section.path else ""
        section_type = piece.section_type(body)
        seed_table = _SEED_TABLE.search(body)
        is_table = piece.is_table or seed_table is not None
        table_kind = ""
        if is_table:
            table_kind = "pricing_table" if _PRICING.search(body) or _PRICING.search(heading) else "table"
        requirement_flag = piece.requirement_flag
        names = list(dict.fromkeys(x.path[-1] for x in piece.sections if x.path))
        return ChunkDraft(
            text=body,
            char_start=s,
            char_end=e,
            section_path=section.path,
            content_type=table_kind or "text",
            metadata={
                "section_name": heading,
                "section_type": section_type,
                "is_critical": section_type in ("requirement", "evaluation_criteria") or requirement_flag,
                "requirement_flag": requirement_flag,
                "is_table": is_table,
                "table_kind": table_kind,
                "table_reason": ""
                if not is_table
                else ("layout" if piece.is_table else f"mentions {seed_table.group(0)!r}"),
                "merged_sections": names[1:],
                "structure": "headings" if has_headings else "paragraph_fallback",
            },
        )
