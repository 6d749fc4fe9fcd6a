"""The span counter must equal counting the slice, for every span (chunk output depends on it)."""

from __future__ import annotations

import random

from streams.core.tokenizers import get_tokenizer, span_counter

TEXT = (
    "Berkshire’s 1975 results.\n\nOur earnings were $6,713,592, or $6.85 per share. “Fine,” he said.\n"
    "  Indented line—with dashes… and 12345.67 numbers!\nIt's the CEO's view; see (a) and [b]. Next?\tTab.\n"
    "\r\nWindows line\r\nünïcödé Text’s end. Ωmega 日本語 text.\u00a0NBSP \u2028sep x.\n\n\n"
)


def test_every_span_matches_the_slice_count() -> None:
    tokenizer = get_tokenizer()
    count = span_counter(tokenizer, TEXT)
    for start in range(len(TEXT) + 1):
        for end in range(start, len(TEXT) + 1):
            assert count(start, end) == tokenizer.count(TEXT[start:end]), (start, end)


def test_random_spans_of_a_long_text() -> None:
    tokenizer = get_tokenizer()
    text = TEXT * 40
    count = span_counter(tokenizer, text)
    rng = random.Random(8)
    for _ in range(2000):
        start = rng.randrange(len(text))
        end = min(len(text), start + rng.choice([3, 40, 400, 4000]))
        assert count(start, end) == tokenizer.count(text[start:end])
