"""semantic and cluster strategies (seed 004): topic shifts, pages, bounds, determinism, cache, offline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import itertools

import numpy as np

from streams.codec.avro import AvroCodec
from streams.core.chunkers import get_chunker
from streams.core.chunkers.base import ChunkingError
from streams.core.chunkers.cluster import ClusterChunker, merge_alike
from streams.core.chunkers.semantic import (
    BREAKPOINT_DEFAULTS,
    SemanticChunker,
    _Group,
    _RangeCounter,
    local_contrast,
    size_prior_groups,
)
from streams.core.document import assemble
from streams.core.events import AssembledDocument, ChunkRecord, PageEvent
from streams.core.records import build_records, embedding_text
from streams.core.text import (
    UNWRAPPED_LINE,
    block_sentence_spans,
    heading_paths,
    path_at,
    sentence_spans,
    split_span_by_tokens,
)
from streams.core.tokenizers import get_tokenizer
from streams.embedding.model import Embedder
from streams.embedding.stores import get_embedder
from streams.settings import Settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "semantic"
CORPUS = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpora" / "chunking_eval"
TOPIC_STARTS = ("Sourdough bread begins", "Volcanoes form where", "Chess openings are")
TOPIC_WORDS = (
    r"\b(sourdough|starter|dough|loaf|bread|crust)",
    r"\b(volcan|magma|lava|eruption|ash\b|pyroclastic)",
    r"\b(chess|opening|castl|gambit)",
)


def make_doc(pages: list[str], doc_id: str = "doc-1") -> AssembledDocument:
    return assemble(
        [
            PageEvent(doc_id=doc_id, document_name="t.txt", page_number=n, page_count=len(pages), text=text)
            for n, text in enumerate(pages, start=1)
        ]
    )


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """One model load per test session, strictly offline."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    shared = get_embedder()
    _ = shared.model
    return shared


@pytest.fixture(scope="session")
def topics_doc() -> AssembledDocument:
    pages = (FIXTURES / "topics.txt").read_text(encoding="utf-8").split("\f")
    return make_doc([p.strip("\n") for p in pages])


def topics_of(text: str) -> set[int]:
    import re

    return {n for n, words in enumerate(TOPIC_WORDS) if re.search(words, text, re.IGNORECASE)}


def assert_exact_ranges(doc: AssembledDocument, drafts) -> None:
    assert drafts
    for draft in drafts:
        assert draft.text == doc.text[draft.char_start : draft.char_end]
        assert draft.text.strip() == draft.text
    for a, b in itertools.pairwise(drafts):
        assert a.char_end <= b.char_start
        assert not doc.text[a.char_end : b.char_start].strip(), "text lost between chunks"


# --- sentence splitting -------------------------------------------------------------------------


def test_sentence_spans_exact_offsets_abbreviations_decimals_and_blocks() -> None:
    text = (
        "Dr. Smith paid $3.50 for 2.5 kg of flour. It rose well! Was it the U.S. market?\n\n"
        "A heading without a stop\n- first item\n- second item"
    )
    spans = block_sentence_spans(text)
    pieces = [text[s:e] for s, e in spans]
    assert pieces == [
        "Dr. Smith paid $3.50 for 2.5 kg of flour.",
        "It rose well!",
        "Was it the U.S. market?",
        "A heading without a stop",
        "- first item",
        "- second item",
    ]


def test_an_abbreviation_at_the_start_of_a_line_keeps_its_sentence() -> None:
    """Hard-wrapped text puts any word at a line's start; "Mr." there is still no sentence's end."""
    text = "We went home.\nMr. Smith stayed, and Dr.\nJones left.\nThen it rained."
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "We went home.",
        "Mr. Smith stayed, and Dr.\nJones left.",
        "Then it rained.",
    ]


def test_wikitext_and_asciidoc_heading_lines_open_a_block() -> None:
    text = "The pier was finished in 1910\n= = Construction = =\nWork began in spring"
    pieces = [text[s:e] for s, e in block_sentence_spans(text)]
    assert pieces == ["The pier was finished in 1910", "= = Construction = =\nWork began in spring"]


def test_an_unwrapped_line_ends_its_unit_and_a_wrapped_one_does_not() -> None:
    """Without blank lines, a record or chat turn that ends without a stop must not run into the next one;
    a hard-wrapped paragraph's lines (short, however many) stay one sentence."""
    record = "{'role': 'user', 'content': '" + "ask about the oven timer and the proofing basket " * 6 + "'}"
    nxt = "{'role': 'assistant', 'content': 'Set it to forty minutes'}"
    assert len(record) >= UNWRAPPED_LINE > len(nxt)
    text = f"{record}\n{nxt}"
    assert [text[s:e] for s, e in block_sentence_spans(text)] == [record, nxt]
    wrapped = "The starter is fed every morning with equal weights of flour and water, then left\nto rise"
    assert [wrapped[s:e] for s, e in block_sentence_spans(wrapped)] == [wrapped]
    short = record[: UNWRAPPED_LINE - 1]  # one character under the limit: a wrap column could explain it
    assert len(block_sentence_spans(f"{short}\n{nxt}")) == 1


def test_serialized_records_end_their_units_and_citations_do_not() -> None:
    """A chat log's turns and conversations end without a stop; the gap between records ends a unit, so one
    turn's last words and the next turn's first are never one sentence. Bracketed citations stay in prose."""
    first = "[{'content': 'Which flour suits a rye starter', 'role': 'user'}, "
    second = "{'content': 'Dark rye, fed twice a day', 'role': 'assistant'}] "
    third = "[{'content': 'How long does the bake take', 'role': 'user'}]"
    text = first + second + third
    assert [text[s:e] for s, e in block_sentence_spans(text)] == [first.strip(), second.strip(), third]
    prose = "The loaf rose twice [1] [2] and was baked at dawn {see notes} before the market opened."
    assert [prose[s:e] for s, e in block_sentence_spans(prose)] == [prose]


def test_long_unpunctuated_run_is_hard_split_by_tokens() -> None:
    encoding = get_tokenizer().encoding
    text = " ".join(f"word{i}" for i in range(3000))
    pieces = split_span_by_tokens(text, (0, len(text)), 100, encoding.encode_ordinary, encoding.decode_with_offsets)
    assert len(pieces) > 10
    assert all(len(encoding.encode_ordinary(text[s:e])) <= 100 for s, e in pieces)
    assert " ".join(text[s:e] for s, e in pieces) == text


# --- semantic -----------------------------------------------------------------------------------


def test_semantic_percentile_breaks_at_topic_shifts(embedder: Embedder, topics_doc: AssembledDocument) -> None:
    chunker = SemanticChunker(get_tokenizer(), min_tokens=20, max_tokens=200, embedder=embedder)
    drafts = chunker.chunk(topics_doc)
    assert_exact_ranges(topics_doc, drafts)
    starts = {topics_doc.text.index(s) for s in TOPIC_STARTS}
    assert starts <= {d.char_start for d in drafts}
    assert all(len(topics_of(d.text)) <= 1 for d in drafts), [d.text[:60] for d in drafts]
    meta = drafts[0].metadata
    assert meta["breakpoint_type"] == "percentile" and meta["threshold_amount"] == 75.0
    assert meta["strategy_label"] == "semantic_percentile" and meta["embed_model"] == "all-MiniLM-L6-v2"
    assert sum(d.metadata["sentence_count"] for d in drafts) == len(block_sentence_spans(topics_doc.text))


@pytest.mark.parametrize("breakpoint_type", sorted(BREAKPOINT_DEFAULTS))
def test_every_breakpoint_type_chunks_within_bounds(
    embedder: Embedder, topics_doc: AssembledDocument, breakpoint_type: str
) -> None:
    chunker = SemanticChunker(
        get_tokenizer(), breakpoint_type=breakpoint_type, min_tokens=20, max_tokens=120, embedder=embedder
    )
    drafts = chunker.chunk(topics_doc)
    assert_exact_ranges(topics_doc, drafts)
    records = build_records(topics_doc, chunker, drafts)
    assert all(r.token_count <= 120 for r in records)
    assert {d.metadata["breakpoint_type"] for d in drafts} == {breakpoint_type}
    assert len({d.metadata["threshold"] for d in drafts}) == 1


def test_unknown_breakpoint_type_is_rejected() -> None:
    with pytest.raises(ValueError):
        SemanticChunker(get_tokenizer(), breakpoint_type="median")


# --- cluster ------------------------------------------------------------------------------------


def test_cluster_keeps_topics_apart_and_order(embedder: Embedder, topics_doc: AssembledDocument) -> None:
    chunker = ClusterChunker(get_tokenizer(), min_tokens=20, max_tokens=200, embedder=embedder)
    drafts = chunker.chunk(topics_doc)
    assert_exact_ranges(topics_doc, drafts)
    assert all(len(topics_of(d.text)) <= 1 for d in drafts), [d.text[:60] for d in drafts]
    assert {topics_doc.text.index(s) for s in TOPIC_STARTS} <= {d.char_start for d in drafts}
    assert [d.char_start for d in drafts] == sorted(d.char_start for d in drafts)
    meta = drafts[0].metadata
    assert meta["strategy_label"] == "similarity_cluster" and meta["breakpoint_type"] == "mean_linkage"
    assert meta["threshold"] == 0.75 and meta["max_tokens"] == 200


STRATEGIES = (SemanticChunker, ClusterChunker)


def test_small_cluster_joins_the_neighbour_on_its_side_of_a_line_break(embedder: Embedder) -> None:
    """Similarity alone would pull the short sentence across the heading into the next section."""
    text = "Alpha beta gamma delta epsilon zeta eta theta. Iota kappa.\n= History =\nLambda mu nu xi omicron pi rho."
    units = block_sentence_spans(text)
    assert [text[s:e] for s, e in units] == [
        "Alpha beta gamma delta epsilon zeta eta theta.",
        "Iota kappa.",
        "= History =\nLambda mu nu xi omicron pi rho.",
    ]
    counter = _RangeCounter(get_tokenizer(), text)
    assert [counter(*unit) >= 8 for unit in units] == [True, False, True], "only the middle one is small"
    # The middle group is more similar to the last, but only the first shares its line.
    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    groups = [_Group(0, 0, "threshold"), _Group(1, 1, "threshold"), _Group(2, 2, "end_of_document")]
    chunkers = {cls.name: cls(get_tokenizer(), min_tokens=8, max_tokens=200, embedder=embedder) for cls in STRATEGIES}
    for name, chunker in chunkers.items():
        merged = chunker._merge_small(list(groups), units, vectors, counter)
        assert [(g.first, g.last) for g in merged] == [(0, 1), (2, 2)], f"{name}: same side of the break"
    chunkers["semantic"].merge_within_blocks = False  # semantic before 1.4.0
    merged = chunkers["semantic"]._merge_small(list(groups), units, vectors, counter)
    assert [(g.first, g.last) for g in merged] == [(0, 0), (1, 2)], "by similarity alone"


def test_cluster_defaults_match_the_retrieval_target() -> None:
    chunker = ClusterChunker(get_tokenizer())
    assert (chunker.options.max_tokens, chunker.options.min_tokens, chunker.threshold_amount) == (250, 40, 0.75)
    assert chunker.options.merge_threshold == 0.7


def _unit_vectors(*angles: float) -> np.ndarray:
    return np.array([[np.cos(a), np.sin(a)] for a in angles])


def test_alike_neighbours_merge_most_alike_first_within_the_budget() -> None:
    """Groups 0..3 (10 tokens each, one unit each): 1 and 2 are the most alike pair and merge first; then
    the union {1,2} is alike enough to 0 but a third member would pass the budget, so 0 stays alone; 3
    is too unlike anything to join."""
    groups = [_Group(i, i, "threshold") for i in range(4)]
    vectors = _unit_vectors(0.30, 0.10, 0.12, 1.50)
    merged = merge_alike(groups, vectors, lambda g: 10 * (g.last - g.first + 1), 0.9, 20)
    assert [(g.first, g.last) for g in merged] == [(0, 0), (1, 2), (3, 3)]
    merged = merge_alike(groups, vectors, lambda g: 10 * (g.last - g.first + 1), 0.9, 30)
    assert [(g.first, g.last) for g in merged] == [(0, 2), (3, 3)]


def test_without_a_merge_threshold_the_second_stage_changes_nothing(embedder: Embedder) -> None:
    body = (FIXTURES / "topics.txt").read_text(encoding="utf-8").replace("\f", "\n\n")
    doc = make_doc([body])
    common = {"min_tokens": 10, "max_tokens": 150, "target_tokens": None, "embedder": embedder}
    plain = ClusterChunker(get_tokenizer(), merge_threshold=None, **common)
    staged = ClusterChunker(get_tokenizer(), merge_threshold=0.5, **common)
    before, after = plain.chunk(doc), staged.chunk(doc)
    assert len(after) < len(before)  # a topic's sentences come together
    starts = {d.char_start for d in before}
    assert all(d.char_start in starts for d in after)  # it only removes boundaries, never moves one
    assert max(plain.tokenizer.count(d.text) for d in after) <= staged.options.max_tokens


# --- pages, bounds, determinism, cache ------------------------------------------------------------


@pytest.mark.parametrize("cls", [SemanticChunker, ClusterChunker])
def test_pages_reattached_across_page_boundary(embedder: Embedder, topics_doc: AssembledDocument, cls) -> None:
    chunker = cls(get_tokenizer(), min_tokens=20, max_tokens=200, embedder=embedder)
    records = build_records(topics_doc, chunker, chunker.chunk(topics_doc))
    ash = topics_doc.text.index("Volcanic ash can ground")
    crossing = [r for r in records if r.char_start < ash < r.char_end]
    assert len(crossing) == 1 and crossing[0].page_numbers == [1, 2]
    chess = next(r for r in records if r.text.startswith("Chess openings"))
    assert chess.page_numbers == [2]


@pytest.mark.parametrize("cls", [SemanticChunker, ClusterChunker])
def test_min_and_max_tokens_hold(embedder: Embedder, cls) -> None:
    body = (FIXTURES / "topics.txt").read_text(encoding="utf-8").replace("\f", "\n\n")
    runon = " ".join(f"token{i} and more" for i in range(700))  # one sentence far above max
    doc = make_doc([body, runon, body])
    chunker = cls(get_tokenizer(), min_tokens=40, max_tokens=90, embedder=embedder)
    drafts = chunker.chunk(doc)
    assert_exact_ranges(doc, drafts)
    tokens = [r.token_count for r in build_records(doc, chunker, drafts)]
    assert max(tokens) <= 90
    small = [t for t in tokens if t < 40]
    assert len(small) <= 1, tokens  # only a piece with no neighbour it fits with may stay small


@pytest.mark.parametrize("cls", [SemanticChunker, ClusterChunker])
def test_deterministic_across_runs_and_cache_states(embedder: Embedder, topics_doc: AssembledDocument, cls) -> None:
    first = cls(get_tokenizer(), min_tokens=20, max_tokens=200, embedder=embedder).chunk(topics_doc)
    embedder.clear_cache()
    fresh_batching = make_doc(["An unrelated opening page about tides and the moon."])  # different batch
    cls(get_tokenizer(), min_tokens=20, max_tokens=200, embedder=embedder).chunk(fresh_batching)
    second = cls(get_tokenizer(), min_tokens=20, max_tokens=200, embedder=embedder).chunk(topics_doc)
    assert first == second
    chunker = cls(get_tokenizer(), min_tokens=20, max_tokens=200, embedder=embedder)
    assert [r.chunk_id for r in build_records(topics_doc, chunker, first)] == [
        r.chunk_id for r in build_records(topics_doc, chunker, second)
    ]


def test_semantic_and_cluster_embed_each_sentence_once(embedder: Embedder, topics_doc: AssembledDocument) -> None:
    embedder.clear_cache()
    tokenizer = get_tokenizer()
    SemanticChunker(tokenizer, min_tokens=20, max_tokens=200, embedder=embedder).chunk(topics_doc)
    sentences = embedder.stats.misses
    assert sentences == len(block_sentence_spans(topics_doc.text)) and embedder.stats.hits == 0
    ClusterChunker(tokenizer, min_tokens=20, max_tokens=200, embedder=embedder).chunk(topics_doc)
    assert embedder.stats.misses == sentences
    assert embedder.stats.hits == sentences


def test_registry_builds_both_strategies_with_the_injected_embedder() -> None:
    from streams.core.options import OptionsError

    shared = get_embedder()
    semantic, cluster = get_chunker("semantic", embedder=shared), get_chunker("cluster", embedder=shared)
    assert isinstance(semantic, SemanticChunker) and isinstance(cluster, ClusterChunker)
    assert semantic.embedder is cluster.embedder is shared
    with pytest.raises(OptionsError, match="semantic embeds sentences: pass embedder="):
        get_chunker("semantic")  # the core never picks a model on its own


# --- contract -----------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [SemanticChunker, ClusterChunker])
def test_avro_round_trip(embedder: Embedder, topics_doc: AssembledDocument, cls) -> None:
    chunker = cls(get_tokenizer(), min_tokens=20, max_tokens=200, embedder=embedder)
    codec = AvroCodec()
    for record in build_records(topics_doc, chunker, chunker.chunk(topics_doc)):
        back = ChunkRecord(**codec.decode("chunk_record", codec.encode("chunk_record", record.model_dump())))
        assert back == record


@pytest.mark.parametrize("cls", [SemanticChunker, ClusterChunker])
@pytest.mark.parametrize(
    "pages",
    [
        ["   \n\n  "],
        ["<|endoftext|> . . . ?!"],
        ["x"],
        ["\u0000\ufffd\u200b", "émoji 🙂 text."],
        ["a\n" * 50],
    ],
)
def test_odd_input_never_raises_anything_but_chunking_error(embedder: Embedder, cls, pages: list[str]) -> None:
    doc = make_doc(pages)
    chunker = cls(get_tokenizer(), embedder=embedder)
    try:
        drafts = chunker.chunk(doc)
    except ChunkingError:
        return
    if not doc.text.strip():
        assert drafts == []
    else:
        assert_exact_ranges(doc, drafts)


def test_embed_threads_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads travel as a setting into the embedder, not through the environment inside the core."""
    from pydantic import ValidationError

    from streams.embedding.stores import get_embedder

    monkeypatch.delenv("STREAMS_EMBED_THREADS", raising=False)
    assert Settings().embed_threads is None, "unset: 1 in a worker, the runtime's default elsewhere"
    monkeypatch.setenv("STREAMS_EMBED_THREADS", "2")
    assert Settings().embed_threads == 2
    monkeypatch.setenv("STREAMS_EMBED_THREADS", "two")
    with pytest.raises(ValidationError):
        Settings()
    assert Embedder(get_embedder().model_path, threads=2).threads == 2


def test_missing_model_is_a_chunking_error(topics_doc: AssembledDocument) -> None:
    chunker = SemanticChunker(get_tokenizer(), embedder=Embedder("/nonexistent/model"))
    with pytest.raises(ChunkingError) as info:
        chunker.chunk(topics_doc)
    assert info.value.code == "embedding_unavailable"


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["state_of_the_union.md"])
def test_corpus_chunks_slice_the_stream_within_bounds(embedder: Embedder, name: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip("shared corpora not present")
    text = path.read_text(encoding="utf-8")
    doc = make_doc([text[i : i + 15000] for i in range(0, len(text), 15000)], doc_id=name)
    for chunker in (
        SemanticChunker(get_tokenizer(), embedder=embedder),
        ClusterChunker(get_tokenizer(), embedder=embedder),
    ):
        drafts = chunker.chunk(doc)
        assert_exact_ranges(doc, drafts)
        records = build_records(doc, chunker, drafts)
        assert max(r.token_count for r in records) <= chunker.options.max_tokens
        assert sum(1 for r in records if r.token_count < chunker.options.min_tokens) <= len(records) // 10


def test_warm_up_loads_the_model_before_the_first_document() -> None:
    from streams.embedding.stores import get_embedder

    fresh = Embedder(get_embedder().model_path)  # not the shared one: its model may be loaded already
    chunker = SemanticChunker(get_tokenizer(), embedder=fresh)
    assert fresh._model is None
    chunker.warm_up()
    assert fresh._model is not None and fresh.stats.misses == 1


def test_a_short_group_joins_whichever_neighbour_it_fits() -> None:
    """The similarity pass offers a short group to its more similar neighbour only; when that union is
    over the limit, the other neighbour takes it (a short chunk is a break of seed 004's minimum)."""
    long = " ".join(f"Span {i} carries strain gauges and tilt meters on every girder of the bridge." for i in range(12))
    text = f"{long} Readings drift. The crews recalibrate every gauge each spring and log the result."
    units = block_sentence_spans(text)
    counter = _RangeCounter(get_tokenizer(), text)
    chunker = ClusterChunker(get_tokenizer(), min_tokens=50, max_tokens=200, embedder=None)
    first_long = len(units) - 2  # the long run of sentences, then "Readings drift.", then the last one
    groups = [_Group(0, first_long - 1, "threshold"), _Group(first_long, first_long, "threshold"),
              _Group(first_long + 1, first_long + 1, "end_of_document")]  # fmt: skip
    assert counter(units[0][0], units[first_long][1]) > 200  # it does not fit with the long group
    filled = chunker._fill(groups, units, counter)
    sizes = [counter(units[g.first][0], units[g.last][1]) for g in filled]
    assert all(30 <= n <= 200 for n in sizes), sizes  # and the pair, still short, borrowed sentences
    assert any(g.first <= first_long and g.last == first_long + 1 for g in filled)


def test_a_run_on_sentence_is_cut_into_even_pieces_that_fit_on_their_own_text() -> None:
    tokenizer = get_tokenizer()
    run_on = " ".join(["sensor 1,912 strain 0.75 x7 bridge"] * 32)  # 416 tokens, no full stop: one "sentence"
    chunker = ClusterChunker(tokenizer, min_tokens=50, max_tokens=200, embedder=None)
    units = chunker.sentence_units(run_on)
    sizes = [tokenizer.count(run_on[s:e]) for s, e in units]
    assert len(units) >= 2 and max(sizes) <= 200
    assert min(sizes) >= 0.8 * max(sizes), sizes  # no short tail to become a fragment


@pytest.mark.parametrize(
    "lines",
    [
        ["VARCHAR2(9)", "VARCHAR2(2)", "CHAR(9)"],  # `)\n` is one token: no token starts with whitespace
        ["NOT NULL VARCHAR2(9)", "VARCHAR2(8)", "CHAR(9)", "## NUMBER"],
        ["0x1F2E3D4C5B6A", "0x7788AABBCCDD"],
    ],
)
def test_hard_split_never_cuts_a_word_when_a_line_break_is_near(lines: list[str]) -> None:
    """A run of short code-like lines with no sentence end (a column-type listing in a solicitation):
    the even cut goes at a line break, not inside `VARCHAR2(9)`."""
    tokenizer = get_tokenizer()
    text = "\n".join(lines * 60)
    pieces = split_span_by_tokens(
        text, (0, len(text)), 50, tokenizer.encoding.encode_ordinary, tokenizer.encoding.decode_with_offsets
    )
    assert len(pieces) > 3 and max(tokenizer.count(text[s:e]) for s, e in pieces) <= 50
    cut = [(s, e) for s, e in pieces if e < len(text) and text[e - 1].isalnum() and text[e].isalnum()]
    assert not cut, [text[e - 6 : e + 6] for _, e in cut]


def test_a_run_on_cut_into_pieces_leaves_no_crumb_at_its_end(embedder: Embedder) -> None:
    """Cuts moved back to whitespace can leave a tail of a few tokens after two full pieces; it would fit
    beside neither and stay a fragment. The tail joins the piece before it or the two are halved."""
    from streams.core.options import FRAGMENT_TOKENS

    chunker = ClusterChunker(get_tokenizer(), min_tokens=50, max_tokens=200, embedder=embedder)
    for extra in range(0, 60, 3):
        text = " ".join(f"{n * 7919 % 100003:05d}{n % 97}" for n in range(150 + extra))  # one run-on line
        units = chunker.sentence_units(text)
        sizes = [chunker.tokenizer.count(text[s:e]) for s, e in units]
        assert max(sizes) <= 200 and (len(sizes) == 1 or min(sizes) >= FRAGMENT_TOKENS), (extra, sizes)


# --- heading paths ---------------------------------------------------------------------------------


def _guide() -> str:
    """A guide whose title is over everything, with two sections, one with a subsection."""
    herons = " ".join(f"Herons wade in shallow water number {n} and spear small fish." for n in range(8))
    nesting = " ".join(f"Herons nest in colonies in tall trees, clutch {n} of three eggs." for n in range(8))
    owls = " ".join(f"Owls hunt at night number {n} and swallow their prey whole." for n in range(8))
    return f"# Field Guide\n\n## Herons\n\n{herons}\n\n### Nesting\n\n{nesting}\n\n## Owls\n\n{owls}\n"


def test_a_heading_path_leaves_out_the_title_over_the_whole_document() -> None:
    text = _guide()
    paths = heading_paths(text)
    assert [p for _, p in paths] == [(), ("Herons",), ("Herons", "Nesting"), ("Owls",)]
    assert path_at(paths, text.index("clutch 3")) == ("Herons", "Nesting")
    assert path_at(paths, 0) == ()
    # with every share allowed, the title is part of every path
    assert heading_paths(text, share=1.0)[2][1] == ("Field Guide", "Herons", "Nesting")


def test_a_collection_of_wikitext_articles_keeps_each_article_title() -> None:
    body = "The span was rebuilt in steel after the flood of that year. " * 6
    text = "".join(f" = {name} = \n {body}\n = = History = = \n {body}\n" for name in ("Alder Pier", "Birch Bridge"))
    paths = [p for _, p in heading_paths(text)]
    assert paths == [("Alder Pier",), ("Alder Pier", "History"), ("Birch Bridge",), ("Birch Bridge", "History")]


def test_wikitext_articles_pasted_as_one_paragraph_keep_their_titles(embedder: Embedder) -> None:
    """With its line breaks collapsed, a collection of wiki articles still marks its titles; each chunk of
    either embedding strategy carries its article's title as it does with the lines kept."""
    bridge = " ".join(f"The bridge carried {n} carts a day across the river in winter." for n in range(10))
    harbour = " ".join(f"Fishing boats unloaded {n} crates of herring at the harbour wall." for n in range(10))
    text = f"= Birch Bridge = {bridge} = = History = = {bridge} = Alder Harbour = {harbour} = = Trade = = {harbour}"
    doc = make_doc([text])
    for cls in STRATEGIES:
        drafts = cls(get_tokenizer(), min_tokens=20, max_tokens=80, embedder=embedder).chunk(doc)
        assert len(drafts) > 3
        paths = {tuple(d.section_path) for d in drafts}
        assert {p[0] for p in paths} == {"Birch Bridge", "Alder Harbour"}, cls.name
        harbour_chunk = next(d for d in drafts if "herring" in d.text and d.char_start > text.index("= = Trade"))
        assert harbour_chunk.section_path == ("Alder Harbour", "Trade"), cls.name


def test_a_markdown_contract_pasted_as_one_paragraph_keeps_its_section_titles(embedder: Embedder) -> None:
    """A contract converted to Markdown and pasted as one paragraph opens with `#` (so its one line would be a
    heading over the whole text) and keeps its capitalised `##` titles inline; each chunk of either embedding
    strategy carries its section's title as it does with the lines kept."""
    grounds = " ".join(f"The contractor shall mow the {n} lawns of the campus every week in summer." for n in range(10))
    pricing = " ".join(f"Invoices for line item {n} are paid within thirty days of receipt." for n in range(10))
    lines = f"# SERVICES CONTRACT\n\n## GROUNDS MAINTENANCE\n\n{grounds}\n\n## PAYMENT TERMS\n\n{pricing}\n"
    text = " ".join(lines.split())
    for cls in STRATEGIES:
        drafts = cls(get_tokenizer(), min_tokens=20, max_tokens=80, embedder=embedder).chunk(make_doc([text]))
        assert len(drafts) > 3
        opens = {text.index("## GROUNDS"): ("GROUNDS MAINTENANCE",), text.index("## PAYMENT"): ("PAYMENT TERMS",)}
        for d in drafts:  # the title over the whole text is left out (heading_paths' share), as with lines
            expected = next((path for at, path in sorted(opens.items(), reverse=True) if d.char_start >= at), ())
            assert d.section_path == expected, cls.name
        assert {d.section_path for d in drafts} >= set(opens.values()), cls.name


def test_a_heading_guessed_from_its_shape_is_no_part_of_a_path() -> None:
    text = "Quarterly Results\n\nRevenue rose by a tenth in the quarter.\n\n## Outlook\n\nDemand should hold."
    assert [p for _, p in heading_paths(text)] == [("Outlook",)]


def test_the_vector_embeds_the_path_before_the_text_once() -> None:
    assert embedding_text("Herons nest in trees.", ("Herons", "Nesting")) == "Herons > Nesting\nHerons nest in trees."
    assert embedding_text("Herons nest in trees.", ()) == "Herons nest in trees."
    assert embedding_text("Herons > Nesting\nbody", ("Herons", "Nesting")) == "Herons > Nesting\nbody"


def test_both_embedding_strategies_record_the_heading_path_at_each_chunk(embedder: Embedder) -> None:
    doc = make_doc([_guide()])
    paths = heading_paths(doc.text)
    for cls in STRATEGIES:
        drafts = cls(get_tokenizer(), min_tokens=20, max_tokens=80, embedder=embedder).chunk(doc)
        assert len(drafts) > 3
        assert [d.section_path for d in drafts] == [path_at(paths, d.char_start) for d in drafts]
        assert ("Herons", "Nesting") in {tuple(d.section_path) for d in drafts}, cls.name
        assert not any("Field Guide" in d.section_path for d in drafts)


def _vectors_from_distances(distances: list[float]) -> np.ndarray:
    """Unit vectors in a plane whose neighbours are exactly `distances` apart (cosine distance), so a test
    states the distances and `group` sees them (buffer_size 0)."""
    angles = np.concatenate([[0.0], np.cumsum(np.arccos(1.0 - np.asarray(distances)))])
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)


def test_without_blank_lines_a_shift_counts_against_its_neighbourhood() -> None:
    """Loose text (distances ~0.30) then tight text (~0.02) with one shift of 0.20 inside it. Over the whole
    document the shift is below the 75th percentile (the loose half sets it), so one document-wide threshold
    breaks only inside the loose half; against its neighbourhood the shift stands out. With a blank line in
    the text the paragraph signal is there, and the local rule stays off."""
    loose = [0.30 + 0.01 * (i % 3) for i in range(20)]
    tight = [0.02 + 0.002 * (i % 3) for i in range(20)]
    shift = len(loose) + 10
    distances = loose + tight[:10] + [0.20] + tight[10:]
    vectors = _vectors_from_distances(distances)
    sentences = [f"Sentence number {i} says a thing." for i in range(len(vectors))]
    one_line = " ".join(sentences)
    units = block_sentence_spans(one_line)
    assert len(units) == len(vectors)

    def breaks(text: str, spans: list[tuple[int, int]], **options: object) -> list[int]:
        chunker = SemanticChunker(get_tokenizer(), buffer_size=0, paragraph_weight=0.0, **options)
        groups, _ = chunker.group(vectors, spans, text)
        return [g.last for g in groups[:-1]]

    assert shift not in breaks(one_line, units, local_window=0)  # the document-wide percentile misses it
    assert shift in breaks(one_line, units)  # the default local rule finds it
    with_blank = " ".join(sentences[:5]) + "\n\n" + " ".join(sentences[5:])
    blank_units = block_sentence_spans(with_blank)
    assert breaks(with_blank, blank_units) == breaks(with_blank, blank_units, local_window=0)


def test_local_contrast_takes_the_mean_of_the_neighbours_only() -> None:
    got = local_contrast(np.array([0.1, 0.5, 0.1, 0.1]), 1)
    assert got.tolist() == [-0.4, 0.4, -0.2, 0.0]  # each less the mean of its neighbours, rounded
    assert local_contrast(np.array([0.4]), 3).tolist() == [0.4]  # no neighbours: the distance itself


# --- size prior ---------------------------------------------------------------------------------


def test_without_a_size_weight_the_program_keeps_the_thresholds_breaks() -> None:
    """Weight 0 and bounds that every run meets: exactly the breaks whose score is over the threshold."""
    scores = np.array([0.1, 0.9, 0.2, 0.8, 0.1, 0.1, 0.7])
    counts = [10] * 8
    groups = size_prior_groups(scores, 0.5, counts, 20.0, 0.0, 0, 1000)
    assert [(g.first, g.last) for g in groups] == [(0, 1), (2, 3), (4, 6), (7, 7)]
    assert [g.reason for g in groups] == ["breakpoint", "breakpoint", "breakpoint", "end_of_document"]


def test_a_size_weight_evens_the_runs_about_the_target() -> None:
    """Twelve units of 10 tokens with the threshold's breaks after unit 0 and unit 9 (runs of 10, 90 and 20
    tokens): weighed against a target of 40, the program gives up the break that makes a crumb (after unit 0),
    keeps the one after unit 9, and cuts the long run where no break was (runs of 50, 50 and 20); a strong
    break still stands."""
    counts = [10] * 12
    weak = np.full(11, 0.0)
    weak[[0, 9]] = 0.2
    assert [(g.first, g.last) for g in size_prior_groups(weak, 0.1, counts, 40.0, 0.0, 0, 1000)] == [
        (0, 0),
        (1, 9),
        (10, 11),
    ]
    groups = size_prior_groups(weak, 0.1, counts, 40.0, 5.0, 0, 1000)
    assert [(g.first, g.last) for g in groups] == [(0, 4), (5, 9), (10, 11)]
    assert [g.reason for g in groups] == ["size", "breakpoint", "end_of_document"]
    strong = weak.copy()
    strong[5] = 50.0  # standardised, far over any size cost
    assert any(g.last == 5 for g in size_prior_groups(strong, 0.1, counts, 40.0, 5.0, 0, 1000))


def test_the_program_keeps_the_bounds() -> None:
    """No run over max_tokens, none under min_tokens where a split without one exists, whatever the weight."""
    rng = np.random.default_rng(7)
    counts = [int(c) for c in rng.integers(5, 60, size=80)]
    scores = np.round(rng.random(79), 4)
    for weight in (0.0, 1.0, 4.0):
        groups = size_prior_groups(scores, 0.6, counts, 150.0, weight, 100, 400)
        sizes = [sum(counts[g.first : g.last + 1]) for g in groups]
        assert [g.first for g in groups] == [0, *[g.last + 1 for g in groups[:-1]]] and groups[-1].last == 79
        assert max(sizes) <= 400 and min(sizes) >= 100, (weight, sizes)
        assert groups == size_prior_groups(scores, 0.6, counts, 150.0, weight, 100, 400)  # deterministic


def test_semantic_with_a_size_weight_evens_chunks_only_without_blank_lines(
    embedder: Embedder, topics_doc: AssembledDocument
) -> None:
    """Through the chunker, on the topics run together four times as one paragraph: the bounds hold, the stream
    is covered in order, and the sizes spread less about their mean than the threshold's alone. With blank
    lines in the text the threshold's breaks stand."""
    paragraph = " ".join(topics_doc.text.split())
    flat = make_doc([" ".join([paragraph] * 4)], doc_id="flat")
    count = get_tokenizer().count

    def chunk(doc: AssembledDocument, weight: float) -> list:
        return SemanticChunker(get_tokenizer(), embedder=embedder, size_weight=weight).chunk(doc)

    def spread(drafts: list) -> float:
        sizes = np.array([count(d.text) for d in drafts], dtype=float)
        return float(np.abs(sizes - sizes.mean()).mean())

    plain, weighed = chunk(flat, 0.0), chunk(flat, 4.0)
    assert_exact_ranges(flat, weighed)
    assert all(100 <= count(d.text) <= 400 for d in weighed)
    assert spread(weighed) < spread(plain), ([count(d.text) for d in plain], [count(d.text) for d in weighed])
    assert "\n\n" in topics_doc.text
    assert [(d.char_start, d.char_end) for d in chunk(topics_doc, 4.0)] == [
        (d.char_start, d.char_end) for d in chunk(topics_doc, 0.0)
    ]
