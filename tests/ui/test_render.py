"""Chunk boundaries laid over a text: every character once, overlaps and gaps marked, tables as tables."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streams.core.document import build_stream
from streams.ui.render import Cut, cuts_from_rows, layout, table_rows


def cut(position: int, start: int, end: int, kind: str = "text") -> Cut:
    return Cut(f"c{position}", position, start, end, content_type=kind)


def test_overlap_and_gap_are_their_own_runs() -> None:
    text = "aaaa bbbb cccc dddd"
    pieces = layout(text, [], [cut(0, 0, 9), cut(1, 5, 14)])
    runs = [(p.text, p.css) for p in pieces if p.kind == "text"]
    assert runs == [("aaaa ", "c0"), ("bbbb", "overlap"), (" cccc", "c1"), (" dddd", "gap")]
    assert [p.cut.chunk_id for p in pieces if p.kind == "cut"] == ["c0", "c1"]


def test_page_breaks_are_marked_where_pages_start() -> None:
    text, page_map = build_stream([(1, "one"), (2, "two"), (3, "three")])
    pieces = layout(text, page_map, [cut(0, 0, len(text))])
    assert [p.page for p in pieces if p.kind == "page"] == [1, 2, 3]
    assert "".join(p.text for p in pieces if p.kind == "text") == text


def test_a_table_chunk_is_drawn_as_a_table() -> None:
    table = "| item | qty |\n|---|---|\n| bolts | 40 |\n| cable | 2 |"
    text = "Intro.\n\n" + table + "\n\nAfter."
    start = text.index("|")
    pieces = layout(
        text, [], [cut(0, 0, start), cut(1, start, start + len(table), "table"), cut(2, start + len(table), len(text))]
    )
    tables = [p for p in pieces if p.kind == "table"]
    assert len(tables) == 1 and tables[0].rows == [["item", "qty"], ["bolts", "40"], ["cable", "2"]]
    assert "bolts" not in "".join(p.text for p in pieces if p.kind == "text")


def test_columns_split_by_spaces_read_as_a_table_and_prose_does_not() -> None:
    assert table_rows("Region    2031    2030\nNorth     4,120   3,980\nSouth     2,075   2,310") == [
        ["Region", "2031", "2030"],
        ["North", "4,120", "3,980"],
        ["South", "2,075", "2,310"],
    ]
    assert table_rows("Just a sentence about tables.\nAnd another one.") == []


def test_rows_from_the_store_are_ordered_and_compared_by_hash() -> None:
    rows = [
        {"_id": "b", "position": 1, "char_start": 5, "char_end": 9, "content_hash": "h2", "section_path": ["A", "B"]},
        {"_id": "a", "position": 0, "char_start": 0, "char_end": 5, "content_hash": "h1"},
    ]
    cuts = cuts_from_rows(rows, previous_hashes={"h1"})
    assert [(c.chunk_id, c.state) for c in cuts] == [("a", "kept"), ("b", "changed")]
    assert cuts[1].section == "A › B"


@given(
    st.text(alphabet="ab \n", min_size=1, max_size=200),
    st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200)), max_size=12),
)
def test_every_character_is_drawn_once_in_order(text: str, spans: list[tuple[int, int]]) -> None:
    cuts = [cut(i, min(a, b, len(text)), min(max(a, b), len(text))) for i, (a, b) in enumerate(spans)]
    pieces = layout(text, [], cuts)
    assert "".join(p.text for p in pieces if p.kind == "text") == text
    for p in pieces:
        if p.kind == "text":
            assert {cuts[i].chunk_id for i in p.chunks} == {
                c.chunk_id for c in cuts if c.start <= p.start and p.end <= c.end and c.end > c.start
            }
