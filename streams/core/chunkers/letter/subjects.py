"""What a chunk's summary may name as its subject: the section title or table name as a noun phrase, or
the chunk's first theme."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from streams.core.chunkers.letter import enrich
from streams.core.chunkers.letter.layout import is_tabular


def topics(title: str, table: dict[str, Any] | None, themes: Sequence[str]) -> list[str]:
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
