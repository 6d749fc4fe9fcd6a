"""Variants of a document the way real extractions of solicitations and papers differ: pdftotext page
headers and footers with form feeds, hyphenated line breaks, a standard-form cover page of numbered
fields, a glossary, a numbered reference list, and a price schedule whose columns pdftotext spread over
separate lines. Each takes the text and returns the text; the words of the original stay in order."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from tests.core.chunkers.letter_variants import chain, every_lines, rewrap

COVER = """SOLICITATION/CONTRACT/ORDER FOR COMMERCIAL ITEMS
1. REQUISITION NUMBER
PAGE 1 OF 48
2. CONTRACT NO.
3. AWARD/EFFECTIVE DATE
4. ORDER NUMBER
5. SOLICITATION NUMBER
W91-{n:04d}-R-0007
6. SOLICITATION ISSUE DATE
7. FOR SOLICITATION INFORMATION CALL:
a. NAME
b. TELEPHONE NUMBER
8. OFFER DUE DATE/LOCAL TIME
9. ISSUED BY
CODE
10. THIS ACQUISITION IS
UNRESTRICTED OR
SET ASIDE:
% FOR:
NAICS: 561730
SIZE STANDARD: $9.5 M
15. DELIVER TO
CODE
16. ADMINISTERED BY
17a. CONTRACTOR/OFFEROR
17b.
18a. PAYMENT WILL BE MADE BY
19.
ITEM NO.
20.
SCHEDULE OF SUPPLIES/SERVICES
"""

GLOSSARY = """ABBREVIATIONS

CO Contracting Officer
COR Contracting Officer's Representative
QASP Quality Assurance Surveillance Plan
PWS Performance Work Statement
CLIN Contract Line Item Number
FAR Federal Acquisition Regulation
SOW Statement of Work
KPI Key Performance Indicator
"""

PRICES = """SCHEDULE OF PRICES

CLIN
ITEM
QTY
UNIT
UNIT PRICE
AMOUNT
0001
Grounds maintenance, base year
12
MO
$
$
0002
Snow removal, base year
1
LOT
$
$
1001
Grounds maintenance, option year 1
12
MO
$
$
"""


def _blocks(text: str) -> list[str]:
    return re.split(r"\n[ \t]*\n", text)


def page_furniture(every: int, seed: int) -> Callable[[str], str]:
    """pdftotext output: a footer with the page number, a form feed and a running header."""

    def lines(page: int, rng: random.Random) -> list[str]:
        return ["", f"Solicitation W91-{seed:04d}-R-0007{' ' * rng.randint(1, 30)}Page {page} of 48", "\f",
                "PWS / Dated: 05.05.04", ""]  # fmt: skip

    return every_lines(every, seed, lines)


def cover_form(seed: int) -> Callable[[str], str]:
    return lambda text: COVER.format(n=seed) + "\n" + text


def glossary(text: str) -> str:
    blocks = _blocks(text)
    return "\n\n".join([*blocks[:2], GLOSSARY, *blocks[2:]])


def references(text: str) -> str:
    refs = [
        f"{i}. Okafor B, Lindqvist A, Marchetti G, et al. Continuous monitoring of structures under load. "
        f"J Struct Health. 20{10 + i};{i * 3}({i}):{100 + i}-{110 + i}. PMID: {29000000 + i * 7}"
        for i in range(1, 15)
    ]
    return text + "\n\nREFERENCES\n\n" + "\n".join(refs) + "\n"


def spread_prices(text: str) -> str:
    """A price schedule with one cell per line, as pdftotext prints a ruled table without -layout."""
    blocks = _blocks(text)
    at = max(1, len(blocks) * 2 // 3)
    return "\n\n".join([*blocks[:at], PRICES, *blocks[at:]])


def variants(seed: int = 0) -> dict[str, Callable[[str], str]]:
    rng = random.Random(seed)
    width = rng.randint(60, 95)
    return {
        "pdftotext-pages": chain(rewrap(width, hyphenate=True), page_furniture(rng.randint(25, 60), seed)),
        "cover-form": cover_form(seed),
        "glossary-references": chain(glossary, references),
        "spread-prices": spread_prices,
        "everything": chain(
            cover_form(seed),
            glossary,
            spread_prices,
            references,
            rewrap(width, hyphenate=True),
            page_furniture(40, seed),
        ),
    }
