"""`streams bench embedding`: what embedding costs, in one run.

- The forward pass alone per backend (torch, onnx, onnx-int8): CPU ms per page to embed every sentence
  unit of the documents once, on one thread, and how far each backend's vectors are from torch's.
- The graph (`graphs`): the graph the project writes from the model's weights beside the graph torch's
  exporter gives (the project's graph until 2026-12), each with ONNX Runtime's default fusions and with
  SkipLayerNormFusion off, interleaved on one thread, on sentences and on long passages: CPU ratios to the
  exported graph, and GFLOP/s of the whole forward pass against numpy's sgemm on one core (the measured
  FMA peak).
- The pipeline on the embedded broker: `semantic` alone, then `semantic` and `cluster` deployed together
  with the shared embedding store and without it. The co-deployment ratio is the two workers' CPU per
  page over the one worker's: 2 would mean every sentence embedded twice, 1 embedded once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from streams.bench import BenchError, Progress, bench_chunker, environment, single_core
from streams.bench.pipeline import end_to_end, synthetic_documents
from streams.core.chunkers import EMBEDDING_STRATEGIES
from streams.core.document import assemble
from streams.core.events import PageEvent
from streams.embedding.model import Backend, Embedder, default_model_path
from streams.embedding.onnx import OnnxSentenceModel, export
from streams.settings import load_settings

BACKENDS = ("torch", "onnx", "onnx-int8")


def _sentences_and_chunks(docs: Sequence[list[PageEvent]]) -> tuple[list[str], dict[str, int], dict[str, float]]:
    """Every sentence unit either strategy embeds, the chunks each strategy makes in process, and each
    strategy's CPU ms per page with every vector already cached: its work other than the forward pass."""

    chunkers = {name: bench_chunker(name) for name in EMBEDDING_STRATEGIES}
    assembled = [assemble(pages) for pages in docs]
    sentences: dict[str, None] = {}
    chunks = dict.fromkeys(chunkers, 0)
    for doc in assembled:
        for name, chunker in chunkers.items():
            sentences.update(dict.fromkeys(doc.text[s:e] for s, e in chunker.sentence_units(doc.text)))  # type: ignore[attr-defined]
            chunks[name] += len(chunker.chunk(doc))
    other: dict[str, float] = {}
    pages = sum(len(d) for d in docs)
    with single_core():
        for name, chunker in chunkers.items():
            started = time.process_time()
            for doc in assembled:
                chunker.chunk(doc)  # every sentence is in the embedder's cache by now
            other[name] = 1000 * (time.process_time() - started) / pages
    return list(sentences), chunks, other


def forward_pass(sentences: list[str], pages: int, backends: Sequence[str], export_dir: Any) -> dict[str, Any]:

    figures: dict[str, Any] = {}
    reference: np.ndarray | None = None
    with single_core():
        for name in backends:
            embedder = Embedder(backend=Backend(name, export_dir))
            embedder.encode(["warm up the model"])
            embedder.clear_cache()
            started = time.process_time()
            vectors = embedder.encode(sentences)
            cpu = time.process_time() - started
            if reference is None:
                reference = vectors
            cosines = (vectors * reference).sum(axis=1)
            figures[name] = {
                "cpu_ms_per_page": round(1000 * cpu / pages, 2),
                "sentences_per_cpu_s": round(len(sentences) / cpu, 1),
                "max_abs_diff_to_first": float(np.abs(vectors - reference).max()),
                "min_cosine_to_first": round(float(cosines.min()), 6),
                "mean_cosine_to_first": round(float(cosines.mean()), 6),
            }
    first = figures[backends[0]]["cpu_ms_per_page"]
    for name in backends:
        figures[name]["speedup_vs_first"] = round(first / figures[name]["cpu_ms_per_page"], 3)
    return figures


LAYER_FLOPS = "8H^2 + 4HI + 4TH per token and layer (QKV and output projections, feed-forward, attention)"


def torch_export(model_path: Path, target: Path) -> None:
    """The graph as torch's exporter writes it from the model (the baseline of `graphs`; needs torch)."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_path), local_files_only=True).eval()
    sample = torch.ones((2, 8), dtype=torch.long)
    axes = {0: "batch", 1: "tokens"}
    torch.onnx.export(
        model,
        (sample, sample.clone(), torch.zeros_like(sample)),  # one tensor twice would fuse the inputs
        str(target),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state", "pooler_output"],
        dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "last_hidden_state": axes},
        opset_version=17,
        dynamo=True,
        external_data=False,
        verbose=False,
    )


def sgemm_gflops(size: int = 1024, seconds: float = 1.0) -> float:
    """numpy's float32 matrix product on one core, in GFLOP/s: the FMA peak as this machine reaches it."""
    a = np.random.default_rng(0).standard_normal((size, size), dtype=np.float32)
    b = a.T.copy()
    a @ b  # warm up
    runs, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        a @ b
        runs += 1
    return 2 * size**3 * runs / elapsed / 1e9


def _batches(model: Any, texts: list[str]) -> list[dict[str, np.ndarray]]:
    """Feeds as the embedder makes them: at most 16 texts of one token length, so nothing is padded."""
    by_length: dict[int, list[list[int]]] = {}
    for encoding in model.tokenizer.encode_batch(texts):
        by_length.setdefault(len(encoding.ids), []).append(encoding.ids)
    feeds = []
    for rows in by_length.values():
        for start in range(0, len(rows), 16):
            ids = np.array(rows[start : start + 16], dtype=np.int64)
            feeds.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
    return feeds


def _flops(config: dict[str, Any], feeds: list[dict[str, np.ndarray]]) -> float:
    hidden, inner, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    total = 0.0
    for feed in feeds:
        count, tokens = feed["input_ids"].shape
        total += count * tokens * layers * (8 * hidden**2 + 4 * hidden * inner + 4 * tokens * hidden)
    return total


def graph_figures(sentences: list[str], export_dir: Path, rounds: int = 5) -> dict[str, Any]:
    """The built graph beside the exported one, each with and without SkipLayerNormFusion (see the module)."""
    import json
    import tempfile

    import onnxruntime as ort

    model_path = Path(default_model_path())
    config = json.loads((model_path / "config.json").read_text())
    built = export(model_path, export_dir, quantized=False)
    model = OnnxSentenceModel(str(model_path), export_dir, threads=1)
    words = " ".join(sentences).split()
    passages = [" ".join(words[i : i + 170]) for i in range(0, min(len(words), 170 * 48), 170)]  # ~240 pieces
    sets = {"sentences": _batches(model, sentences), "passages": _batches(model, passages)}
    graphs: dict[str, Path] = {"built": built}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            exported = Path(tmp) / "exported.onnx"
            torch_export(model_path, exported)
            graphs = {"exported": exported, "built": built}
        except ImportError:  # a run install has no torch: the built graph alone, without its baseline
            pass
        sessions = {}
        for name, path in graphs.items():
            for fused in (True, False):
                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.intra_op_num_threads = options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                off = [] if fused else ["SkipLayerNormFusion"]
                label = name if fused else f"{name}, SkipLayerNormFusion off"
                sessions[label] = ort.InferenceSession(
                    str(path), options, providers=["CPUExecutionProvider"], disabled_optimizers=off
                )
        cpu: dict[str, dict[str, list[float]]] = {label: {s: [] for s in sets} for label in sessions}
        outputs: dict[str, np.ndarray] = {}
        with single_core():
            for _ in range(rounds):  # interleaved: a noisy moment costs every variant alike
                for label, session in sessions.items():
                    for set_name, feeds in sets.items():
                        started = time.process_time()
                        states = [session.run(["last_hidden_state"], feed)[0] for feed in feeds]
                        cpu[label][set_name].append(time.process_time() - started)
                        outputs.setdefault(f"{label}|{set_name}", np.concatenate([s.mean(axis=1) for s in states]))
            peak = sgemm_gflops()
    base = next(iter(sessions))
    figures: dict[str, Any] = {"baseline": base, "sgemm_gflops_one_core": round(peak, 1), "flops": LAYER_FLOPS}
    for label in sessions:
        row: dict[str, Any] = {}
        for set_name, feeds in sets.items():
            best = min(cpu[label][set_name])
            gflops = _flops(config, feeds) / best / 1e9
            mine, theirs = outputs[f"{label}|{set_name}"], outputs[f"{base}|{set_name}"]
            row[set_name] = {
                "cpu_s": round(best, 3),
                "speedup_vs_baseline": round(min(cpu[base][set_name]) / best, 3),
                "gflops": round(gflops, 1),
                "of_sgemm_peak": round(gflops / peak, 3),
                "max_abs_diff_to_baseline": float(np.abs(mine - theirs).max()),
            }
        figures[label] = row
    return figures


def _chunker_cpu(run: dict[str, Any]) -> float:
    return sum(v for k, v in run.get("cpu_ms_per_page", {}).items() if k.startswith("chunker:"))


def run_embedding_bench(
    docs: int = 60,
    backends: Sequence[str] = BACKENDS,
    pipeline: bool = True,
    progress: Progress | None = None,
    graphs: bool = True,
) -> dict[str, Any]:

    unknown = [b for b in backends if b not in BACKENDS]
    if unknown:
        raise BenchError(f"unknown backend {unknown[0]!r}; known: {', '.join(BACKENDS)}")
    documents = synthetic_documents(docs)
    pages = sum(len(d) for d in documents)
    if progress:
        progress("sentences", 0, 1)
    sentences, chunks, other = _sentences_and_chunks(documents)
    report: dict[str, Any] = {"docs": docs, "pages": pages, "sentences": len(sentences)}
    if backends:
        if progress:
            progress("forward pass per backend", 0, 1)
        report["forward_pass"] = forward_pass(sentences, pages, list(backends), load_settings().onnx_dir)
    if graphs:
        if progress:
            progress("graphs: built and exported", 0, 1)
        report["graphs"] = graph_figures(sentences, load_settings().onnx_dir)
    if pipeline:
        runs: dict[str, Any] = {}
        plan = [
            ("semantic_alone", ["semantic"], "sqlite"),
            ("together_shared_store", ["semantic", "cluster"], "sqlite"),
            ("together_no_store", ["semantic", "cluster"], "none"),
        ]
        for label, strategies, cache in plan:
            with environment(STREAMS_EMBED_CACHE=cache):
                run = end_to_end(documents, strategies, 1, 4, sum(chunks[s] for s in strategies), progress=progress)
            runs[label] = {
                "workers": len(strategies),
                "pages_per_s": round(run["pages_per_s"], 2),
                "cpu_ms_per_page": {k: round(v, 2) for k, v in run.get("cpu_ms_per_page", {}).items()},
                "chunker_cpu_ms_per_page": round(_chunker_cpu(run), 2),
            }
        report["pipeline"] = runs
        report["other_than_forward_in_process_cpu_ms_per_page"] = {k: round(v, 2) for k, v in other.items()}
        alone = runs["semantic_alone"]["chunker_cpu_ms_per_page"]
        ratios: dict[str, Any] = {
            "target": "embedding CPU together <= 1.15x semantic alone, with the shared store",
            "chunker_cpu": {
                "shared_store": round(runs["together_shared_store"]["chunker_cpu_ms_per_page"] / alone, 3),
                "no_store": round(runs["together_no_store"]["chunker_cpu_ms_per_page"] / alone, 3),
            },
        }
        torch = report.get("forward_pass", {}).get("torch")
        if torch:
            # A worker's CPU is its forward passes plus a cost per page that does not depend on embedding
            # (consuming, splitting, grouping, Avro, producing): semantic alone gives that cost, the
            # forward pass measured above on the same sentences gives the rest.
            forward = torch["cpu_ms_per_page"]
            per_worker = alone - forward
            for row in runs.values():
                row["embedding_cpu_ms_per_page"] = round(
                    row["chunker_cpu_ms_per_page"] - row["workers"] * per_worker, 2
                )
            ratios["embedding_cpu"] = {
                "per_worker_other_cpu_ms_per_page": round(per_worker, 2),
                "shared_store": round(runs["together_shared_store"]["embedding_cpu_ms_per_page"] / forward, 3),
                "no_store": round(runs["together_no_store"]["embedding_cpu_ms_per_page"] / forward, 3),
            }
        report["co_deployment_ratio"] = ratios
    return report
