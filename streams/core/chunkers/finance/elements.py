"""Structured input (`doc.elements`): each element located in the stream by its text, in reading order."""

from __future__ import annotations

import re

from streams.core.chunkers.finance.blocks import Block, Context, Table
from streams.core.chunkers.finance.release import currency_of, units_of
from streams.core.chunkers.finance.transcript import REMARKS_HEADER, abbreviate_role
from streams.core.document import page_text_ranges
from streams.core.events import Element
from streams.core.text import Span


def locate(text: str, needle: str, cursor: int, page_range: tuple[int, int]) -> Span:
    """Range of an element's text in the stream, searched from `cursor` within its page."""
    lo = max(cursor, page_range[0])
    probe = needle.strip()
    for candidate in (probe, probe.split("\n")[0][:80]):
        if candidate:
            found = text.find(candidate, lo, page_range[1])
            if found >= 0:
                return found, found + (len(probe) if candidate == probe else len(candidate))
    return lo, lo


def element_blocks(ctx: Context) -> list[Block]:
    """Structured elements -> blocks with stream ranges, in reading order."""
    doc = ctx.doc
    pages = {p: (s, e) for p, s, e in page_text_ranges(doc.page_map)}
    cursor = 0
    in_qa = False
    blocks: list[Block] = []
    table_no = 0
    for element in doc.elements:
        kind = element.kind.lower()
        if kind in ("page_header", "page_footer", "page_number"):
            continue
        page_range = pages.get(element.page_number or 1, (0, len(doc.text)))
        needle = element.text or element.title or (element.rows[0][0] if element.rows and element.rows[0] else "")
        s, e = locate(doc.text, needle, cursor, page_range)
        cursor = max(cursor, e)
        if kind == "section_header":
            title = " ".join((element.text or element.title or "").split())
            in_qa = bool(re.search(r"(?i)q ?& ?a|question", title)) or (in_qa and not REMARKS_HEADER.match(title))
            blocks.append(Block("heading", s, e, title=title, level=element.level or 1))
        elif kind == "speaker_segment":
            blocks.append(_element_turn(element, s, e, in_qa))
        elif kind == "table":
            table_no += 1
            blocks.append(element_table(ctx, element, s, e, table_no))
        elif kind == "slide_title":
            blocks.append(Block("heading", s, e, title=" ".join(element.text.split()), level=1))
        else:
            blocks.append(Block("para", s, e, units=[(s, e)] if e > s else []))
    return blocks


def _element_turn(element: Element, s: int, e: int, in_qa: bool) -> Block:
    section = element.attrs.get("section", "").lower()
    qa = section in ("qa", "q&a", "qna", "questions") or (in_qa and section != "prepared_remarks")
    role = element.role or ""
    speaker = element.speaker or "Unknown speaker"
    analyst = bool(element.firm) or "analyst" in role.lower() or element.attrs.get("turn") == "question"
    return Block(
        "turn",
        s,
        e,
        speaker=speaker,
        role=abbreviate_role(role) if role else ("Analyst" if analyst else ""),
        firm=element.firm or "",
        is_analyst=analyst,
        is_operator=speaker.lower() == "operator",
        in_qa=qa,
        units=[(s, e)] if e > s else [],
    )


def element_table(ctx: Context, element: Element, s: int, e: int, table_no: int) -> Block:
    page = element.page_number or 1
    table_id = element.element_id or f"tbl_p{page}_{table_no:02d}"
    blob = " ".join([element.title or "", element.text, *(" ".join(r) for r in element.rows[:3])])
    table = Table(
        table_id=table_id,
        title=element.title or element.text.split("\n")[0][:120],
        rows=[list(r) for r in element.rows],
        units=element.attrs.get("units", "") or units_of(blob),
        currency=element.attrs.get("currency", "") or currency_of(blob),
        payload_ref=f"elements/{ctx.doc.doc_id}/tables/{table_id}.json",
    )
    return Block("table", s, e, title=table.title, table=table)
