"""Conformance: the checker finds each broken rule, and the strategies keep the rules on the samples, on
generated variants of them (pdftotext pages, cover forms, glossaries, reference lists, spread price
schedules) and on arbitrary text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.core.chunkers import ChunkingError, get_chunker
from streams.core.conformance import check, summary
from streams.core.document import assemble
from streams.core.events import DocType, PageEvent
from streams.core.records import build_records
from streams.ingest.files import page_events
from tests.cli import streams
from tests.conftest import strategy_chunker
from tests.core import doc_variants as dv

SAMPLES = Path(__file__).resolve().parents[2] / "streams" / "samples"
TEXT_SAMPLES = sorted(p for p in SAMPLES.iterdir() if p.suffix in {".md", ".txt"} and p.name != "README.md")


def _doc(text: str, name: str = "doc.md", doc_type: DocType = DocType.solicitation):
    return assemble(
        [PageEvent(doc_id="d", document_name=name, page_number=1, page_count=1, text=text, doc_type=doc_type)]
    )


def _check(strategy: str, doc) -> dict[str, int]:
    chunker = strategy_chunker(strategy)
    drafts = chunker.chunk(doc)
    return summary(check(doc, drafts, build_records(doc, chunker, drafts), chunker.tokenizer))


def test_the_checker_finds_each_broken_rule() -> None:
    text = (SAMPLES / "rfp_harbor_bridge_issued.md").read_text()
    doc = _doc(text)
    chunker = get_chunker("section")
    drafts = chunker.chunk(doc)
    records = build_records(doc, chunker, drafts)
    assert check(doc, drafts, records, chunker.tokenizer) == []
    prose = next(i for i, r in enumerate(records) if not r.metadata["is_table"] and r.token_count > 100)
    r = records[prose]

    def broken(**update) -> set[str]:
        bad = list(records)
        bad[prose] = r.model_copy(update=update)
        return {v.rule for v in check(doc, drafts, bad, chunker.tokenizer)}

    assert "token count" in broken(token_count=r.token_count + 1)
    assert "offsets" in broken(char_start=r.char_start + 1)
    assert "cut word" in broken(
        char_end=r.char_end - 2, text=r.text[:-2], token_count=chunker.tokenizer.count(r.text[:-2])
    )
    long_text = text[: len(text) // 2]
    assert "max tokens" in broken(text=long_text, token_count=chunker.tokenizer.count(long_text))
    assert "table rule" in broken(
        text=r.text + " | pricing", token_count=chunker.tokenizer.count(r.text + " | pricing")
    )
    meta = {**r.metadata, "section_type": "other"}
    shall = r.text + " The Contractor shall comply."
    assert "requirement type" in broken(text=shall, token_count=chunker.tokenizer.count(shall), metadata=meta)
    tiny = "Short."
    assert "fragment" in broken(text=tiny, token_count=chunker.tokenizer.count(tiny))


def test_the_checker_finds_chunks_that_could_have_merged() -> None:
    doc = _doc(
        "SECTION 1: A\n\n" + "The crew logs each pole. " * 20 + "\n\nSECTION 2: B\n\n" + "Paint dries slowly. " * 20
    )
    chunker = get_chunker("section")
    per_section = type(chunker)(chunker.tokenizer, min_tokens=1, fragment_tokens=0)
    drafts = per_section.chunk(doc)
    assert len(drafts) == 2
    found = {v.rule for v in check(doc, drafts, build_records(doc, chunker, drafts), chunker.tokenizer)}
    assert found == {"could merge"}
    assert _check("section", doc) == {}


@pytest.mark.parametrize("strategy", ["window", "section", "hybrid"])
@pytest.mark.parametrize("variant", list(dv.variants(0)))
def test_generated_variants_of_the_samples_keep_every_rule(strategy: str, variant: str) -> None:
    transform = dv.variants(0)[variant]
    for path in TEXT_SAMPLES:
        pages = page_events(path)
        doc = _doc(transform("\n\n".join(p.text for p in pages)), path.name, pages[0].doc_type)
        assert _check(strategy, doc) == {}, (path.name, variant)


@pytest.mark.parametrize("name", ["transcript_2031_q2_vantor.txt", "release_2031_q2_vantor.md"])
def test_finance_keeps_seed_001_whole_units(name: str) -> None:
    """Short Q&A pairs and speaker turns, and a Q&A pair over 1,200 tokens, are seed 001's rules."""
    assert _check("finance", assemble(page_events(SAMPLES / name))) == {}


def test_a_spread_price_schedule_is_a_table() -> None:
    doc = _doc(dv.spread_prices((SAMPLES / "rfp_harbor_bridge_issued.md").read_text()))
    chunker = get_chunker("section")
    records = build_records(doc, chunker, chunker.chunk(doc))
    holding = [r for r in records if "Grounds maintenance, base year" in r.text]
    assert holding and all(r.metadata["is_table"] for r in holding)


_WORDS = ["shall", "pricing", "Contractor", "bridge", "sensor", "the", "of", "data", "CLIN", "12", "$4,100", "a"]
_LINES = st.one_of(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=30).map(lambda ws: " ".join(ws).capitalize() + "."),
    st.sampled_from(["SECTION 3: TERMS", "## Scope of Work", "1.2 Evaluation", "| CLIN | QTY | PRICE |", "", "\f"]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINES, min_size=1, max_size=120), st.sampled_from(["window", "section", "hybrid"]))
def test_arbitrary_text_keeps_bounds_offsets_and_determinism(lines: list[str], strategy: str) -> None:
    doc = _doc("\n".join(lines))
    if not doc.text.strip():
        return
    chunker = strategy_chunker(strategy)
    try:
        drafts = chunker.chunk(doc)
    except ChunkingError as exc:  # a refusal names its reason (the agent dead-letters it)
        assert strategy == "hybrid" and exc.code == "no_body_text"
        return
    records = build_records(doc, chunker, drafts)
    assert check(doc, drafts, records, chunker.tokenizer) == []
    assert [r.checksum for r in build_records(doc, chunker, chunker.chunk(doc))] == [r.checksum for r in records]


def test_streams_check_reports_per_rule_and_exits_1_while_a_rule_is_broken(tmp_path: Path) -> None:
    good = streams("check", str(SAMPLES / "rfp_harbor_bridge_issued.md"), "--strategy", "section")
    assert good.returncode == 0 and "every rule kept" in good.stdout
    figures = tmp_path / "figures_2001.txt"
    figures.write_text("Results\n\n" + "\n".join(f"Item {i}          {i * 7},{i}00        {i}.5%" for i in range(12)))
    files = [str(figures), str(SAMPLES / "letter_2031_harbor.txt")]
    bad = streams("check", *files, "--strategy", "letter", "--doc-type", "letter", "--json")
    assert bad.returncode == 1, bad.stderr
    report = json.loads(bad.stdout)
    assert report["documents"] == 2 and report["chunks"] > 0 and report["skipped"] == []
    assert [r["file"] for r in report["refused"]] == [str(figures)]
    assert "not a letter" in report["refused"][0]["reason"]
    # typed as it is guessed (generic), the figures are not for `letter` at all: skipped, as the workers do
    routed = json.loads(streams("check", *files, "--strategy", "letter", "--json").stdout)
    assert [r["file"] for r in routed["skipped"]] == [str(figures)] and routed["refused"] == []


_RUNS = st.lists(
    st.sampled_from(["bridge", "sensor", "data", "1,912", "0.75", "strain", "(a)", "$4,100", "the", "shall", "x7"]),
    min_size=1,
    max_size=90,
).map(" ".join)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_RUNS, _RUNS.map(lambda s: s.capitalize() + ".")), min_size=2, max_size=14))
def test_embedding_strategies_keep_hard_limits_and_minimums_on_arbitrary_text(parts: list[str]) -> None:
    """Small limits make run-on sentences (hard-split by tokens) and short groups common."""
    from streams.core.chunkers.cluster import ClusterChunker
    from streams.core.chunkers.semantic import SemanticChunker
    from streams.core.conformance import Limits
    from streams.embedding.stores import get_embedder
    from streams.strategies import SENTENCE_UNITS

    doc = _doc(" ".join(parts))
    tokenizer = get_chunker("window").tokenizer
    embedder = get_embedder(long_texts=SENTENCE_UNITS)  # one model for every example
    for chunker in (
        ClusterChunker(tokenizer, min_tokens=8, max_tokens=24, embedder=embedder),
        SemanticChunker(tokenizer, min_tokens=8, max_tokens=24, embedder=embedder),
    ):
        drafts = chunker.chunk(doc)
        records = build_records(doc, chunker, drafts)
        found = check(doc, drafts, records, tokenizer, Limits(max_tokens=24, min_tokens=8))
        # Not asserted here, by design: a short group whose neighbours are single sentences that fill
        # max_tokens on their own stays short, because joining it would cut a sentence. That needs a
        # maximum within a sentence of the minimum (24 vs 8 here); at the defaults (400/100, 200/50) the
        # corpora and the samples have no fragment (docs/benchmarks.md, Seed rules on unseen documents).
        assert [v for v in found if v.rule != "fragment"] == []
