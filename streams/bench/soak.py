"""`streams bench soak`: a steady stream of documents for many minutes while every worker's resident memory
is sampled, to show whether a worker's memory grows over a long run (a benchmark, not a test).

The chunker keeps one version entry per document it has seen (amendments need it), so its memory may grow
with the number of distinct documents by design; the report gives the growth per 1,000 documents so that
state can be told apart from a leak.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streams.bench import BenchError, Progress
from streams.bench.pipeline import bench_doc_type, synthetic_documents, warm_up
from streams.settings import Settings


def rss_mib(pid: int) -> float | None:
    """Resident set size of a process from /proc (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope (y per x unit); 0 for fewer than two points."""
    if len(points) < 2:
        return 0.0
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    var = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / var if var else 0.0


def run_soak(
    minutes: float = 20.0,
    pages_per_s: float = 20.0,
    strategies: Sequence[str] | None = None,
    sample_every_s: float = 15.0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Publish at a steady rate for `minutes`, sample RSS per worker, then check every document came out."""
    from streams.ops.pipeline import Collector, LocalPipeline, producer

    chosen = list(strategies or ["section"])
    if minutes <= 0 or pages_per_s <= 0:
        raise BenchError("--minutes and --rate must be positive")
    duration = minutes * 60
    stop = threading.Event()
    published: list[str] = []
    pages_sent = [0]
    with tempfile.TemporaryDirectory(prefix="streams-soak-") as tmp:
        settings = Settings(data_dir=Path(tmp), partitions=2)
        with LocalPipeline(settings, chosen) as pipeline:
            live = pipeline.settings
            collector = Collector(live)
            warm_up(live, collector, chosen, timeout=300)

            def publisher() -> None:
                out = producer(live)  # one producer for the whole run
                batch_no, started = 0, time.monotonic()
                while not stop.is_set():
                    batch = synthetic_documents(20, seed=1000 + batch_no, doc_type=bench_doc_type(chosen))
                    batch_no += 1
                    for doc in batch:
                        for page in doc:
                            # hold the steady rate: the page is due at pages_sent / rate seconds
                            delay = started + pages_sent[0] / pages_per_s - time.monotonic()
                            if delay > 0 and stop.wait(delay):
                                out.flush(30)
                                return
                            out.produce(live.topics.pages, key=page.doc_id.encode(), value=page.model_dump_json())
                            out.poll(0)
                            pages_sent[0] += 1
                        published.append(doc[0].doc_id)
                out.flush(30)

            thread = threading.Thread(target=publisher, daemon=True)
            samples: dict[str, list[tuple[float, float]]] = {role: [] for role in pipeline.workers}
            began = time.monotonic()
            thread.start()
            while (elapsed := time.monotonic() - began) < duration:
                for role, proc in pipeline.workers.items():
                    if (rss := rss_mib(proc.pid)) is not None:
                        samples[role].append((elapsed, rss))
                collector.poll(min(sample_every_s, max(0.1, duration - elapsed)))
                pipeline.check_workers()
                if progress:
                    progress(f"soak: {pages_sent[0]:,} pages published", int(elapsed), int(duration))
            stop.set()
            thread.join(30)
            docs = list(published)
            result = collector.wait([(d, 0) for d in docs], chosen, timeout=600)
            collector.close()
    chunks = sum(len(slot) for key, slot in result.chunks.items() if key[0] in set(docs))
    per_role = {}
    for role, points in samples.items():
        settled = [(t, r) for t, r in points if t >= min(120.0, duration / 4)]  # after warm-up
        per_role[role] = {
            "rss_start_mib": round(points[0][1], 1) if points else None,
            "rss_end_mib": round(points[-1][1], 1) if points else None,
            "rss_max_mib": round(max(r for _, r in points), 1) if points else None,
            "slope_mib_per_10_min": round(_slope(settled) * 600, 2),
            "growth_mib_per_1000_docs": round(_slope(settled) * duration / max(1, len(docs)) * 1000, 3),
            "samples": len(points),
        }
    return {
        "minutes": minutes,
        "target_pages_per_s": pages_per_s,
        "pages": pages_sent[0],
        "docs": len(docs),
        "chunks": chunks,
        "dead_letters": len(result.dead),
        "missing": sum(1 for d in docs for s in chosen if not result.complete(d, 0, s) and not result.dead_for(d)),
        "strategies": chosen,
        "workers": per_role,
    }
