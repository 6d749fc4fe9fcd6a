"""An independent checker of every letter rule (docs/strategies.md#letter, and the checklist of
docs/strategies.md#letter-11-the-independent-checker) over a letter's canonical chunk objects.

It shares no code with the `letter` strategy on purpose: the strategy's own gate cannot grade itself.
Each problem is `(rule, chunk_id, detail)`, so counts can be reported by rule.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from streams.core.chunkers.base import Violation
from streams.core.chunkers.letter.chunker import seed_objects
from streams.core.events import ChunkRecord
from streams.core.tokenizers import Tokenizer

Problem = tuple[str, str, str]

KEYS = {"chunk_id", "content", "metadata"}
META = {
    "letter_year", "letter_date", "source_file", "section_title", "section_hierarchy", "chunk_tier",
    "parent_chunk_id", "child_chunk_ids", "content_type", "contextual_summary", "has_table", "table_data",
    "has_financial_data", "entities", "themes", "buffett_concepts", "principles", "temporal_references",
    "cross_references", "retrieval_priority", "abstraction_level", "token_count", "char_count", "source_span",
    "standalone_exception", "exception_reason", "boundary_note", "merged_from",
}  # fmt: skip
CONTENT_TYPES = {"narrative", "financial_table", "mistake_confession", "principle_statement"}
LEVELS = {"low", "medium", "high"}
TABLE_KEYS = {"table_name", "summary", "columns", "rows", "row_count"}
ID = re.compile(r"^(\d{4})-S(\d{2})-T([12])-(\d{3})$")
PLACEHOLDER = re.compile(r"\[TABLE — see child chunk (\d{4}-S\d{2}-T2-\d{3})\]")
DATE = re.compile(r"^(?:\d{4}-\d{2}-\d{2}|0000-00-00)$")

# contextual_summary prohibitions (docs/strategies.md#letter-3-the-contextual-summary).
STRUCTURE = re.compile(r"\b(?:sections?|chunks?|paragraphs?|documents?|excerpts?|passages?)\b|\bpart \w+ of \w+", re.I)
TEMPLATE = re.compile(
    r"\bBuffett discusses\b|\b(?:this|the) (?:\w+ )?talks about\b|\bthis (?:text|letter) covers\b", re.I
)
ELLIPSIS = re.compile(r"\.\.\.|…")
WORD = re.compile(r"[a-z0-9$%']+")
COPY_RUN = 8
# A list marker as a list item starts: "1.", "(a)", "a)", "•", "-".
ITEM = re.compile(
    r"^\s*(?:\(?\d{1,2}[.)](?!\d)|\(?[a-z][.)]|\([ivx]+\)|[•●▪◦]|[-–]\s|\*{1,3}\s?(?=[A-Z(])(?!.*\*\*$))\s*\S"
)
TERMINAL = re.compile(r"[.?!:;]['\"”’)\]]*$|[”\"’)]$")
DANGLING = re.compile(r"\b(?:the|of|and|to|a|an|in|for|with|or|by|that|which|our|its|their|is|are|was)$|[,\-–—]$", re.I)


def _words(text: str) -> list[str]:
    return WORD.findall(text.lower().replace("’", "'"))


def summary_problems(summary: str, content: str) -> list[str]:
    """The format rules and prohibitions of docs/strategies.md#letter-3-the-contextual-summary for one summary."""
    s = summary.strip()
    out: list[str] = []
    words = s.split()
    sentences = [x for x in re.split(r"(?<=[.?!])\s+(?=[A-Z0-9“\"'])", s) if x.strip()]
    if not s:
        return ["summary: empty"]
    if len(words) > 45:
        out.append("summary: more than 45 words")
    if not 1 <= len(sentences) <= 3:
        out.append("summary: not 1-3 sentences")
    if s[-1] not in ".?!" or not s[0].isupper():
        out.append("summary: not a complete sentence")
    if STRUCTURE.search(s):
        out.append("summary: mentions document structure")
    if TEMPLATE.search(s):
        out.append("summary: uses a template")
    if ELLIPSIS.search(s) or re.search(r"\w-[.?!]?$", s):
        out.append("summary: ellipsis or truncated word")
    parts = [p.strip() for p in re.split(r"[,;]", s)]
    if len(parts) >= 4 and sum(len(p.split()) <= 2 for p in parts) >= len(parts) - 1:
        out.append("summary: keyword list")
    sw, cw = _words(s), f" {' '.join(_words(content))} "
    if any(f" {' '.join(sw[i : i + COPY_RUN])} " in cw for i in range(len(sw) - COPY_RUN + 1)):
        out.append("summary: copies 8+ words of the source")
    return out


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[0] if lines else ""


def _ends_cleanly(content: str) -> bool:
    """A T1 chunk that another follows ends a sentence, a table placeholder, a signature, a list item or a
    line that is not prose (a heading, a rule, a row of figures)."""
    body = re.sub(r"[*¹²³†‡]+$", "", content.rstrip())
    last_para = re.split(r"\n[ \t]*\n", body)[-1].strip()
    last = _last_line(body)
    if not last or PLACEHOLDER.fullmatch(last) or TERMINAL.search(last):
        return True
    if "Buffett" in last or last.startswith(("Chairman", "#")) or last.endswith("**"):
        return True
    if ITEM.match(last_para):
        return not DANGLING.search(last)
    return len(re.findall(r"\b[a-z]{2,}\b", last)) < 4 and not DANGLING.search(last)


def _holds_a_list(content: str) -> bool:
    """Two or more list items: the seed never splits a list, so a list may carry a chunk past 800."""
    return sum(1 for ln in content.splitlines() if ITEM.match(ln) or ln.lstrip().startswith(("•", "● "))) >= 2


def check_letter(chunks: Sequence[dict[str, Any]], count: Callable[[str], int]) -> list[Problem]:
    """Every rule of docs/strategies.md#letter over one letter's chunks in output order; rule names keep the seed's
    section numbers (docs/strategies.md#letter-11-the-independent-checker)."""
    probs: list[Problem] = []
    by_id = {c.get("chunk_id"): c for c in chunks}
    if len(by_id) != len(chunks):
        probs.append(("letter 2 unique chunk_id", "*", "duplicate chunk ids"))
    t1 = [c for c in chunks if c["metadata"].get("chunk_tier") == 1]
    per_section: dict[tuple[str, str], list[int]] = defaultdict(list)
    summaries: Counter[str] = Counter()
    for c in chunks:
        cid, m, text = c.get("chunk_id", "?"), c.get("metadata", {}), c.get("content", "")

        def bad(rule: str, detail: str, cid: str = cid) -> None:
            probs.append((rule, cid, detail))

        if set(c) != KEYS:
            bad("letter 2 keys", str(sorted(c)))
        ident = ID.match(cid)
        if not ident:
            bad("letter 2 chunk_id", cid)
            continue
        if set(m) != META:
            bad("letter 2 metadata keys", str(sorted(set(m) ^ META)))
            continue
        year, sec, tier, num = ident.groups()
        per_section[(sec, tier)].append(int(num))
        if m["chunk_tier"] not in (1, 2) or str(m["chunk_tier"]) != tier:
            bad("letter 2 chunk_tier", f"{m['chunk_tier']} vs {tier}")
        if m["content_type"] not in CONTENT_TYPES:
            bad("letter 2 content_type", str(m["content_type"]))
        if m["retrieval_priority"] not in LEVELS or m["abstraction_level"] not in LEVELS:
            bad("letter 2 priority/abstraction", f"{m['retrieval_priority']}/{m['abstraction_level']}")
        if not isinstance(m["table_data"], list) or m["has_table"] != (len(m["table_data"]) >= 1):
            bad("letter 2 invariant 1 has_table", str(m["has_table"]))
        if m["content_type"] == "financial_table" and not m["has_table"]:
            bad("letter 2 invariant 2 financial_table", "no table")
        span = m["source_span"]
        if not (
            span["start_char"] < span["end_char_exclusive"] or span["start_char"] == span["end_char_exclusive"] == 0
        ):
            bad("letter 2 invariant 4 source_span", str(span))
        if set(m["entities"]) != {"companies", "people", "metrics"}:
            bad("letter 2 entities", str(sorted(m["entities"])))
        if any(set(p) != {"statement", "category"} for p in m["principles"]):
            bad("letter 2 principles", "item keys")
        if not DATE.match(str(m["letter_date"])) or not isinstance(m["letter_year"], int):
            bad("letter 2 letter_date", str(m["letter_date"]))
        if f"{m['letter_year']:04d}"[-4:] != year:
            bad("letter 2 chunk_id year", f"{year} vs {m['letter_year']}")
        if m["token_count"] != count(text) or m["char_count"] != len(text):
            bad("letter 2 token/char count", f"{m['token_count']} vs {count(text)}")
        for detail in summary_problems(m["contextual_summary"], text):
            bad("letter 3 " + detail.split(":")[0] + ":" + detail.split(":")[1], cid)
        if m["standalone_exception"]:
            if m["content_type"] not in {"mistake_confession", "principle_statement"}:
                bad("letter 6 exception type", m["content_type"])
            if not m["exception_reason"] or m["retrieval_priority"] != "high":
                bad("letter 6 exception reason/priority", str(m["exception_reason"]))
        elif m["token_count"] < 150:
            bad("letter 10 under 150 tokens", str(m["token_count"]))
        if m["merged_from"] and not m["boundary_note"]:
            bad("letter 6 merge without boundary_note", str(m["merged_from"]))
        if m["boundary_note"] and "merged" in m["boundary_note"] and not m["merged_from"]:
            bad("letter 11 merged_from populated", m["boundary_note"])
        if m["chunk_tier"] == 1:
            summaries[m["contextual_summary"]] += 1
            if m["token_count"] > 800 and not _holds_a_list(text):
                bad("letter 5 tier-1 over 800 tokens", str(m["token_count"]))
            for child in m["child_chunk_ids"]:
                if f"[TABLE — see child chunk {child}]" not in text:
                    bad("letter 8 placeholder", child)
                if child not in by_id:
                    bad("letter 8 child exists", child)
            if sorted(PLACEHOLDER.findall(text)) != sorted(m["child_chunk_ids"]):
                bad("letter 8 placeholders = children", cid)
        else:
            parent = by_id.get(m["parent_chunk_id"])
            if parent is None or cid not in parent["metadata"]["child_chunk_ids"]:
                bad("letter 8 T2 parent", str(m["parent_chunk_id"]))
            want = ("financial_table", True, True, "high")
            got = (m["content_type"], m["has_table"], m["has_financial_data"], m["retrieval_priority"])
            if got != want:
                bad("letter 8 T2 fields", str(got))
            if len(m["table_data"]) != 1:
                bad("letter 8 exactly one TableData", str(len(m["table_data"])))
            for t in m["table_data"]:
                if set(t) != TABLE_KEYS or t["row_count"] != len(t["rows"]) or not t["columns"] or not t["rows"]:
                    bad("letter 8 TableData", str(sorted(t)))
                elif not str(t["table_name"]).strip() or not str(t["summary"]).strip():
                    bad("letter 8 table_name/summary", str(t["table_name"]))
            if not m["boundary_note"] or "context" not in m["boundary_note"] or "no narrative" in m["boundary_note"]:
                bad("letter 10 T2 narrative context", str(m["boundary_note"]))
    for (sec, tier), nums in per_section.items():
        if sorted(nums) != list(range(1, len(nums) + 1)):
            probs.append(("letter 11 contiguous chunk_id", f"S{sec}-T{tier}", str(sorted(nums))))
    for summary, n in summaries.items():
        if n > 1:
            probs.append(("letter 10 duplicate T1 summary", "*", summary[:60]))
    for a, b in itertools.pairwise(t1):
        if not _ends_cleanly(a["content"]):
            probs.append(("letter 10 mid-sentence break", a["chunk_id"], _last_line(a["content"])[-60:]))
        last, first = _last_line(a["content"]), _first_line(b["content"])
        if ITEM.match(last) and ITEM.match(first) and _same_list(last, first):
            probs.append(("letter 10 split numbered list", a["chunk_id"], f"{last[:30]} | {first[:30]}"))
    return probs


def _marker(line: str) -> str:
    m = re.match(r"^\s*\(?([0-9]{1,2}|[a-z]|[ivx]+)[.)]|^\s*(\*+)", line)
    return (m.group(1) or m.group(2)) if m else line.strip()[:1]


def _same_list(last: str, first: str) -> bool:
    """The next chunk opens with the item that follows the previous chunk's last item."""
    a, b = _marker(last), _marker(first)
    if a.isdigit() and b.isdigit():
        return int(b) == int(a) + 1
    if len(a) == 1 and len(b) == 1 and a.isalpha() and b.isalpha():
        return ord(b) == ord(a) + 1
    return a == b and not a.isalnum() and not a.startswith("*")  # "*" marks footnotes, not a list


def rules(records: Sequence[ChunkRecord], tokenizer: Tokenizer) -> list[Violation]:
    """Every letter rule the records of one document break, each at the chunk it names."""
    ids = {r.metadata.get("seed_chunk_id"): r.position for r in records}
    return [
        Violation(rule, ids.get(cid, -1), f"{cid}: {detail}")
        for rule, cid, detail in check_letter(seed_objects(list(records)), tokenizer.count)
    ]
