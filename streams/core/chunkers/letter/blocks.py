"""Stage 1, blocks: the document as a letter's blocks, with its year and date, or refused as no letter.

Every later stage reads the `Letter` this returns and nothing else of the document."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from streams.core.chunkers.base import ChunkingError
from streams.core.chunkers.letter import enrich
from streams.core.chunkers.letter.layout import Block, analyse, is_normal_line
from streams.core.chunkers.letter.measure import Tokens
from streams.core.events import AssembledDocument

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
DATE = re.compile(r"\b(" + "|".join(MONTHS) + r")\s+(\d{1,2}),\s+(\d{4})\b")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True, slots=True)
class Letter:
    """A letter as the stages see it. `blocks` keeps the separators (they end sections); `body` leaves
    them out (a tier-2 chunk reaches across them to its neighbours)."""

    text: str
    source_file: str
    blocks: tuple[Block, ...]
    body: tuple[Block, ...]
    year: int
    date: str


def read(doc: AssembledDocument, tokens: Tokens, min_prose: int) -> Letter:
    """The letter in `doc`; raises ChunkingError when it is none (see `refuse_non_letters`)."""
    blocks, _ = analyse(doc.text, doc.page_map)
    body = tuple(b for b in blocks if b.kind != "separator")
    refuse_non_letters(blocks, tokens, min_prose)
    signed = signature_date(doc.text, body)
    return Letter(
        text=doc.text,
        source_file=doc.document_name,
        blocks=tuple(blocks),
        body=body,
        year=_year(doc, signed),
        date=_date(doc, signed),
    )


def refuse_non_letters(blocks: Sequence[Block], tokens: Tokens, min_prose: int) -> None:
    """What this strategy refuses, the only input it dead-letters: text with no prose paragraph at all
    (only figures, headings or tables), and prose too short for the seed's smallest chunk (150 tokens).
    Anything else is a letter, however it was extracted, and gets chunks."""
    paras = [b for b in blocks if b.kind == "para"]
    if not any(b.kind in {"para", "table"} for b in blocks):
        raise ChunkingError("not a letter: no body text after the opening performance table", "letter_empty")
    if not any(is_normal_line(ln) for b in paras for ln in b.lines):
        raise ChunkingError(
            "not a letter: no prose paragraph, only figures, headings or tables; chunk it with `section`",
            "letter_no_prose",
        )
    prose = sum(tokens.block(b) for b in paras)
    if prose < min_prose:
        raise ChunkingError(
            f"not a letter: {prose} tokens of prose, fewer than the {min_prose} of seed 000's smallest chunk",
            "letter_too_short",
        )


def signature_date(text: str, body: Sequence[Block]) -> str | None:
    """The date written near the first dated signature, as YYYY-MM-DD."""
    for b in body:
        if b.kind == "signature":
            m = DATE.search(text[max(0, b.start - 200) : b.end + 200])
            if m:
                return f"{int(m.group(3)):04d}-{MONTHS.index(m.group(1)) + 1:02d}-{int(m.group(2)):02d}"
    return None


def _year(doc: AssembledDocument, signed: str | None) -> int:
    """The year the letter reports on: metadata, file name, title, signature (a letter is signed the year
    after), else the year the opening mentions most; 0 when nothing says."""
    for raw in (doc.meta("year"), doc.meta("date")[:4]):
        if raw.isdigit() and 1900 <= int(raw) <= 2100:
            return int(raw)
    m = re.search(r"(?<!\d)(19[5-9]\d|20\d\d)(?!\d)", doc.document_name)
    if m:
        return int(m.group(1))
    head = doc.text[:3000]
    m = re.search(r"Letter\s+(19\d\d|20\d\d)", head)
    if m:
        return int(m.group(1))
    if signed:
        return int(signed[:4]) - 1
    found = enrich.YEAR.findall(head)
    if not found:
        return 0
    return int(max(sorted(set(found)), key=found.count))


def _date(doc: AssembledDocument, signed: str | None) -> str:
    raw = doc.meta("date")
    if ISO_DATE.match(raw):
        return raw
    return signed or "0000-00-00"
