"""Deterministic metadata for letter chunks (docs/strategies.md#letter-2-chunk-objects-ids-and-metadata,
docs/strategies.md#letter-9-content-type-priority-and-abstraction): gazetteers and regexes, no models."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from operator import itemgetter
from typing import Any

import ahocorasick

from streams.core.text import FOLD_TRAPS


def _names(resource: str) -> tuple[str, ...]:
    """One name a line from the letter's data folder, in file order: the gazetteers grow as letters are
    read, and a list edit should not be a code change."""
    text = (files("streams.core.chunkers.letter") / "data" / resource).read_text(encoding="utf-8")
    return tuple(stripped for line in text.splitlines() if (stripped := line.strip()))


COMPANIES: tuple[str, ...] = _names("companies.txt")
PEOPLE: tuple[str, ...] = _names("people.txt")
METRICS: dict[str, str] = {
    "book value": r"book value",
    "intrinsic value": r"intrinsic (?:business )?value",
    "float": r"\bfloat\b",
    "cost of float": r"cost of float",
    "combined ratio": r"combined ratio",
    "underwriting profit": r"underwriting (?:profit|gain)",
    "underwriting loss": r"underwriting loss",
    "operating earnings": r"operating earnings",
    "net worth": r"net worth",
    "return on equity": r"return on (?:beginning |average )?(?:shareholders[’'] )?equity",
    "look-through earnings": r"look-through earnings",
    "premium volume": r"premium volume|premiums written|premiums earned",
    "market value": r"market value",
    "pre-tax earnings": r"pre-tax earnings",
    "net income": r"net income",
    "earnings per share": r"(?:earnings|book value) per share|per-share (?:earnings|book value)",
    "dividends": r"\bdividends?\b",
    "revenues": r"\brevenues?\b|\bsales\b",
    "goodwill": r"\bgoodwill\b",
    "investment income": r"investment income",
    "realized gains": r"realized (?:capital )?gains",
    "loss reserves": r"loss reserves?",
    "debt": r"\bborrowings?\b|\bdebt\b",
}
THEMES: dict[str, tuple[str, ...]] = {
    "insurance": ("insurance", "underwriting", "reinsurance", "premium", "float", "policyholder"),
    "acquisitions": ("acqui", "purchase of", "merger", "bought"),
    "capital allocation": (
        "capital allocation",
        "allocate capital",
        "redeploy",
        "retained earnings",
        "reinvest",
    ),
    "investments": ("stock", "equities", "portfolio", "marketable securities", "investee", "bonds"),
    "management": ("manager", "management", "ceo", "chief executive"),
    "accounting": ("accounting", "gaap", "goodwill", "amortization", "reported earnings"),
    "taxes": ("tax", "irs"),
    "shareholder returns": ("book value", "per-share", "compounded", "net worth"),
    "share repurchases": ("repurchase", "buyback", "buy back"),
    "dividends": ("dividend",),
    "corporate governance": ("board of directors", "directors", "governance", "compensation"),
    "derivatives": ("derivative",),
    "annual meeting": ("annual meeting", "omaha", "meeting"),
    "textiles": ("textile", " mills", " mill ", "looms"),
    "retail": ("retail", "furniture", "jewelry", "candy", "candies", "store"),
    "utilities and energy": ("utility", "utilities", "energy", "pipeline", "electric"),
    "banking": ("bank", "deposit", "loan"),
    "media": ("newspaper", "broadcast", "television", "publishing"),
    "inflation": ("inflation",),
    "debt and risk": ("debt", "leverage", "borrow", "liquidity"),
    "philanthropy": ("contribution", "charit", "gift"),
}
CONCEPTS: dict[str, tuple[str, ...]] = {
    "economic moat": ("moat", "franchise", "competitive advantage"),
    "margin of safety": ("margin of safety",),
    "circle of competence": ("circle of competence", "understand the business", "businesses we understand"),
    "float": ("float",),
    "intrinsic value": ("intrinsic value", "intrinsic business value"),
    "mr. market": ("mr. market",),
    "owner earnings": ("owner earnings",),
    "look-through earnings": ("look-through earnings",),
    "institutional imperative": ("institutional imperative", "lemming"),
    "owner orientation": ("owner-partner", "partners", "owner-related", "owners"),
    "retained earnings test": ("every dollar retained", "retained earnings", "one dollar of market value"),
    "long-term holding": ("forever", "permanent", "long-term", "never sell"),
    "management quality": ("able and honest", "integrity", "talented manager"),
}
MISTAKE_WORDS = re.compile(r"\b(?:mistakes?|errors?|wrong|blunder(?:s|ed)?|misjudg\w*)\b", re.I)
FIRST_PERSON = re.compile(r"\b(?:I|we|my|our|me|us)\b", re.I)
PRINCIPLE_WORDS = re.compile(r"\b(?:principles?|policy|policies|we believe)\b", re.I)
ACTIONABLE = re.compile(r"\b(?:should|must|will|never|always|prefer|insist|require|want|avoid|intend)\b", re.I)
ACQUISITION = re.compile(r"\b(?:acqui\w+|merger|purchased? (?:of )?(?:all|\d+%))\b", re.I)
LOGISTICS = re.compile(
    r"annual meeting|meeting will|hotel|airport|shuttle|designated[- ]contributions|proxy|"
    r"shareholder-designated|reservations?|buses|ticket|Civic Auditorium|Qwest|10-K",
    re.I,
)
# A year 1920-2049 not preceded by a digit, "$", "." or ",": (?<![\d$.,])(19[2-9]\d|20[0-4]\d), with each
# lookbehind moved after the leading digit so that re scans for "1"/"2" instead of trying every position.
YEAR = re.compile(r"((?:1(?<![\d$.,]1)9[2-9]|2(?<![\d$.,]2)0[0-4])\d)(?![\d,%])")
MONEY = re.compile(r"\$\s?\d[\d,]*(?:\.\d+)?(?:\s(?:million|billion|trillion))?")
PERCENT = re.compile(r"\d+(?:\.\d+)?%")
FUTURE = re.compile(
    r"\b(?:will|expect\w*|anticipate\w*|next year|in the future|coming years?|outlook|forecast\w*)\b", re.I
)
REPORT_YEAR = re.compile(r"\b(19\d\d|20\d\d)(?:\s+annual)?\s+(?:report|letter)", re.I)
SENTENCE_SPLIT = re.compile(r"(?<=[.?!])[”\"’)]?\s+(?=[A-Z“\"(])")
NAME_SUFFIX = re.compile(
    r"\b((?:[A-Z][A-Za-z&’'\-]+\s){1,3})(?:Company|Corporation|Industries|Insurance Company|Inc\.)"
)
_NAME_SUFFIX_WORDS = ("Company", "Corporation", "Industries", "Inc.")  # NAME_SUFFIX cannot match without one
DANGLING_START = re.compile(r"^(?:this|that|these|those|it|such|the above|as noted|as mentioned)\b", re.I)

_CAP_WORD = re.compile(r"(?<![A-Za-z])[A-Z][A-Za-z]*")

REPORT_CITE = re.compile(r"last year[’']s (?:report|letter)", re.I)
# Lowercase twins of the re.I patterns: on lowered text without FOLD_TRAPS they find what the re.I
# pattern finds in the text, without re.I's cost.
_LOWER_TWIN: dict[re.Pattern[str], re.Pattern[str]] = {
    rx: re.compile(rx.pattern.lower())
    for rx in (
        MISTAKE_WORDS,
        FIRST_PERSON,
        PRINCIPLE_WORDS,
        ACTIONABLE,
        ACQUISITION,
        LOGISTICS,
        FUTURE,
        REPORT_YEAR,
        REPORT_CITE,
    )
}


# Lowercase substrings one of which the lowered text must hold for the pattern to match there. Python's re
# tries a pattern that opens with \b or a many-way alternation at almost every position of a chunk, while
# `in` finds a literal in one fast pass, and most chunks hold none of these words.
_NEEDLES: dict[re.Pattern[str], tuple[str, ...]] = {
    MISTAKE_WORDS: ("mistake", "error", "wrong", "blunder", "misjudg"),
    PRINCIPLE_WORDS: ("principle", "polic", "we believe"),
    ACTIONABLE: ("should", "must", "will", "never", "always", "prefer", "insist", "require", "want", "avoid", "intend"),
    ACQUISITION: ("acqui", "merger", "purchase"),
    LOGISTICS: (
        "annual meeting",
        "meeting will",
        "hotel",
        "airport",
        "shuttle",
        "designated",
        "proxy",
        "reservation",
        "buses",
        "ticket",
        "civic auditorium",
        "qwest",
        "10-k",
    ),
    FUTURE: ("will", "expect", "anticipate", "next year", "in the future", "coming year", "outlook", "forecast"),
    REPORT_YEAR: ("report", "letter"),
    REPORT_CITE: ("last year",),
}


@dataclass(frozen=True, slots=True)
class _View:
    """Derived forms of one chunk text; `_meta` asks a dozen questions of the same text."""

    low: str
    safe: bool  # low may stand in for text under re.I patterns (see FOLD_TRAPS)
    flat: str
    flat_low: str
    sentences: list[str]


@functools.lru_cache(maxsize=8)
def _view(text: str) -> _View:
    flat = " ".join(text.split())
    sents = [s.strip() for s in SENTENCE_SPLIT.split(flat) if s.strip()]
    return _View(text.lower(), not FOLD_TRAPS.search(text), flat, flat.lower(), sents)


def _absent(rx: re.Pattern[str], low: str) -> bool:
    """Whether the lowered text lacks every literal the pattern needs (see _NEEDLES)."""
    needles = _NEEDLES.get(rx)
    return needles is not None and not any(n in low for n in needles)


def _search(rx: re.Pattern[str], text: str, low: str, safe: bool) -> bool:
    """rx.search(text) for an re.I pattern, on the lowered text when that is equivalent."""
    if not safe:
        return bool(rx.search(text))
    return not _absent(rx, low) and bool(_LOWER_TWIN[rx].search(low))


def _findall(rx: re.Pattern[str], text: str, low: str, safe: bool) -> list[Any]:
    if not safe:
        return rx.findall(text)
    return [] if _absent(rx, low) else _LOWER_TWIN[rx].findall(low)


def _any_sentence(v: _View, first: re.Pattern[str], second: re.Pattern[str]) -> bool:
    """Whether one sentence matches both re.I patterns.

    A sentence is a stretch of the flat text bounded by spaces or its ends, so a match in a sentence
    is a match in the flat text: when either pattern misses the flat text no sentence can match.
    """
    if not (_search(first, v.flat, v.flat_low, v.safe) and _search(second, v.flat, v.flat_low, v.safe)):
        return False
    return any(first.search(s) and second.search(s) for s in v.sentences)


def _gazetteer(names: Iterable[str]) -> dict[str, list[str]]:
    """Names indexed by their leading capitalised word, longest first: one scan of capitals per chunk."""
    index: dict[str, list[str]] = {}
    for n in sorted(set(names), key=lambda n: (-len(n), n)):
        head = _CAP_WORD.match(n)
        index.setdefault(head.group(0) if head else n, []).append(n)
    return index


_COMPANY_RE = _gazetteer(COMPANIES)
_PEOPLE_RE = _gazetteer(PEOPLE)
_BOTH = (_COMPANY_RE, _PEOPLE_RE)
_HEADS = frozenset(_COMPANY_RE) | frozenset(_PEOPLE_RE)
_METRIC_RE = [(name, re.compile(p)) for name, p in METRICS.items()]
# Substrings each metric pattern cannot match without (one of them must occur): `in` is far cheaper
# than a regex search, and most metrics are absent from most chunks.
_METRIC_NEEDLES: dict[str, tuple[str, ...]] = {
    "book value": ("book value",),
    "intrinsic value": ("intrinsic ",),
    "float": ("float",),
    "cost of float": ("cost of float",),
    "combined ratio": ("combined ratio",),
    "underwriting profit": ("underwriting ",),
    "underwriting loss": ("underwriting loss",),
    "operating earnings": ("operating earnings",),
    "net worth": ("net worth",),
    "return on equity": ("return on ",),
    "look-through earnings": ("look-through earnings",),
    "premium volume": ("premium",),
    "market value": ("market value",),
    "pre-tax earnings": ("pre-tax earnings",),
    "net income": ("net income",),
    "earnings per share": ("per share", "per-share"),
    "dividends": ("dividend",),
    "revenues": ("revenue", "sales"),
    "goodwill": ("goodwill",),
    "investment income": ("investment income",),
    "realized gains": ("realized ",),
    "loss reserves": ("loss reserve",),
    "debt": ("borrowing", "debt"),
}
_METRIC_SCAN = [(name, rx, _METRIC_NEEDLES[name]) for name, rx in _METRIC_RE]


def _canon(name: str) -> str:
    return name.replace("’", "'")


def _found(indexes: Sequence[dict[str, list[str]]], text: str) -> list[list[str]]:
    """Gazetteer names per index in order of first mention: one scan of the capitals serves them all."""
    seen: list[list[str]] = [[] for _ in indexes]
    heads = _HEADS if indexes is _BOTH else frozenset(h for index in indexes for h in index)
    for m in _CAP_WORD.finditer(text):
        word = m.group(0)
        if word not in heads:
            continue
        at = m.start()
        for index, names in zip(indexes, seen, strict=True):
            for name in index.get(word, ()):
                end = at + len(name)
                if text.startswith(name, at) and not text[end : end + 1].isalpha():
                    key = _canon(name)
                    if key not in names:
                        names.append(key)
                    break
    return seen


def _metrics(text: str) -> list[str]:
    """Metric names in order of first mention; patterns are lowercase and scan the lowered text."""
    low = _view(text).low
    present = _keyword_counts(low)  # holds the metric needles too: one pass instead of 30 `in` scans
    hits = [
        (m.start(), name)
        for name, rx, needles in _METRIC_SCAN
        if any(present[n] for n in needles) and (m := rx.search(low))
    ]
    return [name for _, name in sorted(hits)]


def entities(text: str) -> dict[str, list[str]]:
    """Companies and people by gazetteer (plus "X Company" names), metrics by pattern, first mention first."""
    companies, people = _found(_BOTH, text)
    suffixed = NAME_SUFFIX.finditer(text) if any(w in text for w in _NAME_SUFFIX_WORDS) else ()
    for m in suffixed:
        name = (m.group(0)).strip()
        if name not in companies and not name.startswith(("The ", "Our ", "This ")):
            companies.append(name)
    companies = [c for c in companies if not any(c != o and c in o for o in companies)]
    return {
        "companies": companies[:12],
        "people": people[:12],
        "metrics": _metrics(text),
    }


_second = itemgetter(1)


def _has_border(word: str) -> bool:
    """Whether a proper prefix of `word` is also its suffix, i.e. two occurrences can overlap."""
    return any(word[:k] == word[-k:] for k in range(1, len(word)))


def _keyword_automaton(words: Iterable[str]) -> tuple[Any, tuple[str, ...]]:
    """An automaton of the keywords whose occurrences cannot overlap, and the rest.

    The automaton reports every occurrence, overlapping ones included; `str.count` counts
    non-overlapping ones. For a word without a border the two are the same number.
    """
    automaton = ahocorasick.Automaton()
    bordered = []
    for word in sorted(set(words)):
        if _has_border(word):
            bordered.append(word)
        else:
            automaton.add_word(word, word)
    automaton.make_automaton()
    return automaton, tuple(bordered)


_KEYWORDS, _BORDERED = _keyword_automaton(
    w for table in (THEMES, CONCEPTS, _METRIC_NEEDLES) for ws in table.values() for w in ws
)


@functools.lru_cache(maxsize=8)
def _keyword_counts(low: str) -> Counter[str]:
    """`low.count(word)` of every theme and concept keyword and metric needle, in one pass over `low`
    (themes, concepts and metrics ask of the same chunk)."""
    counts = Counter(map(_second, _KEYWORDS.iter(low)))
    for word in _BORDERED:
        if n := low.count(word):
            counts[word] = n
    return counts


def _keyword_rank(table: dict[str, tuple[str, ...]], text: str, minimum: int, low: str | None = None) -> list[str]:
    counts = _keyword_counts(text.lower() if low is None else low)
    scored = []
    for order, (name, words) in enumerate(table.items()):
        hits = sum(counts[w] for w in words)
        if hits >= minimum:
            scored.append((-hits, order, name))
    return [name for _, _, name in sorted(scored)]


def themes(text: str) -> list[str]:
    return _keyword_rank(THEMES, text, 2, _view(text).low)[:4]


def buffett_concepts(text: str) -> list[str]:
    return _keyword_rank(CONCEPTS, text, 1, _view(text).low)[:4]


def sentences(text: str) -> list[str]:
    return list(_view(text).sentences)


def principles(text: str) -> list[dict[str, str]]:
    """Sentences stating a rule Berkshire follows: principle/policy/belief wording and an actionable verb."""
    v = _view(text)
    found: list[dict[str, str]] = []
    if not _search(PRINCIPLE_WORDS, v.flat, v.flat_low, v.safe):
        return found  # no sentence can have the wording (see _any_sentence)
    for sent in v.sentences:
        if len(sent) > 320 or not PRINCIPLE_WORDS.search(sent) or not ACTIONABLE.search(sent):
            continue
        cats = _keyword_rank(THEMES, sent, 1)
        found.append({"statement": sent, "category": cats[0] if cats else "general"})
        if len(found) == 3:
            break
    return found


def content_type(text: str, has_table: bool) -> str:
    """In priority order (docs/strategies.md#letter-9-content-type-priority-and-abstraction): table, first-person
    mistake, actionable principle, narrative."""
    if has_table:
        return "financial_table"
    v = _view(text)
    if _any_sentence(v, MISTAKE_WORDS, FIRST_PERSON):
        return "mistake_confession"
    if _any_sentence(v, PRINCIPLE_WORDS, ACTIONABLE):
        return "principle_statement"
    return "narrative"


def retrieval_priority(text: str, ctype: str) -> str:
    """Tables, principles, mistakes, acquisitions high; logistics low; the rest medium
    (docs/strategies.md#letter-9-content-type-priority-and-abstraction)."""
    if ctype != "narrative":
        return "high"
    v = _view(text)
    if _search(ACQUISITION, text, v.low, v.safe):
        return "high"
    if len(_findall(LOGISTICS, text, v.low, v.safe)) >= 2:
        return "low"
    return "medium"


def abstraction_level(text: str, ents: dict[str, list[str]]) -> str:
    """Dense numbers/dates/names -> low, none -> high (pure philosophy), otherwise medium
    (docs/strategies.md#letter-9-content-type-priority-and-abstraction)."""
    flat = _view(text).flat
    words = max(1, flat.count(" ") + 1 if flat else 0)
    money, percent, found_years = _figures(text)
    specifics = len(money) + len(percent) + len(found_years)
    specifics += len(ents["companies"]) + len(ents["people"])
    density = specifics * 100 / words
    if density >= 3:
        return "low"
    if specifics == 0 or density < 0.5:
        return "high"
    return "medium"


@functools.lru_cache(maxsize=8)
def _figures(text: str) -> tuple[list[str], list[str], list[str]]:
    """MONEY, PERCENT and YEAR matches of a chunk, found once for the several fields that use them."""
    percent = PERCENT.findall(text) if "%" in text else []
    return MONEY.findall(text), percent, YEAR.findall(text)


def amounts(text: str) -> list[str]:
    """Money amounts in order of mention."""
    return list(_figures(text)[0])


def has_financial_data(text: str) -> bool:
    money, percent, _ = _figures(text)
    return bool(money or percent)


def years(text: str) -> list[int]:
    return sorted({int(y) for y in _figures(text)[2]})


def temporal(text: str, letter_year: int) -> dict[str, Any]:
    comparison = [y for y in years(text) if y != letter_year]
    return {
        "primary_year": letter_year,
        "comparison_years": comparison,
        "future_outlook": _search(FUTURE, text, _view(text).low, _view(text).safe),
    }


def cross_references(text: str, letter_year: int, own_title: str, titles: Iterable[str]) -> dict[str, Any]:
    """Other headings named in the chunk, and years of earlier letters the chunk cites."""
    v = _view(text)
    low = v.low
    related = sorted({t for t in titles if t and t != own_title and len(t) > 4 and t.lower() in low})
    cited = {int(y) for y in _findall(REPORT_YEAR, text, low, v.safe)}
    if letter_year and _search(REPORT_CITE, text, low, v.safe):
        cited.add(letter_year - 1)
    cited.discard(letter_year)
    return {"related_sections_same_letter": related, "related_years": sorted(cited)}


def complete_thought(text: str) -> bool:
    """No dangling reference to text outside the chunk (docs/strategies.md#letter-6-merging-short-pieces)."""
    body = text.strip()
    return not DANGLING_START.match(body) and "the above" not in body.lower()
