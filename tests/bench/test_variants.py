"""The variants a gold corpus is scored in: each transform's text, and the evidence ranges carried onto it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.bench import BenchError
from streams.bench.quality import EvalSet, Question, variant_eval_set
from streams.bench.variants import (
    VARIANTS,
    flat,
    lowercased,
    map_range,
    one_paragraph,
    parse_variants,
    plain,
    wrapped,
)

DOC = (
    "# Terms of service\n"
    "\n"
    "The contractor SHALL clean every office twice a week. Floors are mopped daily.\n"
    "\n"
    "Waste bins are emptied each evening.\n"
    "Pay\n"
    "===\n"
    "Invoices are due within   thirty days.\n"
)


def span(text: str, needle: str) -> tuple[int, int]:
    start = text.index(needle)
    return start, start + len(needle)


def test_each_transform_gives_the_shape_it_names() -> None:
    assert lowercased(DOC)[0] == DOC.lower()
    flat_text = flat(DOC)[0]
    assert flat_text == (
        "The contractor SHALL clean every office twice a week. Floors are mopped daily.\n"
        "Waste bins are emptied each evening.\n"
        "Pay\n"
        "Invoices are due within   thirty days.\n"
    )
    assert one_paragraph(DOC)[0] == (
        "# Terms of service The contractor SHALL clean every office twice a week. Floors are mopped daily. "
        "Waste bins are emptied each evening. Pay === Invoices are due within   thirty days. "
    )
    lines = wrapped("word " * 40, columns=22)[0].split("\n")
    assert all(len(line) <= 23 for line in lines) and len(lines) > 5
    assert plain(DOC)[0] == (
        "the contractor shall clean every office twice a week. floors are mopped daily. waste bins are emptied "
        "each evening. pay invoices are due within   thirty days. "
    )


def pool(text: str, needles: list[str]) -> EvalSet:
    questions = [Question(f"q{n}?", "doc", (span(text, needle),)) for n, needle in enumerate(needles)]
    return EvalSet({"doc": text}, {"doc": Path("doc.md")}, questions)


def test_evidence_ranges_follow_the_text_into_every_variant() -> None:
    needles = ["Floors are mopped daily.\n\nWaste bins", "SHALL clean", "due within   thirty days"]
    original = pool(DOC, needles)
    for name in VARIANTS:
        shaped = variant_eval_set(original, name)
        text = shaped.corpora["doc"]
        got = [text[a:b] for q in shaped.questions for a, b in q.references]
        assert [" ".join(g.lower().split()) for g in got] == [" ".join(n.lower().split()) for n in needles], name


def test_evidence_the_variant_removed_drops_its_question() -> None:
    shaped = variant_eval_set(pool(DOC, ["Terms of service", "Floors are mopped"]), "flat")
    assert [q.text for q in shaped.questions] == ["q1?"]


def test_variant_selection_is_checked() -> None:
    assert parse_variants(["all"]) == ["original", *VARIANTS]
    assert parse_variants(["plain,original"]) == ["original", "plain"]
    with pytest.raises(BenchError, match="unknown variant 'shouty'"):
        parse_variants(["shouty"])


words = st.lists(st.sampled_from(["Alpha", "beta", "GAMMA", "delta.", "#", "==", "\n", "\n\n", "  ", "İstanbul"]))


@settings(max_examples=200, deadline=None)
@given(parts=words, cut=st.tuples(st.integers(0, 60), st.integers(0, 60)))
def test_a_mapped_range_holds_the_same_words(parts: list[str], cut: tuple[int, int]) -> None:
    text = " ".join(parts)
    start, end = sorted(cut)
    start, end = min(start, len(text)), min(end, len(text))
    for transform in (lowercased, wrapped, one_paragraph):
        shaped, where = transform(text)
        assert len(where) == len(shaped)
        assert all(shaped[i].lower() == text[where[i]].lower() or shaped[i].isspace() for i in range(len(shaped)))
        mapped = map_range(where, start, end)
        expected = " ".join(text[start:end].lower().split())
        got = " ".join(shaped[mapped[0] : mapped[1]].lower().split()) if mapped else ""
        assert got == expected
