"""Seed 004's `cluster`: adjacent sentences joined by mean linkage, then neighbouring clusters whose
centroids are alike joined (the second stage), within the token bounds `semantic` also keeps.

It shares `semantic`'s sentence units, embedding and bounds (`_SentenceEmbeddingChunker`); only the
grouping differs.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np

from streams.core.chunkers.semantic import (
    ROUND,
    _count_many,
    _Group,
    _RangeCounter,
    _round,
    _SentenceEmbeddingChunker,
)
from streams.core.options import ClusterOptions
from streams.core.text import Span


class ClusterChunker(_SentenceEmbeddingChunker):
    """Adjacent sentences join a cluster while their mean similarity to its members (mean linkage
    over the similarity matrix row, computed against the member sum) reaches `threshold`."""

    name = "cluster"
    version = "1.4.0"
    heading_context = True
    strategy_label = "similarity_cluster"
    merge_within_blocks = True
    options: ClusterOptions

    @property
    def breakpoint_type(self) -> str:
        return "mean_linkage"

    @property
    def threshold_amount(self) -> float:
        return self.options.threshold

    def group(self, vectors: np.ndarray, units: Sequence[Span], text: str) -> tuple[list[_Group], float]:
        if self.options.segmentation == "optimal":
            tokens = _count_many(self.tokenizer, [text[s:e] for s, e in units])
            return optimal_groups(vectors, tokens, self.options.max_tokens)
        groups: list[_Group] = []
        first = 0
        total = vectors[0].astype(np.float64).copy()
        for j in range(1, len(units)):
            linkage = round(float(vectors[j] @ total) / (j - first), ROUND)
            if linkage >= self.threshold_amount:
                total += vectors[j]
                continue
            groups.append(_Group(first, j - 1, "threshold"))
            first, total = j, vectors[j].astype(np.float64).copy()
        groups.append(_Group(first, len(units) - 1, "end_of_document"))
        return groups, self.threshold_amount

    def _refine(
        self, groups: list[_Group], units: Sequence[Span], vectors: np.ndarray, counter: _RangeCounter
    ) -> list[_Group]:
        """The second stage of the clustering: neighbouring clusters whose centroids are at least
        `merge_threshold` alike join, the most alike pair first, while the union fits `max_tokens`. The
        first stage compares single sentences with a cluster, which rarely reaches the threshold, so
        without this the size bounds alone set most boundaries: a run on one topic stays in pieces
        while unrelated crumbs are glued together."""
        if self.options.merge_threshold is None or len(groups) < 2:
            return groups

        def tokens(g: _Group) -> int:
            return counter(units[g.first][0], units[g.last][1])

        return merge_alike(groups, vectors, tokens, self.options.merge_threshold, self.options.max_tokens)


def merge_alike(
    groups: list[_Group], vectors: np.ndarray, tokens: Callable[[_Group], int], threshold: float, limit: int
) -> list[_Group]:
    """Adjacent groups merged, most alike centroids first (similarities rounded; a tie takes the pair
    further left), while the pair is at least `threshold` alike and its union fits `limit` tokens."""
    out: list[_Group | None] = list(groups)
    sums = [vectors[g.first : g.last + 1].astype(np.float64).sum(axis=0) for g in groups]
    after = [*range(1, len(groups)), -1]
    before = [-1, *range(len(groups) - 1)]

    def alike(a: int, b: int) -> float:
        denom = float(np.linalg.norm(sums[a]) * np.linalg.norm(sums[b])) or 1.0
        return round(float(sums[a] @ sums[b]) / denom, ROUND)

    heap = [(-alike(i, i + 1), i, i + 1) for i in range(len(groups) - 1)]
    heapq.heapify(heap)
    while heap:
        negative, a, b = heapq.heappop(heap)
        left, right = out[a], out[b]
        if left is None or right is None or after[a] != b or -negative != alike(a, b):
            continue  # stale: one side has merged since this pair was scored
        if -negative < threshold:
            break
        union = _Group(left.first, right.last, right.reason)
        if tokens(union) > limit:
            continue
        out[a], out[b], sums[a] = union, None, sums[a] + sums[b]
        after[a] = after[b]
        if after[b] >= 0:
            before[after[b]] = a
        for pair in ((before[a], a), (a, after[a])):
            if pair[0] >= 0 and pair[1] >= 0:
                heapq.heappush(heap, (-alike(*pair), *pair))
    return [g for g in out if g is not None]


def optimal_groups(vectors: np.ndarray, tokens: Sequence[int], max_tokens: int) -> tuple[list[_Group], float]:
    """The split of the sentences into runs of at most `max_tokens` (by the sum of their counts) that
    maximises the summed pairwise similarity inside runs, less the document's mean similarity per pair
    (the dynamic programme of Chroma's ClusterSemanticChunker, over sentences instead of 50-token pieces,
    with a budget in tokens instead of in pieces). Similarities are rounded like every other comparison
    here, and a tie keeps the shorter run, so the split is the same for the same vectors."""
    n = len(tokens)
    if n == 0:
        return [], 0.0
    unit = vectors.astype(np.float64)
    total = unit.sum(axis=0)
    squares = float(np.einsum("ij,ij->", unit, unit))
    mean = (float(total @ total) - squares) / (n * (n - 1)) if n > 1 else 0.0
    mean = round(mean, ROUND)
    # The longest run the budget allows, then each unit's similarities to the units after it within that
    # band, summed as it grows: a run's reward is then one addition per unit that joins it.
    width, used, a = 1, 0, 0
    for i in range(n):
        used += tokens[i]
        while used > max_tokens and a < i:
            used -= tokens[a]
            a += 1
        width = max(width, i - a + 1)
    band = np.zeros((n, width))
    for a in range(n - 1):
        stop = min(n, a + width)
        band[a, 1 : stop - a] = np.cumsum(_round(unit[a + 1 : stop] @ unit[a]) - mean)
    best = np.full(n, -np.inf)
    start_of = np.zeros(n, dtype=int)
    for i in range(n):
        reward, used = 0.0, 0
        for a in range(i, -1, -1):
            used += tokens[a]
            if used > max_tokens and a < i:
                break
            reward += 2.0 * band[a, i - a]  # unit a joins the run a..i: its pairs with a+1..i, both halves
            candidate = reward + (best[a - 1] if a > 0 else 0.0)
            if candidate > best[i]:
                best[i], start_of[i] = candidate, a
    groups: list[_Group] = []
    i = n - 1
    while i >= 0:
        groups.append(_Group(int(start_of[i]), i, "optimal"))
        i = int(start_of[i]) - 1
    groups.reverse()
    groups[-1].reason = "end_of_document"
    return groups, mean


__all__ = ["ClusterChunker", "merge_alike", "optimal_groups"]
