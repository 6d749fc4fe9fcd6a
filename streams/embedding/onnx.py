"""The sentence model on ONNX Runtime: the same vectors as sentence-transformers up to float rounding, less CPU.

The graph is written from the packaged weights on first use (streams.embedding.graph: no torch, about a
second) into `export_dir`, once per model fingerprint; concurrent processes serialise on a lock file and
the graph appears by an atomic rename, so nobody loads a half-written file. `onnx-int8` is the same graph
with its dense products in int8 (per-channel weights, a scale per token, each channel's range balanced
between activation and weight on the calibration texts): faster, its vectors move a little and do not
depend on their batch, and it has its own cache identity (figures for both: docs/benchmarks.md, Embedding).
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from streams.embedding.files import ModelSpec, model_fingerprint, model_spec
from streams.embedding.graph import GRAPH, INT8, UnknownModel, bert_graph, calibrate


def export(model_path: Path, export_dir: Path, quantized: bool) -> Path:
    """The graph for this model, built under a lock if it is not there yet."""
    export_dir.mkdir(parents=True, exist_ok=True)
    reduce_range = quantized and not has_vnni()
    suffix = (f"-int8-{INT8}" + ("-r7" if reduce_range else "")) if quantized else ""
    target = export_dir / f"{model_path.name}-{model_fingerprint(model_path)}-{GRAPH}{suffix}.onnx"
    if target.is_file():
        return target
    with open(export_dir / ".export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_file():  # another process may have built it while we waited
            _build(model_path, target, quantized, reduce_range)
    return target


def has_vnni() -> bool:
    """Whether this CPU has VNNI (int8 dot products without the 16-bit overflow of older AVX2 kernels)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


def _build(model_path: Path, target: Path, int8: bool = False, reduce_range: bool = False) -> None:
    """The graph written from config.json and model.safetensors (streams.embedding.graph): no torch."""
    import json

    from safetensors.numpy import load_file

    weights = model_path / "model.safetensors"
    if not weights.is_file():
        raise UnknownModel(f"no model.safetensors in {model_path}: the graph is built from it")
    config = json.loads((model_path / "config.json").read_text())
    tensors = load_file(str(weights))
    activations = _activations(model_path, config, tensors) if int8 else None
    model = bert_graph(config, tensors, int8=int8, reduce_range=reduce_range, activations=activations)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        staged = Path(tmp) / target.name
        staged.write_bytes(model.SerializeToString())
        os.replace(staged, target)


#: The texts whose activations set the int8 graph's per-channel balance: sentences and passages of the
#: project's own sample documents, one a line.
CALIBRATION = Path(__file__).with_name("calibration.txt")


def word_pieces(model_path: Path) -> tuple[Any, int]:
    """The model's word-piece tokenizer, unpadded and cut at the most pieces the model reads, and that most."""
    from tokenizers import Tokenizer

    most = model_spec(model_path).max_pieces
    tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    tokenizer.no_padding()  # the packaged file pads every text to 128 tokens
    tokenizer.enable_truncation(most)
    return tokenizer, most


def _activations(model_path: Path, config: dict[str, Any], tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each product's largest input per channel on the calibration texts, from the fp32 graph on one thread."""
    import onnxruntime as ort

    tokenizer, _ = word_pieces(model_path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    exposed = bert_graph(config, tensors, expose=True)
    session = ort.InferenceSession(exposed.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    feeds = []
    for text in CALIBRATION.read_text(encoding="utf-8").splitlines():
        ids = np.array([tokenizer.encode(text).ids], np.int64)
        feeds.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
    return calibrate(lambda feed: dict(zip(names, session.run(names, feed), strict=True)), feeds)


log = logging.getLogger(__name__)
CUDA, CPU = "CUDAExecutionProvider", "CPUExecutionProvider"


def available_providers() -> list[str]:
    import onnxruntime as ort

    return list(ort.get_available_providers())


def execution_providers(device: str, available: Sequence[str]) -> tuple[list[str], str]:
    """The providers to ask ONNX Runtime for, and why the CPU when CUDA was asked for ("" otherwise):
    CUDA first where onnxruntime-gpu offers it and the device is "auto" or "cuda", else the CPU."""
    if device != "cpu" and CUDA in available:
        return [CUDA, CPU], ""
    if device == "cuda":
        return [CPU], "STREAMS_EMBED_DEVICE=cuda but ONNX Runtime offers no CUDA here (onnxruntime-gpu not installed)"
    return [CPU], ""


def pool(hidden: np.ndarray, mask: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """Token states to sentence vectors as sentence-transformers' Pooling and Normalize modules compute
    them, in the mode the model's files name (`ModelSpec`)."""
    weights = mask[..., None].astype(np.float32)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    if spec.pooling == "cls":
        pooled = hidden[:, 0]
    elif spec.pooling == "max":
        pooled = np.where(weights > 0, hidden, np.float32(-1e9)).max(axis=1)
    else:
        pooled = (hidden * weights).sum(axis=1) / (counts if spec.pooling == "mean" else np.sqrt(counts))
    if spec.normalize:
        pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return np.asarray(pooled, dtype=np.float32)


class OnnxSentenceModel:
    """Word-piece tokenizer, the built transformer graph, and the model's own pooling and normalisation:
    the sentence-transformers pipeline its files declare (Transformer, Pooling, optional Normalize)."""

    def __init__(
        self, model_path: str, export_dir: Path, quantized: bool = False, threads: int = 0, device: str = "cpu"
    ) -> None:
        import onnxruntime as ort

        path = Path(model_path)
        self.tokenizer, self.max_tokens = word_pieces(path)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Threads that wait by spinning burn a core between operators; beside other workers on a small
        # machine that CPU is taken from them (figures: docs/benchmarks.md, Embedding).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        graph = export(path, export_dir, quantized)
        providers, why = execution_providers(device, available_providers())
        self.session = ort.InferenceSession(str(graph), options, providers=providers)
        if providers[0] == CUDA and self.session.get_providers()[0] != CUDA:  # CUDA offered, but not usable
            why = "ONNX Runtime could not start CUDA (its libraries or the device are missing)"
        if why:
            log.warning("embedding on the CPU: %s", why)
        self.device = "cuda" if self.session.get_providers()[0] == CUDA else "cpu"
        self.spec = model_spec(path)
        self.dimension = self.spec.dimension

    def encode(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        texts = [t.lower() for t in texts] if self.spec.lowercase else list(texts)
        encodings = self.tokenizer.encode_batch(texts)
        width = max((len(e.ids) for e in encodings), default=0)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        hidden = self.session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]  # the token states; the pooler's output is not what sentence-transformers pools
        return pool(hidden, mask, self.spec)
