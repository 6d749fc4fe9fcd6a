"""contextual_summary (docs/strategies.md#letter-3-the-contextual-summary): an offline, deterministic composer plus the
validation gate.

Summaries are composed from extracted facts (year, topic, companies, people, metrics, amounts, years)
in sentence frames picked by a stable hash, then checked by `validate_summary`; any violation makes the
composer try the next frame or drop the offending clause. An LLM-backed generator can plug in later
behind the same gate.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Sequence, Set
from dataclasses import dataclass, field, replace

MAX_WORDS = 45
SHARED_RUN = 8
FORBIDDEN = [
    (re.compile(r"\bsections?\b", re.I), "mentions a section"),
    (re.compile(r"\bpart\s+\w+\s+of\s+\w+", re.I), "mentions part X of Y"),
    (re.compile(r"\b(?:document|chunk|paragraph|excerpt|passage)s?\b", re.I), "mentions document structure"),
    (re.compile(r"\bBuffett discusses\b", re.I), "uses the template 'Buffett discusses'"),
    (re.compile(r"\b(?:this|the) \w* ?talks about\b", re.I), "uses the template 'talks about'"),
    (re.compile(r"\.\.\.|…"), "contains an ellipsis"),
    (
        re.compile(
            r"\b(?:addresses|discusses|turns to|reviews|examines|takes up|reports|tabulates|lay out|covers)\s+[\"“‘']?"
            r"(?:(?:here|there|it|that|what|who|let|we|i|you|they|he|she)['’](?:s|ve|re|ll|d|m)|\w+n['’]t)\b",
            re.I,
        ),
        "splices a clause after its verb",
    ),
]
_WORD = re.compile(r"[A-Za-z0-9$%’']+")  # hyphens split words: "Inter-Company" is two
_SENT_END = re.compile(r"[.?!](?=\s|$)")


# Lowering these two turns a non-word character into word characters; without them, lowering the
# whole text first yields exactly the lowered words (one C pass instead of one per word).
_LOWER_TRAPS = ("\u0130", "\u212a")


def _words(text: str) -> list[str]:
    if any(t in text for t in _LOWER_TRAPS):
        return [w.lower().replace("’", "'") for w in _WORD.findall(text)]
    return _WORD.findall(text.lower().replace("’", "'"))


def validate_summary(summary: str, chunk_text: str) -> list[str]:
    """Every rule of docs/strategies.md#letter-3-the-contextual-summary that `summary` breaks; empty when it passes."""
    problems: list[str] = []
    s = summary.strip()
    if not s:
        return ["empty"]
    words = s.split()
    if len(words) > MAX_WORDS:
        problems.append(f"{len(words)} words > {MAX_WORDS}")
    n_sent = len(_SENT_END.findall(s))
    if not 1 <= n_sent <= 3:
        problems.append(f"{n_sent} sentences, need 1-3")
    if not s[0].isupper():
        problems.append("does not start with a capital letter")
    if s[-1] not in ".!?":
        problems.append("does not end with a full stop (truncated)")
    if s.rstrip(".!?").endswith("-"):
        problems.append("ends with a truncated word")
    for rx, why in FORBIDDEN:
        if rx.search(s):
            problems.append(why)
    segments = [seg.strip() for seg in re.split(r"[,;]", s)]
    if len(segments) >= 4 and sum(len(seg.split()) <= 2 for seg in segments) >= len(segments) - 1:
        problems.append("reads as a keyword list")
    if _shared_run(s, chunk_text):
        problems.append(f"copies a run of {SHARED_RUN}+ words from the chunk")
    return problems


def _shared_run(summary: str, text: str) -> bool:
    sw = _words(summary)
    if len(sw) < SHARED_RUN:
        return False
    joined = _joined_words(text)
    return any(f" {' '.join(sw[i : i + SHARED_RUN])} " in joined for i in range(len(sw) - SHARED_RUN + 1))


@functools.lru_cache(maxsize=8)
def _joined_words(text: str) -> str:
    """The chunk's words between single spaces: a run of words occurs in the chunk exactly when the run,
    space-joined and space-padded, is a substring (words hold no spaces). Cheaper than a set of every
    8-word run, and `compose` validates several candidates against one chunk."""
    return f" {' '.join(_words(text))} "


@dataclass(slots=True)
class Facts:
    """What the composer may say about a chunk."""

    key: str
    year: int
    topics: list[str]
    tier: int
    content_type: str
    companies: list[str] = field(default_factory=list)
    people: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    themes: list[str] = field(default_factory=list)
    amounts: list[str] = field(default_factory=list)
    years: list[int] = field(default_factory=list)
    future: bool = False
    table_name: str = ""
    rows: int = 0


def _join(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _when(year: int) -> str:
    return str(year) if year else "an undated"


LEADS_T1 = (
    "Berkshire Hathaway's {y} shareholder letter turns to {topic}{co}.",
    "In the {y} letter to Berkshire owners, Warren Buffett reviews {topic}{co}.",
    "Buffett's {y} report to Berkshire shareholders examines {topic}{co}.",
    "Berkshire's {y} annual letter addresses {topic}{co}.",
    "Writing to shareholders about {y}, Buffett takes up {topic}{co}.",
)
LEADS_T2 = (
    "A table in Berkshire's {y} letter reports {topic}{co}.",
    "Berkshire's {y} shareholder letter tabulates {topic}{co}.",
    "Figures from Buffett's {y} letter lay out {topic}{co}.",
)


def _extras(f: Facts) -> list[str]:
    """Candidate follow-up sentences, most specific first; a figure cited twice is named once ("include
    $100 million and $100 million" reads as a slip)."""
    f = replace(f, metrics=list(dict.fromkeys(f.metrics)), amounts=list(dict.fromkeys(f.amounts)))
    out: list[str] = []
    if f.tier == 2 and f.rows:
        span = f" spanning {f.years[0]} to {f.years[-1]}" if len(f.years) >= 2 else ""
        out.append(f"It lists {f.rows} rows of figures{span}, with Buffett's commentary on what they show.")
    if f.content_type == "mistake_confession":
        out.append("Buffett candidly owns up to a misjudgment and what it cost Berkshire.")
    if f.content_type == "principle_statement":
        theme = f.themes[0] if f.themes else "running Berkshire"
        out.append(f"A guiding Berkshire rule on {theme} is spelled out.")
    if f.metrics and f.amounts:
        out.append(f"Figures cited include {f.amounts[0]} alongside {_join(f.metrics[:2])}.")
    elif f.metrics:
        out.append(f"The measures in focus are {_join(f.metrics[:2])}.")
    elif f.amounts:
        out.append(f"Amounts mentioned include {_join(f.amounts[:2])}.")
    if f.people:
        out.append(f"{_join(f.people[:2])} {'feature' if len(f.people) > 1 else 'features'} in the account.")
    earlier = [y for y in f.years if y < f.year]
    if earlier and f.tier == 1:
        out.append(f"Comparisons reach back to {earlier[0]}.")
    if f.future:
        out.append("Expectations for the years ahead are also set out.")
    if len(f.themes) >= 2:
        out.append(f"Related themes are {f.themes[0]} and {f.themes[1]}.")
    return out


# Subjects come from headings, and letters head sections with whole clauses ("Here's the final scorecard
# for the bet", "We've been here before"): a frame's verb takes a noun phrase, not a clause.
_MARKER = re.compile(r"^(?:[-–—•‣◦*]+|\(?\d{1,3}[.)]|\(?[A-Za-z][.)])\s+")
_DOUBLE_QUOTES = re.compile(r"[“”\"«»]")
_PRESENTATIVE = re.compile(
    r"^(?:here|there)(?:'s| is| are)\s+(?=(?:the|a|an|our|its|their|his|her|my|this|these|those|some)\s)", re.I
)
_CONTRACTED = re.compile(r"^(?:(?:here|there|it|that|what|who|where|how|let|he|she)'s|\w+'(?:ve|re|ll|d|m)|\w+n't)$")
_OPENERS = frozenset({"i", "we", "you", "they", "he", "she", "it", "here", "there"})
_SUBJECTS = frozenset({"i", "we", "you", "they", "he", "she"})
_WH = frozenset({"why", "how", "what", "when", "where", "whether", "which", "who"})


def subject(topic: str) -> str:
    """`topic` as a noun phrase a frame can take ("addresses the final scorecard for the bet"), or "" when
    it reads as a clause ("it's a simple business", "we bought a railroad"): spliced after "addresses" or
    "reviews", a clause makes the summary ungrammatical. List markers and quotation marks are dropped."""
    text = " ".join(_DOUBLE_QUOTES.sub("", topic).split())
    while True:
        stripped = _MARKER.sub("", text)
        if stripped[:1] in ("'", "‘"):
            stripped = stripped[1:].removesuffix("'").removesuffix("’")
        if stripped == text:
            break
        text = stripped.strip()
    presentative = _PRESENTATIVE.match(text.replace("’", "'"))  # same length: the offset carries over
    if presentative:
        text = text[presentative.end() :]
    shouting = text.isupper()  # an all-caps heading: "IT" there may be the pronoun, elsewhere it is an acronym
    raw = [w.strip("',;:.!?()") for w in text.replace("’", "'").split()]
    words = [w.lower() if shouting or not (w.isupper() and len(w) > 1) else "" for w in raw]
    if not words or not raw[0]:
        return ""
    if words[0] in _OPENERS or _CONTRACTED.match(words[0]):
        return ""
    if words[0] not in _WH and any(w in _SUBJECTS or _CONTRACTED.match(w) for w in words):
        return ""  # "Charlie and I were wrong"; an embedded question ("why we bought it") is a noun phrase
    if "letter" in words or "letters" in words:
        return ""  # every frame names the letter: "the annual letter addresses letter to shareholders"
    return text


def compose(f: Facts, chunk_text: str, taken: Set[str]) -> str:
    """A valid summary not yet in `taken`: frames, subjects and follow-ups tried in a stable order.

    docs/strategies.md#letter-3-the-contextual-summary asks for a rewrite, never a summary that breaks a rule, so the
    last resort is still validated: when every candidate is taken, a sentence naming the chunk's own distinctive words
    tells it apart."""
    topics = [t for t in dict.fromkeys(subject(t) for t in f.topics) if t] or ["Berkshire's affairs that year"]
    f = replace(f, topics=topics)
    leads = LEADS_T2 if f.tier == 2 else LEADS_T1
    start = zlib.crc32(f.key.encode()) % len(leads)
    co_options = [f.companies[:2], f.companies[:1], []] if f.companies else [[]]
    extras = _extras(f)
    valid: list[str] = []
    for topic in f.topics:
        for shift in range(len(leads)):
            frame = leads[(start + shift) % len(leads)]
            for cos in co_options:
                cos = [c.rstrip(".") for c in cos]
                co = f" at {_join(cos)}" if cos and f.tier == 1 else (f" for {_join(cos)}" if cos else "")
                lead = frame.format(y=_when(f.year), topic=topic, co=co)
                for text in _variants(lead, extras):
                    if validate_summary(text, chunk_text):
                        continue
                    if text not in taken:
                        return text
                    valid.append(text)
    for base in valid or [f"Berkshire Hathaway's {_when(f.year)} shareholder letter covers {f.topics[-1]}."]:
        for pair in _distinctive_pairs(chunk_text):
            text = f"{base} Names that come up include {pair}."
            if text not in taken and len(text.split()) <= MAX_WORDS and not validate_summary(text, chunk_text):
                return text
    return valid[0] if valid else f"Berkshire Hathaway's {_when(f.year)} shareholder letter covers {f.topics[-1]}."


_PROPER = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][a-z]{3,}(?:\s[A-Z][a-z]{2,})?)\b", re.M)


def _distinctive_pairs(text: str) -> list[str]:
    """Pairs of capitalised names from the chunk, most frequent first, as "X and Y"."""
    counts: dict[str, int] = {}
    for m in _PROPER.finditer(text):
        name = m.group(1)
        if name.split()[0] not in _NOT_NAMES:
            counts[name] = counts.get(name, 0) + 1
    names = sorted(counts, key=lambda n: (-counts[n], n))[:6]
    return [f"{a} and {b}" for i, a in enumerate(names) for b in names[i + 1 :]]


_NOT_NAMES = {"The", "This", "That", "These", "Those", "When", "What", "There", "Then", "Their", "They", "While"}


def _variants(lead: str, extras: Sequence[str]) -> list[str]:
    """Lead alone last: richer combinations come first so neighbours differ."""
    out: list[str] = []
    for i, a in enumerate(extras):
        for b in extras[i + 1 :]:
            out.append(f"{lead} {a} {b}")
        out.append(f"{lead} {a}")
    out.append(lead)
    return [t for t in out if len(t.split()) <= MAX_WORDS]
