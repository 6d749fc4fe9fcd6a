"""The ONNX Runtime backend gives the sentence-transformers vectors, exported once per model and machine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streams.core.embedding import Backend, Embedder, EmbeddingUnavailable

TEXTS = [
    "The contractor shall install strain gauges on every span of the bridge.",
    "Short.",
    "Revenue grew nine percent on stronger subscription renewals, led by the enterprise tier, "
    "while hardware sales fell for the third quarter in a row as customers delayed upgrades. " * 8,
]


@pytest.fixture(scope="module")
def export_dir(onnx_dir: Path) -> Path:
    return onnx_dir


def torch_vectors(texts: list[str]) -> np.ndarray:
    """The reference: sentence-transformers on torch, the forward pass the ONNX graph was exported from."""
    torch = Embedder(backend=Backend("torch"))
    vectors = torch.encode(texts)
    assert type(torch.model).__module__.startswith("sentence_transformers"), type(torch.model)
    return vectors


def test_onnx_vectors_match_torch_and_the_graph_is_exported_once(export_dir: Path) -> None:
    reference = torch_vectors(TEXTS)
    onnx = Embedder(backend=Backend("onnx", export_dir))
    vectors = onnx.encode(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == reference.shape
    assert np.abs(vectors - reference).max() < 1e-5  # the long text is truncated at 256 word pieces by both
    from streams.core.onnx_model import model_fingerprint

    model = Path(onnx.model_path)
    graph = export_dir / f"{model.name}-{model_fingerprint(model)}.onnx"  # this run's one export of it
    assert graph.is_file()
    stamp = graph.stat().st_mtime_ns
    again = Embedder(backend=Backend("onnx", export_dir)).encode(TEXTS[:1])
    assert graph.stat().st_mtime_ns == stamp and np.abs(again[0] - vectors[0]).max() < 1e-6
    assert onnx.dimension == 384


def test_int8_is_its_own_model_and_stays_close(export_dir: Path) -> None:
    reference = torch_vectors(TEXTS)
    int8 = Embedder(backend=Backend("onnx-int8", export_dir))
    vectors = int8.encode(TEXTS)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() > 0.8 and np.abs(vectors - reference).max() > 1e-4  # quantised: it moves
    assert int8.model_key != Embedder(backend=Backend("onnx", export_dir)).model_key


def test_an_unknown_backend_is_refused_in_one_line() -> None:
    with pytest.raises(EmbeddingUnavailable, match="unknown embedding backend 'gpu'"):
        Backend("gpu")


def test_onnx_vectors_do_not_depend_on_their_batch(export_dir: Path) -> None:
    onnx = Embedder(backend=Backend("onnx", export_dir))
    together = onnx.encode(TEXTS)
    for row, text in enumerate(TEXTS):
        onnx.clear_cache()
        assert onnx.encode([text])[0].tobytes() == together[row].tobytes()


def test_onnx_vectors_do_not_depend_on_the_thread_count(export_dir: Path) -> None:
    """Workers embed on one thread and the vector sink may use two, and they share vectors through the
    embedding store: a vector must not depend on who embedded it. Batches of one length are split over
    the threads too, so a batch of sixteen is compared as well as single texts and a windowed long one."""
    words = " ".join(f"clause {n} binds the tenant" for n in range(400)).split()
    batch = [" ".join(words[start : start + 40]) for start in range(0, 16 * 40, 40)]  # one length, no padding
    texts = [*TEXTS, *batch, " ".join(words)]  # the last is past 256 word pieces: a mean of windows
    embedder = Embedder(backend=Backend("onnx", export_dir), threads=1)
    assert len(set(embedder.token_lengths(batch))) == 1 and embedder.count_long(texts) == 2
    one = embedder.encode(texts)
    two = Embedder(backend=Backend("onnx", export_dir), threads=2).encode(texts)
    assert one.tobytes() == two.tobytes()
