"""Seed 003: Docling's HybridChunker over a DoclingDocument rebuilt from the document stream.

The stream is parsed into blocks (headings, paragraphs, list items, tables, captions, code) that
keep their [start, end) range in `doc.text`; each block becomes a Docling item with page
provenance. Docling chunks by structure and tokens; every Docling chunk is then mapped back to a
real range of the stream, so a chunk's text is always `doc.text[start:end]`. The seed's
ChunkContext, `contextualize_chunk` text and `validate_chunk` rules ride in the metadata.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from docling_core.transforms.chunker import HybridChunker as DoclingHybridChunker
from docling_core.transforms.chunker.tokenizer.openai import OpenAITokenizer
from docling_core.types.doc import (
    BoundingBox,
    DocItemLabel,
    DoclingDocument,
    ProvenanceItem,
    Size,
    TableCell,
    TableData,
)
from pydantic import PrivateAttr

from streams.core.chunkers import get_chunker
from streams.core.chunkers.base import FRAGMENT_TOKENS, ChunkDraft, Chunker, ChunkingError
from streams.core.chunkers.hybrid import HybridOptions
from streams.core.chunkers.hybrid.blocks import Block, parse_blocks
from streams.core.document import pages_for_range
from streams.core.events import AssembledDocument
from streams.core.text import block_sentence_spans, pack_units_exact, split_span_by_tokens, trim_span
from streams.core.tokenizers import Tokenizer, tiktoken_encoding

ELEMENT_TYPES = {
    "TEXT": "text",
    "PARAGRAPH": "text",
    "LIST_ITEM": "list_item",
    "TABLE": "table_cell",
    "CAPTION": "caption",
    "CODE": "code",
    "FORMULA": "formula",
}
MAX_SECTION_PATH = 500
_BBOX = BoundingBox(l=0.0, t=0.0, r=1.0, b=1.0)


class CachedOpenAITokenizer(OpenAITokenizer):
    """Docling's OpenAI tokenizer with a bounded count cache (Docling counts the same texts often)
    and ordinary encoding, so text that looks like a special token never raises."""

    cache_size: int = 200_000
    _cache: OrderedDict[str, int] = PrivateAttr(default_factory=OrderedDict)

    def count_tokens(self, text: str) -> int:
        cached = self._cache.get(text)
        if cached is not None:
            self._cache.move_to_end(text)
            return cached
        count = len(self.tokenizer.encode_ordinary(text))
        self._cache[text] = count
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return count

    def get_tokenizer(self) -> Callable[[str], int]:  # type: ignore[override]
        # semchunk accepts a token counter; handing it ours shares the cache and encode_ordinary.
        return self.count_tokens


@dataclass(frozen=True, slots=True)
class ChunkContext:
    """The seed's ChunkContext (seed 003), with its `to_dict` storage form."""

    parent_heading: str | None = None
    parent_heading_level: int | None = None
    section_path: str = ""
    element_type: str = "text"
    related_tables: list[str] = field(default_factory=list)
    related_pictures: list[str] = field(default_factory=list)
    page_nums: list[int] = field(default_factory=list)
    is_page_boundary: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "parent_heading": self.parent_heading,
            "parent_heading_level": self.parent_heading_level,
            "section_path": self.section_path,
            "element_type": self.element_type,
            "related_tables": list(self.related_tables),
            "related_pictures": list(self.related_pictures),
            "page_nums": list(self.page_nums),
            "is_page_boundary": self.is_page_boundary,
        }


def contextualize_chunk(text: str, context: ChunkContext | None) -> str:
    """`contextualize_chunk` (docs/strategies.md#hybrid-3-chunk-context-contextualized-text-and-validation): structural
    context prepended for embedding."""
    if context is None:
        return text
    parts: list[str] = []
    if context.section_path:
        parts.append(f"[Section: {context.section_path}]")
    if context.element_type != "text":
        parts.append(f"[Type: {context.element_type}]")
    if context.related_tables:
        parts.append(f"[Refers to: {', '.join(context.related_tables)}]")
    if context.related_pictures:
        parts.append(f"[Refers to: {', '.join(context.related_pictures)}]")
    parts.append(text)
    return " ".join(parts)


def validate_chunk(text: str, word_count: int, page_num: int, context: ChunkContext | None) -> None:
    """`validate_chunk` (docs/strategies.md#hybrid-3-chunk-context-contextualized-text-and-validation), raising
    ChunkingError instead of asserting."""
    if not text.strip():
        raise ChunkingError("hybrid chunk has empty text", "invalid_chunk")
    if word_count <= 0:
        raise ChunkingError("hybrid chunk has no words", "invalid_chunk")
    if context is not None:
        if context.page_nums and page_num not in context.page_nums:
            raise ChunkingError(f"primary page {page_num} not in context pages {context.page_nums}", "invalid_chunk")
        if len(context.section_path) >= MAX_SECTION_PATH:
            raise ChunkingError(
                f"section path too long ({len(context.section_path)} >= {MAX_SECTION_PATH})", "invalid_chunk"
            )


def find_related_elements(text: str, prefix: str) -> list[str]:
    """Related elements: "Table 2" -> "table-1" (0-indexed ids), in order of mention, without duplicates
    (docs/strategies.md#hybrid-3-chunk-context-contextualized-text-and-validation)."""
    import re

    ids = [f"{prefix.lower()}-{int(n) - 1}" for n in re.findall(rf"{prefix}\s+(\d+)", text, re.IGNORECASE)]
    return list(dict.fromkeys(i for i in ids if not i.endswith("--1")))


# --- DoclingDocument from blocks ----------------------------------------------------------------


def build_docling_document(doc: AssembledDocument, blocks: Sequence[Block]) -> tuple[DoclingDocument, dict[str, Block]]:
    """Docling items for the blocks, with page provenance and the stream charspan; ref -> block."""
    dl = DoclingDocument(name=doc.document_name or doc.doc_id)
    for span in doc.page_map:
        dl.add_page(page_no=span.page_number, size=Size(width=1.0, height=1.0))
    refs: dict[str, Block] = {}
    list_group: Any = None
    for block in blocks:
        prov = ProvenanceItem(page_no=block.page, bbox=_BBOX, charspan=(block.start, block.end))
        if block.kind != "list_item":
            list_group = None
        item = _add_item(dl, block, prov, list_group)
        if block.kind == "list_item" and list_group is None:
            list_group = item.parent.resolve(dl) if item.parent else None
        refs[item.self_ref] = block
    return dl, refs


def _add_item(dl: DoclingDocument, block: Block, prov: ProvenanceItem, list_group: Any) -> Any:
    if block.kind == "heading" and block.level == 0:
        return dl.add_title(text=block.text, prov=prov)
    if block.kind == "heading":
        return dl.add_heading(text=block.text, level=max(1, block.level), prov=prov)
    if block.kind == "list_item":
        group = list_group if list_group is not None else dl.add_list_group()
        return dl.add_list_item(
            text=block.text, enumerated=block.enumerated, marker=block.marker, parent=group, prov=prov
        )
    if block.kind == "table":
        return dl.add_table(data=_table_data(block.rows), prov=prov)
    if block.kind == "code":
        return dl.add_code(text=block.text, prov=prov)
    label = DocItemLabel.CAPTION if block.kind == "caption" else DocItemLabel.TEXT
    return dl.add_text(label=label, text=block.text, prov=prov)


def _table_data(rows: Sequence[Sequence[str]]) -> TableData:
    width = max((len(r) for r in rows), default=0)
    cells = [
        TableCell(
            text=(row[c] if c < len(row) else ""),
            start_row_offset_idx=r,
            end_row_offset_idx=r + 1,
            start_col_offset_idx=c,
            end_col_offset_idx=c + 1,
            column_header=r == 0,
        )
        for r, row in enumerate(rows)
        for c in range(width)
    ]
    return TableData(num_rows=len(rows), num_cols=width, table_cells=cells)


# --- the strategy -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Located:
    start: int
    end: int
    headings: tuple[str, ...]
    labels: tuple[str, ...]
    blocks: tuple[Block, ...]
    merged: tuple[str, ...] = ()  # headings of the short neighbours this chunk absorbed


def _union(a: _Located, b: _Located) -> _Located:
    """Two neighbours as one chunk; the headings of the longer part lead, the other's are kept."""
    lead, other = (a, b) if (a.end - a.start) >= (b.end - b.start) else (b, a)
    merged = tuple(h for h in (*a.merged, *b.merged, other.headings[-1:] and other.headings[-1]) if h)
    return _Located(
        start=a.start,
        end=b.end,
        headings=lead.headings,
        labels=lead.labels + other.labels,  # the element type follows the longer part
        blocks=tuple(dict.fromkeys(a.blocks + b.blocks)),
        merged=tuple(h for h in dict.fromkeys(merged) if h not in lead.headings[-1:]),
    )


class HybridChunker(Chunker):
    """Docling HybridChunker (tiktoken, merge_peers) with ChunkContext and exact stream ranges."""

    name = "hybrid"
    version = "1.1.4"
    metadata_record = "streams.meta.HybridMetadata"
    options_model = HybridOptions
    options: HybridOptions

    def __init__(self, tokenizer: Tokenizer, **options: Any) -> None:
        super().__init__(tokenizer, **options)  # min_tokens resolved from max_tokens by the model
        encoding_name = getattr(tokenizer, "name", "tiktoken:cl100k_base").removeprefix("tiktoken:")
        try:
            encoding = tiktoken_encoding(encoding_name)
        except ValueError:
            encoding = tiktoken_encoding("cl100k_base")
        self.docling_tokenizer = CachedOpenAITokenizer(tokenizer=encoding, max_tokens=self.options.max_tokens)
        self.docling = DoclingHybridChunker(tokenizer=self.docling_tokenizer, merge_peers=self.options.merge_peers)

    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        if not doc.text.strip():
            return []
        blocks = parse_blocks(doc)
        if not any(b.kind != "heading" for b in blocks):
            raise ChunkingError("document has headings but no body text", "no_body_text")
        located = self._merge_short(doc.text, self._run_docling(doc, blocks))
        headings = [b for b in blocks if b.kind == "heading"]
        tables = [b for b in blocks if b.kind == "table"]
        drafts: list[ChunkDraft] = []
        for item in located:
            for start, end in self._bounded(doc.text, item.start, item.end):
                drafts.append(self._draft(doc, item, start, end, headings, tables))
        return drafts

    def _merge_short(self, text: str, located: list[_Located]) -> list[_Located]:
        """The minimum chunk size (docs/strategies.md#hybrid-2-sizes): Docling merges only peers under one heading, so a
        heading with a line under it, a caption or a lone list item stays a fragment. A chunk under `min_tokens` joins
        its next neighbour (else its previous one) while the union stays within `max_tokens`; one under 30 tokens joins
        a neighbour whatever the size, and `_bounded` cuts the union back to the limit."""
        out = list(located)
        memo: dict[tuple[int, int], int] = {}

        def tokens(a: _Located, b: _Located | None = None) -> int:
            key = (a.start, (b or a).end)
            if key not in memo:
                memo[key] = self.tokenizer.count(text[key[0] : key[1]])
            return memo[key]

        i = 0
        while i < len(out) and len(out) > 1:
            size = tokens(out[i])
            if size >= self.options.min_tokens:
                i += 1
                continue
            pairs = [(a, b) for a, b in ((i, i + 1), (i - 1, i)) if a >= 0 and b < len(out)]
            fit = next(((a, b) for a, b in pairs if tokens(out[a], out[b]) <= self.options.max_tokens), None)
            if fit is None and size < FRAGMENT_TOKENS:
                fit = pairs[0]
            if fit is None:
                i += 1
                continue
            a, b = fit
            out[a : b + 1] = [_union(out[a], out[b])]
            i = a  # the union may still be short: look at it again
        return out

    def _run_docling(self, doc: AssembledDocument, blocks: list[Block]) -> list[_Located]:
        try:
            dl, refs = build_docling_document(doc, blocks)
            chunks = list(self.docling.chunk(dl_doc=dl))
            serializer = self.docling.serializer_provider.get_serializer(doc=dl)
            return locate_chunks(doc.text, chunks, refs, lambda item: serializer.serialize(item=item).text)
        except ChunkingError:
            raise
        except Exception as exc:  # a third-party library boundary: never let its errors escape raw
            raise ChunkingError(
                f"docling hybrid chunking failed: {type(exc).__name__}: {exc}", "docling_failed"
            ) from exc

    def _bounded(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        """The raw slice obeys max_tokens too (Docling bounds its own serialization, not the source).

        Greedy packing leaves whatever is over at the end; when that tail is under 30 tokens the slice is
        cut again with a smaller limit, down to an even split, so no piece is a fragment."""
        total, most = self.tokenizer.count(text[start:end]), self.options.max_tokens
        if total <= most:
            return [(start, end)]
        parts = -(-total // most)
        even = min(most, -(-total // parts) + 8)
        spans: list[tuple[int, int]] = []
        for limit in dict.fromkeys((most, (most + even) // 2, even)):
            spans = self._pack(text, start, end, limit)
            if len(spans) < 2 or self.tokenizer.count(text[slice(*spans[-1])]) >= FRAGMENT_TOKENS:
                return spans
        return spans

    def _pack(self, text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
        units: list[tuple[int, int]] = []
        encoding = self.docling_tokenizer.tokenizer
        for span in block_sentence_spans(text, start, end):
            units.extend(
                split_span_by_tokens(text, span, limit, encoding.encode_ordinary, encoding.decode_with_offsets)
            )

        def count_range(s: int, e: int) -> int:
            return self.tokenizer.count(text[s:e])

        # Each unit costs its text and the gap before it (a table's indents and rules are many tokens), so
        # the packing estimate is close and the exact check seldom has to leave a remainder behind.
        counts = [count_range(units[k - 1][1] if k else s, e) for k, (s, e) in enumerate(units)]
        groups = [list(g) for g in pack_units_exact(units, counts, limit, count_range)]
        # A tail under 30 tokens takes units from the group before it while both stay within the limit.
        while len(groups) > 1 and len(groups[-2]) > 1:
            last = groups[-1]
            if count_range(units[last[0]][0], units[last[-1]][1]) >= FRAGMENT_TOKENS:
                break
            grown = [groups[-2][-1], *last]
            if count_range(units[grown[0]][0], units[grown[-1]][1]) > limit:
                break
            groups[-2], groups[-1] = groups[-2][:-1], grown
        return [(units[g[0]][0], units[g[-1]][1]) for g in groups]

    def _draft(
        self,
        doc: AssembledDocument,
        item: _Located,
        start: int,
        end: int,
        headings: Sequence[Block],
        tables: Sequence[Block],
    ) -> ChunkDraft:
        text = doc.text[start:end]
        pages = pages_for_range(doc.page_map, start, end)
        context = ChunkContext(
            parent_heading=item.headings[-1] if item.headings else None,
            parent_heading_level=_heading_level(headings, item.headings, end),  # a merge may start earlier
            section_path=" > ".join(item.headings),
            element_type=_element_type(item, start, end),
            related_tables=_related_tables(text, item.blocks, tables),
            related_pictures=find_related_elements(text, "Figure"),
            page_nums=pages,
            is_page_boundary=len(pages) > 1,
        )
        word_count = len(text.split())
        page_num = pages[0] if pages else 1
        validate_chunk(text, word_count, page_num, context)
        return ChunkDraft(
            text=text,
            char_start=start,
            char_end=end,
            section_path=item.headings,
            content_type=context.element_type,
            metadata={
                **context.to_dict(),
                "page_num": page_num,
                "word_count": word_count,
                "contextualized_text": contextualize_chunk(text, context),
                "doc_item_labels": list(item.labels),
                "max_tokens": self.options.max_tokens,
                "merged_headings": list(item.merged),
            },
        )


_BLOCK_TYPES = {"table": "table_cell", "list_item": "list_item", "caption": "caption", "code": "code"}


def _element_type(item: _Located, start: int, end: int) -> str:
    """Docling's label for the chunk, unless the piece of it (cut to the token limit, or a paragraph that
    Docling put after a table) overlaps no table: then the kind of block that covers most of it."""
    label = ELEMENT_TYPES.get(item.labels[0].upper(), "text") if item.labels else "text"
    if label != "table_cell" or any(b.kind == "table" and b.start < end and b.end > start for b in item.blocks):
        return label
    cover: dict[str, int] = {}
    for b in item.blocks:
        if b.start < end and b.end > start and b.kind != "heading":
            kind = _BLOCK_TYPES.get(b.kind, "text")
            cover[kind] = cover.get(kind, 0) + min(b.end, end) - max(b.start, start)
    return max(cover, key=lambda k: (cover[k], k)) if cover else "text"


def _heading_level(headings: Sequence[Block], path: tuple[str, ...], start: int) -> int | None:
    """Level (0 title, 1 section, 2 subsection...) of the nearest preceding heading named path[-1]."""
    if not path:
        return None
    index = bisect_right([h.start for h in headings], start)
    for heading in reversed(headings[:index]):
        if heading.text == path[-1]:
            return heading.level
    return None


def _related_tables(text: str, blocks: Sequence[Block], tables: Sequence[Block]) -> list[str]:
    own = [f"table-{tables.index(b)}" for b in blocks if b.kind == "table" and b in tables]
    return list(dict.fromkeys([*own, *find_related_elements(text, "Table")]))


# --- mapping Docling chunks back to the stream --------------------------------------------------


def locate_chunks(
    text: str, chunks: Sequence[Any], refs: dict[str, Block], serialize: Callable[[Any], str]
) -> list[_Located]:
    """Exact [start, end) of every Docling chunk.

    A chunk starts at its first item's block, unless that item continues from the previous chunk
    (Docling split it); then the chunk's first line is searched in the source after the previous
    start, or, for re-serialized items (tables), placed proportionally and snapped to a line start.
    A chunk ends at its last item's block end, or where the next chunk continues the same item.
    """
    items = [[refs[i.self_ref] for i in c.meta.doc_items if i.self_ref in refs] for c in chunks]
    keep: list[int] = []
    starts: list[int] = []
    previous_last: Block | None = None
    cursor = 0
    for n in (n for n, blocks in enumerate(items) if blocks):
        first = items[n][0]
        start: int | None
        if first is previous_last:
            item = next(i for i in chunks[n].meta.doc_items if i.self_ref in refs)
            start = _continuation_start(text, chunks[n].text, first, cursor, lambda i=item: serialize(i))
            if start is None and keep:
                items[keep[-1]] = [*items[keep[-1]], *items[n][1:]]
                previous_last = items[keep[-1]][-1]
                continue
        else:
            start = first.start
        start = max(start or 0, cursor)
        keep.append(n)
        starts.append(start)
        cursor = start + 1
        previous_last = items[n][-1]
    located: list[_Located] = []
    for k, n in enumerate(keep):
        last = items[n][-1]
        continues = k + 1 < len(keep) and items[keep[k + 1]][0] is last
        end = trim_span(text, starts[k], starts[k + 1])[1] if continues else last.end
        start, end = trim_span(text, starts[k], max(end, starts[k] + 1))
        if end <= start:
            continue
        meta = chunks[n].meta
        located.append(
            _Located(
                start=start,
                end=end,
                headings=tuple(meta.headings or ()),
                labels=tuple(str(i.label) for i in meta.doc_items),
                blocks=tuple(dict.fromkeys(items[n])),
            )
        )
    return located


def _continuation_start(
    text: str, chunk_text: str, block: Block, cursor: int, serialized_item: Callable[[], str]
) -> int | None:
    """Where a continued item resumes, at a line start; serializing the item (slow for tables) only when
    search fails. None when the source does not show where: the chunk then stays part of the previous
    one (an unplaceable boundary used to become one-character chunks cut out of a word)."""
    head = chunk_text.lstrip().split("\n", 1)[0][:80].strip()
    lo = max(cursor, block.start)
    if head:
        found = text.find(head, lo, block.end)
        if found >= 0:
            while found > lo and text[found - 1].isalnum() and text[found].isalnum():
                found -= 1  # Docling split inside a word (a run of digits): the word goes whole to this chunk
            return found
        serialized = serialized_item()
        position = serialized.find(head)
        if position >= 0 and serialized:
            guess = block.start + (block.end - block.start) * position // len(serialized)
            line = text.find("\n", max(guess, lo), block.end)
            return line + 1 if line >= 0 else None
    return None


# --- strategy router (docs/strategies.md#window-2-the-legacy-router) ---------------------------------------------


def create_chunker(strategy_name: str, tokenizer: Tokenizer | None = None, **options: Any) -> Chunker:
    """`hybrid` -> HybridChunker; anything else -> the legacy 250-word / 50-overlap window.

    The seed's API (docs/strategies.md#window-2-the-legacy-router), kept for its callers; the chunkers come from the one
    registry so a strategy is built (and configured) the same way whichever door it is asked for through. The window's
    registry defaults are the seed's 250/50."""

    if strategy_name == "hybrid":
        return get_chunker("hybrid", tokenizer=tokenizer, **options)
    return get_chunker("window", tokenizer=tokenizer)
