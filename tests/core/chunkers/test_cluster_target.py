"""`cluster`'s target size: chunks keep near `target_tokens` whatever the text's homogeneity or shape."""

from __future__ import annotations

import random

import numpy as np
import pytest

from streams.bench.variants import plain
from streams.core.chunkers import get_chunker
from streams.core.chunkers.cluster import cut_to_size, join_crumbs
from streams.core.chunkers.semantic import _Group
from streams.core.document import assemble
from streams.core.events import AssembledDocument, PageEvent
from streams.core.text import block_sentence_spans, caseless, sentence_spans
from streams.core.tokenizers import get_tokenizer
from streams.embedding.stores import get_embedder

A, B = np.array([1.0, 0.0]), np.array([0.0, 1.0])


def sized(groups: list[_Group]) -> list[tuple[int, int]]:
    return [(g.first, g.last) for g in groups]


def test_an_oversized_group_is_cut_where_its_neighbouring_sentences_differ() -> None:
    vectors = np.array([A] * 4 + [B] * 7)  # 220 tokens; B's 140 fit under 150
    out = cut_to_size([_Group(0, 10, "end")], vectors, lambda g: 20 * (g.last - g.first + 1), high=150, low=50)
    assert sized(out) == [(0, 3), (4, 10)]
    assert [g.reason for g in out] == ["target_tokens", "end"]


def test_on_homogeneous_sentences_the_cut_is_the_most_even_one_and_repeats_until_each_fits() -> None:
    vectors = np.array([A] * 20)
    out = cut_to_size([_Group(0, 19, "end")], vectors, lambda g: 20 * (g.last - g.first + 1), high=150, low=50)
    assert sized(out) == [(0, 4), (5, 9), (10, 14), (15, 19)]


def test_a_cut_that_would_leave_a_crumb_loses_to_a_less_telling_one() -> None:
    vectors = np.array([A] + [B] * 9)  # the change of subject is one sentence in: a 20-token side
    out = cut_to_size([_Group(0, 9, "end")], vectors, lambda g: 20 * (g.last - g.first + 1), high=150, low=50)
    assert all(20 * (b - a + 1) >= 50 for a, b in sized(out))


def test_a_crumb_joins_its_more_alike_neighbour_within_the_limit() -> None:
    vectors = np.array([A, A, B, B, B])
    groups = [_Group(0, 1, "t"), _Group(2, 2, "t"), _Group(3, 4, "end")]
    tokens = {(0, 1): 100, (2, 2): 20, (3, 4): 100, (0, 2): 120, (2, 4): 120}
    out = join_crumbs(groups, vectors, lambda g: tokens[(g.first, g.last)], low=50, limit=150)
    assert sized(out) == [(0, 1), (2, 4)]
    out = join_crumbs(groups, vectors, lambda g: tokens[(g.first, g.last)], low=50, limit=110)
    assert sized(out) == [(0, 1), (2, 2), (3, 4)]  # fits with neither: stays


def test_sentences_of_lowercased_text_still_end_at_their_stops() -> None:
    text = "the floors are mopped daily. bins are emptied at night. windows are washed in may."
    assert caseless(text) and not caseless("The floors are mopped daily. Bins are emptied.")
    assert len(sentence_spans(text)) == 1  # a capital tells a sentence start: none here
    assert [text[a:b] for a, b in sentence_spans(text, uncased=True)] == [
        "the floors are mopped daily.",
        "bins are emptied at night.",
        "windows are washed in may.",
    ]
    assert len(block_sentence_spans("see no. 4 and e.g. the list. next one.", uncased=True)) == 2


DUTIES = ["mop", "sweep", "vacuum", "polish", "disinfect", "dust", "wipe", "inspect", "scrub", "clean"]
PLACES = ["lobby", "restrooms", "stairwells", "break rooms", "offices", "corridors", "entrances", "elevators"]
WHEN = ["daily", "each evening", "twice a week", "weekly", "before 7 a.m.", "after each event", "monthly"]


def contract(sentences: int, seed: int = 5) -> str:
    """Homogeneous text of the kind the target is for: every sentence a cleaning duty, few breaks."""
    rng = random.Random(seed)
    out = []
    for n in range(sentences):
        duty = (
            f"The Contractor shall {rng.choice(DUTIES)} the {rng.choice(PLACES)} {rng.choice(WHEN)}, "
            f"using approved equipment and products, and shall record the work in the daily log."
        )
        out.append(duty + ("\n\n" if n % 9 == 8 else " "))
    return "".join(out).strip()


def one_page(text: str) -> AssembledDocument:
    return assemble([PageEvent(doc_id="pws", document_name="pws.txt", page_number=1, page_count=1, text=text)])


@pytest.mark.parametrize("shape", ["original", "plain"])
def test_chunks_keep_near_the_target_on_homogeneous_text_in_any_shape(shape: str) -> None:
    text = contract(160)
    if shape == "plain":
        text = plain(text)[0]
    tokenizer, embedder = get_tokenizer(), get_embedder()
    sizes = {}
    for target in (None, 100):
        chunker = get_chunker("cluster", {"target_tokens": target}, tokenizer=tokenizer, embedder=embedder)
        counts = [tokenizer.count(d.text) for d in chunker.chunk(one_page(text))]
        assert max(counts) <= chunker.options.max_tokens
        sizes[target] = sum(counts) / len(counts)
    assert 80 <= sizes[100] <= 120, sizes
    assert sizes[None] > 120, sizes  # without the target this text's homogeneity sets the size


def test_the_default_target_keeps_within_the_bounds_set_and_an_explicit_one_is_checked() -> None:
    from streams.core.chunkers import make_options
    from streams.core.options import OptionsError

    assert make_options("cluster", {}).target_tokens == 100
    assert make_options("cluster", {"max_tokens": 60}).target_tokens == 60
    assert make_options("cluster", {"target_tokens": "none"}).target_tokens is None
    with pytest.raises(OptionsError, match=r"target_tokens \(300\) must not exceed max_tokens \(250\)"):
        make_options("cluster", {"target_tokens": 300})


SUBJECTS = {
    "herons": [
        "The grey heron waded through the reed bed at dawn",
        "A heron speared a small fish in the shallow marsh",
        "Herons built their nests of sticks high in the alder trees",
        "The young herons begged loudly for food from the nest",
        "A heron stood motionless on one leg by the river bank",
        "Birdwatchers counted forty heron nests in the colony",
    ],
    "trains": [
        "The steam locomotive hauled twelve coal wagons up the gradient",
        "Engine drivers checked the boiler pressure before departure",
        "The night express left the central station on time",
        "Railway signals turned green as the freight train approached",
        "The locomotive took on water at the junction tank",
        "Passengers boarded the carriages at the branch line platform",
    ],
    "taxes": [
        "The company filed its quarterly tax return before the deadline",
        "Deferred tax assets rose because of carried forward losses",
        "The auditor reviewed the effective income tax rate",
        "Tax credits for research reduced the amount payable",
        "The filing disclosed uncertain tax positions in two countries",
        "Interest and penalties on late tax payments were accrued",
    ],
    "volcanoes": [
        "Lava flowed from the summit crater of the volcano overnight",
        "Geologists measured sulphur dioxide in the volcanic plume",
        "Ash from the eruption closed the airport for two days",
        "Magma pressure beneath the volcano caused small earthquakes",
        "The lava dome grew several metres in a single week",
        "Villagers were evacuated from the slopes of the volcano",
    ],
}


def subject_blocks(blocks: int = 12, seed: int = 1) -> tuple[str, list[int]]:
    """One paragraph of blocks of five sentences (about 100 tokens), each block on one subject in turn, and
    where each block starts."""
    rng = random.Random(seed)
    names = list(SUBJECTS)
    source = ["record", "report", "log", "note"]
    out: list[str] = []
    for b in range(blocks):
        picked = rng.sample(SUBJECTS[names[b % len(names)]], 5)
        out.append(" ".join(f"{s}, as the {rng.choice(source)} for day {rng.randint(1, 28)} shows." for s in picked))
    starts, at = [], 0
    for block in out:
        starts.append(at)
        at += len(block) + 1
    return " ".join(out), starts


def test_in_one_paragraph_chunks_end_where_the_subject_changes() -> None:
    """Without a line break, blocks and headings tell nothing: the similarities alone must find each change
    of subject (an optimal split over sentences read with their neighbours, measured as an alternative for
    such text, put 8 of 12 chunks across one; docs/benchmarks.md, `cluster` without line breaks)."""
    text, starts = subject_blocks()
    assert "\n" not in text
    chunker = get_chunker("cluster", {}, tokenizer=get_tokenizer(), embedder=get_embedder())
    drafts = chunker.chunk(one_page(text))
    across = [d.text[:40] for d in drafts if any(d.char_start < s < d.char_end - 1 for s in starts)]
    assert len(drafts) == len(starts) and not across, across
