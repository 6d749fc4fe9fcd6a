"""`streams demo`: the whole flow on the embedded default, with a progress display and a summary."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from streams.bench.idle import group_cpu_s
from streams.core.chunkers import available_strategies
from streams.ingest.files import page_events
from streams.ops.pipeline import Collector, LocalPipeline, publish_pages, sample_paths
from streams.ops.progress import progress_bar
from streams.settings import Settings

#: Strategies the demo runs by default: all that are built and need no model download.
DEFAULT_DEMO = ["window", "letter", "finance", "section", "hybrid", "semantic", "cluster"]


def run_demo(
    settings: Settings,
    paths: list[Path] | None,
    strategies: list[str] | None,
    timeout: float,
    console: Console,
    keep: bool = False,
    sinks: bool = True,
) -> dict:
    started = time.monotonic()
    built = set(available_strategies())
    chosen = strategies or [s for s in DEFAULT_DEMO if s in built]
    unknown = [s for s in chosen if s not in built]
    if unknown:
        raise ValueError(f"strategy not available: {', '.join(unknown)} (built: {', '.join(sorted(built))})")
    documents = [page_events(p) for p in (paths or sample_paths())]
    pages = [e for doc in documents for e in doc]
    docs = sorted({(e.doc_id, e.amendment_number) for e in pages})
    try:
        settings = settings.model_copy(update={"sink_assignment": "manual"})  # one replica per sink
        with LocalPipeline(settings, chosen, sinks=["mongo", "vectors"] if sinks else []) as pipeline:
            console.print(f"broker {pipeline.settings.broker}; workers: assembler, {', '.join(chosen)}")
            publish_pages(pipeline.settings, pages)
            collector = Collector(pipeline.settings)
            with progress_bar(console) as progress:
                task = progress.add_task("documents chunked x strategies", total=len(docs) * len(chosen))

                def show(result) -> None:
                    pipeline.check_workers()
                    done = sum(
                        1
                        for d, a in docs
                        for s in chosen
                        if result.complete(d, a, s)
                        or result.dead_for(d, "assembly")
                        or result.dead_for(d, f"chunk:{s}")
                    )
                    progress.update(task, completed=done)

                result = collector.wait(docs, chosen, timeout, on_progress=show)
                stored = wait_for_sinks(pipeline, result.records(), timeout, progress) if sinks else {}
            collector.close()
            cpu = {role: round(group_cpu_s(pid), 1) for role, pid in sorted(pipeline.pids().items())}
            cpu["demo"] = round(time.process_time(), 1)
    finally:
        if not keep:
            shutil.rmtree(settings.data_dir, ignore_errors=True)
    per_strategy = {s: 0 for s in chosen}
    for (_doc, _amendment, strategy), slot in result.chunks.items():
        per_strategy[strategy] = per_strategy.get(strategy, 0) + len(slot)
    return {
        "documents": len(docs),
        "pages": len(pages),
        "chunks": per_strategy,
        "dead_letters": len(result.dead),
        **stored,
        "seconds": round(time.monotonic() - started, 2),
        "cpu_seconds": cpu,
    }


def wait_for_sinks(pipeline: LocalPipeline, records: list, timeout: float, progress: Progress) -> dict:
    """Until MongoDB holds every chunk and the vector store every non-table chunk, with final flags."""
    from streams.sinks.base import is_table
    from streams.sinks.lance_target import LanceTarget
    from streams.sinks.mongo import MongoSink

    latest_ids = _latest_ids(records)
    want = {
        "mongo": (len(records), len(latest_ids)),
        "vectors": (
            sum(1 for r in records if not is_table(r)),
            sum(1 for r in records if not is_table(r) and r.chunk_id in latest_ids),
        ),
    }
    task = progress.add_task("chunks stored by the sinks", total=want["mongo"][0] + want["vectors"][0])
    mongo = MongoSink(pipeline.settings.mongo_url)
    deadline = time.monotonic() + timeout
    got = {"mongo": (0, 0), "vectors": (0, 0)}
    try:
        while time.monotonic() < deadline:
            pipeline.check_workers()
            got["mongo"] = (mongo.count(), mongo.count(latest_only=True))
            try:
                lance = LanceTarget(pipeline.settings.lance_dir)
                got["vectors"] = (lance.count(), lance.count(latest_only=True))
            except Exception:  # the table appears with the first batch
                got["vectors"] = (0, 0)
            progress.update(task, completed=got["mongo"][0] + got["vectors"][0])
            if got == want:
                break
            time.sleep(0.5)
    finally:
        mongo.close()
    return {
        "mongo": {"chunks": got["mongo"][0], "latest": got["mongo"][1]},
        "vectors": {"vectors": got["vectors"][0], "latest": got["vectors"][1]},
    }


def _latest_ids(records: list) -> set[str]:
    """Chunks of the newest amendment of each document, per strategy."""
    newest: dict[tuple[str, str], int] = {}
    for r in records:
        key = (r.doc_id, r.strategy)
        newest[key] = max(newest.get(key, -1), r.amendment_number)
    return {r.chunk_id for r in records if r.amendment_number == newest[(r.doc_id, r.strategy)]}
