"""Seed 004: semantic breakpoint chunking and similarity clustering over sentence embeddings.

Both strategies split the document stream into sentences with exact offsets, embed each sentence
once (cached per process, shared by both), group sentences, then enforce token bounds: groups
above `max_tokens` are split at sentence boundaries, groups below `min_tokens` are merged into
the more similar neighbour while the result fits. A hard maximum always holds: a sentence longer
than `max_tokens` is split by tokens first. Similarities are rounded to 4 decimals before any
comparison so tiny float differences between batchings cannot move a boundary in practice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any, ClassVar, Literal, cast

import numpy as np
from pydantic import Field, model_validator

from streams.core.chunkers.base import (
    FRAGMENT_TOKENS,
    ChunkDraft,
    Chunker,
    ChunkingError,
    EmbeddingUnavailable,
    SentenceEmbedder,
    Strategy,
    token_limits,
)
from streams.core.events import AssembledDocument
from streams.core.options import StrategyOptions
from streams.core.text import (
    WORD,
    Span,
    block_sentence_spans,
    caseless,
    crosses_line_break,
    heading_paths,
    pack_units_exact,
    path_at,
    split_span_by_tokens,
)
from streams.core.tokenizers import Tokenizer

ROUND = 4

BREAKPOINT_DEFAULTS: dict[str, float] = {
    # LangChain SemanticChunker conventions, all on cosine distance (1 - similarity) of neighbours.
    "percentile": 75.0,  # break above the 75th percentile of distance = below the 25th of similarity
    "standard_deviation": 3.0,  # mean + 3 std
    "interquartile": 1.5,  # mean + 1.5 IQR
    "gradient": 95.0,  # 95th percentile of the distance gradient
}


class SemanticOptions(StrategyOptions):
    strategy: ClassVar[str] = "semantic"
    seed: ClassVar[str] = "004"
    summary: ClassVar[str] = "breaks where neighbouring sentences' embeddings drift apart"

    breakpoint_type: Literal["percentile", "standard_deviation", "interquartile", "gradient"] = Field(
        "percentile", description="how the break threshold is derived from neighbour distances"
    )
    threshold_amount: float | None = Field(
        None,
        ge=0,
        le=100,
        description="percentile (0-100) or multiplier for the breakpoint type (default: the type's own)",
    )
    buffer_size: int = Field(1, ge=0, le=32, description="sentences either side averaged into each sentence")
    paragraph_weight: float = Field(
        0.15, ge=0.0, le=1.0, description="added to the distance where a blank line separates two sentences"
    )
    local_window: int = Field(
        10,
        ge=0,
        le=1000,
        description="in a document without blank lines, each distance less the mean of this many distances "
        "either side before the threshold (0: never)",
    )
    min_tokens: int = Field(100, ge=0, le=100_000, description="smaller groups join a neighbour")
    max_tokens: int = Field(400, ge=8, le=100_000, description="larger groups are split")
    size_weight: float = Field(
        2.0,
        ge=0.0,
        le=100.0,
        description="in a document without blank lines, the cuts are chosen again to weigh each break's "
        "distance against how far each chunk's tokens stray from the document's mean chunk (0: never)",
    )

    @model_validator(mode="after")
    def _resolved(self) -> SemanticOptions:
        if self.threshold_amount is None:
            object.__setattr__(self, "threshold_amount", BREAKPOINT_DEFAULTS[self.breakpoint_type])
        self._not_above("min_tokens", "max_tokens")
        return self


@dataclass
class _Group:
    """Consecutive sentence indices [first, last] and why the group ended."""

    first: int
    last: int
    reason: str


def _round(values: np.ndarray) -> np.ndarray:
    return np.round(values.astype(np.float64), ROUND)


class _SentenceEmbeddingChunker(Chunker):
    """Shared pipeline: sentences -> embeddings -> groups (strategy) -> bounds -> drafts."""

    metadata_record: ClassVar[str] = "streams.meta.SemanticMetadata"
    strategy_label: ClassVar[str]
    # Small groups prefer a neighbour on their side of a line break (same paragraph or list item, not
    # across a heading) before the more similar one.
    merge_within_blocks: ClassVar[bool] = False
    # The path of marked-up headings over a chunk as its section path: the vector sink embeds it with
    # the text (STREAMS_EMBED_CONTEXT; docs/benchmarks.md, Retrieval quality).
    heading_context: ClassVar[bool] = False
    options: Any  # SemanticOptions or ClusterOptions: each strategy's class names its own

    def __init__(self, tokenizer: Tokenizer, *, embedder: SentenceEmbedder | None = None, **options: Any) -> None:
        """The embedder is injected by the caller, never an option."""
        super().__init__(tokenizer, **options)
        self._embedder = embedder

    @property
    def breakpoint_type(self) -> str:
        """How the threshold is derived, as each chunk's metadata records it."""
        raise NotImplementedError

    @property
    def threshold_amount(self) -> float:
        """The amount the grouping applies, as each chunk's metadata records it."""
        raise NotImplementedError

    @property
    def embedder(self) -> SentenceEmbedder:
        """Injected by the caller: the core loads no model (`streams.embedding` makes embedders)."""
        if self._embedder is None:
            raise EmbeddingUnavailable(f"{self.name} was built without an embedder (pass embedder=)")
        return self._embedder

    def warm_up(self) -> None:
        self.embedder.encode(["warm up"])  # loads the model and runs torch's first forward pass

    # --- pipeline -------------------------------------------------------------------------------

    def chunk(self, doc: AssembledDocument) -> list[ChunkDraft]:
        text = doc.text
        if not text.strip():
            return []
        units = self.sentence_units(text)
        try:
            vectors = self.embedder.encode([text[s:e] for s, e in units])
        except EmbeddingUnavailable as exc:
            raise ChunkingError(str(exc), "embedding_unavailable") from exc
        counter = _RangeCounter(self.tokenizer, text)
        groups, threshold = self.group(vectors, units, text)
        groups = self._split_oversized(groups, units, counter)
        groups = self._fill(self._merge_small(groups, units, vectors, counter), units, counter)
        groups = self._refine(groups, units, vectors, counter)
        drafts = [self._draft(text, units, vectors, g, threshold) for g in groups]
        if self.heading_context:
            paths = heading_paths(text)
            drafts = [replace(d, section_path=p) if (p := path_at(paths, d.char_start)) else d for d in drafts]
        return drafts

    @property
    def unit_tokens(self) -> int:
        """The most tokens one sentence unit may hold: longer runs (a table, text without stops) are cut."""
        return self.options.max_tokens

    def sentence_units(self, text: str) -> list[Span]:
        """Sentences, each at most `unit_tokens` (over-long runs hard-split by tokens); in lowercased text a
        sentence may start lowercase, or a whole paragraph would be one over-long 'sentence'."""
        spans = block_sentence_spans(text, uncased=caseless(text))
        counts = _count_many(self.tokenizer, [text[s:e] for s, e in spans])
        units: list[Span] = []
        for span, tokens in zip(spans, counts, strict=True):
            if tokens <= self.unit_tokens:
                units.append(span)
                continue
            # Even pieces, so no tail is a fragment; a piece cut at a token boundary can count a token
            # more on its own (BPE merges differ at the cut): cut again, a little shorter, until every
            # piece fits on the text it carries.
            parts = -(-tokens // self.unit_tokens)
            limit = min(self.unit_tokens, -(-tokens // parts) + 1)
            pieces = self._cut(text, span, limit)
            while limit > 8 and any(self.tokenizer.count(text[a:b]) > self.unit_tokens for a, b in pieces):
                limit -= max(1, limit // 50)
                pieces = self._cut(text, span, limit)
            units.extend(self._no_crumb_tail(text, pieces))
        return units

    def _cut(self, text: str, span: Span, limit: int) -> list[Span]:
        """An over-long sentence in pieces of at most `limit` tokens: between a table's rows when it is
        laid out one cell per line, else by tokens."""
        return _row_split(self.tokenizer, text, span, limit) or _hard_split(self.tokenizer, text, span, limit)

    def _no_crumb_tail(self, text: str, pieces: list[Span]) -> list[Span]:
        """Cuts moved back to whitespace can leave the last piece a crumb that fits beside neither full
        neighbour: it joins the piece before it, or the two are cut again into even halves."""
        count = self.tokenizer.count
        if len(pieces) < 2 or count(text[pieces[-1][0] : pieces[-1][1]]) >= FRAGMENT_TOKENS:
            return pieces
        joined = (pieces[-2][0], pieces[-1][1])
        tokens = count(text[joined[0] : joined[1]])
        if tokens <= self.unit_tokens:
            return [*pieces[:-2], joined]
        halves = _hard_split(self.tokenizer, text, joined, -(-tokens // 2) + 1)
        if len(halves) == 2 and all(count(text[a:b]) <= self.unit_tokens for a, b in halves):
            return [*pieces[:-2], *halves]
        return pieces

    def group(self, vectors: np.ndarray, units: Sequence[Span], text: str) -> tuple[list[_Group], float]:
        """Strategy-specific grouping of `units` (spans of `text`); returns the groups and the threshold
        actually applied."""
        raise NotImplementedError

    def _split_oversized(self, groups: list[_Group], units: Sequence[Span], counter: _RangeCounter) -> list[_Group]:
        out: list[_Group] = []
        for g in groups:
            if counter(units[g.first][0], units[g.last][1]) <= self.options.max_tokens:
                out.append(g)
                continue
            members = list(range(g.first, g.last + 1))
            spans = [units[i] for i in members]
            counts = [counter(s, e) for s, e in spans]
            packs = pack_units_exact(spans, counts, self.options.max_tokens, counter)
            for n, pack in enumerate(packs):
                reason = g.reason if n == len(packs) - 1 else "max_tokens"
                out.append(_Group(members[pack[0]], members[pack[-1]], reason))
        return out

    def _merge_small(
        self, groups: list[_Group], units: Sequence[Span], vectors: np.ndarray, counter: _RangeCounter
    ) -> list[_Group]:
        """One left-to-right pass: a group under min_tokens joins its more similar neighbour if the
        union fits max_tokens; otherwise the union is re-split at the sentence that balances it.
        With `merge_within_blocks`, a neighbour not behind a line break wins before similarity."""

        def tokens(g: _Group) -> int:
            return counter(units[g.first][0], units[g.last][1])

        def similarity(a: _Group, b: _Group) -> float:
            # Summed in float64 like every other comparison: a float32 sum's last bits depend on how
            # numpy vectorises it on a given CPU, and could move a rounded tie.
            ca = vectors[a.first : a.last + 1].astype(np.float64).sum(axis=0)
            cb = vectors[b.first : b.last + 1].astype(np.float64).sum(axis=0)
            denom = float(np.linalg.norm(ca) * np.linalg.norm(cb)) or 1.0
            return round(float(ca @ cb) / denom, ROUND)

        def affinity(a: _Group, b: _Group) -> tuple[bool, float]:
            """(same block, similarity) of neighbours a then b, compared as a tuple."""
            apart = self.merge_within_blocks and crosses_line_break(counter.text, units[a.last], units[b.first])
            return (not apart, similarity(a, b))

        out: list[_Group] = []
        pending = list(groups)
        for i, g in enumerate(pending):
            if tokens(g) >= self.options.min_tokens:
                out.append(g)
                continue
            prev = out[-1] if out else None
            nxt = pending[i + 1] if i + 1 < len(pending) else None
            use_prev = prev is not None and (nxt is None or affinity(prev, g) >= affinity(g, nxt))
            if use_prev and prev is not None:
                union = _Group(prev.first, g.last, g.reason)
                out[-1:] = [union] if tokens(union) <= self.options.max_tokens else self._rebalance(prev, g, tokens)
            elif nxt is not None:
                union = _Group(g.first, nxt.last, nxt.reason)
                if tokens(union) <= self.options.max_tokens:
                    pending[i + 1] = union
                else:
                    left, right = self._rebalance(g, nxt, tokens)
                    out.append(left)
                    pending[i + 1] = right
            else:
                out.append(g)
        return out

    def _fill(self, groups: list[_Group], units: Sequence[Span], counter: _RangeCounter) -> list[_Group]:
        """What the similarity pass left under `min_tokens` joins whichever neighbour the union fits
        (the pass tries only the more similar one); a group under 30 tokens that fits with neither is
        rebalanced against its smaller neighbour. The minimum is a seed rule, not a preference."""

        def tokens(g: _Group) -> int:
            return counter(units[g.first][0], units[g.last][1])

        out = list(groups)
        i = 0
        while i < len(out) and len(out) > 1:
            g = out[i]
            if tokens(g) >= self.options.min_tokens:
                i += 1
                continue
            near = [j for j in (i - 1, i + 1) if 0 <= j < len(out)]
            fits = [(min(i, j), max(i, j)) for j in near]
            fits = [(a, b) for a, b in fits if tokens(_Group(out[a].first, out[b].last, "")) <= self.options.max_tokens]
            if fits:
                a, b = fits[0]
                out[a : b + 1] = [_Group(out[a].first, out[b].last, out[b].reason)]
                i = a
                continue
            if tokens(g) < FRAGMENT_TOKENS:
                j = min(near, key=lambda k: tokens(out[k]))
                a, b = min(i, j), max(i, j)
                out[a : b + 1] = self._rebalance(out[a], out[b], tokens)
            i += 1
        return out

    def _refine(
        self, groups: list[_Group], units: Sequence[Span], vectors: np.ndarray, counter: _RangeCounter
    ) -> list[_Group]:
        """A strategy's last word on groups that already meet the bounds (none by default)."""
        return groups

    def _rebalance(self, a: _Group, b: _Group, tokens: Callable[[_Group], int]) -> list[_Group]:
        """Split the union of two neighbours at the sentence that maximises the smaller side."""
        best: tuple[int, int] | None = None
        most = self.options.max_tokens
        for k in range(a.first + 1, b.last + 1):
            left, right = tokens(_Group(a.first, k - 1, "")), tokens(_Group(k, b.last, ""))
            if left <= most and right <= most and (best is None or min(left, right) > best[0]):
                best = (min(left, right), k)
        if best is None or best[0] <= min(tokens(a), tokens(b)):
            return [a, b]
        return [_Group(a.first, best[1] - 1, "rebalanced"), _Group(best[1], b.last, b.reason)]

    def _draft(self, text: str, units: Sequence[Span], vectors: np.ndarray, g: _Group, threshold: float) -> ChunkDraft:
        start, end = units[g.first][0], units[g.last][1]
        inner = vectors[g.first : g.last + 1]
        sims = _round(np.einsum("ij,ij->i", inner[:-1], inner[1:])) if len(inner) > 1 else None
        return ChunkDraft(
            text=text[start:end],
            char_start=start,
            char_end=end,
            content_type="text",
            metadata={
                "strategy_label": self.strategy_label,
                "breakpoint_type": self.breakpoint_type,
                "threshold": threshold,
                "threshold_amount": self.threshold_amount,
                "sentence_count": g.last - g.first + 1,
                "first_sentence": g.first,
                "mean_similarity": None if sims is None else round(float(sims.mean()), ROUND),
                "split_reason": g.reason,
                "min_tokens": self.options.min_tokens,
                "max_tokens": self.options.max_tokens,
                "embed_model": self.embedder.model_name,
            },
        )


class SemanticChunker(_SentenceEmbeddingChunker):
    """Breakpoints where the cosine distance between neighbouring sentences is unusually high."""

    name = "semantic"
    version = "1.7.1"
    heading_context = True
    # A group under min_tokens joins the neighbour in its own paragraph before the more similar one:
    # small groups used to cross paragraphs, so a chunk ran a little past the passage it answered
    # (docs/benchmarks.md, Retrieval quality).
    merge_within_blocks = True
    strategy_label = "semantic_percentile"
    options_model = SemanticOptions
    options: SemanticOptions

    @property
    def breakpoint_type(self) -> str:
        return self.options.breakpoint_type

    @property
    def threshold_amount(self) -> float:
        return cast(float, self.options.threshold_amount)  # never None: the model resolves the type's own

    def distances(self, vectors: np.ndarray, paragraph_ends: np.ndarray | None = None) -> np.ndarray:
        """Rounded cosine distances between neighbours; each sentence is represented by the mean of
        itself and `buffer_size` sentences either side (LangChain's buffer, without re-embedding). With a
        `paragraph_weight`, a paragraph's end counts as that much further apart."""
        if len(vectors) < 2:
            return np.zeros(0)
        window = _window_means(vectors, self.options.buffer_size)
        distances = _round(1.0 - np.einsum("ij,ij->i", window[:-1], window[1:]))
        if self.options.paragraph_weight and paragraph_ends is not None:
            distances = _round(distances + self.options.paragraph_weight * paragraph_ends)
        return distances

    def threshold(self, distances: np.ndarray) -> tuple[np.ndarray, float]:
        """(scores, threshold): a breakpoint follows sentence i when scores[i] > threshold."""
        amount = self.threshold_amount
        if self.breakpoint_type == "percentile":
            return distances, float(np.percentile(distances, amount))
        if self.breakpoint_type == "standard_deviation":
            return distances, float(np.mean(distances) + amount * np.std(distances))
        if self.breakpoint_type == "interquartile":
            q1, q3 = np.percentile(distances, [25, 75])
            return distances, float(np.mean(distances) + amount * (q3 - q1))
        gradient = _round(np.gradient(distances)) if len(distances) > 1 else distances
        return gradient, float(np.percentile(gradient, amount))

    def scores(self, vectors: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, float] | None:
        """(scores, threshold) of the breaks between neighbouring units, given where paragraphs end
        (`paragraph_ends`): a break after unit i when scores[i] > threshold. None when there are too few
        units to tell."""
        distances = self.distances(vectors, ends)
        if len(distances) < 2:
            return None
        if self.options.local_window and not ends.any():
            distances = local_contrast(distances, self.options.local_window)
        scores, threshold = self.threshold(distances)
        return scores, round(threshold, ROUND)

    def group(self, vectors: np.ndarray, units: Sequence[Span], text: str) -> tuple[list[_Group], float]:
        scored = self.scores(vectors, paragraph_ends(text, units))
        if scored is None:
            return [_Group(0, len(units) - 1, "end_of_document")], 0.0
        scores, threshold = scored
        groups: list[_Group] = []
        first = 0
        for i in np.flatnonzero(scores > threshold).tolist():
            groups.append(_Group(first, i, "breakpoint"))
            first = i + 1
        groups.append(_Group(first, len(units) - 1, "end_of_document"))
        return groups, threshold

    def _refine(
        self, groups: list[_Group], units: Sequence[Span], vectors: np.ndarray, counter: _RangeCounter
    ) -> list[_Group]:
        """With a `size_weight`, in a document without blank lines, the cuts are chosen again over the whole
        document (size_prior_groups): the threshold's groups give the document's mean size, and the program
        evens the sizes about it. Why: without the paragraph signal the threshold leaves chunks of 100 to 400
        tokens side by side, retrieval favours the large ones, and IoU pays for their extra text; where blank
        lines are, the threshold's breaks follow the paragraphs and moving them cost recall (docs/benchmarks.md,
        Retrieval quality)."""
        weight = self.options.size_weight
        if not weight or len(groups) < 2:
            return groups
        ends = paragraph_ends(counter.text, units)
        scored = None if ends.any() else self.scores(vectors, ends)
        if scored is None:
            return groups
        counts = [counter(s, e) for s, e in units]
        sizes = [counter(units[g.first][0], units[g.last][1]) for g in groups]
        cuts = size_prior_groups(
            scored[0],
            scored[1],
            counts,
            sum(sizes) / len(sizes),
            weight,
            self.options.min_tokens,
            self.options.max_tokens,
        )
        refined = self._split_oversized(cuts, units, counter)  # the program sums unit counts; the text decides
        return refined if refined == cuts else self._fill(refined, units, counter)


#: What `size_prior_groups` charges a chunk under `min_tokens` (the bounds' rule, not a preference).
UNDERSIZE_COST = 10.0


def size_prior_groups(
    scores: np.ndarray,
    threshold: float,
    counts: Sequence[int],
    target: float,
    weight: float,
    min_tokens: int,
    max_tokens: int,
) -> list[_Group]:
    """The split of units (token `counts`) into runs that maximises the breaks' standardised scores,
    sum of (scores[i] - threshold) / std(scores) over the breaks taken, less `weight` x ((L - target) /
    target)^2 for each run of L tokens and UNDERSIZE_COST for a run under `min_tokens`; no run over
    `max_tokens` (summed counts) unless it is one unit. With a weight of 0 it takes exactly the breaks
    over the threshold (a run under `min_tokens` aside). Rewards are rounded, and a tie keeps the shorter
    last run, so the same scores give the same split."""
    n = len(counts)
    spread = float(np.std(scores)) or 1.0
    reward = np.round((np.asarray(scores, dtype=np.float64) - threshold) / spread, 6)
    prefix = np.concatenate([[0], np.cumsum(counts)])
    target = max(float(target), 1.0)
    best = np.full(n + 1, -np.inf)
    best[0] = 0.0
    start_of = np.zeros(n + 1, dtype=int)
    for b in range(1, n + 1):  # best[b]: the best split of units 0..b-1
        a = b - 1
        while a >= 0:
            tokens = int(prefix[b] - prefix[a])
            if tokens > max_tokens and a < b - 1:
                break
            cost = weight * ((tokens - target) / target) ** 2 + (UNDERSIZE_COST if tokens < min_tokens else 0.0)
            gain = best[a] + (reward[a - 1] if a > 0 else 0.0) - cost
            gain = round(float(gain), 6)
            if gain > best[b]:
                best[b], start_of[b] = gain, a
            a -= 1
    runs: list[tuple[int, int]] = []
    b = n
    while b > 0:
        runs.append((int(start_of[b]), b - 1))
        b = int(start_of[b])
    runs.reverse()
    groups = [_Group(a, z, "breakpoint" if reward[z] > 0 else "size") for a, z in runs[:-1]]
    groups.append(_Group(runs[-1][0], runs[-1][1], "end_of_document"))
    return groups


def local_contrast(distances: np.ndarray, window: int) -> np.ndarray:
    """Each distance less the mean of up to `window` distances either side (itself not counted), rounded.

    Why: without blank lines there is no paragraph signal, and one percentile over the whole document
    breaks where the text is generally loose (a transcript's questions) and not where a subject ends
    inside text that is generally tight. Against its neighbourhood a shift stands out wherever it is
    (docs/benchmarks.md, Retrieval quality)."""
    n = len(distances)
    sums = np.concatenate([[0.0], np.cumsum(distances.astype(np.float64))])
    index = np.arange(n)
    lo, hi = np.clip(index - window, 0, n), np.clip(index + window + 1, 0, n)
    others = hi - lo - 1
    around = (sums[hi] - sums[lo] - distances) / np.maximum(others, 1)
    return _round(np.where(others > 0, distances - around, distances))


def paragraph_ends(text: str, units: Sequence[Span]) -> np.ndarray:
    """1.0 between two units that a blank line separates (a paragraph ends there), else 0.0."""
    return np.array([1.0 if "\n\n" in text[a[1] : b[0]] else 0.0 for a, b in pairwise(units)])


# --- helpers ------------------------------------------------------------------------------------


class _RangeCounter:
    """Exact token counts of stream ranges, memoised for one chunk() call."""

    def __init__(self, tokenizer: Tokenizer, text: str) -> None:
        self.tokenizer = tokenizer
        self.text = text
        self.memo: dict[tuple[int, int], int] = {}

    def __call__(self, start: int, end: int) -> int:
        key = (start, end)
        if key not in self.memo:
            self.memo[key] = self.tokenizer.count(self.text[start:end])
        return self.memo[key]


def _count_many(tokenizer: Tokenizer, texts: list[str]) -> list[int]:
    many = getattr(tokenizer, "count_many", None)
    return list(many(texts)) if many else [tokenizer.count(t) for t in texts]


_LINE = re.compile(r"[^\n]+")
_LABEL = re.compile(r"[A-Za-z]{2}")
#: A run this many lines or more, whose median line is this short, is a table laid out one cell per line.
ROW_LINES, CELL_CHARS = 8, 40


def _row_split(tokenizer: Tokenizer, text: str, span: Span, limit: int) -> list[Span] | None:
    """A table that PDF extraction laid out one cell per line (a label line, then its values) reads as
    one endless sentence; cut it between lines, at the start of a row (a label after a value) when one
    falls in the second half of the piece, so a row keeps its label with its numbers. None for text that
    is not laid out that way (the caller cuts by tokens)."""
    lines = [
        (m.start() + len(m[0]) - len(m[0].lstrip()), m.end() - len(m[0]) + len(m[0].rstrip()))
        for m in _LINE.finditer(text, span[0], span[1])
        if m[0].strip()
    ]
    if len(lines) < ROW_LINES or sorted(b - a for a, b in lines)[len(lines) // 2] > CELL_CHARS:
        return None
    counts = [n + 1 for n in _count_many(tokenizer, [text[a:b] for a, b in lines])]  # + the line break
    if max(counts) > limit:
        return None
    labels = [bool(_LABEL.search(text[a:b])) for a, b in lines]
    pieces: list[Span] = []
    first, used, row = 0, 0, -1
    for i, n in enumerate(counts):
        if i > first and used + n > limit:
            cut = row if row > first and sum(counts[first:row]) * 2 >= limit else i
            pieces.append((lines[first][0], lines[cut - 1][1]))
            first, used = cut, sum(counts[cut:i])
        if i > first and labels[i] and not labels[i - 1]:
            row = i
        used += n
    pieces.append((lines[first][0], lines[-1][1]))
    return pieces


def _hard_split(tokenizer: Tokenizer, text: str, span: Span, max_tokens: int) -> list[Span]:
    """Split an over-long sentence by tokens (tiktoken offsets) or, for other tokenizers, by words."""
    encoding = getattr(tokenizer, "encoding", None)
    if encoding is not None and hasattr(encoding, "decode_with_offsets"):
        return split_span_by_tokens(text, span, max_tokens, encoding.encode_ordinary, encoding.decode_with_offsets)
    words = [m.span() for m in WORD.finditer(text[span[0] : span[1]])]
    step = max(1, max_tokens // 2)
    return [
        (span[0] + words[i][0], span[0] + words[min(i + step, len(words)) - 1][1]) for i in range(0, len(words), step)
    ]


def _window_means(vectors: np.ndarray, buffer_size: int) -> np.ndarray:
    if buffer_size <= 0:
        return vectors.astype(np.float64)
    padded = np.cumsum(np.vstack([np.zeros((1, vectors.shape[1])), vectors.astype(np.float64)]), axis=0)
    n = len(vectors)
    lo = np.clip(np.arange(n) - buffer_size, 0, n)
    hi = np.clip(np.arange(n) + buffer_size + 1, 0, n)
    sums = padded[hi] - padded[lo]
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return sums / norms


STRATEGY = Strategy("semantic", SemanticOptions, f"{__name__}:SemanticChunker", embeds=True, limits=token_limits)

__all__ = ["BREAKPOINT_DEFAULTS", "STRATEGY", "SemanticChunker", "SemanticOptions"]
