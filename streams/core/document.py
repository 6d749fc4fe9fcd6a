"""The document stream: pages joined into one text with a page map of character ranges
(docs/strategies.md#stream-2-pages-joined-into-one-stream)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

from streams.core.doctype import GIVEN, SOURCE_KEY, detect, given_on_purpose
from streams.core.events import AssembledDocument, DocType, Element, PageEvent, PageSpan
from streams.core.metadata import merged

PAGE_SEPARATOR = "\n\n"


def build_stream(pages: Iterable[tuple[int, str]]) -> tuple[str, list[PageSpan]]:
    """Join pages exactly as docs/strategies.md#stream-2-pages-joined-into-one-stream says: each page's
    text plus a blank line, ranges [start, end)."""
    parts: list[str] = []
    page_map: list[PageSpan] = []
    cursor = 0
    for page_number, text in sorted(pages, key=lambda item: item[0]):
        piece = text + PAGE_SEPARATOR
        parts.append(piece)
        page_map.append(PageSpan(page_number=page_number, start_char=cursor, end_char=cursor + len(piece)))
        cursor += len(piece)
    return "".join(parts), page_map


def assemble(pages: Sequence[PageEvent], first_page_ms: int = 0, completed_ms: int = 0) -> AssembledDocument:
    """Build the assembled document from a complete set of pages (any order).

    A type the publisher gave wins; with none (`generic` and no page saying it was set on purpose) the
    type is detected from the joined text, and the metadata records how it was decided and why.
    """
    if not pages:
        raise ValueError("no pages to assemble")
    ordered = sorted(pages, key=lambda p: p.page_number)
    head = ordered[0]
    text, page_map = build_stream((p.page_number, p.text) for p in ordered)
    metadata = merged(p.metadata for p in ordered)
    elements: list[Element] = []
    for page in ordered:
        for element in page.elements:
            if element.page_number is None:
                element = element.model_copy(update={"page_number": page.page_number})
            elements.append(element)
    doc_type = head.doc_type
    if doc_type is DocType.generic and not given_on_purpose(metadata):
        detection = detect(text, head.document_name)
        doc_type = detection.doc_type
        metadata.update(detection.metadata())
    else:
        metadata[SOURCE_KEY] = GIVEN
    return AssembledDocument(
        doc_id=head.doc_id,
        document_name=head.document_name,
        doc_type=doc_type,
        amendment_number=head.amendment_number,
        page_count=head.page_count,
        text=text,
        page_map=page_map,
        metadata=metadata,
        elements=elements,
        first_page_ms=first_page_ms,
        completed_ms=completed_ms,
        tenant=head.tenant,
    )


def pages_for_range(page_map: Sequence[PageSpan], start: int, end: int) -> list[int]:
    """Pages a chunk [start, end) touches.

    The specification (docs/strategies.md#stream-2-pages-joined-into-one-stream) uses inclusive comparisons
    (`start_char <= chunk_end and end_char >= chunk_start`), which would also credit a page that merely abuts
    the chunk. With half-open ranges the exact overlap test is `start_char < end and end_char > start`; an
    empty range maps to its page.
    """
    if not page_map:
        return []
    if end <= start:
        starts = [p.start_char for p in page_map]
        index = max(0, bisect_right(starts, start) - 1)
        return [page_map[index].page_number]
    return [p.page_number for p in page_map if p.start_char < end and p.end_char > start]


def page_text_ranges(page_map: Sequence[PageSpan]) -> list[tuple[int, int, int]]:
    """(page, start, end) of each page's own text, without the trailing separator."""
    return [(p.page_number, p.start_char, p.end_char - len(PAGE_SEPARATOR)) for p in page_map]
