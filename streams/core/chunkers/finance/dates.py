"""Quarter, year and publication date: read from metadata first, the text only as a fallback."""

from __future__ import annotations

import re

from streams.core.events import AssembledDocument
from streams.core.text import MONTH_NAMES

MONTHS = {m.lower(): i + 1 for i, m in enumerate(MONTH_NAMES.split("|"))}
_DATE_WORDS = re.compile(rf"\b({MONTH_NAMES})\s+(\d{{1,2}}),\s+(\d{{4}})")
_DATE_SLASH = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_ORDINAL_Q = {"first": 1, "second": 2, "third": 3, "fourth": 4}


def quarter_year(doc: AssembledDocument) -> tuple[str | None, int | None]:
    """Quarter ("2019-Q1") and year from metadata, then the document name, then the first lines of text."""
    meta_q = doc.meta("quarter").strip()
    meta_y = doc.meta("year").strip()
    year = int(meta_y) if meta_y.isdigit() else None
    q = None
    m = re.search(r"([1-4])\s*$", meta_q) if meta_q else None
    if m:
        q = int(m.group(1))
        ym = re.search(r"(19|20)\d{2}", meta_q)
        year = year or (int(ym.group(0)) if ym else None)
    if q is None or year is None:
        name = doc.document_name
        m2 = re.search(r"(?i)((?:19|20)\d{2})[\s_\-]?q([1-4])", name) or re.search(
            r"(?i)q([1-4])[\s_\-]?((?:19|20)\d{2})", name
        )
        if m2:
            a, b = m2.groups()
            yq = (int(a), int(b)) if len(a) == 4 else (int(b), int(a))
            year, q = year or yq[0], q or yq[1]
    if q is None or year is None:
        head = doc.text[:3000]
        m3 = re.search(r"\bQ([1-4])\s+(?:fiscal\s+)?((?:19|20)\d{2})\b", head) or re.search(
            r"(?i)\b(first|second|third|fourth) quarter(?: of)?(?: fiscal(?: year)?)?\s+((?:19|20)\d{2})\b",
            head,
        )
        if m3:
            qq = m3.group(1)
            q = q or (int(qq) if qq.isdigit() else _ORDINAL_Q[qq.lower()])
            year = year or int(m3.group(2))
    if year is None:
        ym = re.search(r"(?<!\d)((?:19|20)\d{2})(?!\d)", doc.document_name)
        year = int(ym.group(1)) if ym else None
    quarter = None if q is None else (f"{year}-Q{q}" if year else f"Q{q}")
    return quarter, year


def published_date(doc: AssembledDocument) -> str | None:
    """ISO date from metadata or the first date in the opening text."""
    for key in ("published_date", "date"):
        if found := doc.meta(key):
            return found
    head = doc.text[:1500]
    m = _DATE_WORDS.search(head)
    if m:
        return f"{int(m.group(3)):04d}-{MONTHS[m.group(1).lower()]:02d}-{int(m.group(2)):02d}"
    m2 = _DATE_SLASH.search(head)
    if m2 and 1 <= int(m2.group(1)) <= 12 and 1 <= int(m2.group(2)) <= 31:
        return f"{int(m2.group(3)):04d}-{int(m2.group(1)):02d}-{int(m2.group(2)):02d}"
    return None
