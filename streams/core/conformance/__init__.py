"""Conformance: does a strategy's output on one document keep its seed's rules?

`check` judges the records (and the drafts they came from) against rules written from the seeds (stated in
docs/strategies.md#strategies, strategy by strategy), not from the chunkers: sizes measured on the text each
chunk carries with the tokenizer the record names, fragments, chunks that could have merged, cut words, exact
offsets, and each strategy's own rules (its declaration's `rules`: section's table and requirement rules,
hybrid's table cells, every rule of a letter). `streams check` prints it; the tests run it over the shared
corpora and generated variants. Pure: no I/O, no environment.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from streams.core.chunkers import REGISTRY, strategy
from streams.core.chunkers.base import FRAGMENT_TOKENS, ChunkDraft, Limits, Violation
from streams.core.events import AssembledDocument, ChunkRecord
from streams.core.options import StrategyOptions
from streams.core.tokenizers import Tokenizer


def limits_for(options: StrategyOptions) -> Limits:
    """The size rules of a strategy as its options set them: its declaration reads the same values the
    chunker was built with."""
    return strategy(options.strategy).limits(options.chunker_options())


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
    declared = strategy(records[0].strategy) if records[0].strategy in REGISTRY.names() else None
    limits = limits or (limits_for(declared.options()) if declared else Limits())
    text = doc.text
    out: list[Violation] = []
    doc_tokens = tokenizer.count(text)
    fragment = FRAGMENT_TOKENS if limits.min_tokens is None else min(FRAGMENT_TOKENS, limits.min_tokens)
    for r, d in zip(records, drafts, strict=True):
        pos = r.position
        if not 0 <= r.char_start <= r.char_end <= len(text):
            out.append(Violation("offsets", pos, f"range {r.char_start}..{r.char_end} outside the document"))
            continue
        if d.text_transform is None and limits.verbatim and r.text != text[r.char_start : r.char_end]:
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
    if declared is not None and declared.rules is not None:
        out.extend(declared.rules(records, tokenizer))
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


def summary(violations: Sequence[Violation]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for v in violations:
        counts[v.rule] = counts.get(v.rule, 0) + 1
    return dict(sorted(counts.items()))


__all__ = ["Limits", "Violation", "check", "limits_for", "summary"]
