"""`streams bench backfill`: what a second vector index costs beside the live one.

The demo's documents go through the whole service (embedded broker and store, every strategy, both sinks)
into the default index; then `streams index create` makes a second index for another model and its sink
backfills it from the start of the topics, while searches keep reading the live index. The baseline is the
first ingest in the same run: the backfill sink's CPU seconds against the default vector sink's, which
embedded the same chunks once. Nothing may be missing from the second index when it is current.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streams.core.chunkers import STRATEGIES
from streams.embedding.model import default_model_path
from streams.ingest.files import page_events
from streams.ops.indexes import create, status
from streams.ops.lag import lag_report
from streams.ops.pipeline import LocalPipeline, publish_pages, sample_paths
from streams.runtime.procs import group_cpu_s
from streams.settings import Settings
from streams.sinks.search import search

SECOND = "second"


class BackfillError(RuntimeError):
    pass


def _until(condition: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise BackfillError(f"{what} not done after {timeout:.0f}s")
        time.sleep(0.5)


def run_backfill(
    settings: Settings,
    model: str | None = None,
    backend: str = "onnx",
    strategies: list[str] | None = None,
    timeout: float = 900,
    on_stage: Callable[[str], None] = lambda _stage: None,
) -> dict[str, Any]:
    """The demo's documents into the default index, then a backfill of index `second` (default: the packaged
    model on fp32 ONNX, where the live index embeds in int8, so no vector is shared between them)."""
    chosen = strategies or list(STRATEGIES)
    pages = [e for p in sample_paths() for e in page_events(p)]
    data_dir = Path(tempfile.mkdtemp(prefix="streams-bench-backfill-"))
    try:
        settings = settings.model_copy(update={"data_dir": data_dir, "sink_assignment": "manual"})
        pipeline = LocalPipeline(settings, chosen, sinks=["mongo", "vectors"], supervise=True, on_stage=on_stage)
        with pipeline:
            live = pipeline.settings
            on_stage("first ingest")
            started = time.monotonic()
            publish_pages(live, pages)

            def settled() -> bool:
                states = status(live, "default")
                return lag_report(live)["total_lag"] == 0 and states[0].current and states[0].wanted > 0

            _until(settled, "the first ingest", timeout)
            first_s = time.monotonic() - started
            first_cpu = {role: group_cpu_s(pid) for role, pid in pipeline.pids().items()}
            on_stage("backfilling the second index")
            started = time.monotonic()
            create(live, SECOND, model or default_model_path(), backend=backend)
            pipeline.start_worker(f"sink:vectors.{SECOND}")
            answered = failed = 0

            def current() -> bool:
                nonlocal answered, failed
                try:
                    answered += bool(search(live, "what the documents are about", 3))
                except Exception:
                    failed += 1
                return status(live, SECOND)[0].current

            _until(current, "the backfill", timeout)
            backfill_s = time.monotonic() - started
            cpu = {role: group_cpu_s(pid) for role, pid in pipeline.pids().items()}
            states = {s.name: s.as_dict() for s in status(live)}
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    sink_cpu = cpu[f"sink:vectors.{SECOND}"]
    base_cpu = first_cpu["sink:vectors"]
    return {
        "documents": len({(p.doc_id, p.amendment_number) for p in pages}),
        "pages": len(pages),
        "strategies": chosen,
        "broker_kind": settings.broker_kind,
        "second_model": model or "all-MiniLM-L6-v2 (packaged)",
        "second_backend": backend,
        "first_ingest_s": round(first_s, 2),
        "backfill_s": round(backfill_s, 2),
        "backfill_over_first_ingest": round(backfill_s / first_s, 3),
        "cpu_seconds_first_ingest": {k: round(v, 2) for k, v in sorted(first_cpu.items())},
        "cpu_seconds_during_backfill": {k: round(cpu[k] - first_cpu.get(k, 0.0), 2) for k in sorted(cpu)},
        "backfill_sink_cpu_over_live_sink_cpu": round(sink_cpu / base_cpu, 3) if base_cpu else None,
        "indexes": states,
        "missing": states[SECOND]["missing"],
        "searches_answered": answered,
        "searches_failed": failed,
    }
