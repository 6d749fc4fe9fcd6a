"""Finance-aware chunking (seed 001): transcripts, earnings releases, slide decks, press releases.

Routing by `doc.doc_type`: transcript -> prepared_remarks + qna (+ a narrative Participants chunk);
release -> narrative + table; slides -> slide (+ table); press -> narrative (400-800 tokens); any other
type is read as a release. `content_type` is always the seed's chunk_type.

Structured input (`doc.elements`), kinds understood (anything else is read as a paragraph):
- "section_header": text, level (1 = top). A header containing "Q&A"/"Question" opens the Q&A part
  of a transcript; "Prepared Remarks"/"Presentation" opens prepared remarks.
- "paragraph", "text", "list_item", "bullet": narrative text.
- "speaker_segment": one speaker turn; speaker, role, firm; attrs["section"] = "prepared_remarks" | "qa"
  and attrs["turn"] = "question" | "answer" are optional hints. A turn with a firm, an analyst role or
  turn=question is a question.
- "table": element_id, title, rows (first row = header), attrs["units"], attrs["currency"].
- "slide_title": the title of the slide on its page.
- "page_header", "page_footer", "page_number": dropped (docs/strategies.md#finance-3-text-shaping).
Each element is located in the document stream by its text (from the previous element on, within its
page); an element that cannot be found gets an empty range at the current position of its page.

Plain text (no elements): transcripts in the common call-transcript layout (title line, executive
roster "Name - Title", analyst roster "Name - Firm", "Operator" and bare-name speaker lines, a
"Question-and-Answer Session" header); releases with headings, wrapped paragraphs and aligned numeric
tables; slides as one page per slide (first line = title). Repeated first/last lines of pages and bare
page numbers are dropped as headers/footers.

Transcript rules: a Q&A pair = one question turn plus every management turn up to the next question,
the next Operator turn or the end; Operator moderation inside Q&A (and a short management greeting
between the introduction and the question) is covered by the pair's range but left out of its text.
A greeting-only analyst turn folds into the same analyst's next question; a closing thank-you joins
the previous pair. When no analyst ever speaks (management reads out collected questions), the
moderator's turns that ask something are the questions (role "Moderator"). Prepared remarks never
cross a speaker change and are packed at paragraph (line) boundaries toward 500-1,200 tokens.
Narrative chunks start at their section's heading line (the heading path is also the preamble).
Text tables get `payload_ref` pointing into the document stream (`doc://{doc_id}#chars=start-end`)
because no table JSON exists for them upstream.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from streams.core.chunkers.base import ChunkDraft, Chunker, ChunkingError
from streams.core.chunkers.finance.blocks import Block, Context, Table, turn_body
from streams.core.chunkers.finance.dates import published_date, quarter_year
from streams.core.chunkers.finance.elements import element_blocks, element_table, locate
from streams.core.chunkers.finance.options import FinanceOptions
from streams.core.chunkers.finance.pages import clean_text, dropped_lines, kept_lines
from streams.core.chunkers.finance.release import BULLET, release_blocks
from streams.core.chunkers.finance.transcript import (
    Pair,
    is_pleasantry,
    merge_pleasantries,
    qa_count,
    transcript_blocks,
)
from streams.core.document import page_text_ranges, pages_for_range
from streams.core.events import AssembledDocument
from streams.core.records import normalized_text
from streams.core.text import Span, pack_spans, sentence_spans, trim_span, word_spans

CHUNK_TYPES = ("prepared_remarks", "qna", "narrative", "table", "slide")

_QUALIFIER_START = re.compile(
    r"^(up|down|an? (increase|decrease)|compared|versus|vs\.?|excluding|including|on an? |"
    r"this (was|is|represents)|that (was|is)|or\b|which|reflecting|driven)",
    re.I,
)


class FinanceChunker(Chunker):
    name = "finance"
    version = "1.0.1"
    metadata_record = "streams.meta.FinanceMetadata"
    options_model = FinanceOptions
    options: FinanceOptions

    # -- entry point

    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        if not doc.text.strip() and not doc.elements:
            return []
        quarter, year = quarter_year(doc)
        ctx = Context(
            doc=doc,
            quarter=quarter,
            year=year,
            published_date=published_date(doc),
            dropped=dropped_lines(doc),
            extraction_method="elements" if doc.elements else doc.meta("extraction_method", "text"),
            source_path=doc.meta("source_path", f"raw/{doc.doc_id}/{doc.document_name}"),
        )
        kind = str(doc.doc_type)
        if kind == "transcript":
            blocks = element_blocks(ctx) if doc.elements else transcript_blocks(ctx)
            if not any(b.kind == "turn" for b in blocks):
                raise ChunkingError(
                    "transcript has no speaker turns (no roster, Operator or speaker lines)", "no_speakers"
                )
            drafts = self._transcript(ctx, blocks)
        elif kind == "slides":
            drafts = self._slides(ctx)
        else:
            blocks = element_blocks(ctx) if doc.elements else release_blocks(ctx)
            o = self.options
            bounds = (o.press_min_tokens, o.press_max_tokens) if kind == "press" else (o.min_tokens, o.max_tokens)
            drafts = self._narrative(ctx, blocks, *bounds)
        return [self._finalise(ctx, d, order) for order, d in enumerate(drafts)]

    # -- transcripts

    def _transcript(self, ctx: Context, blocks: list[Block]) -> list[ChunkDraft]:
        """Participants, prepared remarks per speaker, then Q&A pairs, all in reading order.

        Operator moderation in the Q&A and management greetings between an introduction and the
        analyst's question are covered by the next pair's range; a moderation that no question follows
        is covered by the next remarks chunk (or the last chunk at the end of the call).
        """
        text = ctx.doc.text
        drafts: list[ChunkDraft] = []
        pending: list[Block] = []  # same-speaker turns waiting to become prepared remarks
        pairs: list[Pair] = []
        held: list[Block] = []  # management turns after an Operator introduction, before the question
        moderation: int | None = None  # start of Operator moderation not yet attached to a chunk

        def flush_remarks() -> None:
            if pending:
                drafts.extend(self._remarks(ctx, pending))
                pending.clear()

        def flush_pairs() -> None:
            for number, pair in enumerate(merge_pleasantries(text, pairs), start=qa_count(drafts) + 1):
                drafts.append(self._qna(ctx, pair, number))
            pairs.clear()

        def to_remarks(turn: Block) -> None:
            nonlocal moderation
            if moderation is not None:
                turn.start, moderation = min(turn.start, moderation), None
            if pending and pending[-1].speaker != turn.speaker:
                flush_remarks()
            pending.append(turn)

        def release_held() -> None:
            flush_pairs()
            for turn in held:
                to_remarks(turn)
            held.clear()

        for block in blocks:
            if block.kind == "heading":
                continue
            if block.kind in ("para", "table"):
                release_held()
                flush_remarks()
                base = (block.title,) if block.kind == "para" and block.title else ()
                drafts.extend(self._narrative(ctx, [block], self.options.min_tokens, self.options.max_tokens, base))
            elif block.in_qa and block.is_operator:
                release_held()
                flush_remarks()
                moderation = block.start if moderation is None else moderation
            elif block.in_qa and block.is_analyst:
                flush_remarks()
                start = block.start if moderation is None else moderation
                greeting = [h for h in held if not is_pleasantry(text, h)]
                pairs.append(Pair(min([start, *(h.start for h in held)]), block, [], []))
                pairs[-1].lead_answers = greeting
                held.clear()
                moderation = None
            elif block.in_qa and moderation is not None:
                held.append(block)
            elif block.in_qa and pairs:
                pairs[-1].answers.append(block)
            else:
                release_held()
                to_remarks(block)
        release_held()
        flush_remarks()
        if moderation is not None and drafts:
            drafts[-1] = _extend(drafts[-1], text, moderation)
        return drafts

    def _remarks(self, ctx: Context, turns: list[Block]) -> list[ChunkDraft]:
        """Prepared remarks of one speaker: paragraph-packed to min..max tokens, never across speakers."""
        text = ctx.doc.text
        first = turns[0]
        units = [u for t in turns for u in t.units]
        path = ("Q&A",) if first.in_qa else ("Prepared Remarks",)
        label = f"Speaker: {first.speaker}" + (f" ({first.role})" if first.role else "")
        if not units:
            return []
        out = []
        for s, e in pack_spans(text, units, self.tokenizer.count, self.options.min_tokens, self.options.max_tokens):
            body = clean_text(text, kept_lines(text, s, e, ctx.dropped))
            out.append(
                ChunkDraft(
                    # The speaker line itself belongs to the first chunk's range.
                    text=f"{label}\n{body}",
                    char_start=min(s, first.start) if not out else s,
                    char_end=e,
                    section_path=path,
                    content_type="prepared_remarks",
                    metadata={"speaker": first.speaker, "role": first.role or None},
                    identity=(first.speaker,),
                    text_transform="speaker_preamble",
                )
            )
        return out

    def _qna(self, ctx: Context, pair: Pair, qa_no: int) -> ChunkDraft:
        """`Question (Analyst, Firm): ...\nAnswer(s): Speaker1: ...; Speaker2: ...` for one exchange."""
        text = ctx.doc.text

        def said(turns: list[Block]) -> str:
            return " ".join(clean_text(text, kept_lines(text, *turn_body(t), ctx.dropped), " ") for t in turns)

        question = pair.questions[0]
        parts = [f"{a.speaker}: {said([a])}" for a in [*pair.lead_answers, *pair.answers]]
        who = ", ".join(x for x in (question.speaker, question.firm) if x)
        qa_id = f"qa_{qa_no:03d}"
        speakers: list[str] = []
        for a in [*pair.lead_answers, *pair.answers]:
            if a.speaker not in speakers and not a.is_analyst:
                speakers.append(a.speaker)
        return ChunkDraft(
            text=f"Question ({who}): {said(pair.questions)}\nAnswer(s): " + "; ".join(parts),
            char_start=pair.start,
            char_end=max(b.end for b in [*pair.questions, *pair.answers, *pair.lead_answers]),
            section_path=("Q&A",),
            content_type="qna",
            metadata={
                "qa_id": qa_id,
                "analyst_name": question.speaker,
                "firm": question.firm or None,
                "answer_speakers": speakers,
            },
            identity=(qa_id,),
            text_transform="qna_format",
        )

    # -- releases, press and anything narrative

    def _narrative(
        self,
        ctx: Context,
        blocks: list[Block],
        min_tokens: int,
        max_tokens: int,
        base_path: tuple[str, ...] = (),
    ) -> list[ChunkDraft]:
        drafts: list[ChunkDraft] = []
        stack: list[tuple[int, str]] = []
        units: list[Span] = []
        text = ctx.doc.text

        def path() -> tuple[str, ...]:
            return base_path + tuple(t for _, t in stack)

        heading_start: list[int] = []  # first heading line not yet covered by a chunk range

        def covered(draft: ChunkDraft) -> ChunkDraft:
            """The first chunk after headings also covers the heading lines (they are in its preamble)."""
            if heading_start and heading_start[0] < draft.char_start:
                draft = ChunkDraft(**{**_fields(draft), "char_start": heading_start[0]})
            heading_start.clear()
            return draft

        def flush() -> None:
            if units:
                chunks = self._narrative_chunks(ctx, units, path(), min_tokens, max_tokens)
                if chunks:
                    chunks[0] = covered(chunks[0])
                drafts.extend(chunks)
                units.clear()

        for block in blocks:
            if block.kind == "heading":
                flush()
                while stack and stack[-1][0] >= block.level:
                    stack.pop()
                stack.append((block.level, block.title))
                if not heading_start:
                    heading_start.append(block.start)
                continue
            if block.kind == "table" and block.table is not None:
                flush()
                drafts.append(covered(self._table(ctx, block, path())))
                continue
            if block.kind == "turn":
                flush()
                drafts.extend(self._remarks(ctx, [block]))
                continue
            units.extend(u for u in block.units if u[1] > u[0])
        flush()
        if not drafts and text.strip():
            raise ChunkingError("no retrievable content found in the document", "empty_content")
        return drafts

    def _narrative_chunks(
        self, ctx: Context, units: list[Span], path: tuple[str, ...], lo: int, hi: int
    ) -> list[ChunkDraft]:
        text = ctx.doc.text
        preamble = f"Section: {' > '.join(path)}\n" if path else ""
        budget = max(1, hi - self.tokenizer.count(preamble))
        out = []
        splitters = (_qualified_sentences, word_spans)
        for s, e in pack_spans(text, units, self.tokenizer.count, min(lo, budget), budget, splitters):
            body = clean_text(text, kept_lines(text, s, e, ctx.dropped))
            if not body:
                continue
            out.append(
                ChunkDraft(
                    text=preamble + body,
                    char_start=s,
                    char_end=e,
                    section_path=path,
                    content_type="narrative",
                    text_transform=_transform(preamble, body != text[s:e]),
                )
            )
        return out

    def _table(self, ctx: Context, block: Block, path: tuple[str, ...]) -> ChunkDraft:
        table = block.table
        assert table is not None
        return ChunkDraft(
            text=self._synopsis(ctx, table, path),
            char_start=block.start,
            char_end=block.end,
            section_path=path,
            content_type="table",
            metadata={
                "table_id": table.table_id,
                "table_title": table.title or None,
                "units": table.units or None,
                "currency": table.currency or None,
                "payload_ref": table.payload_ref,
            },
            identity=(table.table_id,),
            text_transform="table_synopsis",
        )

    def _synopsis(self, ctx: Context, table: Table, path: tuple[str, ...]) -> str:
        """`Table: quarter title (units, currency)` + the first rows: enough to retrieve, not the table."""
        label = " ".join(x for x in (ctx.quarter or "", table.title or (path[-1] if path else "Table")) if x)
        scale = ", ".join(x for x in (table.units, table.currency) if x)
        head = f"Table: {label}" + (f" ({scale})" if scale else "")
        body_rows = [r for r in table.rows if any(c.strip() for c in r)]
        lines = [head]
        for row in body_rows[: self.options.synopsis_rows]:
            cells = [" ".join(c.split()) for c in row if c.strip()]
            if cells:
                lines.append("- " + ": ".join([cells[0], " | ".join(cells[1:])]) if len(cells) > 1 else "- " + cells[0])
        if len(body_rows) > self.options.synopsis_rows:
            lines.append(f"({len(body_rows)} rows in total)")
        return "\n".join(lines)

    # -- slides

    def _slides(self, ctx: Context) -> list[ChunkDraft]:
        doc = ctx.doc
        drafts: list[ChunkDraft] = []
        titles = {e.page_number: e.text for e in doc.elements if e.kind == "slide_title" and e.text.strip()}
        tables = [e for e in doc.elements if e.kind == "table"]
        table_no = 0
        for page, start, end in page_text_ranges(doc.page_map):
            lines = kept_lines(doc.text, start, end, ctx.dropped)
            title = " ".join(titles.get(page, "").split())
            bullets = [BULLET.sub("", doc.text[s:e]).strip() for s, e in lines]
            if not title and bullets:
                title = bullets.pop(0)
            elif title and bullets and " ".join(bullets[0].split()) == title:
                bullets.pop(0)
            if title or bullets:
                s0, e0 = (lines[0][0], lines[-1][1]) if lines else (start, start)
                drafts.append(
                    ChunkDraft(
                        text="\n".join([f"Slide: {title}", *(f"- {' '.join(b.split())}" for b in bullets if b)]),
                        char_start=s0,
                        char_end=e0,
                        section_path=(title,) if title else (),
                        content_type="slide",
                        metadata={"slide_no": page, "image_ref": f"pages/{doc.doc_id}/{page:04d}.png"},
                        identity=(str(page),),
                        text_transform="slide_format",
                    )
                )
            for element in (t for t in tables if (t.page_number or 1) == page):
                table_no += 1
                s, e = locate(doc.text, element.text or element.title or "", start, (start, end))
                block = element_table(ctx, element, s, e, table_no)
                drafts.append(self._table(ctx, block, (title,) if title else ()))
        return drafts

    # -- common metadata

    def _finalise(self, ctx: Context, draft: ChunkDraft, order: int) -> ChunkDraft:
        doc = ctx.doc
        pages = pages_for_range(doc.page_map, draft.char_start, draft.char_end) or [1]
        meta: dict[str, Any] = {key: None for key in _OPTIONAL_KEYS}
        meta.update(
            {
                "chunk_type": draft.content_type,
                "doc_type": str(doc.doc_type),
                "quarter": ctx.quarter,
                "year": ctx.year,
                "section_path": list(draft.section_path),
                "answer_speakers": [],
                "page_start": pages[0],
                "page_end": pages[-1],
                "source_path": ctx.source_path,
                "extraction_method": ctx.extraction_method,
                "published_date": ctx.published_date,
                "order": order,
            }
        )
        meta.update(draft.metadata)
        ident = "|".join(draft.identity)
        meta["seed_chunk_id"] = hashlib.sha256(
            "|".join(
                [
                    doc.doc_id,
                    draft.content_type,
                    " > ".join(draft.section_path),
                    str(pages[0]),
                    str(pages[-1]),
                    ident,
                    normalized_text(draft.text),
                ]
            ).encode("utf-8", "surrogatepass")
        ).hexdigest()
        return ChunkDraft(**{**_fields(draft), "metadata": meta})


_OPTIONAL_KEYS = (
    "speaker",
    "role",
    "qa_id",
    "analyst_name",
    "firm",
    "table_id",
    "table_title",
    "units",
    "currency",
    "slide_no",
    "image_ref",
    "payload_ref",
)


def _fields(draft: ChunkDraft) -> dict[str, Any]:
    return {
        "text": draft.text,
        "char_start": draft.char_start,
        "char_end": draft.char_end,
        "section_path": draft.section_path,
        "content_type": draft.content_type,
        "metadata": draft.metadata,
        "identity": draft.identity,
        "text_transform": draft.text_transform,
    }


def _extend(draft: ChunkDraft, text: str, start: int) -> ChunkDraft:
    """Stretch the last chunk over trailing Operator moderation (closing remarks of the call)."""
    end = trim_span(text, start, len(text))[1]
    return ChunkDraft(**{**_fields(draft), "char_end": max(draft.char_end, end)})


def _qualified_sentences(text: str, start: int, end: int) -> list[Span]:
    """Sentences, with a sentence that qualifies a numeric one (`Up 5% YoY.`) glued to it."""
    out: list[Span] = []
    for s, e in sentence_spans(text, start, end):
        if out and re.search(r"\d", text[out[-1][0] : out[-1][1]]) and _QUALIFIER_START.match(text[s:e]):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _transform(preamble: str, cleaned: bool) -> str | None:
    """Name what was done to the source slice: a preamble line, and/or headers dropped and whitespace cleaned."""
    parts = (["section_preamble"] if preamble else []) + (["cleaned"] if cleaned else [])
    return "+".join(parts) or None
