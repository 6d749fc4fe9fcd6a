"""The letter's validation gate (docs/strategies.md#letter-10-the-validation-gate): the schema check exactly as written,
plus the coherence checks."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from streams.core.chunkers.base import ChunkingError
from streams.core.chunkers.letter.layout import LIST_MARKER, ends_sentence

REQUIRED_KEYS = {"chunk_id", "content", "metadata"}
REQUIRED_META = {
    "letter_year",
    "letter_date",
    "source_file",
    "section_title",
    "section_hierarchy",
    "chunk_tier",
    "parent_chunk_id",
    "child_chunk_ids",
    "content_type",
    "contextual_summary",
    "has_table",
    "table_data",
    "has_financial_data",
    "entities",
    "themes",
    "buffett_concepts",
    "principles",
    "temporal_references",
    "cross_references",
    "retrieval_priority",
    "abstraction_level",
    "token_count",
    "char_count",
    "source_span",
    "standalone_exception",
    "exception_reason",
    "boundary_note",
    "merged_from",
}
CHUNK_ID = re.compile(r"^\d{4}-S\d{2}-T[12]-\d{3}$")
PLACEHOLDER = re.compile(r"^\[TABLE — see child chunk \d{4}-S\d{2}-T2-\d{3}\]$")
MIN_TOKENS = 150


def _check(cond: bool, what: str) -> None:
    # The seed writes bare asserts; explicit raises keep the gate alive under `python -O`.
    if not cond:
        raise AssertionError(what)


def validate(chunk: dict[str, Any]) -> None:
    """The schema check verbatim (docs/strategies.md#letter-10-the-validation-gate): raises AssertionError on the first
    violated rule."""
    _check(set(chunk.keys()) == REQUIRED_KEYS, "chunk keys")
    _check(bool(re.match(r"^\d{4}-S\d{2}-T[12]-\d{3}$", chunk["chunk_id"])), "chunk_id format")
    m = chunk["metadata"]
    _check(set(m.keys()) == REQUIRED_META, "metadata keys")
    _check(m["chunk_tier"] in [1, 2], "chunk_tier")
    _check(isinstance(m["table_data"], list), "table_data is a list")
    _check(m["has_table"] == (len(m["table_data"]) > 0), "has_table <=> table_data")
    if m["content_type"] == "financial_table":
        _check(m["has_table"], "financial_table needs a table")


def invariants(chunk: dict[str, Any]) -> list[str]:
    """The invariants `validate` does not cover: tier against the id, and the source span
    (docs/strategies.md#letter-2-chunk-objects-ids-and-metadata)."""
    m = chunk["metadata"]
    problems = []
    if str(m["chunk_tier"]) != chunk["chunk_id"].split("-")[2][1:]:
        problems.append("chunk_tier does not match the T digit of chunk_id")
    span = m["source_span"]
    if not (span["start_char"] < span["end_char_exclusive"] or span["start_char"] == span["end_char_exclusive"] == 0):
        problems.append("source_span is empty or reversed")
    return problems


def _last_line(content: str) -> str:
    lines = [ln.strip() for ln in content.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


_DANGLING = re.compile(r"(?:[,\-–—]|\b(?:the|of|and|to|a|an|in|for|with|or|by|that|which))$", re.I)


_NOTE_MARK = re.compile(r"(?:[*†‡¹²³]|\(\d\))+$")
_PROSE_WORD = re.compile(r"\b[a-z]{2,}\b")


def _clean_end(content: str, next_content: str, is_signature_end: bool) -> bool:
    """Mid-sentence: the text stops on a dangling word, the next chunk resumes in lowercase, or a line of
    prose stops without closing its sentence. A list item or footnote, a heading, a rule or a row of
    figures closes no sentence and needs no full stop."""
    last = _NOTE_MARK.sub("", _last_line(content)).rstrip()
    if is_signature_end or ends_sentence(last) or PLACEHOLDER.match(last):
        return True
    if _DANGLING.search(last) or next_content.lstrip()[:1].islower():
        return False
    last_para = re.split(r"\n[ \t]*\n", content.strip())[-1].strip()
    return bool(LIST_MARKER.match(last_para)) or len(_PROSE_WORD.findall(last)) < 4


def bad_cut(content: str, next_content: str, is_signature_end: bool) -> str | None:
    """Why a cut between two tier-1 texts breaks coherence ("ends mid-sentence", "splits a numbered list";
    docs/strategies.md#letter-10-the-validation-gate), or None when it is clean. The chunker asks before it cuts; the
    gate asks again after."""
    if not _clean_end(content, next_content, is_signature_end):
        return "ends mid-sentence"
    if LIST_MARKER.match(next_content.lstrip()) and LIST_MARKER.match(_last_line(content).lstrip()):
        return "splits a numbered list"
    return None


def coherence(
    chunks: Sequence[dict[str, Any]], signature_ends: Sequence[bool], min_tokens: int = MIN_TOKENS
) -> list[str]:
    """The coherence check over one letter (docs/strategies.md#letter-10-the-validation-gate); returns readable problems
    (empty when coherent). `min_tokens` is the smallest chunk the chunker was configured with (the seed's 150 by
    default)."""
    problems: list[str] = []
    ids = {c["chunk_id"] for c in chunks}
    summaries: dict[str, str] = {}
    t1 = [(c, s) for c, s in zip(chunks, signature_ends, strict=True) if c["metadata"]["chunk_tier"] == 1]
    for idx, (c, sig) in enumerate(t1):
        m = c["metadata"]
        cid = c["chunk_id"]
        if m["token_count"] < min_tokens and not m["standalone_exception"]:
            problems.append(f"{cid}: {m['token_count']} tokens < {min_tokens} without standalone_exception")
        if idx + 1 < len(t1):
            why = bad_cut(c["content"], t1[idx + 1][0]["content"], sig)
            if why:
                problems.append(f"{cid}: {why}")
        prev = summaries.get(m["contextual_summary"])
        if prev:
            problems.append(f"{cid}: duplicate contextual_summary of {prev}")
        summaries[m["contextual_summary"]] = cid
        for child in m["child_chunk_ids"]:
            if child not in ids:
                problems.append(f"{cid}: child {child} missing")
    for c in chunks:
        m = c["metadata"]
        if m["chunk_tier"] != 2:
            continue
        parent = next((p for p in chunks if p["chunk_id"] == m["parent_chunk_id"]), None)
        if parent is None or c["chunk_id"] not in parent["metadata"]["child_chunk_ids"]:
            problems.append(f"{c['chunk_id']}: orphan tier-2 chunk")
        if not m["boundary_note"] or "context" not in m["boundary_note"]:
            problems.append(f"{c['chunk_id']}: tier-2 chunk without narrative context")
        if m["token_count"] < min_tokens and not m["standalone_exception"]:
            problems.append(f"{c['chunk_id']}: {m['token_count']} tokens < {min_tokens}")
    return problems


def seed_object(content: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """The seed's canonical chunk object: chunk_id, content and exactly the 28 metadata keys."""
    return {
        "chunk_id": metadata["seed_chunk_id"],
        "content": content,
        "metadata": {k: metadata[k] for k in sorted(REQUIRED_META)},
    }


def enforce(chunks: Sequence[dict[str, Any]], signature_ends: Sequence[bool], min_tokens: int) -> None:
    """The gate (docs/strategies.md#letter-10-the-validation-gate) on a whole letter's seed objects, as the last stage
    of the chunker: the composer has already rewritten summaries, so anything left is fatal and the letter is
    dead-lettered with the first three."""
    problems: list[str] = []
    for s in chunks:
        try:
            validate(s)
        except AssertionError as exc:
            problems.append(f"{s['chunk_id']}: validate: {exc}")
        problems.extend(f"{s['chunk_id']}: {p}" for p in invariants(s))
    problems.extend(coherence(chunks, signature_ends, min_tokens))
    if problems:
        shown = "; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)" if len(problems) > 3 else "")
        raise ChunkingError(f"letter validation failed: {shown}", "letter_validation")
