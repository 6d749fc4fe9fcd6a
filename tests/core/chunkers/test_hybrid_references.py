"""hybrid: reference lists and prose set with double spaces are text, aligned columns of figures are tables.

Every fixture here is generated: citation styles as PDF extraction leaves them (PubMed/Vancouver fields split
by two spaces or tabs, APA, numbered IEEE-like, Chicago author-date, and one reference a line with its fields
split by runs of spaces and trailing identifiers, numbered or not), and tables laid out with spaces or tabs.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest

from streams.core.chunkers import get_chunker
from streams.core.chunkers.base import ChunkDraft
from streams.core.chunkers.hybrid.blocks import parse_blocks
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


JOURNAL_ABBREVIATIONS = ["J Coastal Res", "Estuar Coast Shelf Sci", "Limnol Oceanogr", "Mar Ecol Prog Ser", "Water Res"]


def spaced(rng: random.Random, n: int, marker: str = "") -> str:
    """One reference a line, fields split by runs of three or more spaces as extraction leaves a column
    layout: authors, title, journal, year, volume (issue), pages and a PubMed id or DOI, each field's
    punctuation kept or lost; `marker` numbers it ("{n}.", "[{n}]", "{n}")."""
    names = _authors(rng, rng.randint(1, 6))
    authors = ", ".join(f"{s} {i}" for s, i in names) + (", et al" if len(names) > 3 and rng.random() < 0.3 else "")
    first, last = _pages(rng)
    volume = str(rng.randint(1, 300))
    if rng.random() < 0.6:
        volume += f"({rng.randint(1, 24)})"
    identifier = rng.choice(
        [
            f"PMID: {rng.randint(10_000_000, 39_999_999)}",
            f"PMID {rng.randint(10_000_000, 39_999_999)}",
            f"doi: 10.{rng.randint(1000, 9999)}/jcr.{rng.randint(2000, 2024)}.{rng.randint(100, 9999)}",
            f"10.{rng.randint(1000, 9999)}/{rng.randint(10000, 99999)}",
            f"PMCID: PMC{rng.randint(1_000_000, 9_999_999)}",
        ]
    )
    fields = [
        (authors, "."),
        (_title(rng), "."),
        (rng.choice(JOURNAL_ABBREVIATIONS), "."),
        (str(rng.randint(1990, 2024)), ";"),
        (volume, ":"),
        (f"{first}{rng.choice('-–')}{last}", "."),
    ]
    punctuated = rng.random() < 0.5  # the extraction kept the punctuation, or dropped it with the layout
    parts = [text + (mark if punctuated else "") for text, mark in fields]
    if rng.random() < 0.85:
        parts.append(identifier)
    if marker:
        parts.insert(0, marker.format(n=n))
    return "".join(part + " " * rng.randint(3, 6) for part in parts).rstrip()


STYLES: dict[str, Callable[[random.Random, int], str]] = {
    "vancouver-spaces": vancouver,
    "vancouver-tabs": lambda rng, n: vancouver(rng, n, gap="\t"),
    "apa": apa,
    "numbered": numbered,
    "chicago": chicago,
    "spaced-fields": spaced,
    "spaced-fields-numbered": lambda rng, n: spaced(rng, n, marker=rng.choice(["{n}.", "[{n}]", "{n}"])),
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


def test_the_spaced_field_shape_is_a_required_fixture() -> None:
    """The line-per-reference shape whose fields are split by runs of spaces, trailing identifiers included,
    is one of the styles every reference test runs (numbered and not), and its lines are what it says."""
    assert {"spaced-fields", "spaced-fields-numbered"} <= set(STYLES)
    rng = random.Random(3)
    line = spaced(rng, 4, marker="{n}.")
    assert line.startswith("4.   ") and re.search(r"\S {3,}\S", line)
    doc = reference_paper("spaced-fields", 0, entries=40)
    refs = doc.text.split("## References", 1)[1]
    assert re.search(r"PMID:? \d{8}|10\.\d{4}/", refs) and re.search(r"\d+[-–]\d+", refs)


@pytest.mark.parametrize("marker", ["", "{n}.", "[{n}]", "{n}"])
def test_spaced_reference_lines_are_text_or_list_items(marker: str) -> None:
    """Authors, title, journal, year, volume, pages and a PubMed id split by runs of spaces: a reference a
    line, never a table of cells (with and without the extraction's punctuation)."""
    lines = [
        "Okafor N, Lindqvist P, Marsh T.   Tidal mixing in shallow estuaries.   J Coastal Res.   2019;   35(4):   "
        "812-820.   PMID: 31234567",
        "Okafor N, Lindqvist P, Marsh T   Tidal mixing in shallow estuaries   J Coastal Res   2019   35(4)   "
        "812-820   PMID 31234567",
        "Brennan K   Salt wedge intrusion during low river flow   Water Res   2021   188   116-129   "
        "doi: 10.1016/wr.2021.0042",
        "Iyer S, Novak D   Seasonal stratification of a drowned river valley   Limnol Oceanogr   2015   60(3)   "
        "901–915",
        "Castillo M   Turbidity maxima and the tides   Mar Ecol Prog Ser   2008   12   45-58   10.3354/88012",
    ]
    numbered_lines = [(marker.format(n=n) + "    " if marker else "") + line for n, line in enumerate(lines * 3, 1)]
    doc = document("# Methods", BODY, "## References", "\n".join(numbered_lines))
    assert not [b for b in parse_blocks(doc) if b.kind == "table"]
    for max_tokens in (512, 48):
        drafts = get_chunker("hybrid", max_tokens=max_tokens).chunk(doc)
        assert drafts and table_like(drafts) == []
        assert {d.content_type for d in drafts} <= {"text", "list_item"}


SPACED_TABLES = {
    "label-and-figures": [
        ["Station", "Depth (m)", "Salinity", "Samples"],
        ["North Bar", "12.5", "31.2", "1,204"],
        ["Mid Channel", "8.0", "24.7", "988"],
        ["Upper Reach", "3.5", "6.1", "1,530"],
    ],
    "years-ranges-and-counts": [
        ["Cohort", "Year", "Ages", "Patients", "Share"],
        ["Group A", "2019", "18-24", "120 (45)", "12.5%"],
        ["Group B", "2020", "25-34", "98 (37)", "10.1%"],
        ["Group C", "2021", "35-44", "47 (18)", "4.9%"],
    ],
    "description-year-range": [
        ["Asset", "Work", "Year", "Weeks"],
        ["Pump 4", "Replace the worn seal on the east line", "2019", "10-12"],
        ["Valve 9", "Rebuild the actuator and test it", "2020", "3-5"],
        ["Gate 2", "Paint the frame and renew the bolts", "2021", "22-24"],
    ],
}


@pytest.mark.parametrize("rows", list(SPACED_TABLES.values()), ids=list(SPACED_TABLES))
def test_tables_split_by_runs_of_spaces_stay_tables(rows: list[list[str]]) -> None:
    """A label column and numbers (years, ranges, counts) split by runs of spaces are a table, however
    much of a reference row's vocabulary its cells share."""
    table = "\n".join("   ".join(row) for row in rows)
    doc = document("# Survey", "The stations reported the following values.", table, BODY)
    (block,) = [b for b in parse_blocks(doc) if b.kind == "table"]
    assert block.rows == rows
    drafts = get_chunker("hybrid", max_tokens=48).chunk(doc)
    holding = [d for d in drafts if rows[2][0] in d.text]
    assert holding and all(d.content_type == "table_cell" for d in holding)
