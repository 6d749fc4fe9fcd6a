"""The project's gold-span corpora (streams/bench/gold): the data files carry offsets and hashes only, and
against ../shared/corpora every offset still lands on the span it was written for."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from streams.bench.gold import (
    SPAN_HASH_CHARS,
    GoldCorpus,
    build_document,
    gold_names,
    load_gold,
    span_problems,
    text_hash,
)

NAMES = gold_names()
MIN_QUESTIONS = 40
FILE_KEYS = {"name", "kind", "source", "build", "text_sha256", "text_chars", "questions"}
QUESTION_KEYS = {"question", "spans", "span_sha256"}


def test_three_corpora_of_the_kinds_chroma_lacks() -> None:
    kinds = {load_gold(name).build for name in NAMES}
    sources = {load_gold(name).source.split("/")[0] for name in NAMES}
    assert len(NAMES) >= 3
    assert kinds == {"text", "ingest"}
    assert {"pdf", "transcripts", "solicitations"} <= sources


@pytest.mark.parametrize("name", NAMES)
def test_file_holds_offsets_and_hashes_only(name: str) -> None:
    """No document text in the repository: every field is a name, a path, a number or a hash."""
    data = json.loads((resources.files("streams.bench.gold") / f"{name}.json").read_text(encoding="utf-8"))
    assert set(data) == FILE_KEYS and data["name"] == name
    assert re.fullmatch(r"[0-9a-f]{64}", data["text_sha256"])
    assert len(data["questions"]) >= MIN_QUESTIONS
    for q in data["questions"]:
        assert set(q) == QUESTION_KEYS
        assert q["question"].strip().endswith("?")
        assert q["spans"] and len(q["spans"]) == len(q["span_sha256"])
        assert all(re.fullmatch(rf"[0-9a-f]{{{SPAN_HASH_CHARS}}}", h) for h in q["span_sha256"])
        assert all(0 <= s < e <= data["text_chars"] for s, e in q["spans"])
    assert len({q["question"] for q in data["questions"]}) == len(data["questions"])


@pytest.mark.parametrize("name", NAMES)
def test_spans_hold_on_the_shared_corpus(name: str, shared_corpora: Path) -> None:
    corpus = load_gold(name)
    text, document = build_document(corpus, shared_corpora)
    assert len(text) == corpus.text_chars
    assert span_problems(corpus, text) == []
    if corpus.build == "ingest":
        assert document is not None and document.text == text
    # the questions are written for the project: none repeats eight words of the document in a row
    flat = " ".join(text.split())
    for q in corpus.questions:
        words = q.question.rstrip("?").split()
        runs = [" ".join(words[i : i + 8]) for i in range(max(0, len(words) - 7))]
        assert not [run for run in runs if run in flat], q.question


def test_problems_are_reported_not_raised() -> None:
    text = "Revenue was 12 million. Margin rose."
    good = GoldCorpus("t", "k", "s", "text", text_hash(text), len(text), ())
    assert span_problems(good, text) == []
    assert "text sha256 differs" in span_problems(good, text + " ")[0]
    from streams.bench.gold import GoldQuestion, span_hash

    spans = ((0, 7), (9, 14), (24, 24), (23, 30))
    hashes = (span_hash(text[0:7]), span_hash(text[9:14]), "0" * 16, span_hash(text[23:30]))
    bad = GoldCorpus("t", "k", "s", "text", text_hash(text), len(text), (GoldQuestion("q?", spans, hashes),))
    problems = span_problems(bad, text)
    assert any("[9, 14): starts or ends inside a word" in p for p in problems)
    assert any("[24, 24): outside the text or empty" in p for p in problems)
    assert any("[23, 30): starts or ends with whitespace" in p for p in problems)
    assert not any("[0, 7)" in p for p in problems)
