"""`cluster` with segmentation=optimal: the dynamic programme finds the best split, within the token budget."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from streams.core.chunkers.cluster import optimal_groups
from streams.core.chunkers.semantic import ROUND


def brute_force(vectors: np.ndarray, tokens: list[int], max_tokens: int) -> float:
    n = len(tokens)
    unit = vectors.astype(np.float64)
    total = unit.sum(axis=0)
    mean = round((float(total @ total) - float((unit * unit).sum())) / (n * (n - 1)), ROUND)
    best = -np.inf
    for cuts in itertools.product([False, True], repeat=n - 1):
        runs, start = [], 0
        for i, cut in enumerate(cuts, start=1):
            if cut:
                runs.append((start, i - 1))
                start = i
        runs.append((start, n - 1))
        if any(sum(tokens[a : b + 1]) > max_tokens and a < b for a, b in runs):
            continue
        reward = 0.0
        for a, b in runs:
            for p, q in itertools.combinations(range(a, b + 1), 2):
                reward += 2 * (round(float(unit[p] @ unit[q]), ROUND) - mean)
        best = max(best, reward)
    return best


@pytest.mark.parametrize("seed", range(12))
def test_the_split_is_the_best_one_within_the_budget(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    vectors = rng.normal(size=(n, 6))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tokens = [int(t) for t in rng.integers(5, 40, size=n)]
    groups, mean = optimal_groups(vectors, tokens, 60)
    assert [i for g in groups for i in range(g.first, g.last + 1)] == list(range(n))
    assert all(sum(tokens[g.first : g.last + 1]) <= 60 or g.first == g.last for g in groups)
    unit = vectors.astype(np.float64)
    found = sum(
        2 * (round(float(unit[p] @ unit[q]), ROUND) - mean)
        for g in groups
        for p, q in itertools.combinations(range(g.first, g.last + 1), 2)
    )
    assert found == pytest.approx(brute_force(vectors, tokens, 60))


def test_two_topics_split_where_they_meet() -> None:
    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    groups, _ = optimal_groups(np.array([a, a, a, b, b, b]), [10] * 6, 200)
    assert [(g.first, g.last) for g in groups] == [(0, 2), (3, 5)]


def test_an_option_of_the_strategy() -> None:
    from streams.core.chunkers import make_options
    from streams.core.options import OptionsError

    assert make_options("cluster", {"segmentation": "optimal"}).lineage_tag()
    assert make_options("cluster", {}).segmentation == "threshold"
    with pytest.raises(OptionsError):
        make_options("cluster", {"segmentation": "dp"})


def test_a_table_laid_out_one_cell_per_line_is_cut_between_rows() -> None:
    from streams.core.chunkers.semantic import _row_split
    from streams.core.tokenizers import get_tokenizer

    rows = [("Net sales", "3,909", "3,673"), ("Cost of sales", "(3,115)", "(2,951)"), ("Gross profit", "794", "722")]
    text = "Statement of income\n" + "\n".join("\n".join(row) for row in rows * 6)
    tokenizer = get_tokenizer()
    pieces = _row_split(tokenizer, text, (0, len(text)), 40)
    assert pieces and len(pieces) > 1
    for a, b in pieces[1:]:
        assert text[a:b].split("\n")[0] in {"Net sales", "Cost of sales", "Gross profit"}  # a row's label first
    for a, b in pieces:
        assert tokenizer.count(text[a:b]) <= 40
    assert "".join(text[a:b] for a, b in pieces).replace("\n", "") == text.replace("\n", "")
    prose = "A sentence that runs on " * 40
    assert _row_split(tokenizer, prose, (0, len(prose)), 40) is None


def test_a_paragraph_weight_moves_a_break_to_the_paragraph_end() -> None:
    """Four sentences; the break goes where the distance is above the median: without the weight between
    the first two, with it where a blank line ends the paragraph."""
    from streams.core.chunkers.semantic import SemanticChunker, paragraph_ends
    from streams.core.tokenizers import get_tokenizer

    text = "One apple fell.\nTwo bears ran.\n\nThree cats sat.\nFour dogs slept."
    weighted = SemanticChunker(get_tokenizer(), threshold_amount=50, buffer_size=0, paragraph_weight=0.2)
    units = weighted.sentence_units(text)
    assert len(units) == 4 and paragraph_ends(text, units).tolist() == [0.0, 1.0, 0.0]
    # neighbour distances 0.2, 0.1, 0.15: the paragraph's end is the closest pair until it is weighted
    angles = np.cumsum([0.0, np.arccos(0.8), np.arccos(0.9), np.arccos(0.85)])
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    groups, _ = weighted.group(vectors, units, text)
    assert [(g.first, g.last) for g in groups] == [(0, 1), (2, 3)]
    plain = SemanticChunker(get_tokenizer(), threshold_amount=50, buffer_size=0, paragraph_weight=0.0)
    assert [(g.first, g.last) for g in plain.group(vectors, units, text)[0]] == [(0, 0), (1, 3)]
