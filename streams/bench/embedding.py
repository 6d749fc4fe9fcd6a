"""`streams bench embedding`: what embedding costs, in one run.

- The forward pass alone per backend (torch, onnx, onnx-int8): CPU ms per page to embed every sentence
  unit of the documents once, on one thread, and how far each backend's vectors are from torch's.
- The pipeline on the embedded broker: `semantic` alone, then `semantic` and `cluster` deployed together
  with the shared embedding store and without it. The co-deployment ratio is the two workers' CPU per
  page over the one worker's: 2 would mean every sentence embedded twice, 1 embedded once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from streams.bench import BenchError, Progress, environment, single_core
from streams.bench.pipeline import end_to_end, synthetic_documents
from streams.core.events import PageEvent

BACKENDS = ("torch", "onnx", "onnx-int8")


def _sentences_and_chunks(docs: Sequence[list[PageEvent]]) -> tuple[list[str], dict[str, int], dict[str, float]]:
    """Every sentence unit either strategy embeds, the chunks each strategy makes in process, and each
    strategy's CPU ms per page with every vector already cached: its work other than the forward pass."""
    from streams.bench import bench_chunker
    from streams.core.chunkers import EMBEDDING_STRATEGIES
    from streams.core.document import assemble

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
    from streams.core.embedding import Backend, Embedder

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


def _chunker_cpu(run: dict[str, Any]) -> float:
    return sum(v for k, v in run.get("cpu_ms_per_page", {}).items() if k.startswith("chunker:"))


def run_embedding_bench(
    docs: int = 60,
    backends: Sequence[str] = BACKENDS,
    pipeline: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    from streams.settings import load_settings

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
