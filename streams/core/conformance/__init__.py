"""Conformance: does a strategy's output on one document keep its seed's rules?

`check` judges the records (and the drafts they came from) against rules written from the seeds, not from
the chunkers: sizes measured on the text each chunk carries with the tokenizer the record names, fragments,
chunks that could have merged, cut words, exact offsets, the seed's table rule, requirement typing, and for
letters every rule of seed 000 (`letter.check_letter`). `streams check` prints it; the tests run it over
the shared corpora and generated variants. Pure: no I/O, no environment.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streams.core.chunkers.base import FRAGMENT_TOKENS, ChunkDraft
from streams.core.events import AssembledDocument, ChunkRecord
from streams.core.options import OPTIONS, StrategyOptions, make_options
from streams.core.tokenizers import Tokenizer


@dataclass(frozen=True, slots=True)
class Limits:
    """The size rules a strategy's seed sets: `max` is hard, `min` a target that a merge must honour."""

    max_tokens: int | None = None
    min_tokens: int | None = None
    max_words: int | None = None
    overlapping: bool = False  # windows overlap by design; everyone else tiles the text
    # Units the seed never splits (seed 001: a Q&A pair, a table, a slide) may pass the maximum; they and a
    # speaker's whole turn (never merged across a speaker change) may be short.
    whole_units: frozenset[str] = frozenset()


#: Units seed 001 never splits (a Q&A pair, a table, a slide, prepared remarks).
FINANCE_WHOLE_UNITS = frozenset({"qna", "table", "slide", "prepared_remarks"})


def limits_for(options: StrategyOptions) -> Limits:
    """The size rules of a strategy as its options set them: the options are declared once
    (streams.core.options), and the checks read the same values the chunker was built with."""
    values = options.chunker_options()
    match options.strategy:
        case "window":
            return Limits(max_words=values["chunk_size_words"], overlapping=True)
        case "section" | "semantic" | "cluster":
            return Limits(max_tokens=values["max_tokens"], min_tokens=values["min_tokens"])
        case "hybrid":
            return Limits(max_tokens=values["max_tokens"])
        case "finance":
            return Limits(max_tokens=values["max_tokens"], whole_units=FINANCE_WHOLE_UNITS)
    return Limits()


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    position: int  # the chunk's position in the document, -1 for the document as a whole
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "position": self.position, "detail": self.detail}


_SEED_TABLE = re.compile(r"[|\t]|\b(?:pricing|clin|line item)\b", re.I)
_SHALL = re.compile(r"\b(?:shall|must)\b", re.I)
_CELL_GAP = re.compile(r" {2,}|\t|(?:\s?\.){3,}\s*")


def check(
    doc: AssembledDocument,
    drafts: Sequence[ChunkDraft],
    records: Sequence[ChunkRecord],
    tokenizer: Tokenizer,
    limits: Limits | None = None,
) -> list[Violation]:
    """Every rule the records of one document break (empty when they conform)."""
    if not records:
        return []
    strategy = records[0].strategy
    limits = limits or (limits_for(make_options(strategy)) if strategy in OPTIONS else Limits())
    text = doc.text
    out: list[Violation] = []
    doc_tokens = tokenizer.count(text)
    fragment = FRAGMENT_TOKENS if limits.min_tokens is None else min(FRAGMENT_TOKENS, limits.min_tokens)
    for r, d in zip(records, drafts, strict=True):
        pos = r.position
        if not 0 <= r.char_start <= r.char_end <= len(text):
            out.append(Violation("offsets", pos, f"range {r.char_start}..{r.char_end} outside the document"))
            continue
        if d.text_transform is None and strategy != "letter" and r.text != text[r.char_start : r.char_end]:
            out.append(Violation("offsets", pos, "text is not the document's text at its range"))
        carried = tokenizer.count(r.text)
        whole = _whole_unit(r, limits)
        if r.token_count != carried:
            out.append(Violation("token count", pos, f"record says {r.token_count}, the text has {carried}"))
        if (
            limits.max_tokens is not None
            and carried > limits.max_tokens
            and not (whole and r.content_type != "prepared_remarks")
        ):
            out.append(Violation("max tokens", pos, f"{carried} > {limits.max_tokens}"))
        if limits.max_words is not None and len(r.text.split()) > limits.max_words:
            out.append(Violation("max words", pos, f"{len(r.text.split())} > {limits.max_words}"))
        if carried < fragment <= doc_tokens and len(records) > 1 and not whole:  # one chunk = the document
            out.append(Violation("fragment", pos, f"{carried} tokens: {r.text.strip()[:40]!r}"))
        if r.char_end > r.char_start and _cuts_word(text, r.char_start, r.char_end):
            out.append(Violation("cut word", pos, _edges(text, r.char_start, r.char_end)))
    if not limits.overlapping:
        for a, b in itertools.pairwise(records):
            if b.char_start < a.char_end:
                out.append(Violation("offsets", b.position, f"overlaps chunk {a.position}"))
    if limits.min_tokens is not None and limits.max_tokens is not None:
        out.extend(_mergeable(text, records, tokenizer, limits.min_tokens, limits.max_tokens))
    if strategy == "section":
        out.extend(_section_rules(records))
    if strategy == "hybrid":
        out.extend(_hybrid_rules(records))
    if strategy == "letter":
        from streams.core.chunkers.letter import seed_objects
        from streams.core.conformance.letter import check_letter

        ids = {r.metadata.get("seed_chunk_id"): r.position for r in records}
        out.extend(
            Violation(rule, ids.get(cid, -1), f"{cid}: {detail}")
            for rule, cid, detail in check_letter(seed_objects(list(records)), tokenizer.count)
        )
    return out


def _whole_unit(r: ChunkRecord, limits: Limits) -> bool:
    """A unit the seed keeps whole: a Q&A pair, a table, a slide, or one speaker's entire turn."""
    if r.content_type not in limits.whole_units:
        return False
    if r.content_type == "prepared_remarks":
        return r.text.startswith("Speaker:") and r.text.count("\nSpeaker:") == 0
    return True


def _cuts_word(text: str, start: int, end: int) -> bool:
    at_start = start > 0 and text[start - 1].isalnum() and text[start].isalnum()
    at_end = end < len(text) and text[end - 1].isalnum() and text[end].isalnum()
    return at_start or at_end


def _edges(text: str, start: int, end: int) -> str:
    head = f"{text[max(0, start - 8) : start]!r}|{text[start : start + 8]!r}"
    return f"{head} … {text[end - 8 : end]!r}|{text[end : end + 8]!r}"


def _is_table(r: ChunkRecord) -> bool:
    return bool(r.metadata.get("is_table")) or r.content_type in {"table", "table_cell", "pricing_table"}


def _mergeable(text: str, records: Sequence[ChunkRecord], tokenizer: Tokenizer, low: int, high: int) -> list[Violation]:
    """A chunk under the minimum that could have joined a neighbour of its kind within the maximum."""
    out = []
    for i, r in enumerate(records):
        if r.token_count >= low or _is_table(r):
            continue
        for j in (i - 1, i + 1):
            if not 0 <= j < len(records) or _is_table(records[j]):
                continue
            a, b = sorted((r, records[j]), key=lambda x: x.char_start)
            joined = tokenizer.count(text[a.char_start : b.char_end])
            if joined <= high:
                out.append(Violation("could merge", r.position, f"{r.token_count} tokens; with chunk {j}: {joined}"))
                break
    return out


def _section_rules(records: Sequence[ChunkRecord]) -> list[Violation]:
    """Seed 002 phase 2: a chunk with `|`, a tab, pricing, CLIN or line item is a table; one with shall
    or must is a requirement (flag set, and never typed `other`)."""
    out = []
    for r in records:
        m = r.metadata
        found = _SEED_TABLE.search(r.text)
        if found and not m.get("is_table"):
            out.append(Violation("table rule", r.position, f"has {found.group(0)!r} but is_table is false"))
        if _SHALL.search(r.text) and not m.get("is_table"):
            if not m.get("requirement_flag"):
                out.append(Violation("requirement flag", r.position, "shall/must without requirement_flag"))
            if m.get("section_type") == "other":
                out.append(Violation("requirement type", r.position, "shall/must in a chunk typed other"))
    return out


def _hybrid_rules(records: Sequence[ChunkRecord]) -> list[Violation]:
    """A table cell chunk holds a table: pipe rows or aligned columns of figures."""
    out = []
    for r in records:
        if r.content_type == "table_cell" and not (_has_pipe_rows(r.text) or _has_figure_rows(r.text)):
            out.append(Violation("table cell", r.position, f"no table in {r.text.strip()[:40]!r}"))
    return out


def _has_pipe_rows(text: str) -> bool:
    """A row with two cell pipes ("||" is an operator in code, not a cell)."""
    return any(line.count("|") >= 2 for line in text.replace("||", "").splitlines())


def _has_figure_rows(text: str) -> bool:
    """A row of columns (cells apart by two spaces, a tab or a dot leader) with a figure in a later cell."""
    for line in text.splitlines():
        cells = [c for c in _CELL_GAP.split(line.strip()) if c.strip()]
        if len(cells) >= 2 and any(ch.isdigit() for c in cells[1:] for ch in c):
            return True
    return False


def summary(violations: Sequence[Violation]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for v in violations:
        counts[v.rule] = counts.get(v.rule, 0) + 1
    return dict(sorted(counts.items()))
