"""Any BERT-family sentence-transformers model: dimensions, word pieces, pooling and normalisation come from
its own files, and its vectors are sentence-transformers' on the same directory.

No second packaged model is on the package index here (gt-* and other names tried), so the second model
is a small BERT of another size written from seeded weights (tests/models.py): its vectors mean nothing,
but they must be the same as sentence-transformers computes from the same files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from streams.embedding.files import ModelSpec, model_spec
from streams.embedding.model import Backend, Embedder, EmbeddingUnavailable, default_model_path
from tests.models import tiny_bert

TEXTS = [
    "The contractor shall install strain gauges on every span of the bridge.",
    "Short.",
    "Quarterly revenue grew on renewals while hardware sales fell again as customers delayed upgrades. " * 6,
]


def test_the_packaged_model_declares_what_minilm_is() -> None:
    assert model_spec(default_model_path()) == ModelSpec(dimension=384, max_pieces=256, pooling="mean", normalize=True)


@pytest.mark.parametrize(("pooling", "normalize"), [("cls", False), ("max", True), ("mean", True)])
def test_another_size_and_pooling_embeds_as_sentence_transformers_does(
    tmp_path: Path, pooling: str, normalize: bool
) -> None:
    st = pytest.importorskip("sentence_transformers")
    path = tiny_bert(tmp_path / "tiny", pooling, normalize)
    spec = model_spec(path)
    assert (spec.dimension, spec.max_pieces, spec.normalize) == (32, 48, normalize)
    assert spec.pooling == pooling

    from streams.embedding.onnx import OnnxSentenceModel

    reference = st.SentenceTransformer(str(path), device="cpu", local_files_only=True).encode(TEXTS)
    ours = OnnxSentenceModel(str(path), tmp_path / "onnx").encode(TEXTS)
    assert ours.shape == reference.shape == (3, 32)
    assert np.abs(ours - reference).max() < 1e-5  # un-normalised too: the same pipeline, the long text cut at 48
    norms = np.linalg.norm(reference, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5) == normalize

    embedder = Embedder(str(path), backend=Backend("onnx", tmp_path / "onnx"))
    assert (embedder.dimension, embedder.max_pieces) == (32, 48)
    vectors = embedder.encode(TEXTS[:2])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)  # the embedder always hands out unit rows
    assert embedder.stats.long == 0 and embedder.count_long(TEXTS) == 1


def test_a_pipeline_it_does_not_compute_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "model"
    shutil.copytree(default_model_path(), path, ignore=shutil.ignore_patterns("onnx", "*.safetensors"))
    modules = json.loads((path / "modules.json").read_text())
    (path / "modules.json").write_text(
        json.dumps([*modules, {"path": "3_Dense", "type": "sentence_transformers.models.Dense"}])
    )
    with pytest.raises(EmbeddingUnavailable, match="module Dense is not supported"):
        model_spec(path)
    (path / "modules.json").write_text(json.dumps(modules))
    flags = json.loads((path / "1_Pooling" / "config.json").read_text())
    (path / "1_Pooling" / "config.json").write_text(json.dumps({**flags, "pooling_mode_cls_token": True}))
    with pytest.raises(EmbeddingUnavailable, match=r"pooling (mean, cls|cls, mean) is not supported"):
        model_spec(path)
