"""Running headers, footers and page numbers: found once per document so every chunk leaves them out."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence

from streams.core.document import page_text_ranges
from streams.core.events import AssembledDocument
from streams.core.text import Span, collapse_whitespace, line_spans, running_key, trim_span

_PAGE_NUMBER = re.compile(r"^(page\s*)?[-–]?\s*\d{1,4}\s*[-–]?(\s*(of|/)\s*\d{1,4})?$", re.I)
DOC_LABEL = re.compile(r"^(news|press|earnings) release$|^for immediate release$", re.I)


def dropped_lines(doc: AssembledDocument) -> list[Span]:
    """Page numbers and running headers/footers (first/last line repeated on many pages)."""
    pages = page_text_ranges(doc.page_map)
    text = doc.text
    edges: list[tuple[str, Span]] = []
    dropped: list[Span] = []
    for _page, start, end in pages:
        lines = [trim_span(text, s, e) for s, e in line_spans(text, start, end)]
        lines = [sp for sp in lines if sp[1] > sp[0]]
        for sp in lines:
            if _PAGE_NUMBER.match(text[sp[0] : sp[1]]):
                dropped.append(sp)
        dropped.extend(sp for sp in lines[:3] if DOC_LABEL.match(text[sp[0] : sp[1]].strip()))
        for sp in lines[:2] + lines[-2:]:
            edges.append((running_key(text[sp[0] : sp[1]]), sp))
    marked = {
        (e.page_number, " ".join(e.text.split()))
        for e in doc.elements
        if e.kind in ("page_header", "page_footer", "page_number") and e.text.strip()
    }
    for page, start, end in pages if marked else ():
        for sp in line_spans(text, start, end):
            ts, te = trim_span(text, *sp)
            if te > ts and (page, " ".join(text[ts:te].split())) in marked:
                dropped.append((ts, te))
    if len(pages) >= 3:
        freq = Counter(key for key, _ in edges)
        threshold = max(3, len(pages) // 2)
        dropped.extend(sp for key, sp in edges if freq[key] >= threshold and len(key) < 120)
    return sorted(set(dropped))


def kept_lines(text: str, start: int, end: int, dropped: Sequence[Span]) -> list[Span]:
    """Trimmed non-blank lines of [start, end) that are not headers, footers or page numbers."""
    out = []
    for s, e in line_spans(text, start, end):
        ts, te = trim_span(text, s, e)
        if te <= ts:
            continue
        i = bisect_left(dropped, (ts, te))
        if i < len(dropped) and dropped[i] == (ts, te):
            continue
        out.append((ts, te))
    return out


def clean_text(text: str, spans: Sequence[Span], joiner: str = "\n") -> str:
    return collapse_whitespace(joiner.join(text[s:e] for s, e in spans))
