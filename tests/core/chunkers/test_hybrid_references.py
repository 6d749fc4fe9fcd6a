"""hybrid: reference lists and prose set with double spaces are text, aligned columns of figures are tables.

Every fixture here is generated: citation styles as PDF extraction leaves them (PubMed/Vancouver fields split
by two spaces or tabs, APA, numbered IEEE-like, Chicago author-date), and tables laid out with spaces or tabs.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from streams.core.chunkers import get_chunker
from streams.core.chunkers.base import ChunkDraft
from streams.core.chunkers.hybrid_blocks import parse_blocks
from streams.core.document import assemble
from streams.core.events import AssembledDocument
from streams.core.records import TABLE_CONTENT_TYPES
from tests.conftest import make_pages

SURNAMES = ["Okafor", "Lindqvist", "Haddad", "Moreau", "Tanaka", "Brennan", "Castillo", "Novak", "Iyer", "O'Neill"]
SUBJECTS = ["Membrane transport", "Kinase signalling", "Ribosome assembly", "Lipid droplet growth", "Granule decay"]
SETTINGS = ["in cultured hepatocytes", "under oxidative stress", "during early development", "in a murine model"]
JOURNALS = [("J Biol Chem", "Journal of Biological Chemistry"), ("Cell Rep", "Cell Reports"), ("PLoS One", "PLoS ONE")]
BODY = (
    "The assay results agree with earlier work on the same pathway. Replicates were run on three separate days "
    "and the spread between them stayed small, so the effect is unlikely to be an artefact of handling."
)


def _authors(rng: random.Random, n: int) -> list[tuple[str, str]]:
    return [(rng.choice(SURNAMES), "".join(rng.sample("ABCDEFGHJKLMNPRST", rng.randint(1, 2)))) for _ in range(n)]


def _title(rng: random.Random) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(SETTINGS)}"


def _pages(rng: random.Random) -> tuple[int, int]:
    first = rng.randint(100, 9000)
    return first, first + rng.randint(3, 20)


def vancouver(rng: random.Random, n: int, gap: str = "  ") -> str:
    authors = ", ".join(f"{s} {i}" for s, i in _authors(rng, rng.randint(1, 6)))
    first, last = _pages(rng)
    year, volume, issue = rng.randint(1990, 2024), rng.randint(1, 300), rng.randint(1, 24)
    fields = [
        f"{authors}.",
        f"{_title(rng)}.",
        f"{rng.choice(JOURNALS)[0]}.",
        f"{year};{volume}({issue}):{first}-{last}.",
    ]
    if rng.random() < 0.3:
        fields.append(f"doi: 10.{rng.randint(1000, 9999)}/jbc.{rng.randint(10000, 99999)}.")
    return gap.join(fields)


def apa(rng: random.Random, n: int) -> str:
    authors = ", ".join(f"{s}, {'. '.join(i)}." for s, i in _authors(rng, rng.randint(1, 3)))
    first, last = _pages(rng)
    return (
        f"{authors}  ({rng.randint(1990, 2024)}).  {_title(rng)}.  {rng.choice(JOURNALS)[1]},  "
        f"{rng.randint(1, 90)}({rng.randint(1, 12)}),  {first}–{last}."
    )


def numbered(rng: random.Random, n: int) -> str:
    authors = ", ".join(f"{i[0]}. {s}" for s, i in _authors(rng, rng.randint(1, 3)))
    first, last = _pages(rng)
    return (
        f"[{n}]  {authors},  “{_title(rng)},”  {rng.choice(JOURNALS)[0]},  vol. {rng.randint(1, 90)},  "
        f"pp. {first}–{last},  {rng.randint(1990, 2024)}."
    )


def chicago(rng: random.Random, n: int) -> str:
    (surname, initials), *_ = _authors(rng, 1)
    first, last = _pages(rng)
    return (
        f"{surname}, {initials}.  {rng.randint(1990, 2024)}.  “{_title(rng)}.”  {rng.choice(JOURNALS)[1]}  "
        f"{rng.randint(1, 90)} ({rng.randint(1, 12)}):  {first}–{last}."
    )


STYLES: dict[str, Callable[[random.Random, int], str]] = {
    "vancouver-spaces": vancouver,
    "vancouver-tabs": lambda rng, n: vancouver(rng, n, gap="\t"),
    "apa": apa,
    "numbered": numbered,
    "chicago": chicago,
}


def document(*parts: str) -> AssembledDocument:
    return assemble(make_pages("paper", ["\n\n".join(parts)]))


def reference_paper(style: str, seed: int, entries: int = 30) -> AssembledDocument:
    rng = random.Random(f"{style}-{seed}")
    refs = "\n".join(STYLES[style](rng, n) for n in range(1, entries + 1))
    return document("# Results", BODY, "## Discussion", BODY, "## References", refs)


def table_like(drafts: list[ChunkDraft]) -> list[ChunkDraft]:
    """Chunks typed as a table anywhere the record shows it."""
    return [
        d
        for d in drafts
        if d.content_type == "table_cell"
        or d.content_type in TABLE_CONTENT_TYPES
        or d.metadata.get("element_type") == "table_cell"
        or any("table" in str(label).lower() for label in d.metadata.get("doc_item_labels", []))
    ]


@pytest.mark.parametrize("max_tokens", [512, 64])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("style", list(STYLES))
def test_reference_lists_in_every_citation_style_are_no_table(style: str, seed: int, max_tokens: int) -> None:
    doc = reference_paper(style, seed)
    assert not [b for b in parse_blocks(doc) if b.kind == "table"]
    drafts = get_chunker("hybrid", max_tokens=max_tokens).chunk(doc)
    assert drafts and table_like(drafts) == []
    assert {d.content_type for d in drafts} <= {"text", "list_item"}


def test_prose_with_two_spaces_after_each_full_stop_is_no_table() -> None:
    rng = random.Random(7)
    lines = [
        f"The plant opened in {rng.randint(1950, 1999)}.  It employs {rng.randint(20, 900)} people.  "
        f"Output rose by {rng.randint(2, 40)}% in {rng.randint(2000, 2024)}."
        for _ in range(6)
    ]
    quoted = "Dr Haddad said the work was “slow but sound.”  Prof. Tanaka agreed.  Both signed the report."
    doc = document("# Site History", "\n".join(lines), quoted + "\n" + quoted)
    assert not [b for b in parse_blocks(doc) if b.kind == "table"]
    assert table_like(get_chunker("hybrid").chunk(doc)) == []


HEADER = ["Region", "Units sold", "Revenue ($m)", "Growth"]


def generated_table(rng: random.Random, rows: int = 6) -> list[list[str]]:
    regions = ["North", "South", "East", "West", "Central", "Coastal", "Highlands", "Islands"]
    body = [
        [region, f"{rng.randint(1000, 99999):,}", f"{rng.uniform(10, 300):.1f}", f"{rng.uniform(-5, 12):.1f}%"]
        for region in regions[:rows]
    ]
    return [HEADER, *body, ["Total", f"{rng.randint(100000, 999999):,}", f"{rng.uniform(300, 900):.1f}", "3.4%"]]


@pytest.mark.parametrize("gap", ["   ", "\t", "  "])
def test_aligned_tables_of_figures_stay_tables(gap: str) -> None:
    rows = generated_table(random.Random(len(gap)))
    table = "\n".join(gap.join(row) for row in rows)
    doc = document("# Sales", "The regions reported the following results for the year.", table, BODY)
    (block,) = [b for b in parse_blocks(doc) if b.kind == "table"]
    assert block.rows == rows
    drafts = get_chunker("hybrid", max_tokens=48).chunk(doc)
    holding = [d for d in drafts if "Central" in d.text]
    assert holding and all(d.content_type == "table_cell" for d in holding)


def test_a_table_after_a_reference_list_is_still_a_table() -> None:
    rng = random.Random(11)
    refs = "\n".join(vancouver(rng, n) for n in range(1, 12))
    rows = generated_table(rng, rows=4)
    table = "\n".join("  ".join(row) for row in rows)
    doc = document("# Appendix", BODY, "## References", refs, "## Supplementary Table", table)
    tables = [b for b in parse_blocks(doc) if b.kind == "table"]
    assert [t.rows for t in tables] == [rows]
    drafts = get_chunker("hybrid", max_tokens=64).chunk(doc)
    assert all(d.content_type != "table_cell" for d in drafts if "J Biol Chem" in d.text or "Cell Rep" in d.text)
    assert any(d.content_type == "table_cell" and "Total" in d.text for d in drafts)


@pytest.mark.parametrize(
    "rows",
    [
        ["Total assets ........  1,234", "Net income  1,200  1,100", "Cash.  4,500", "Provisions  (120)  (98)"],
        ["Holder  Class A  Class B  Total", "Founders  1,200  300  1,500", "Public  8,800  9,700  18,500"],
        ["Item  Description  Qty", "Pump  Replaces the worn unit.  2", "Valve  Spare for the east line.  6"],
    ],
    ids=["label-and-figure", "class-columns", "description-column"],
)
def test_label_and_figure_rows_and_dot_leaders_stay_tables(rows: list[str]) -> None:
    doc = document("# Balance Sheet", BODY, "\n".join(rows))
    (block,) = [b for b in parse_blocks(doc) if b.kind == "table"]
    assert len(block.rows) == len(rows)
