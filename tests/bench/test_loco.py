"""Leave-one-corpus-out selection and Chroma's cluster segmentation, on numbers small enough to check by hand."""

from __future__ import annotations

import numpy as np

from streams.bench.loco import choose, held_out
from streams.bench.quality import chroma_segmentation, worst_corpus


def result(per: dict[str, tuple[float, float]], size: float = 100) -> dict:
    return {
        "per_corpus": {
            c: {"recall": r, "iou": i, "mean_tokens": size, "max_tokens": 200, "chunks": 10}
            for c, (r, i) in per.items()
        }
    }


def test_the_setting_for_a_corpus_is_chosen_without_it() -> None:
    # setting B is best on "a" only; A is best on "b" and "c"
    scored = [
        ({"x": "A"}, result({"a": (0.5, 0.01), "b": (0.9, 0.09), "c": (0.9, 0.08)})),
        ({"x": "B"}, result({"a": (0.9, 0.20), "b": (0.8, 0.05), "c": (0.8, 0.05)})),
    ]
    assert choose(scored, ["b", "c"]) == 0  # held-out "a" gets A, although B would score better on it
    report = held_out(scored, ["a", "b", "c"])
    assert report["held_out"]["a"]["options"] == {"x": "A"} and report["held_out"]["a"]["recall"] == 0.5
    # for "b": mean IoU over a, c is A (0.01+0.08)/2=0.045 vs B (0.20+0.05)/2=0.125 -> B
    assert report["held_out"]["b"]["options"] == {"x": "B"}
    assert report["worst_corpus"] == "a" and next(iter(report["held_out"])) == "a"


def test_only_settings_of_about_the_defaults_size_compete() -> None:
    """IoU rises as chunks shrink: a smaller setting would win on IoU alone, so it does not compete."""
    defaults = result({"a": (0.8, 0.05), "b": (0.8, 0.05)})
    smaller = result({"a": (0.7, 0.09), "b": (0.7, 0.09)}, size=90)  # 10% smaller: max_tokens=150 on the pool
    near = result({"a": (0.8, 0.06), "b": (0.8, 0.06)}, size=104)
    assert choose([({}, defaults), ({"max": 150}, smaller)], ["a", "b"]) == 0
    assert choose([({}, defaults), ({"max": 150}, smaller), ({"t": 0.7}, near)], ["a", "b"]) == 2


def test_a_setting_that_trades_recall_for_iou_does_not_replace_the_defaults() -> None:
    """Of the same size, more IoU for less recall is a point further along the size curve, not better."""
    defaults = result({"a": (0.80, 0.050), "b": (0.80, 0.050)})
    sharper = result({"a": (0.78, 0.060), "b": (0.79, 0.060)}, size=97)
    better = result({"a": (0.80, 0.055), "b": (0.81, 0.052)}, size=99)
    assert choose([({}, defaults), ({"t": 0.75}, sharper)], ["a", "b"]) == 0
    assert choose([({}, defaults), ({"t": 0.75}, sharper), ({"t": 0.72}, better)], ["a", "b"]) == 2


def test_worst_corpus_is_the_lowest_recall() -> None:
    assert worst_corpus(result({"a": (0.8, 0.05), "b": (0.6, 0.09)}))[0] == "b"
    assert worst_corpus({"per_corpus": {}}) is None


def test_chroma_segmentation_keeps_similar_pieces_together_within_the_cap() -> None:
    topic_a, topic_b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    vectors = np.array([topic_a, topic_a, topic_a, topic_b, topic_b])
    runs = chroma_segmentation(vectors @ vectors.T, max_cluster=4)
    assert runs == [(0, 2), (3, 4)]
    capped = chroma_segmentation(vectors @ vectors.T, max_cluster=2)
    assert all(last - first + 1 <= 2 for first, last in capped)
    assert [i for first, last in capped for i in range(first, last + 1)] == list(range(5))
    assert chroma_segmentation(np.ones((1, 1)), 4) == [(0, 0)]


def test_the_nearest_heading_is_prepended_for_embedding_only() -> None:
    from streams.bench.quality import Chunk, EvalSet, with_heading
    from streams.core.text import heading_lines

    text = "# Fees\n\nThe fee is 40 dollars.\n\nQuarterly Results Table\nNet sales\n3,909\n\nA closing sentence here."
    assert [t for _, t in heading_lines(text)] == ["Fees", "Quarterly Results Table"]
    eval_set = EvalSet({"c": text}, {}, [])
    fee = text.index("The fee")
    sales = text.index("Net sales")
    chunks = [Chunk("c", fee, fee + 22, text[fee : fee + 22]), Chunk("c", sales, sales + 15, text[sales : sales + 15])]
    assert with_heading(chunks, eval_set) == [
        "Fees\nThe fee is 40 dollars.",
        "Quarterly Results Table\nNet sales\n3,909",
    ]
