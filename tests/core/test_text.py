"""The span helpers every chunker cuts with: each expected span is worked out by hand from the indices in
the comment beside it, so an off-by-one anywhere moves a chunk's offsets and fails here first."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from streams.core.text import (
    MAX_HEADING_LINE,
    block_sentence_spans,
    caseless,
    collapse_whitespace,
    crosses_line_break,
    heading_lines,
    heading_paths,
    inline_headings,
    line_spans,
    markup_heading,
    nearest_heading,
    non_empty_line_spans,
    pack_spans,
    pack_units_exact,
    paragraph_spans,
    path_at,
    running_key,
    sentence_spans,
    split_span_by_tokens,
    trim_span,
    word_spans,
)


def words(text: str) -> int:
    return len(text.split())


def test_running_key_masks_figures_and_case() -> None:
    assert running_key("Page 12 of 40") == "page # of #"
    assert running_key("ANNUAL Report 2024, p.3") == "annual report #, p.#"


@pytest.mark.parametrize(
    ("text", "start", "end", "span"),
    [
        ("  ab \n", 0, 6, (2, 4)),
        ("ab", 0, 2, (0, 2)),
        (" a b ", 1, 4, (1, 4)),  # the bounds given are kept when they are not blank
        ("   ", 0, 3, (3, 3)),  # all blank: collapses to (end, end)
        ("x  y", 1, 3, (3, 3)),
        ("x  y", 2, 2, (2, 2)),
    ],
)
def test_trim_span(text: str, start: int, end: int, span: tuple[int, int]) -> None:
    assert trim_span(text, start, end) == span


def test_line_spans() -> None:
    # a0 \r1 \n2 b3 b4 \n5 \n6 c7: the carriage return and the newlines are outside every line
    assert line_spans("a\r\nbb\n\nc") == [(0, 1), (3, 5), (6, 6), (7, 8)]
    assert line_spans("a\n") == [(0, 1)]  # no empty line after a final newline
    assert line_spans("\r\n") == [(0, 0)]
    assert line_spans("") == []
    # x0 x1 \n2 y3 y4 \n5 z6 z7, read in [3, 7): the last line ends at the bound, not at the text's end
    assert line_spans("xx\nyy\nzz", 3, 7) == [(3, 5), (6, 7)]
    assert line_spans("xx\nyy\nzz\n", 3, 7) == [(3, 5), (6, 7)]  # the newline at 8 is past the bound
    assert line_spans("\nab") == [(0, 0), (1, 3)]  # a newline at 0 is found, not taken for "none"
    assert line_spans("\nx\r") == [(0, 0), (1, 2)]  # an empty first line never looks before the text
    assert line_spans("a\r\nb", 2) == [(2, 2), (3, 4)]  # nor before its start


def test_paragraph_spans() -> None:
    text = "  one\n\n two \n \t\nthree  "
    # ' '0 ' '1 o2 n3 e4 \n5 \n6 ' '7 t8 w9 o10 ' '11 \n12 ' '13 \t14 \n15 t16 h17 r18 e19 e20 ' '21 ' '22
    assert paragraph_spans(text) == [(2, 5), (8, 11), (16, 21)]
    assert paragraph_spans(text, 7) == [(8, 11), (16, 21)]
    assert paragraph_spans(text, 0, 12) == [(2, 5), (8, 11)]
    assert paragraph_spans("a\n\u00a0\nb") == [(0, 1), (4, 5)]  # a line of no-break spaces is blank
    assert paragraph_spans("a\nb") == [(0, 3)]  # one newline does not end a paragraph
    assert paragraph_spans(" \n\n ") == []


def test_sentence_spans() -> None:
    text = "Mr. Smith went home. He left! Did he? Yes."
    # M0 r1 .2 ' '3 S4 ... e18 .19 ' '20 H21 ... t27 !28 ' '29 D30 ... e35 ?36 ' '37 Y38 e39 s40 .41
    assert sentence_spans(text) == [(0, 20), (21, 29), (30, 37), (38, 42)]  # "Mr." is no sentence end
    # In [21, 37) the "?" at 36 cannot see the space after it: the rest is one last sentence.
    assert sentence_spans(text, 21, 37) == [(21, 29), (30, 37)]
    # J0 .1 ' '2 S3 ... e13 .14 ' '15 T16: a single letter and a period is an initial
    assert sentence_spans("J. Smith wrote. Then") == [(0, 15), (16, 20)]
    # H0 ... ' '7 "8 S9 t10 o11 p12 .13 "14 ' '15 T16 ... t27 .28: the closing quote stays with its sentence
    assert sentence_spans('He said "Stop." Then he left.') == [(0, 15), (16, 29)]
    # S0 e1 e2 ' '3 (4 e5 .6 g7 .8 ' '9 T10 ... .23 ' '24 N25: "(e.g." read without its bracket
    assert sentence_spans("See (e.g. Table 1) here. Next") == [(0, 24), (25, 29)]
    assert sentence_spans("It cost 3.5 million. Then") == [(0, 20), (21, 25)]  # a decimal point is not an end
    assert sentence_spans("No end here. lower case next") == [(0, 28)]  # a sentence starts with a capital
    assert sentence_spans("   ") == []


def test_caseless_means_fewer_than_one_capital_in_500_ascii_letters() -> None:
    assert caseless("A" + "b" * 500)  # 1 of 501
    assert not caseless("A" + "b" * 499)  # 1 of 500: not fewer
    assert caseless("just lowercase") and not caseless("") and not caseless("ÀÉÎ 123")  # only ASCII letters count


def test_uncased_sentences_may_start_with_a_lowercase_letter() -> None:
    # o0 n1 e2 .3 ' '4 t5 w6 o7 !8 ' '9 t10 ... e14
    assert sentence_spans("one. two! three", uncased=True) == [(0, 4), (5, 9), (10, 15)]
    assert sentence_spans("one. two! three") == [(0, 15)]
    # a0 b1 ' '2 c3 d4 .5 ' '6 e7 f8 ' '9 g10 h11 .12 \n13 -14 ' '15 i16 j17 .18
    assert sentence_spans("see no. 4 here. next", uncased=True) == [(0, 15), (16, 20)]  # "no." abbreviates
    assert block_sentence_spans("ab cd. ef gh.\n- ij.", uncased=True) == [(0, 6), (7, 13), (14, 19)]
    assert block_sentence_spans("ab cd. ef gh.\n- ij.") == [(0, 13), (14, 19)]


def test_word_spans() -> None:
    assert word_spans("ab  cd\n") == [(0, 2), (4, 6)]
    assert word_spans("aa bb cc", 3, 8) == [(3, 5), (6, 8)]
    assert word_spans("aa bb cc", 0, 5) == [(0, 2), (3, 5)]
    assert word_spans("x" * 200) == [(0, 200)]  # exactly 200 characters: one piece
    assert word_spans("x" * 201) == [(0, 200), (200, 201)]
    assert word_spans("x" * 450) == [(0, 200), (200, 400), (400, 450)]
    assert word_spans("a " + "y" * 201, 2) == [(2, 202), (202, 203)]


def test_non_empty_line_spans() -> None:
    # ' '0 ' '1 a2 ' '3 \n4 \n5 ' '6 b7 \n8 ' '9 ' '10 ' '11 \n12 c13
    assert non_empty_line_spans("  a \n\n b\n   \nc") == [(2, 3), (7, 8), (13, 14)]
    assert non_empty_line_spans("  a \n\n b\n   \nc", 5, 12) == [(7, 8)]
    assert non_empty_line_spans("ab\ncd") == [(0, 2), (3, 5)]


# --- packing ------------------------------------------------------------------------------------------

PACK = "a b. c d e. f."  # a0 ' '1 b2 .3 ' '4 c5 ' '6 d7 ' '8 e9 .10 ' '11 f12 .13
PACK_UNITS = [(0, 4), (5, 11), (12, 14)]  # 2, 3 and 1 words


def test_pack_spans_fills_chunks_up_to_the_maximum() -> None:
    # 2 + 3 = 5 fits; the third unit would make 6, and 5 >= min: the chunk closes before it
    assert pack_spans(PACK, PACK_UNITS, words, 1, 5) == [(0, 11), (12, 14)]
    assert pack_spans(PACK, [*PACK_UNITS, (14, 14)], words, 1, 5) == [(0, 11), (12, 14)]  # empty units dropped
    assert pack_spans(PACK, PACK_UNITS, words, 1, 6) == [(0, 14)]
    assert pack_spans(PACK, [], words, 1, 5) == []
    assert pack_spans(PACK, [(5, 5)], words, 1, 5) == []  # an empty unit is no chunk
    # min 2: "a b." (2) is long enough to close when "c d e." does not fit, so nothing is split
    assert pack_spans(PACK, PACK_UNITS, words, 2, 4) == [(0, 4), (5, 14)]


def test_pack_spans_keeps_a_unit_of_exactly_the_maximum_whole() -> None:
    """A count with a cost per chunk (words + 1) is not additive: "a b" costs 3, "a" and " b" 2 each. At a
    maximum of 3 the unit fits whole; split into words it would make two chunks."""
    assert pack_spans("a b", [(0, 3)], lambda text: words(text) + 1, 1, 3) == [(0, 3)]


def test_pack_spans_splits_a_unit_to_fill_a_short_chunk() -> None:
    # max 4, min 3: "a b." (2) is short and "c d e." (3) does not fit, so it is split into words: "c" and
    # "d" join (4), "e." opens the next chunk, and "f." joins it (2).
    assert pack_spans(PACK, PACK_UNITS, words, 3, 4) == [(0, 8), (9, 14)]


def test_pack_spans_lets_an_unsplittable_unit_stand_alone() -> None:
    text = "ab abcdef"  # one "word" of 6 characters, counted in characters, over a maximum of 3
    assert pack_spans(text, [(0, 2), (3, 9)], len, 1, 3) == [(0, 2), (3, 9)]  # "ab" was long enough: closed
    assert pack_spans(text, [(0, 2), (3, 9)], len, 3, 3) == [(0, 2), (3, 9)]  # too short, but closed all the same
    assert pack_spans("abcdef", [(0, 6)], len, 1, 3) == [(0, 6)]
    # after a unit that stood alone, the next one opens a fresh chunk: "gh" at 7, 2 characters
    assert pack_spans("abcdef gh", [(0, 6), (7, 9)], len, 1, 3) == [(0, 6), (7, 9)]
    # the unit stands alone as it was given, blanks and all, not as the one (trimmed) piece a splitter saw
    assert pack_spans("abcdef  ", [(0, 8)], len, 1, 3) == [(0, 8)]


def test_pack_spans_tries_the_splitters_in_order_from_the_units_level() -> None:
    calls: list[str] = []

    def halves(text: str, s: int, e: int) -> list[tuple[int, int]]:
        calls.append(f"halves {s}:{e}")
        middle = (s + e) // 2
        return [(s, middle), (middle, e)] if e - s > 1 else [(s, e)]

    def nothing(text: str, s: int, e: int) -> list[tuple[int, int]]:
        calls.append(f"nothing {s}:{e}")
        return [(s, e)]

    # 8 characters, at most 2 a chunk. "nothing" gives one piece, so the first halving (splitter 1) splits;
    # its halves are at level 2 and only splitter 2 may split them again, into quarters at level 3.
    chunks = pack_spans("abcdefgh", [(0, 8)], len, 2, 2, splitters=(nothing, halves, halves))
    assert chunks == [(0, 2), (2, 4), (4, 6), (6, 8)]
    assert calls == ["nothing 0:8", "halves 0:8", "halves 0:4", "halves 4:8"]
    calls.clear()
    # With two splitters the halves have nothing left to try: each stands alone, over the maximum.
    assert pack_spans("abcdefgh", [(0, 8)], len, 2, 2, splitters=(nothing, halves)) == [(0, 4), (4, 8)]
    assert calls == ["nothing 0:8", "halves 0:8"]


def test_pack_spans_counts_through_span_count_when_given() -> None:
    seen: list[tuple[int, int]] = []

    def span_count(start: int, end: int) -> int:
        seen.append((start, end))
        return words(PACK[start:end])

    assert pack_spans(PACK, PACK_UNITS, words, 1, 5, span_count=span_count) == [(0, 11), (12, 14)]
    assert seen[:3] == [(0, 4), (4, 11), (11, 14)]  # each unit counted from the previous unit's end


def test_pack_units_exact_adds_one_token_per_join_and_checks_the_real_count() -> None:
    text = "aa bb cc dd"  # units at 0, 3, 6, 9
    units = [(0, 2), (3, 5), (6, 8), (9, 11)]

    def count_range(start: int, end: int) -> int:
        return words(text[start:end])

    # 1, then 1 + 1 + the join = 3 <= 3; a third would make 5
    assert pack_units_exact(units, [1, 1, 1, 1], 3, count_range) == [[0, 1], [2, 3]]
    assert pack_units_exact(units[:2], [2, 1], 3, count_range) == [[0], [1]]  # 2 + 1 + the join = 4 > 3
    assert pack_units_exact(units[:2], [1, 1], 4, count_range) == [[0, 1]]
    # The estimate groups 0-2 (1 + 2 + 2 = 5); the real count (characters here) of "aa bb cc" is 8 > 5 and of
    # "aa bb" 5: the group shrinks to two, and 2 starts the next.
    assert pack_units_exact(units, [1, 1, 1, 1], 5, lambda s, e: e - s) == [[0, 1], [2], [3]]
    assert pack_units_exact(units[:2], [1, 1], 5, lambda s, e: e - s + (2 if e > 2 else 0)) == [[0], [1]]
    assert pack_units_exact([], [], 3, count_range) == []
    # 1, then 1 + 1 + the join = 3, then 3 + 1 + the join = 5 > 4: the join is counted from the second unit on
    assert pack_units_exact(units[:3], [1, 1, 1], 4, count_range) == [[0, 1], [2]]


def test_pack_units_exact_leaves_a_single_unit_over_the_maximum_alone() -> None:
    """One unit is its own group whatever its real count (the caller splits it beforehand): the count is
    never even asked for, so it cannot shrink the group to nothing."""
    calls: list[tuple[int, int]] = []

    def count_range(start: int, end: int) -> int:
        calls.append((start, end))
        assert len(calls) < 10, "asked again and again for the same range"
        return end - start

    assert pack_units_exact([(0, 11)], [9], 3, count_range) == [[0]]
    assert calls == []


# --- whitespace, blocks, lines ----------------------------------------------------------------------


def test_collapse_whitespace_keeps_lines_and_at_most_one_blank_line() -> None:
    assert collapse_whitespace(" a  b \r\n\n\n  c\t d \n\n") == "a b\n\nc d"
    assert collapse_whitespace("\n\n x") == "x"
    assert collapse_whitespace("a\n \nb") == "a\n\nb"
    assert collapse_whitespace("Total\rRevenue\r\n12") == "Total Revenue\n12"  # a lone CR parts two words


def test_block_sentence_spans_never_cross_a_list_item_or_a_heading() -> None:
    text = "Ab cd. Ef gh.\n- Ij kl.\n## Mn\nOp qr."
    # A0 b1 ' '2 c3 d4 .5 ' '6 E7 f8 ' '9 g10 h11 .12 \n13 -14 ' '15 I16 j17 ' '18 k19 l20 .21 \n22 #23 #24
    # ' '25 M26 n27 \n28 O29 p30 ' '31 q32 r33 .34: blocks open at 13 and 22
    assert block_sentence_spans(text) == [(0, 6), (7, 13), (14, 22), (23, 35)]
    table = "Ab cd.\n| x | y |\n1) One.\n= Te ="  # A0 ... .5 \n6 |7 ... |15 \n16 1 17 ... .23 \n24 =25 ... =30
    assert block_sentence_spans(table) == [(0, 6), (7, 16), (17, 24), (25, 31)]
    assert block_sentence_spans("Ab cd. Ef gh.\n\nIj kl.") == [(0, 6), (7, 13), (15, 21)]
    assert block_sentence_spans("Ab cd. Ef gh.\n\nIj kl.", 15) == [(15, 21)]
    assert block_sentence_spans("Ab cd. Ef gh.\n\nIj kl.", 0, 13) == [(0, 6), (7, 13)]


def test_crosses_line_break() -> None:
    assert crosses_line_break("a b\nc", (0, 1), (4, 5)) is True
    assert crosses_line_break("a b\nc", (0, 1), (2, 3)) is False  # the newline comes after the right span


# --- hard splits by tokens ----------------------------------------------------------------------------


def tokens_by(pattern: str) -> tuple[Callable[[str], list[int]], Callable[[list[int]], tuple[str, list[int]]]]:
    """A stand-in tokenizer: each regex match is one token; offsets are where each token starts."""
    pieces: list[str] = []

    def encode(text: str) -> list[int]:
        pieces[:] = re.findall(pattern, text)
        assert "".join(pieces) == text
        return list(range(len(pieces)))

    def decode_with_offsets(ids: list[int]) -> tuple[str, list[int]]:
        offsets, at = [], 0
        for i in ids:
            offsets.append(at)
            at += len(pieces[i])
        return "".join(pieces[i] for i in ids), offsets

    return encode, decode_with_offsets


SPACE_LED = r"\s*\S+"  # "aa", " bb", " cc": a token carries the space before it, as cl100k's do
SPACE_LED_OR_MARK = r"\s?[a-z]+|[^a-z\s]"


def test_split_span_by_tokens_cuts_before_a_space() -> None:
    text = "aa bb cc dd ee"  # tokens at 0, 2, 5, 8, 11
    assert split_span_by_tokens(text, (0, 14), 2, *tokens_by(SPACE_LED)) == [(0, 5), (6, 11), (12, 14)]
    assert split_span_by_tokens(text, (0, 14), 5, *tokens_by(SPACE_LED)) == [(0, 14)]
    assert split_span_by_tokens(" aa ", (0, 4), 1, *tokens_by(r"\s*\S+\s*")) == [(0, 4)]  # fits: untouched
    # the span starts at 3: "aa"(3) " bb"(5) " cc"(8)
    assert split_span_by_tokens("xx aa bb cc", (3, 11), 2, *tokens_by(SPACE_LED)) == [(3, 8), (9, 11)]


def test_split_span_by_tokens_cuts_in_the_second_half_of_the_window_only() -> None:
    text = "aa bb-cc-dd-ee"  # "aa"0 " bb"2 "-"5 "cc"6 "-"8 "dd"9 "-"11 "ee"12
    # With 4 tokens a piece the cut is at token 3 or 4: no space there, so at the hyphen (token 4, offset 8),
    # not at the space of token 1, which is in the first half.
    assert split_span_by_tokens(text, (0, 14), 4, *tokens_by(SPACE_LED_OR_MARK)) == [(0, 8), (8, 14)]


def test_split_span_by_tokens_prefers_a_space_to_a_mark() -> None:
    text = "aa bb cc dd-ee"  # "aa"0 " bb"2 " cc"5 " dd"8 "-"11 "ee"12
    # Token 4 (the hyphen) is between words, token 3 starts with a space: the space wins.
    assert split_span_by_tokens(text, (0, 14), 4, *tokens_by(SPACE_LED_OR_MARK)) == [(0, 8), (9, 14)]


def test_split_span_by_tokens_counts_a_space_before_the_boundary() -> None:
    # Tokens that carry the space after them: "aa "0 "bb "3 "cc "6 "dd"9 "-"11 "ee"12. With 4 tokens a piece
    # the window is tokens 3 and 4: the hyphen's boundary (11) is between "d" and "-", token 3's (9) has a
    # space before it, and a space wins.
    encode, decode = tokens_by(r"[a-z]+ ?|[^a-z ]")
    assert split_span_by_tokens("aa bb cc dd-ee", (0, 14), 4, encode, decode) == [(0, 8), (9, 14)]
    # "aa "0 "bb "3 "cc "6 "dd"9, two a piece: the character before token 2 is a space
    assert split_span_by_tokens("aa bb cc dd", (0, 11), 2, *tokens_by(r"[a-z]+ ?")) == [(0, 5), (6, 11)]


def test_split_span_by_tokens_cuts_between_a_mark_and_a_word() -> None:
    # At most two letters a token: "aa"2 " bb"4 "-"7 "cc"8 "cc"10 " ee"12 inside the span [2, 15). With 4 tokens
    # a piece the window is tokens 3 and 4: no space at either; token 4 (10) is inside "cccc", token 3 (8)
    # is between "-" and "c": the cut goes there.
    assert split_span_by_tokens("x aa bb-cccc ee", (2, 15), 4, *tokens_by(r"\s?[a-z]{1,2}|[^a-z\s]")) == [
        (2, 8),
        (8, 15),
    ]


def test_split_span_by_tokens_looks_back_over_half_the_window() -> None:
    # "aa"0 "bb"2 " cc"4 "cc"7 "cc"9: the only space starts token 2
    encode, decode = tokens_by(r"\s?[a-z]{1,2}")
    # 3 a piece: the window is tokens 2 and 3 (after index + 3 // 2 = 1), so the cut is at the space
    assert split_span_by_tokens("aabb cccccc", (0, 11), 3, encode, decode) == [(0, 4), (5, 11)]
    # 4 a piece: tokens 3 and 4 only (after 0 + 2); the space at token 2 is too far back, so the full window
    assert split_span_by_tokens("aabb cccccc", (0, 11), 4, encode, decode) == [(0, 9), (9, 11)]


def test_split_span_by_tokens_cuts_a_blob_where_the_window_ends() -> None:
    text = "abcdefgh"  # "ab" "cd" "ef" "gh": no space, no mark: cut after max_tokens tokens
    assert split_span_by_tokens(text, (0, 8), 2, *tokens_by(r"..")) == [(0, 4), (4, 8)]
    assert split_span_by_tokens(text, (0, 8), 3, *tokens_by(r"..")) == [(0, 6), (6, 8)]


# --- headings -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("## Results ##", (2, "Results")),
        ("  ### Deep  ", (3, "Deep")),
        ("###### Six", (6, "Six")),
        ("####### Seven", None),
        ("#NoSpace", None),
        ("# ---", None),  # no letter or digit: a rule, not a title
        ("== Wiki ==", (2, "Wiki")),
        ("= = Title = =", (2, "Title")),
        ("=== Sub ===", (3, "Sub")),
        ("Plain line", None),
    ],
)
def test_markup_heading(line: str, heading: tuple[int, str] | None) -> None:
    assert markup_heading(line) == heading


def test_heading_lines_finds_markup_and_short_opening_lines() -> None:
    text = (
        "# Title\n"  # 0: markup
        "Body line here.\n"  # 8: does not open a paragraph
        "\n"
        "Short Caption Line\n"  # 25: opens a paragraph, 3 words, no final stop
        "more text follows here.\n"
        "\n"
        "A sentence that ends.\n"  # ends like a sentence
        "\n"
        "x\n"  # one word
        "\n"
        "12 34\n"  # no letter
        "\n"
        "one two three four five six seven eight nine ten eleven twelve\n"  # 12 words: still a title
        "\n"
        "one two three four five six seven eight nine ten eleven twelve thirteen\n"  # 13: too long
        "\n"
        "Ends with, comma,\n"
        "\n"
        "Ends: colon:\n"
        "\n"
        "Ends; semi;\n"
        "\n"
        "== Wiki ==\n"
    )
    twelve = text.index("one two three four five six seven eight nine ten eleven twelve\n")
    assert heading_lines(text) == [
        (0, "Title"),
        (25, "Short Caption Line"),
        (twelve, "one two three four five six seven eight nine ten eleven twelve"),
        (text.index("== Wiki =="), "Wiki"),
    ]
    assert heading_lines("Two words\nnext") == [(0, "Two words")]  # the first line opens the text
    assert heading_lines("\n\nTwo words") == [(2, "Two words")]  # so do two newlines at the very start


HEADED = "# Doc\nintro\n## A\naaa\n## B\nbbb\n# Other\nccc\n"
# "# Doc" 0, "## A" 12, "## B" 21, "# Other" 30, length 42: Doc covers [0, 30), A [12, 21), B [21, 30), Other [30, 42)


def test_heading_paths_open_and_close_sections_by_level() -> None:
    assert heading_paths(HEADED) == [
        (0, ("Doc",)),
        (12, ("Doc", "A")),
        (21, ("Doc", "B")),  # a heading of the same level closes the one before
        (30, ("Other",)),
    ]
    # At half the text, Doc (30 of 42 characters) covers too much to tell its chunks apart: left out.
    assert heading_paths(HEADED, share=0.5) == [(0, ()), (12, ("A",)), (21, ("B",)), (30, ("Other",))]
    # "# Doc" over 32 of 40 characters: exactly 0.8 of the text is still kept.
    exact = "# Doc\n" + "a" * 25 + "\n" + "# End\nb\n"
    assert len(exact) == 40 and heading_paths(exact) == [(0, ("Doc",)), (32, ("End",))]
    assert heading_paths("no headings\n") == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Done. == Notes == More text.", [(6, 2, "Notes")]),
        ("It ended . = = Early life = = He was born.", [(11, 2, "Early life")]),
        ("= Alder Pier = The pier was rebuilt.", [(0, 1, "Alder Pier")]),
        # after another heading's marks: a section's first subsection
        ("= = Works = = = = = Books = = = Listed.", [(0, 2, "Works"), (14, 3, "Books")]),
        ("Set x = y = z and go.", []),  # one mark inside running text: an equation, not a title
        ("So a == b == c holds.", [(5, 2, "b")]),  # two marks anywhere: MediaWiki's own
        ("Then. == ... == next", []),  # no letter or digit
        ("Then. == Open but never closed", []),
        ("Then. == Mismatched === next", []),
        # Markdown's marks inside a line: the title is the run of words without a lowercase letter
        ("Dated 08/01/2005 ## SCOPE OF WORK C.1 The contractor", [(17, 2, "SCOPE OF WORK C.1")]),
        ("Signed. # PART II Terms apply.", [(8, 1, "PART II")]),
        ("# NOTICE Read this.", [(0, 1, "NOTICE")]),
        ("See item # A1 below.", []),  # one mark inside running text: a number sign, not a title
        ("Done. ## Scope of work follows.", []),  # a mixed-case title has no end to find
        ("Done. ## 2019 results", []),  # no capital letter
        ("C# and F# ## NOTES here", [(10, 2, "NOTES")]),  # a mark glued to a word is no heading
    ],
)
def test_inline_headings_find_wiki_marks_inside_a_line(text: str, found: list[tuple[int, int, str]]) -> None:
    assert inline_headings(text) == found


def test_heading_paths_are_the_same_with_line_breaks_collapsed() -> None:
    body = "The span was rebuilt in steel after the flood of that year."
    lines = "".join(f" = {name} = \n {body}\n = = History = = \n {body}\n" for name in ("Alder Pier", "Birch Bridge"))
    collapsed = " ".join(lines.split())
    assert (
        [p for _, p in heading_paths(collapsed)]
        == [p for _, p in heading_paths(lines)]
        == [
            ("Alder Pier",),
            ("Alder Pier", "History"),
            ("Birch Bridge",),
            ("Birch Bridge", "History"),
        ]
    )
    # a heading on its own line is found once, by its line
    assert heading_paths("Intro. == Notes == here.\n== Notes ==\nmore\n") == [(7, ("Notes",)), (25, ("Notes",))]


def test_markdown_heading_paths_survive_collapsed_line_breaks() -> None:
    """A contract converted to Markdown and pasted as one paragraph keeps the sections' paths, in capitals;
    the line it became opens with `#` but is no heading line: its title would be the whole document."""
    body = "The contractor shall keep the grounds clean and report damage within one working day."
    lines = f"# SERVICES CONTRACT\n\n## SCOPE OF WORK\n\n{body}\n\n### C.1 GROUNDS\n\n{body}\n\n## PRICING\n\n{body}\n"
    collapsed = " ".join(lines.split())
    assert len(collapsed) > MAX_HEADING_LINE
    expected = [(), ("SCOPE OF WORK",), ("SCOPE OF WORK", "C.1 GROUNDS"), ("PRICING",)]
    assert [p for _, p in heading_paths(lines)] == [p for _, p in heading_paths(collapsed)] == expected
    assert heading_paths(collapsed)[1][0] == collapsed.index("## SCOPE")
    # the same line shorter than the limit is a heading line, as Markdown reads it, and nothing inside it counts
    assert heading_paths("# TITLE ## PART A text") == [(0, ())]  # one heading, over the whole text


def test_path_at_and_nearest_heading_read_the_last_one_at_or_before() -> None:
    paths = heading_paths(HEADED)
    assert [path_at(paths, p) for p in (0, 11, 12, 29, 30, 41)] == [
        ("Doc",),
        ("Doc",),
        ("Doc", "A"),
        ("Doc", "B"),
        ("Other",),
        ("Other",),
    ]
    assert path_at([(5, ("X",))], 4) == () and path_at([(5, ("X",))], 5) == ("X",) and path_at([], 3) == ()
    assert path_at([(5, ("Zeta",))], 5) == ("Zeta",)  # whatever the title sorts like
    headings = [(0, "Title"), (25, "Caption")]
    assert [nearest_heading(headings, p) for p in (0, 24, 25, 90)] == ["Title", "Title", "Caption", "Caption"]
    assert nearest_heading([(3, "T")], 2) == "" and nearest_heading([], 0) == ""
    assert nearest_heading([(5, "Zeta")], 5) == "Zeta"
