"""letter: a summary names its chunk's subject as a noun phrase, also when the heading it comes from is a clause.

Letters head sections with whole sentences ("Here's the final scorecard for the bet"), quotes and list markers;
spliced after "addresses" such a heading made summaries like "... annual letter addresses here's the final
scorecard for the bet." Every letter here is generated.
"""

from __future__ import annotations

import random
import re
import string

import pytest

from streams.core.chunkers import get_chunker
from streams.core.chunkers.letter import LetterChunker, seed_objects, validate_summary
from streams.core.chunkers.letter.conformance import check_letter
from streams.core.chunkers.letter.summary import Facts, compose, subject
from streams.core.document import assemble
from streams.core.events import PageEvent
from streams.core.records import build_records
from streams.core.tokenizers import get_tokenizer

TOK = get_tokenizer()
VERBS = r"(?:addresses|discusses|turns to|reviews|examines|takes up|reports|tabulates|lay out|covers)"
# A contraction after the frame's verb; a possessive ("examines Berkshire's thinking") is a noun phrase.
CONTRACTION = r"(?:(?:here|there|it|that|what|who|let|we|i|you|they|he|she)['’](?:s|ve|re|ll|d|m)|\w+n['’]t)"
SPLICED = re.compile(rf"\b{VERBS}\s+[\"“‘']?{CONTRACTION}\b", re.I)

CLAUSE_HEADINGS = [
    "Here's the final scorecard for the bet",
    "Here’s what we own",
    "It's a simple business to understand",
    "We've been here before",
    "We’re still buying",
    "There's no free lunch in insurance",
    "Charlie and I were wrong about retail",
    "Let's talk about float",
    "“Here’s the deal”",
    '"It\'s not complicated"',
    "1. Here's the first lesson",
    "- We've kept the float",
    "• It's the railroad again",
]
OPENERS = [
    "Here's the final scorecard for the wager we made with the fund managers a decade ago.",
    "It's a business that anyone can understand, and it earned more than we expected.",
    "We've owned the railroad long enough to know how its volumes swing with the weather.",
    "“Price is what you pay; value is what you get,” a teacher told me long before Berkshire.",
    '"Never lose money" remains the first rule of the house, and the second is to remember it.',
    "1. Insurance float grew because underwriting discipline held through hurricane season.",
    "- Railroad volumes recovered once coal shipments resumed across the western corridors.",
    "• Utility investments funded wind turbines, transmission lines and two gas pipelines.",
]
FILLER = [
    "Our brick subsidiary earned ${n} million in {y}, more than its manager forecast in January.",
    "The candy shop kept its prices firm even as volumes softened through the late autumn.",
    "Charlie and I were pleased with the outcome and expect steadier results from the plant.",
    "The trucking unit reinvested most of what it earned into new rigs and a larger depot.",
    "Float at the insurance companies cost us nothing this year, which is rare and welcome.",
    "The furniture stores in Omaha and Kansas City collected more than they did a decade ago.",
]


def words(text: str) -> list[str]:
    """Lowercased whitespace-separated words, apostrophes unified, punctuation and quotes around them dropped;
    a bullet or dash on its own is no word."""
    edges = string.punctuation.replace("$", "").replace("%", "") + "“”‘’•–—"
    return [w for w in (raw.strip(edges) for raw in text.lower().replace("’", "'").split()) if w]


def copied_run(summary: str, text: str, n: int = 8) -> str | None:
    """The first run of `n` consecutive words of the summary found in the text, if any."""
    source = f" {' '.join(words(text))} "
    sw = words(summary)
    return next(
        (" ".join(sw[i : i + n]) for i in range(len(sw) - n + 1) if f" {' '.join(sw[i : i + n])} " in source),
        None,
    )


def assert_reads_well(summary: str, text: str) -> None:
    assert summary[:1].isupper(), summary
    assert summary.endswith("."), summary
    assert copied_run(summary, text) is None, (summary, copied_run(summary, text))
    assert not SPLICED.search(summary), summary
    assert not re.search(rf"\b{VERBS}\s+[\"“”‘'•\-]|\b{VERBS}\s+\d+[.)]", summary), summary
    assert "\n" not in summary and validate_summary(summary, text) == [], (summary, validate_summary(summary, text))


def paragraph(rng: random.Random, opener: str, n: int = 7) -> str:
    rest = [rng.choice(FILLER).format(n=rng.randint(20, 900), y=rng.randint(1990, 2020)) for _ in range(n)]
    return " ".join([opener, *rest])


# ---- the subject ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("here's the final scorecard for the bet", "the final scorecard for the bet"),
        ("here’s the final scorecard", "the final scorecard"),
        ("there is a catch", "a catch"),
        ("there are two kinds of float", ""),
        ("1. here's the first lesson", "the first lesson"),
        ("“insurance float”", "insurance float"),
        ("- railroad volumes", "railroad volumes"),
        ("• utility investments", "utility investments"),
        ("(a) acquisitions", "acquisitions"),
        ("why we bought the railroad", "why we bought the railroad"),
        ("Berkshire's thinking on float", "Berkshire's thinking on float"),
        ("GEICO’s growth", "GEICO’s growth"),
        ("our principles", "our principles"),
        ("here’s what we own", ""),
        ("it's a simple business", ""),
        ("it’s simple business to understand", ""),
        ("we've been here before", ""),
        ("“here’s the deal”", "the deal"),
        ('"it\'s not complicated"', ""),
        ("- we've kept the float", ""),
        ("charlie and I were wrong", ""),
        ("let's talk about float", ""),
        ("we bought a railroad", ""),
        ("letter to shareholders", ""),
        ("", ""),
        ("“ ”", ""),
    ],
)
def test_subject_is_a_noun_phrase_or_nothing(topic: str, expected: str) -> None:
    assert subject(topic) == expected


# ---- compose on generated chunks ------------------------------------------------------------------------


def facts(key: str, topics: list[str], tier: int = 1, **extra: object) -> Facts:
    kind = "financial_table" if tier == 2 else "narrative"
    return Facts(key=key, year=2017, topics=topics, tier=tier, content_type=kind, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize("tier", [1, 2])
@pytest.mark.parametrize("heading", CLAUSE_HEADINGS)
@pytest.mark.parametrize("opener", OPENERS)
def test_compose_never_splices_a_clause_or_copies_the_chunk(heading: str, opener: str, tier: int) -> None:
    """Section headings reach tier-1 summaries and table names ("Here's the scorecard:") tier-2 ones."""
    rng = random.Random(f"{heading}|{opener}")
    text = f"{heading}\n\n{paragraph(rng, opener)}"
    topic = heading.lower()  # as headings reach the composer: lowered, markers and quotes left on
    rows = 6 if tier == 2 else 0
    for key in ("a", "b", "c", "d", "e"):  # every lead frame comes first for one of these keys
        topics = [topic, "figures on float", "float at Berkshire"]
        summary = compose(facts(key, topics, tier=tier, rows=rows, years=[2015, 2016]), text, set())
        assert_reads_well(summary, text)


def test_compose_names_a_cited_figure_once() -> None:
    text = paragraph(random.Random(3), OPENERS[0])
    summary = compose(facts("k", ["insurance float"], amounts=["$100 million", "$100 million"]), text, set())
    assert summary.count("$100 million") == 1
    assert_reads_well(summary, text)


def test_compose_with_only_clause_subjects_still_reads_well() -> None:
    text = paragraph(random.Random(5), OPENERS[1])
    summary = compose(facts("k", ["it's a simple business", "we've been here before"]), text, set())
    assert_reads_well(summary, text)
    assert "it's" not in summary.lower() and "we've" not in summary.lower()


# ---- whole generated letters ----------------------------------------------------------------------------


def generated_letter(seed: int, style: str) -> str:
    rng = random.Random(seed)
    parts = [f"# Letter to Shareholders {2010 + seed}", paragraph(rng, rng.choice(OPENERS))]
    for heading in rng.sample(CLAUSE_HEADINGS, 6):
        parts.append({"markdown": f"## {heading}", "bold": f"**{heading}**", "plain": heading}[style])
        openers = rng.sample(OPENERS, 2)
        parts += [paragraph(rng, openers[0]), paragraph(rng, openers[1])]
    return "\n\n".join(parts)


@pytest.fixture(scope="module")
def chunker() -> LetterChunker:
    c = get_chunker("letter", tokenizer=TOK)
    assert isinstance(c, LetterChunker)
    return c


@pytest.mark.parametrize("style", ["markdown", "bold", "plain"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_summaries_of_generated_letters_read_well(chunker: LetterChunker, seed: int, style: str) -> None:
    name = f"gen_{2010 + seed}.md"
    doc = assemble(
        [
            PageEvent(
                doc_id=name,
                document_name=name,
                page_number=1,
                page_count=1,
                text=generated_letter(seed, style),
                doc_type="letter",
            )
        ]
    )
    seeds = seed_objects(build_records(doc, chunker, chunker.chunk(doc)))
    assert len(seeds) >= 4
    for s in seeds:
        assert_reads_well(s["metadata"]["contextual_summary"], s["content"])
    assert check_letter(seeds, TOK.count) == []
