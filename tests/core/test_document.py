import pytest

from streams.core.document import PAGE_SEPARATOR, assemble, build_stream, page_text_ranges, pages_for_range
from streams.core.events import Element
from tests.conftest import make_pages


def test_stream_joins_pages_with_blank_line_and_maps_ranges() -> None:
    text, page_map = build_stream([(2, "second"), (1, "first page"), (3, "")])
    assert text == "first page\n\nsecond\n\n\n\n"
    assert [(p.page_number, p.start_char, p.end_char) for p in page_map] == [
        (1, 0, 12),
        (2, 12, 20),
        (3, 20, 22),
    ]
    for span, body in zip(page_map, ["first page", "second", ""], strict=True):
        assert text[span.start_char : span.end_char] == body + PAGE_SEPARATOR


def test_assemble_orders_pages_and_keeps_elements_page_numbers() -> None:
    pages = make_pages("d", ["one", "two", "three"])
    pages[1] = pages[1].model_copy(update={"elements": [Element(kind="section_header", text="Two")]})
    doc = assemble(list(reversed(pages)))
    assert doc.text.startswith("one\n\ntwo")
    assert doc.elements[0].page_number == 2
    assert doc.page_count == 3


def test_pages_with_the_same_number_keep_the_order_they_came_in() -> None:
    """A page file may repeat a number; the stream sorts by number alone, so such pages stay in file order."""
    text, page_map = build_stream([(2, "z"), (1, "b"), (1, "a")])
    assert text == "b\n\na\n\nz\n\n"
    assert [p.page_number for p in page_map] == [1, 1, 2]


def test_pages_for_range_is_half_open() -> None:
    _, page_map = build_stream([(1, "aaaa"), (2, "bbbb")])  # page 1 = [0, 6), page 2 = [6, 12)
    assert pages_for_range(page_map, 0, 6) == [1]
    assert pages_for_range(page_map, 5, 7) == [1, 2]
    assert pages_for_range(page_map, 6, 10) == [2]
    assert pages_for_range(page_map, 6, 6) == [2]
    assert pages_for_range([], 0, 3) == []


def test_an_empty_range_maps_to_the_page_it_sits_in() -> None:
    _, page_map = build_stream([(1, "aaaa"), (2, "bbbb")])  # page 1 = [0, 6), page 2 = [6, 12)
    assert pages_for_range(page_map, 0, 0) == [1]  # the very start
    assert pages_for_range(page_map, 5, 5) == [1]
    assert pages_for_range(page_map, 12, 12) == [2]  # the very end belongs to the last page
    assert pages_for_range(page_map, 8, 3) == [2]  # a reversed range is read at its start
    assert pages_for_range(page_map, -1, -1) == [1]  # before the stream: the first page, never an error
    assert pages_for_range(page_map, 11, 12) == [2]  # the last separator character is page 2's


def test_page_text_ranges_leave_the_separator_out() -> None:
    _, page_map = build_stream([(1, "aaaa"), (2, "bb"), (3, "")])  # [0, 6), [6, 10), [10, 12)
    assert page_text_ranges(page_map) == [(1, 0, 4), (2, 6, 8), (3, 10, 10)]


def test_assemble_takes_the_document_fields_from_its_first_page_and_merges_metadata() -> None:
    pages = make_pages("doc", ["one", "two"], amendment_number=2, doc_type="solicitation")
    pages[0] = pages[0].model_copy(update={"metadata": {"source": "scan", "lang": "en"}})
    pages[1] = pages[1].model_copy(
        update={
            "metadata": {"lang": "fr"},
            "document_name": "late-name.pdf",
            "elements": [Element(kind="table", page_number=7), Element(kind="section_header")],
        }
    )
    doc = assemble([pages[1], pages[0]], first_page_ms=10, completed_ms=25)
    assert (doc.doc_id, doc.document_name, doc.doc_type, doc.amendment_number, doc.page_count) == (
        "doc",
        "doc.txt",
        "solicitation",
        2,
        2,
    )
    # a later page's value wins; a type the pages give is kept, and the metadata says so
    assert doc.metadata == {"source": "scan", "lang": "fr", "doc_type_source": "given"}
    assert [e.page_number for e in doc.elements] == [7, 2]  # an element's own page kept, a missing one filled
    assert (doc.first_page_ms, doc.completed_ms) == (10, 25)
    assert doc.text == "one\n\ntwo\n\n"
    assert [(p.page_number, p.start_char, p.end_char) for p in doc.page_map] == [(1, 0, 5), (2, 5, 10)]
    defaults = assemble(make_pages("d", ["x"]))
    assert (defaults.first_page_ms, defaults.completed_ms) == (0, 0)


def test_assembling_nothing_is_an_error() -> None:
    with pytest.raises(ValueError) as raised:
        assemble([])
    assert str(raised.value) == "no pages to assemble"
