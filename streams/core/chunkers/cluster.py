"""Seed 004's `cluster`: adjacent sentences joined by mean linkage, then neighbouring clusters whose
centroids are alike joined (the second stage), within the token bounds `semantic` also keeps.

It shares `semantic`'s sentence units, embedding and bounds (`_SentenceEmbeddingChunker`); only the
grouping differs.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from streams.core.chunkers.base import Strategy, token_limits
from streams.core.chunkers.semantic import (
    ROUND,
    _count_many,
    _Group,
    _RangeCounter,
    _round,
    _SentenceEmbeddingChunker,
)
from streams.core.options import StrategyOptions
from streams.core.text import Span


class ClusterOptions(StrategyOptions):
    strategy: ClassVar[str] = "cluster"
    seed: ClassVar[str] = "004"
    summary: ClassVar[str] = "adjacent sentences cluster while their mean similarity holds"

    threshold: float = Field(0.75, ge=-1.0, le=1.0, description="cosine similarity a sentence needs to join")
    min_tokens: int = Field(40, ge=0, le=100_000, description="smaller clusters join a neighbour")
    max_tokens: int = Field(250, ge=8, le=100_000, description="larger clusters are split")
    merge_threshold: float | None = Field(
        0.7,
        ge=-1.0,
        le=1.0,
        description="neighbouring clusters whose centroids are this alike join while they fit (none: never)",
    )
    target_tokens: int | None = Field(
        100,
        ge=8,
        le=100_000,
        description="the chunk size cluster aims at whatever the text: cut above 1.5x, merge alike up to 1.25x, "
        "join below 0.5x (none: merge alike up to max_tokens); by default within min_tokens..max_tokens",
    )
    segmentation: Literal["threshold", "optimal"] = Field(
        "threshold",
        description="threshold: grow a cluster while the next sentence's mean similarity holds; optimal: the "
        "split into runs of at most max_tokens that maximises similarity inside runs (threshold unused)",
    )

    @field_validator("merge_threshold", "target_tokens", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        """`none` from the environment or a config file turns the second stage (or the target) off."""
        return None if isinstance(value, str) and value.strip().lower() in {"none", "null", "off"} else value

    @model_validator(mode="after")
    def _ordered(self) -> ClusterOptions:
        self._not_above("min_tokens", "max_tokens")
        if self.target_tokens is not None and "target_tokens" not in self.model_fields_set:
            # The default target within the bounds set (max_tokens 60 means chunks of at most 60).
            clamped = min(max(self.target_tokens, self.min_tokens), self.max_tokens)
            object.__setattr__(self, "target_tokens", clamped)
        if self.target_tokens is not None:
            self._not_above("min_tokens", "target_tokens")
            self._not_above("target_tokens", "max_tokens")
        return self


class ClusterChunker(_SentenceEmbeddingChunker):
    """Adjacent sentences join a cluster while their mean similarity to its members (mean linkage
    over the similarity matrix row, computed against the member sum) reaches `threshold`."""

    name = "cluster"
    version = "1.5.4"
    heading_context = True
    strategy_label = "similarity_cluster"
    merge_within_blocks = True
    options_model = ClusterOptions
    options: ClusterOptions

    @property
    def breakpoint_type(self) -> str:
        return "mean_linkage"

    @property
    def unit_tokens(self) -> int:
        """With a target, a run without sentence stops is cut where a chunk would be (1.5 x target), or
        text without stops (a table's rows, a lowercased paste) would keep chunks at `max_tokens`."""
        target = self.options.target_tokens
        return self.options.max_tokens if target is None else min(self.options.max_tokens, round(TARGET_HIGH * target))

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
        `merge_threshold` alike join, the most alike pair first. The first stage compares single sentences
        with a cluster, which rarely reaches the threshold, so without this the size bounds alone set most
        boundaries: a run on one topic stays in pieces while unrelated crumbs are glued together.

        With `target_tokens`, size follows the target rather than the text's homogeneity: clusters past
        1.5 x target are cut first where their neighbouring sentences are least alike, merging stops at
        1.25 x target instead of `max_tokens`, and what is left under half the target joins its more alike
        neighbour. On text where every sentence is about one subject nearly all neighbours are alike, and
        merging up to the maximum made chunks of 150 to 250 tokens there while other text got 80."""

        def tokens(g: _Group) -> int:
            return counter(units[g.first][0], units[g.last][1])

        target = self.options.target_tokens
        if target is None:
            if self.options.merge_threshold is None or len(groups) < 2:
                return groups
            return merge_alike(groups, vectors, tokens, self.options.merge_threshold, self.options.max_tokens)
        most = self.options.max_tokens
        high, low = min(most, round(TARGET_HIGH * target)), round(TARGET_LOW * target)
        groups = cut_to_size(groups, vectors, tokens, high, low)
        if self.options.merge_threshold is not None and len(groups) > 1:
            limit = min(most, round(TARGET_MERGE * target))
            groups = merge_alike(groups, vectors, tokens, self.options.merge_threshold, limit)
        return join_crumbs(groups, vectors, tokens, low, high)


#: `target_tokens`' band, as multiples of the target: cut above HIGH, merge alike up to MERGE, and join
#: what is under LOW to a neighbour.
TARGET_HIGH, TARGET_MERGE, TARGET_LOW = 1.5, 1.25, 0.5


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two (summed) vectors, rounded like every comparison here."""
    denom = float(np.linalg.norm(a) * np.linalg.norm(b)) or 1.0
    return round(float(a @ b) / denom, ROUND)


def _sum(vectors: np.ndarray, g: _Group) -> np.ndarray:
    """A group's sentence vectors summed in float64 (its centroid's direction)."""
    return vectors[g.first : g.last + 1].astype(np.float64).sum(axis=0)


def cut_to_size(
    groups: list[_Group], vectors: np.ndarray, tokens: Callable[[_Group], int], high: int, low: int
) -> list[_Group]:
    """Every group over `high` tokens cut, again and again, at the sentence boundary whose two sides (two
    sentences each) are least alike among those leaving at least `low` tokens on both sides (the most
    even cut when none does); a tie takes the more even cut, then the one further left."""
    out: list[_Group] = []
    pending = list(reversed(groups))
    while pending:
        g = pending.pop()
        if g.last == g.first or tokens(g) <= high:
            out.append(g)
            continue
        best: tuple[bool, float, int, int] | None = None
        for k in range(g.first + 1, g.last + 1):
            left, right = tokens(_Group(g.first, k - 1, "")), tokens(_Group(k, g.last, ""))
            before = vectors[max(g.first, k - 2) : k].astype(np.float64).sum(axis=0)
            after = vectors[k : min(g.last, k + 1) + 1].astype(np.float64).sum(axis=0)
            key = (min(left, right) < low, _cosine(before, after), abs(left - right), k)
            if best is None or key < best:
                best = key
        assert best is not None
        k = best[3]
        pending.append(_Group(k, g.last, g.reason))
        pending.append(_Group(g.first, k - 1, "target_tokens"))
    return out


def join_crumbs(
    groups: list[_Group], vectors: np.ndarray, tokens: Callable[[_Group], int], low: int, limit: int
) -> list[_Group]:
    """Left to right, a group under `low` tokens joins its more alike neighbour (the other one when only
    that union fits `limit`); a group that fits with neither stays."""
    out = list(groups)
    i = 0
    while i < len(out) and len(out) > 1:
        g = out[i]
        if tokens(g) >= low:
            i += 1
            continue
        options = []
        for j in (i - 1, i + 1):
            if 0 <= j < len(out):
                a, b = min(i, j), max(i, j)
                union = _Group(out[a].first, out[b].last, out[b].reason)
                if tokens(union) <= limit:
                    sim = _cosine(_sum(vectors, g), _sum(vectors, out[j]))
                    options.append((-sim, j, a, b, union))
        if not options:
            i += 1
            continue
        _, _, a, b, union = min(options, key=lambda o: (o[0], o[1]))
        out[a : b + 1] = [union]
        i = a
    return out


def merge_alike(
    groups: list[_Group], vectors: np.ndarray, tokens: Callable[[_Group], int], threshold: float, limit: int
) -> list[_Group]:
    """Adjacent groups merged, most alike centroids first (similarities rounded; a tie takes the pair
    further left), while the pair is at least `threshold` alike and its union fits `limit` tokens."""
    out: list[_Group | None] = list(groups)
    sums = [_sum(vectors, g) for g in groups]
    after = [*range(1, len(groups)), -1]
    before = [-1, *range(len(groups) - 1)]

    def alike(a: int, b: int) -> float:
        return _cosine(sums[a], sums[b])

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


__all__ = ["ClusterChunker", "cut_to_size", "join_crumbs", "merge_alike", "optimal_groups"]


STRATEGY = Strategy(
    "cluster",
    ClusterOptions,
    f"{__name__}:ClusterChunker",
    embeds=True,
    embed_order="descending",  # semantic embeds a shared document from its start, cluster from its end
    limits=token_limits,
)
