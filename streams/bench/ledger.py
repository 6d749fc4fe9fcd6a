"""`streams bench ledger`: broker restarts with writes in flight, what the broker lost, what the audit
found and what the repair restored, on the embedded stack (noida-db, SecantusDB, LanceDB)."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from streams.bench import bench_chunker
from streams.core.document import assemble
from streams.core.events import PageEvent
from streams.core.publish import publish
from streams.ops.audit import audit, audit_stores, repair
from streams.ops.pipeline import LocalPipeline, publish_pages
from streams.runtime.lag import group_lag
from streams.settings import Settings

WORDS = [
    "bridge",
    "sensor",
    "contract",
    "span",
    "load",
    "report",
    "schedule",
    "inspection",
    "deck",
    "pier",
    "cable",
    "notice",
    "price",
]


def _documents(count: int, seed: int) -> list[list[PageEvent]]:
    docs = []
    for n in range(count):
        rng = random.Random(f"{seed}-{n}")
        pages = rng.randint(1, 3)
        texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(80, 400))) + "." for _ in range(pages)]
        docs.append(
            [
                PageEvent(
                    doc_id=f"bench-{seed}-{n:03d}",
                    document_name=f"bench-{n:03d}.txt",
                    page_number=i,
                    page_count=pages,
                    text=text,
                )
                for i, text in enumerate(texts, start=1)
            ]
        )
    return docs


def _expected(docs: list[list[PageEvent]]) -> dict[str, dict[str, str]]:
    chunker = bench_chunker("window")
    out: dict[str, dict[str, str]] = {}
    for pages in docs:
        doc = assemble(pages)
        out[doc.doc_id] = {r.chunk_id: r.checksum for r in publish(doc, chunker).records}
    return out


def _lost(settings: Settings, expected: dict[str, dict[str, str]]) -> int:
    """Documents not whole in both stores: a row or a vector missing, or a wrong checksum."""
    from streams.sinks.lance_target import LanceTarget
    from streams.sinks.mongo import MongoSink

    mongo = MongoSink.of(settings)
    try:
        rows = {d["_id"]: d["checksum"] for d in mongo.collection.find({}, {"checksum": 1})}
    finally:
        mongo.close()
    try:
        vectors = set(LanceTarget(settings.lance_dir, settings.lance_table).ids())
    except Exception:
        vectors = set()
    return sum(
        1 for chunks in expected.values() if any(rows.get(c) != s or c not in vectors for c, s in chunks.items())
    )


def _settle(pipeline: LocalPipeline, quiet_s: float, timeout_s: float) -> None:
    """Until every sink group has committed to the end of the chunk topic and nothing moved for `quiet_s`.

    A quiet period alone is not enough: the vector sink embedding a full batch is quiet for longer than
    that, and the first version of this bench counted such slow documents as lost."""

    settings = pipeline.settings
    deadline = time.monotonic() + timeout_s
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        pipeline.check_workers()
        inputs = {
            "streams-sink-mongo": settings.topics.chunks,
            "streams-sink-vectors": settings.topics.chunks,
            "streams-chunker-window": settings.topics.documents,
        }
        rows = [row for group, topic in inputs.items() for row in group_lag(settings, group, [topic], timeout=5)]
        now = tuple((r.group, r.topic, r.partition, r.committed, r.end) for r in rows)
        if now != last:
            last, since = now, time.monotonic()
        # a group that never committed (the vector sink still on its first batch) is behind, not done
        caught_up = {r.group for r in rows} == set(inputs) and all(r.committed >= r.end for r in rows if r.end > 0)
        if caught_up and time.monotonic() - since >= quiet_s:
            return
        time.sleep(1)


def _audit(settings: Settings, fix: bool) -> tuple[Any, Any]:
    stores = audit_stores(settings, ["mongo", "vectors"])
    try:
        report, ledger = audit(settings, ["window"], stores)
        return report, repair(settings, report, ledger, stores) if fix else None
    finally:
        for store in stores:
            store.close()


def one_run(seed: int, docs: int, how: str, progress: Callable[[str], None]) -> dict[str, Any]:
    pages = _documents(docs, seed)
    expected = _expected(pages)
    with TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp), partitions=2, sink_assignment="manual", assembly_timeout_s=120, sweep_interval_s=0.5
        )
        with LocalPipeline(settings, ["window"], sinks=["mongo", "vectors"], supervise=True) as pipeline:
            live = pipeline.settings
            publisher = threading.Thread(target=publish_pages, args=(live, [p for d in pages for p in d]))
            publisher.start()
            time.sleep(random.Random(seed).uniform(2.0, 6.0))  # somewhere in the middle of the run
            progress(f"run {seed}: {how} the broker")
            broker = pipeline.broker
            assert broker is not None and broker.proc is not None
            killed = broker.proc.pid
            if how == "SIGKILL":
                os.killpg(killed, signal.SIGKILL)
                while not (broker.proc.pid != killed and broker.alive()):
                    pipeline.check_workers()
                    time.sleep(0.25)
            else:
                broker.stop()
                time.sleep(1.0)
                broker.start()
            restarted = time.monotonic()
            publisher.join()
            _settle(pipeline, quiet_s=5.0, timeout_s=300)
            lost_before = _lost(live, expected)
            progress(f"run {seed}: audit")
            started = time.perf_counter()
            report, repaired = _audit(live, fix=True)
            audit_s = time.perf_counter() - started
            detected_s = time.monotonic() - restarted
            gap_docs = len({g.doc_id for g in report.gaps if g.kind != "dead_lettered"})
            deadline = time.monotonic() + 240
            while True:
                pipeline.check_workers()
                again, _ = _audit(live, fix=False)
                if not again.open_gaps() or time.monotonic() > deadline:
                    break
                time.sleep(2)
            repaired_s = time.monotonic() - restarted
            lost_after = _lost(live, expected)
    return {
        "run": seed,
        "signal": how,
        "documents": docs,
        "lost_before": lost_before,
        "gap_documents": gap_docs,
        "gaps": {k: v for k, v in report.counts().items() if v},
        "rechunked": repaired.rechunked if repaired else 0,
        "reported": repaired.reported if repaired else 0,
        "lost_after": lost_after,
        "detect_s": round(detected_s, 1),
        "repair_s": round(repaired_s, 1),
        "audit_s": round(audit_s, 2),
        "audit_s_per_1000": round(audit_s * 1000 / max(report.versions, 1), 2),
    }


def run_ledger_bench(
    runs: int,
    docs: int,
    update: Callable[[str, int, int], None],
    on_result: Callable[[dict[str, Any]], None] | None = None,
    first: int = 0,
) -> dict[str, Any]:
    results = []
    for n in range(first, first + runs):
        how = "SIGKILL" if n % 2 == 0 else "SIGTERM"
        results.append(one_run(n, docs, how, lambda text, n=n: update(text, n - first, runs)))
        if on_result:
            on_result(results[-1])
    return {"runs": results}
