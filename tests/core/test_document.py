from streams.core.document import PAGE_SEPARATOR, assemble, build_stream, pages_for_range
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


def test_pages_for_range_is_half_open() -> None:
    _, page_map = build_stream([(1, "aaaa"), (2, "bbbb")])  # page 1 = [0, 6), page 2 = [6, 12)
    assert pages_for_range(page_map, 0, 6) == [1]
    assert pages_for_range(page_map, 5, 7) == [1, 2]
    assert pages_for_range(page_map, 6, 10) == [2]
    assert pages_for_range(page_map, 6, 6) == [2]
    assert pages_for_range([], 0, 3) == []
