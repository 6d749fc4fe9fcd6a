"""Document-type detection from the assembled text: which strategy a document is for, with its evidence.

A publisher that gives no type (no `doc_type`, or the schema's default `generic` without the page field
that says it was set on purpose) leaves the choice to the document itself. The detector reads the opening
of the assembled stream (the first pages, `SCAN_CHARS`), not the first page's opening or the file name:
extraction moves a letter's salutation below a performance table or onto page 2, and file names lose their
spaces. Each type has cues with weights; the best type wins when its score reaches `MIN_SCORE` and beats
the runner-up by `MIN_MARGIN`, else the document stays `generic`. The file name's words are one weak cue,
never enough alone. Pure and deterministic: the same text and name give the same type, score and evidence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from streams.core.events import DocType
from streams.core.metadata import CONFIDENCE_KEY, EVIDENCE_KEY, SOURCE_KEY

#: `doc_type_source` values: set on purpose by the publisher, found in the text, or nothing found.
GIVEN = "given"
DETECTED = "detected"
DEFAULT = "default"

SCAN_CHARS = 24_000
MIN_SCORE = 5.0
MIN_MARGIN = 1.5
NAME_WEIGHT = 1.5

_M = re.M
_IM = re.I | re.M


@dataclass(frozen=True, slots=True)
class Cue:
    """One piece of evidence for a type: a pattern, its weight, and how many matches count."""

    doc_type: DocType
    label: str
    pattern: re.Pattern[str]
    weight: float
    cap: int = 1  # matches counted at most (weight each); speaker turns count several
    minimum: int = 1  # matches needed before the cue counts at all


def _cue(
    doc_type: DocType, label: str, regex: str, weight: float, flags: int = _IM, cap: int = 1, minimum: int = 1
) -> Cue:
    return Cue(doc_type, label, re.compile(regex, flags), weight, cap, minimum)


L, T, R, S, P = DocType.letter, DocType.transcript, DocType.release, DocType.slides, DocType.press
B = DocType.solicitation  # bids

_OWNERS = (
    r"(?:share(?:holder|owner)s|stockholders|(?:limited\s+)?partners"
    r"|fellow\s+(?:share(?:holder|owner)s|owners|stockholders)|owners)"
)

CUES: tuple[Cue, ...] = (
    # Shareholder letters (seed 000)
    _cue(L, "salutation to owners", rf"^[ \t#*]*(?:to|dear)\s+(?:(?:the|our|my|all)\s+)?(?:fellow\s+)?{_OWNERS}\b", 5),
    _cue(
        L,
        "salutation to a company's members",
        r"^[ \t#*]*(?:to|dear)\s+(?:the\s+)?members\s+of\s+[^\n]{0,60}?"
        r"\b(?:plc|limited|ltd|holdings|inc|corporation|company|trust)\b",
        5.0,
    ),
    _cue(L, "letter to shareholders", rf"\bletter\s+to\s+(?:our\s+)?(?:fellow\s+)?{_OWNERS}", 3.0),
    _cue(
        L,
        "per-share performance",
        r"per[- ]share\s+(?:book|market|intrinsic)\s+value|(?:book|intrinsic)\s+value\s+per\s+share"
        r"|compounded\s+annual\s+(?:gain|return|growth)|relative\s+results"
        r"|(?:net\s+asset\s+value|nav)\s+per\s+(?:share|unit)",
        2.0,
    ),
    _cue(
        L,
        "performance against an index",
        r"\bvs\.?\s+(?:the\s+)?s&p\s*500|(?:against|versus)\s+the\s+s&p"
        r"|\b(?:for|against|versus)\s+the\s+(?:ftse|msci|russell|s&p)\b[^\n.]{0,30}\bindex\b",
        1.5,
    ),
    _cue(
        L,
        "chairman's signature",
        r"(?:^|[ \t]{3,})(?:[A-Z][\w.'-]+[ \t]+){0,4}(?:[-,–—][ \t]*)?"
        r"(?:chairman|chairwoman|chair|chief\s+executive\s+officer)"
        r"(?:\s+(?:of\s+the\s+board|and\s+(?:chief\s+executive(?:\s+officer)?|ceo|president)))*[ \t.]*$",
        2.0,
    ),
    _cue(L, "our shareholders", rf"\b(?:our|fellow)\s+{_OWNERS}\b", 1.0, cap=2),
    # Earnings transcripts (seed 001)
    _cue(T, "operator lines", r"^[ \t*]*operator\b[ \t*]*(?:[:\-–—]|$)", 3.0),
    _cue(T, "participants roster", r"\b(?:company|corporate|conference\s+call|call|other)\s+participants\b", 3.0),
    _cue(
        T,
        "question-and-answer session",
        r"\bquestion[- ]and[- ]answer\b|\bq\s?&\s?a\s+session\b|^questions\s+and\s+answers\s*$",
        2.0,
    ),
    _cue(T, "earnings or conference call", r"\b(?:earnings|conference|quarterly)\s+(?:call|webcast)\b", 2.0),
    _cue(
        T,
        "call courtesies",
        r"thank\s+you\s+for\s+(?:standing\s+by|joining)|ladies\s+and\s+gentlemen"
        r"|your\s+line\s+is\s+(?:now\s+)?open|next\s+question",
        1.5,
        cap=2,
    ),
    _cue(
        T,
        "speaker turns",
        r"^[ \t]*[A-Z][\w.'-]+(?:\s+[A-Z][\w.'-]+){0,3}\s+(?:--|—|–|-)\s+[A-Z][^\n]{2,60}$",
        1.0,
        flags=_M,
        cap=3,
        minimum=2,
    ),
    _cue(T, "analyst questions", r"\banalyst\b", 1.0),
    # Earnings releases (seed 001)
    _cue(
        R,
        "reports its results",
        r"\b(?:report(?:s|ed)?|announce[sd]?(?:\s+its)?)\s+(?:record\s+|strong\s+)?(?:first|second|third|fourth"
        r"|q[1-4]|full[- ]year|fiscal|annual|quarterly|operating|financial)\b[^.]{0,80}?\bresults\b"
        r"|\breports?\s+(?:record\s+)?(?:first|second|third|fourth)[- ]quarter\b[^.\n]{0,20}\bearnings\b",
        3.0,
    ),
    _cue(R, "GAAP figures", r"\bnon-gaap\b|\bgaap\b", 2.0),
    _cue(
        R,
        "earnings per share",
        r"\b(?:diluted\s+)?(?:earnings|eps|net\s+income)\s+per\s+(?:diluted\s+)?share\b|\bdiluted\s+eps\b"
        r"|\bper\s+diluted\s+share\b",
        1.5,
    ),
    _cue(
        R, "condensed consolidated statements", r"\bcondensed\s+consolidated\b|\bconsolidated\s+statements?\s+of\b", 2.0
    ),
    _cue(
        R, "year-over-year", r"\byear[- ]over[- ]year\b|\bcompared\s+(?:to|with)\s+the\s+(?:prior|same)[- ]year\b", 1.0
    ),
    _cue(R, "guidance", r"\b(?:outlook|guidance)\b", 1.0),
    _cue(
        R,
        "quarterly revenue",
        r"\b(?:quarter|fiscal\s+year)\s+(?:revenue|net\s+sales)\b|\brevenue\s+(?:of|was|grew|increased|rose)\b"
        r"|\b(?:revenue|net\s+sales)\s+for\s+the\s+(?:quarter|fiscal)",
        1.0,
    ),
    # Slide decks (seed 001)
    _cue(
        S,
        "slide markers",
        r"^[ \t#*]*(?:slide\s+\d+\b|agenda|key\s+(?:highlights|takeaways)|q\s?&\s?a|questions\??"
        r"|thank\s+you!?)[ \t*]*$",
        1.5,
        cap=3,
    ),
    _cue(S, "safe harbor slide", r"^[ \t#*]*safe\s+harbor\b", 1.5),
    _cue(S, "numbered slides", r"\bslide\s+\d{1,3}\b", 5.0, minimum=3),
    _cue(S, "bullet fragments", r"(?:^|\s)[•▪●◦]\s", 1.5, flags=_M, minimum=6),
    _cue(S, "a presentation's title", r"\b(?:earnings|investor|investors'|analyst)\s+(?:presentation|day)\b", 2.5),
    _cue(S, "this presentation", r"\b(?:this|today's)\s+(?:presentation|slides?|deck)\b", 2.0),
    # Press releases (seed 001)
    _cue(P, "for immediate release", r"\bfor\s+immediate\s+release\b", 3.0),
    _cue(P, "wire service", r"[/(]\s*(?:pr\s?newswire|business\s+wire|globe\s?newswire|accesswire)\s*[/)]", 2.0),
    _cue(P, "announcement", r"\b(?:today|has|have)\s+announced\b|\b(?:is|are)\s+pleased\s+to\s+announce\b", 2.0),
    _cue(P, "media contact", r"\b(?:media|press)\s+(?:contacts?|inquiries|relations)\b", 2.0),
    _cue(P, "end mark", r"^[ \t]*(?:###|-30-)[ \t]*$", 1.5, flags=_M),
    _cue(P, "about the company", r"^[ \t#*]*about\s+[A-Z][\w&.,' -]{1,60}$", 1.0),
    _cue(
        P,
        "dateline",
        r"^[ \t*]*[A-Z][A-Za-z .'-]{2,30},\s+[A-Z][A-Za-z. ]{2,20},?\s+"
        r"(?:[A-Z][a-z]{2,8}\.?\s+\d{1,2},\s+\d{4})\s*(?:[/(][^/()\n]+[/)])?\s*(?:--|—|–|-)",
        1.5,
        flags=_M,
    ),
    # Solicitations (seed 002)
    _cue(B, "request for proposal", r"\brequest\s+for\s+(?:proposals?|quotations?|quotes?|information)\b", 3.0),
    _cue(B, "RFx acronym", r"\b(?:RFP|RFQ|RFI|IFB)(?=\b|[a-z])", 2.0, flags=_M),
    _cue(
        B,
        "work statement",
        r"\bstatement\s+of\s+(?:work|objectives)\b|\bperformance\s+work\s+statement\b"
        r"|\bquality\s+assurance\s+(?:surveillance\s+)?plan\b",
        3.0,
    ),
    _cue(B, "SOW, PWS, SOO or QASP", r"\b(?:SOW|PWS|SOO|QASP)\b", 2.0, flags=_M),
    _cue(B, "offerors", r"\bofferors?\b|\bbidders?\b|\bproposers?\b", 2.0),
    _cue(B, "contractor shall", r"\bcontractor\s+(?:shall|will|must)\b", 2.0),
    _cue(
        B,
        "CLINs and price schedule",
        r"\bCLINs?\b|\bprice\s+schedule\b|\bschedule\s+of\s+(?:supplies|prices)\b|\bline\s+item\s+numbers?\b",
        2.0,
    ),
    _cue(
        B,
        "amendment of solicitation",
        r"\bamendment\s+of\s+solicitation\b|\bmodification\s+of\s+contract\b|\bSF[- ]?30\b",
        3.0,
    ),
    _cue(
        B,
        "evaluation factors",
        r"\bevaluation\s+(?:factors|criteria)\b|\bsection\s+[LM]\b|\bNAICS\b|\bset[- ]aside\b"
        r"|\bproposals?\s+(?:are|is|shall\s+be)\s+due\b",
        1.0,
        cap=2,
    ),
)

_NAME_HINTS: tuple[tuple[DocType, re.Pattern[str]], ...] = (
    (L, re.compile(r"letter|shareholder|stockholder|\bltr\b", re.I)),
    (T, re.compile(r"transcript|earnings call|conference call", re.I)),
    (S, re.compile(r"slides?|deck|presentation", re.I)),
    (P, re.compile(r"\bpress\b|announce", re.I)),
    (R, re.compile(r"earnings|results|\b10 ?[qk]\b", re.I)),
    (B, re.compile(r"rfp|rfq|rfi|solicitation|\bsow\b|\bpws\b|\bqasp\b|statement of work|\bamendment", re.I)),
)

#: Ties between equal scores break in this order (the more specific strategy first).
_ORDER = (B, L, T, R, P, S)


@dataclass(frozen=True, slots=True)
class Detection:
    """A detected type, how sure, and the cues that decided it (for status, the console and records)."""

    doc_type: DocType
    confidence: float
    evidence: tuple[str, ...]
    scores: Mapping[str, float]

    def metadata(self) -> dict[str, str]:
        """The detection as the document's metadata (flat strings, like every page field)."""
        source = DEFAULT if self.doc_type is DocType.generic else DETECTED
        return {SOURCE_KEY: source, CONFIDENCE_KEY: f"{self.confidence:.2f}", EVIDENCE_KEY: "; ".join(self.evidence)}


def _name_words(name: str) -> str:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name.rsplit(".", 1)[0])
    return " ".join(w for w in re.split(r"[^A-Za-z0-9]+", spaced) if w)


def _slide_shape(text: str) -> tuple[float, str] | None:
    """Decks are fragments: many short lines, few full sentences, one short page after another."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 12:
        return None
    short = sum(1 for line in lines if len(line) <= 60) / len(lines)
    sentences = sum(1 for line in lines if len(line) > 60 and line.rstrip().endswith((".", "?", "!"))) / len(lines)
    bullets = sum(1 for line in lines if re.match(r"^(?:[-*•▪●◦–]|\d+[.)])\s", line)) / len(lines)
    headings = sum(1 for line in lines if line.startswith("#")) / len(lines)
    if short >= 0.8 and sentences <= 0.1 and (bullets >= 0.2 or headings >= 0.15):
        return 2.5, f"deck layout ({short:.0%} short lines, {bullets:.0%} bullets, {headings:.0%} headings)"
    return None


def detect(text: str, document_name: str = "") -> Detection:
    """The type `text` (an assembled stream) reads as, with its evidence; `generic` when none is clear."""
    head = text[:SCAN_CHARS]
    letters = [c for c in head if c.isalpha()]
    lowercased = bool(letters) and sum(c.isupper() for c in letters) < 0.002 * len(letters)
    scores: dict[DocType, float] = {}
    evidence: dict[DocType, list[str]] = {}
    for cue in CUES:
        pattern = cue.pattern
        if lowercased and not pattern.flags & re.I:  # a lowercased document keeps its acronyms as words
            pattern = re.compile(pattern.pattern, pattern.flags | re.I)
        hits = 0
        for _match in pattern.finditer(head):
            hits += 1
            if hits >= max(cue.cap, cue.minimum):
                break
        if hits < cue.minimum:
            continue
        counted = min(hits, cue.cap)
        scores[cue.doc_type] = scores.get(cue.doc_type, 0.0) + cue.weight * counted
        evidence.setdefault(cue.doc_type, []).append(cue.label if counted == 1 else f"{cue.label} x{counted}")
    shape = _slide_shape(head)
    if shape is not None:
        scores[S] = scores.get(S, 0.0) + shape[0]
        evidence.setdefault(S, []).append(shape[1])
    words = _name_words(document_name)
    for doc_type, pattern in _NAME_HINTS:
        if pattern.search(words):
            scores[doc_type] = scores.get(doc_type, 0.0) + NAME_WEIGHT
            evidence.setdefault(doc_type, []).append(f"file name {document_name!r}")
            break
    ranked = sorted(scores.items(), key=lambda item: (-item[1], _ORDER.index(item[0])))
    rounded = {str(t): round(s, 2) for t, s in ranked}
    if not ranked:
        return Detection(DocType.generic, 1.0, ("no type's cues found",), rounded)
    best, score = ranked[0]
    runner = ranked[1][1] if len(ranked) > 1 else 0.0
    if score < MIN_SCORE or score - runner < MIN_MARGIN:
        why = f"best {best} at {score:.1f}" + (f" against {ranked[1][0]} at {runner:.1f}" if len(ranked) > 1 else "")
        confidence = round(1.0 - min(score, MIN_SCORE) / (2 * MIN_SCORE), 2)
        return Detection(DocType.generic, confidence, (f"no clear type ({why})",), rounded)
    confidence = round(min(1.0, score / (2 * MIN_SCORE)) * (score - runner) / score, 2)
    return Detection(best, confidence, tuple(evidence[best]), rounded)


def given_type(metadata: Mapping[str, str], doc_type: DocType | str | None) -> tuple[DocType, dict[str, str]]:
    """A page's type and metadata: a type set on purpose (`--doc-type`, a JSON document's `doc_type`, the
    API's `doc_type=`) says so in the metadata, so the assembler keeps it, `generic` included; with none
    the page is `generic` and the assembler detects the type from the text."""
    if doc_type is None:
        return DocType.generic, dict(metadata)
    return DocType(doc_type), {**metadata, SOURCE_KEY: GIVEN}


def given_on_purpose(metadata: Mapping[str, str]) -> bool:
    """Whether a page says its type was set on purpose (so `generic` stays generic)."""
    return metadata.get(SOURCE_KEY, "") == GIVEN


def routing(metadata: Mapping[str, str]) -> dict[str, object] | None:
    """An assembled document's routing as a chunk record carries it; None for a document built without
    the assembler's decision (a hand-made `AssembledDocument`)."""
    source = metadata.get(SOURCE_KEY)
    if source is None:
        return None
    evidence = metadata.get(EVIDENCE_KEY, "")
    try:
        confidence = float(metadata.get(CONFIDENCE_KEY, "1"))
    except ValueError:
        confidence = 0.0
    return {"source": source, "confidence": confidence, "evidence": evidence.split("; ") if evidence else []}
