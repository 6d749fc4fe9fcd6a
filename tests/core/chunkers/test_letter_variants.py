"""Strategy `letter` on letters it has never seen: every layout variant of every letter gets chunks (no
refusal) and breaks no rule of seed 000, as judged by an independent checker
(`streams.core.chunkers.letter.conformance`)."""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.core.chunkers import ChunkingError, get_chunker
from streams.core.chunkers.letter import LetterChunker, seed_objects
from streams.core.chunkers.letter.conformance import check_letter
from streams.core.records import build_records
from streams.core.tokenizers import get_tokenizer
from tests.core.chunkers import letter_variants as lv
from tests.core.chunkers.test_letter import ALL, CORPUS, FIXTURES, SENT, doc_of

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpora"
TOK = get_tokenizer()


@pytest.fixture(scope="module")
def chunker() -> LetterChunker:
    c = get_chunker("letter", tokenizer=TOK)
    assert isinstance(c, LetterChunker)
    return c


def _seeds(chunker: LetterChunker, name: str, pages: list[str]) -> list[dict]:
    doc = doc_of(name, pages)
    return seed_objects(build_records(doc, chunker, chunker.chunk(doc)))


def _verdict(chunker: LetterChunker, name: str, text: str) -> tuple[int, Counter[str]]:
    """(chunks, violations by rule); a refusal counts as the rule "refused"."""
    try:
        seeds = _seeds(chunker, name, text.split(lv.PAGE_BREAK))
    except ChunkingError as exc:
        return 0, Counter({f"refused: {exc}": 1})
    return len(seeds), Counter(rule for rule, _cid, _detail in check_letter(seeds, TOK.count))


def _fixture_texts() -> dict[str, str]:
    def pages(name: str) -> list[str]:
        if name == "rawpdf_2009.txt":
            return [(FIXTURES / f"rawpdf_2009_p{i}.txt").read_text() for i in (1, 2, 3)]
        return [(FIXTURES / name).read_text()]

    return {name: lv.PAGE_BREAK.join(pages(name)) for name in ALL}


# ---- the checker can fail ---------------------------------------------------------------------------


def test_the_checker_finds_each_kind_of_violation(chunker):
    seeds = _seeds(
        chunker, "modern_2003.txt", [(Path(__file__).parents[2] / "fixtures/letter/modern_2003.txt").read_text()]
    )
    assert check_letter(seeds, TOK.count) == []
    t1 = [i for i, s in enumerate(seeds) if s["metadata"]["chunk_tier"] == 1]
    assert len(t1) >= 2

    def broken(edit) -> set[str]:
        bad = copy.deepcopy(seeds)
        edit(bad)
        return {rule for rule, _, _ in check_letter(bad, TOK.count)}

    first, second = seeds[t1[0]], seeds[t1[1]]
    copied = " ".join(first["content"].split()[5:15]).capitalize() + "."
    assert "letter 3 summary: copies 8+ words of the source" in broken(
        lambda b: b[t1[0]]["metadata"].update(contextual_summary=copied)
    )
    assert "letter 10 duplicate T1 summary" in broken(
        lambda b: b[t1[1]]["metadata"].update(contextual_summary=first["metadata"]["contextual_summary"])
    )
    assert "letter 3 summary: keyword list" in broken(
        lambda b: b[t1[0]]["metadata"].update(contextual_summary="Insurance, float, GEICO, dividends, taxes.")
    )
    assert "letter 3 summary: mentions document structure" in broken(
        lambda b: b[t1[0]]["metadata"].update(contextual_summary="This section covers the year in insurance.")
    )

    def cut_mid_sentence(b: list[dict]) -> None:
        b[t1[0]]["content"] = first["content"].rstrip().rstrip(".") + " and the owners of the"
        b[t1[0]]["metadata"]["token_count"] = TOK.count(b[t1[0]]["content"])
        b[t1[0]]["metadata"]["char_count"] = len(b[t1[0]]["content"])

    assert "letter 10 mid-sentence break" in broken(cut_mid_sentence)
    assert "letter 10 under 150 tokens" in broken(lambda b: b[t1[1]]["metadata"].update(token_count=90))
    assert "letter 11 contiguous chunk_id" in broken(
        lambda b: b[t1[1]].update(chunk_id=second["chunk_id"][:-3] + "009")
    )
    long_text = " ".join([SENT.format("brick", 1, 1990)] * 60)
    assert "letter 5 tier-1 over 800 tokens" in broken(
        lambda b: (
            b[t1[1]].update(content=long_text)
            or b[t1[1]]["metadata"].update(token_count=TOK.count(long_text), char_count=len(long_text))
        )
    )


# ---- variants of the fixtures (always run) -------------------------------------------------------------


@pytest.mark.parametrize("variant", list(lv.variants(0)))
def test_every_variant_of_every_fixture_letter_is_chunked_within_the_rules(chunker, variant):
    transform = lv.variants(0)[variant]
    for name, text in _fixture_texts().items():
        chunks, problems = _verdict(chunker, name, transform(text))
        assert chunks and not problems, (variant, name, problems)


_PARTS = [
    lv.reflow,
    lv.pipe_tables,
    lv.cell_per_line,
    lv.list_across_pages,
    lv.footnotes,
    lv.straight_quotes,
    lv.curly_quotes,
    lv.markdown_headers,
    lv.dedent,
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(ALL),
    st.lists(st.sampled_from(_PARTS), max_size=4, unique=True),
    st.one_of(st.none(), st.integers(60, 100)),
    st.booleans(),
    st.one_of(st.none(), st.integers(12, 60)),
)
def test_any_mix_of_extraction_quirks_is_chunked_within_the_rules(chunker, name, parts, width, hyphens, every):
    text = _fixture_texts()[name]
    for part in parts:
        text = part(text)
    if width is not None:
        text = lv.rewrap(width, hyphenate=hyphens)(text)
    if every is not None:
        text = lv.page_furniture(every, every)(text)
    chunks, problems = _verdict(chunker, name, text)
    assert chunks and not problems, problems


# ---- what the layout fixes do ---------------------------------------------------------------------------


def _body(n: int) -> str:
    return "\n\n".join("     " + "".join(SENT.format(w, i, 1990 + i) for i in range(6)) for w in ["brick", "candy"] * n)


def test_running_headers_and_footers_are_page_furniture_not_sections(chunker):
    body = _body(5)
    cuts = [0, *(body.index(" the ", k * len(body) // 5) + 5 for k in range(1, 5)), len(body)]  # mid-sentence
    pages = [f"ACME HOLDINGS\n\n{body[a:b]}\n\nAnnual Report {i}" for i, (a, b) in enumerate(itertools.pairwise(cuts))]
    seeds = _seeds(chunker, "acme_2004.txt", pages)
    titles = {s["metadata"]["section_title"] for s in seeds}
    assert not any("ACME" in t or "Annual" in t for t in titles), titles
    assert check_letter(seeds, TOK.count) == []


def test_a_list_broken_across_pages_stays_in_one_chunk(chunker):
    items = [
        "(a) Insurance float grew because underwriting discipline held through hurricane season.",
        "(b) Railroad volumes recovered once coal shipments resumed across western corridors.",
        "(c) Jewelry retailing margins widened after inventory shrinkage declined sharply.",
        "(d) Utility investments funded wind turbines, transmission lines and pipelines.",
        "(e) Candy sales peaked during holidays, although sugar prices squeezed profits.",
        "(f) Furniture showrooms expanded into Texas, where shoppers welcomed bargains.",
    ]
    first = f"{_body(1)}\n\nWe set out six rules:\n\n" + "\n".join(items[:3])
    second = "\n".join(items[3:]) + f"\n\n{_body(1)}"
    seeds = _seeds(chunker, "rules_2005.txt", [first, second])
    holding = [s for s in seeds if items[2] in s["content"]]
    assert holding and items[3] in holding[0]["content"]
    assert check_letter(seeds, TOK.count) == []


# ---- the shared letters, their variants and their PDFs ------------------------------------------------


@pytest.mark.corpus
def test_shared_letters_and_all_their_variants_are_chunked_within_the_rules(chunker):
    if not CORPUS.is_dir():
        pytest.skip("shared corpus absent")
    files = sorted(CORPUS.glob("*.md"))
    transforms = {"as shared": lambda t: t, **lv.variants(0), **{f"{k} (seed 3)": v for k, v in lv.variants(3).items()}}
    failures: dict[str, Counter[str]] = {}
    total = 0
    for variant, transform in transforms.items():
        for path in files:
            chunks, problems = _verdict(chunker, path.name, transform(path.read_text(encoding="utf-8")))
            total += chunks
            if problems:
                failures[f"{variant}/{path.name}"] = problems
    assert total > 10_000 and not failures, failures


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["2008ltr.pdf", "ltr1995.pdf"])
def test_shared_letter_pdfs_through_the_pdf_ingest_path(chunker, name):
    path = SHARED / "pdf" / name
    if not path.is_file():
        pytest.skip("shared corpus absent")
    from streams.core.document import assemble
    from streams.ingest.files import page_events

    doc = assemble(page_events(path))
    seeds = seed_objects(build_records(doc, chunker, chunker.chunk(doc)))
    assert len(seeds) > 20 and check_letter(seeds, TOK.count) == []
