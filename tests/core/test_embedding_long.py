"""Texts longer than the model reads: counted, and embedded truncated or as the mean of windows (real model)."""

from __future__ import annotations

import numpy as np
import pytest

from streams.embedding.model import Embedder
from streams.embedding.stores import get_embedder

SENTENCES = [
    "The harbour authority surveyed the eastern breakwater after the winter storms.",
    "Sourdough starters need a warm kitchen and regular feeding to stay active.",
    "The town council voted to raise the library budget by a modest amount.",
    "Tidal gauges along the estuary recorded unusually high water levels.",
]


@pytest.fixture(scope="module")
def model_path() -> str:
    return get_embedder().model_path


def long_text(words: int) -> str:
    text, i = [], 0
    while len(" ".join(text).split()) < words:
        text.append(SENTENCES[i % len(SENTENCES)].replace("the", f"the {i}th", 1))
        i += 1
    return " ".join(text)


def test_windows_fit_the_model_and_cover_the_text(model_path: str) -> None:
    embedder = Embedder(model_path, long_texts="mean")
    text = long_text(600)
    windows = embedder.windows(text)
    assert len(windows) >= 3
    assert all(n <= embedder.max_pieces for n in embedder.token_lengths(windows))
    assert " ".join(windows).split() == text.split(), "cut at word starts, nothing lost or repeated"
    assert embedder.windows("a short text") == ["a short text"]


def test_mean_and_truncate_differ_only_on_long_texts_and_are_counted(model_path: str) -> None:
    truncate = Embedder(model_path, long_texts="truncate")
    mean = Embedder(model_path, long_texts="mean")
    assert truncate.model_key != mean.model_key, "a shared store never mixes the two"
    short, long = SENTENCES[0], long_text(600)
    a, b = truncate.encode([short, long]), mean.encode([short, long])
    assert np.array_equal(a[0], b[0]), "a text that fits is embedded the same way"
    assert float(a[1] @ b[1]) < 0.999, "the long text's tail now counts"
    assert abs(float(np.linalg.norm(b[1])) - 1.0) < 1e-5
    assert truncate.stats.long == mean.stats.long == 1
    assert truncate.count_long([short, long, long]) == 2
    windows = mean.windows(long)
    parts = mean.encode(windows).astype(np.float64)
    weights = np.asarray(mean.token_lengths(windows), dtype=np.float64)[:, None]
    expected = (parts * weights).sum(axis=0)
    expected /= np.linalg.norm(expected)
    assert np.allclose(b[1], expected, atol=1e-6), "the length-weighted mean of its windows"


def test_truncated_vector_is_what_the_model_reads(model_path: str) -> None:
    """Truncation is the model's own: the long text's vector equals that of its first 254 word pieces."""
    embedder = Embedder(model_path, long_texts="truncate")
    long = long_text(600)
    first = embedder.windows(long)[0]
    vectors = embedder.encode([long, first])
    assert float(vectors[0] @ vectors[1]) > 0.999


def test_long_texts_embedded_together_are_the_same_bytes_as_alone(model_path: str) -> None:
    """A long text's windows are batched by length without padding, so its vector is the same bytes
    whatever else is embedded with it: a chunk's vector never depends on its batch-mates."""
    texts = [long_text(n) for n in (520, 610, 700, 880)]
    together = Embedder(model_path, long_texts="mean", cache_size=0)
    vectors = together.encode(texts)
    assert together.stats.long == 4
    for text, vector in zip(texts, vectors, strict=True):
        alone = Embedder(model_path, long_texts="mean", cache_size=0).encode([text])[0]
        assert np.array_equal(vector, alone)
