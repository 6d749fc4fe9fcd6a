"""`streams bench pipeline`: end to end on the embedded broker beside in-process chunking of the same
documents in the same run, and one worker per role against two.

Throughput is pages from the first page published to the broker timestamp of the last chunk on
`chunks.created`; latency is, per document, from its last page handed to the producer to the broker
timestamp of its last chunk (both clocks are this machine's). While the clock runs the benchmark only
watches the topic's offsets until the chunks that in-process chunking made have all arrived; then it
decodes every chunk and checks that each document is complete, with no dead letter. A consumer reading
along would take CPU from the pipeline it measures: against noida-db, which answers an empty fetch at
once, librdkafka re-fetches in a busy loop (figures: docs/benchmarks.md, Pipeline). Each
end-to-end run starts with a warm-up document so worker start-up and group joins are not counted.

Each run also reports the CPU seconds every process group used while the clock ran (workers, broker,
the benchmark itself): CPU per page is what a capacity plan needs, and unlike the rate it barely moves
when other jobs share the machine.
"""

from __future__ import annotations

import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from streams.bench import BenchError, Progress, bench_chunker, single_core
from streams.bench.chunk import _clear_embedder_cache
from streams.codec.avro import AvroCodec
from streams.core.chunkers import EMBEDDING_STRATEGIES, STRATEGIES, ChunkingError, make_options
from streams.core.document import assemble
from streams.core.events import PageEvent
from streams.core.options import DOC_TYPES
from streams.core.publish import publish
from streams.runtime.procs import groups_cpu_s
from streams.settings import Settings

TOPICS = ["harbour", "ledger", "turbine", "orchard", "contract", "sensor", "granite", "invoice", "bridge", "tariff"]
VOCABULARY = (
    "the a of and to in for with on by from its their this that these which while under over after before "
    "load span cost rate plan team site unit crew stock yield flow grid line dock gate term fee draft "
    "notice review supply storage transfer schedule capacity revenue margin pressure inspection allowance "
    "balance"
)
WORDS = VOCABULARY.split()


def bench_doc_type(strategies: Sequence[str]) -> str:
    """A document type every strategy takes (`doc_types`; generic when all do), so the bench measures
    chunking rather than documents skipped as not applicable."""

    taken = [set(make_options(s).doc_types) for s in strategies]
    common = [t for t in ("generic", *DOC_TYPES) if all(t in types for types in taken)]
    if not common:
        raise BenchError(f"{', '.join(strategies)} take no document type in common: bench them one at a time")
    return common[0]


def synthetic_documents(count: int, seed: int = 17, doc_type: str = "generic") -> list[list[PageEvent]]:
    """Deterministic multi-page documents with numbered headings, paragraphs and the odd list, so every
    strategy has structure to find. Written for the benchmark; no corpus text. A solicitation is named as
    the file filter wants (its name says RFP; docs/strategies.md#section-1-scope-and-the-file-filter)."""
    docs = []
    for n in range(count):
        rng = random.Random(seed * 100_003 + n)
        topic = rng.choice(TOPICS)
        pages = []
        for page in range(rng.randint(1, 5)):
            blocks = [f"{page + 1}. {topic.title()} {rng.choice(WORDS).title()}"]
            for _ in range(rng.randint(3, 6)):
                sentences = [
                    " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 22))).capitalize() + "."
                    for _ in range(rng.randint(2, 5))
                ]
                blocks.append(" ".join(sentences))
            if rng.random() < 0.3:
                blocks.append(
                    "\n".join(f"- {rng.choice(WORDS)} {rng.choice(WORDS)} {rng.randint(1, 99)}" for _ in range(4))
                )
            pages.append("\n\n".join(blocks))
        doc_id = f"bench-{seed}-{n:05d}"
        name = f"{doc_id}-rfp.txt" if doc_type == "solicitation" else f"{doc_id}.txt"
        docs.append(
            [
                PageEvent(
                    doc_id=doc_id,
                    document_name=name,
                    doc_type=doc_type,
                    page_number=i + 1,
                    page_count=len(pages),
                    text=text,
                )
                for i, text in enumerate(pages)
            ]
        )
    return docs


def _forget_embeddings(strategies: Sequence[str]) -> None:

    if any(s in EMBEDDING_STRATEGIES for s in strategies):
        _clear_embedder_cache()


def in_process(docs: Sequence[list[PageEvent]], strategies: Sequence[str], repeats: int = 3) -> dict[str, Any]:
    """The same work a worker does per document (assemble, chunk, build records, Avro-encode), minus the bus,
    on one thread as in a worker (STREAMS_EMBED_THREADS=1: workers scale by replicas, not threads)."""
    with single_core():
        return _in_process(docs, strategies, repeats)


def _in_process(docs: Sequence[list[PageEvent]], strategies: Sequence[str], repeats: int) -> dict[str, Any]:

    codec = AvroCodec()
    wire = [[page.model_dump_json().encode() for page in pages] for pages in docs]
    best, best_cpu, chunks = float("inf"), float("inf"), 0
    for _ in range(repeats):
        # A repeat must not find the documents in a cache the last one filled (the embedder's, hybrid's
        # token counts): a worker sees each document once. Caches across documents stay, as in a worker.
        _forget_embeddings(strategies)
        chunkers = [bench_chunker(s) for s in strategies]
        for chunker in chunkers:
            chunker.warm_up()
        started, cpu_started, chunks = time.perf_counter(), time.process_time(), 0
        rejected: set[tuple[str, str]] = set()
        for raw in wire:
            doc = assemble([PageEvent.model_validate_json(page) for page in raw])
            for chunker in chunkers:
                try:
                    records = publish(doc, chunker).records  # skipped as not applicable: none, as on the bus
                except ChunkingError:  # a worker dead-letters it: the bus run must do the same
                    rejected.add((doc.doc_id, f"chunk:{chunker.name}"))
                    continue
                for record in records:
                    codec.encode("chunk_record", record.model_dump(mode="json"))
                    chunks += 1
        best = min(best, time.perf_counter() - started)
        best_cpu = min(best_cpu, time.process_time() - cpu_started)
    pages = sum(len(d) for d in docs)
    return {
        "seconds": best,
        "pages_per_s": pages / best,
        "chunks_per_s": chunks / best,
        "chunks": chunks,
        "cpu_ms_per_page": 1000 * best_cpu / pages,
        "rejected": sorted(rejected),  # (doc_id, dead-letter stage): documents a strategy refuses
    }


def warm_up(settings: Any, collector: Any, strategies: Sequence[str], timeout: float) -> None:
    """One document through every worker before measuring, so start-up and group joins are not counted."""
    from streams.ops.pipeline import publish_pages

    warm = synthetic_documents(1, seed=99, doc_type=bench_doc_type(strategies))[0]
    publish_pages(settings, warm)
    collector.wait([(warm[0].doc_id, 0)], strategies, timeout=timeout)


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def _wait_for_chunks(
    collector: Any,
    wanted: int,
    timeout: float,
    on_progress: Callable[[int], None] | None = None,
    dead_expected: int = 0,
) -> None:
    """Until `chunks.created` holds `wanted` messages and the dead-letter topic the `dead_expected` refusals
    in-process chunking saw; stops early on any further dead letter (checked later)."""
    topics = collector.settings.topics
    dead_wanted = collector.produced(topics.dead_letter) + dead_expected
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        produced = collector.produced(topics.chunks)
        if on_progress:
            on_progress(produced)
        dead = collector.produced(topics.dead_letter)
        if (produced >= wanted and dead >= dead_wanted) or dead > dead_wanted:
            return
        time.sleep(0.05)
    raise BenchError(f"chunks.created held {produced} of {wanted} chunks after {timeout:.0f}s")


def group_cpu_seconds(groups: dict[str, int]) -> dict[str, float] | None:
    """CPU seconds of each process group, reaped children included; None without /proc."""

    return groups_cpu_s(groups, reaped=True) if os.path.isdir("/proc") else None


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def cpu_ceiling(cpu_ms_per_page: dict[str, float], cores: int) -> float | None:
    """Pages/s that no scheduling could beat on `cores`: every process of the run must get its CPU per page,
    so a run's rate is at most cores / (their sum). Where a target is missed, this says whether the
    machine or the code stands in the way."""
    total = sum(cpu_ms_per_page.values())
    return cores * 1000 / total if total > 0 else None


def end_to_end(
    docs: Sequence[list[PageEvent]],
    strategies: Sequence[str],
    replicas: int,
    partitions: int,
    expected_chunks: int,
    sinks: Sequence[str] = (),
    timeout: float = 900.0,
    progress: Progress | None = None,
    expected_dead: Sequence[tuple[str, str]] = (),
    broker_kind: str = "noida",
    guarantee: str = "at_least_once",
) -> dict[str, Any]:
    """One run on a fresh broker of `broker_kind` with `replicas` workers per role; `expected_chunks` is
    what in-process chunking made of the same documents, `expected_dead` the (doc_id, stage) it refused."""
    from streams.ops.pipeline import Collector, LocalPipeline, publish_pages

    with tempfile.TemporaryDirectory(prefix="streams-bench-") as tmp:
        settings = Settings(
            data_dir=Path(tmp), partitions=partitions, broker_kind=broker_kind, processing_guarantee=guarantee
        )
        with LocalPipeline(settings, list(strategies), sinks=list(sinks)) as pipeline:
            for role in list(pipeline.workers):
                if not role.startswith("sink:"):
                    for replica in range(2, replicas + 1):
                        pipeline.start_worker(role, replica=replica)
            settings = pipeline.settings
            collector = Collector(settings)
            try:
                warm_up(settings, collector, strategies, timeout)
                collector.pause()
                already = collector.produced(settings.topics.chunks)

                pages = [p for d in docs for p in d]
                last_index = {}
                position = 0
                for d in docs:
                    position += len(d)
                    last_index[position] = d[0].doc_id
                sent_at: dict[str, float] = {}

                def on_sent(count: int) -> None:
                    if count in last_index:
                        sent_at[last_index[count]] = time.time()
                    if progress and count % 50 == 0:
                        progress(f"end to end, {replicas} worker(s) per role: publishing", count, len(pages))

                groups = {role: proc.pid for role, proc in pipeline.workers.items()}
                if pipeline.broker is not None and pipeline.broker.proc is not None:
                    groups["broker"] = pipeline.broker.proc.pid
                cpu_before, bench_before = group_cpu_seconds(groups), time.process_time()
                started = time.time()
                publish_pages(settings, pages, on_sent=on_sent)
                wanted = [(d[0].doc_id, 0) for d in docs]

                def arrived(produced: int) -> None:
                    if progress:
                        label = f"end to end, {replicas} worker(s) per role: chunks on the topic"
                        progress(label, produced - already, expected_chunks)

                _wait_for_chunks(collector, already + expected_chunks, timeout, arrived, len(expected_dead))
                cpu_after, bench_after = group_cpu_seconds(groups), time.process_time()
                collector.resume()  # now decode and check them all: the times come from broker stamps

                def report(result: Any) -> None:
                    if progress:
                        done = sum(1 for doc, a in wanted if all(result.complete(doc, a, s) for s in strategies))
                        progress(f"end to end, {replicas} worker(s) per role: chunked", done, len(wanted))

                result = collector.wait(wanted, strategies, timeout=timeout, on_progress=report)
                finished = max(result.arrived[key] for key in _arrived_keys(result, wanted, strategies))
                stored_s = _wait_stored(settings, result, timeout) - started if "mongo" in sinks else None
            finally:
                collector.close()
    dead = [d for d in result.dead if d.doc_id in sent_at]  # not the warm-up document's
    expected = set(expected_dead)
    unexpected = [d for d in dead if (d.doc_id, d.stage) not in expected]
    if unexpected:
        raise BenchError(f"{len(unexpected)} dead letters in the benchmark run: {unexpected[0].reason}")
    elapsed = finished - started
    latencies = [
        1000 * (max(result.arrived[key] for key in keys) - sent_at[doc])
        for doc, _ in wanted
        if (keys := _arrived_keys(result, [(doc, 0)], strategies))
    ]
    chunks = sum(len(slot) for key, slot in result.chunks.items() if key[0] in sent_at)
    figures: dict[str, Any] = {
        "replicas": replicas,
        "seconds": elapsed,
        "pages_per_s": len(pages) / elapsed,
        "chunks_per_s": chunks / elapsed,
        "chunks": chunks,
        "duplicates": result.duplicates,
        "dead_lettered": len(dead),
        "latency_ms": {q: _percentile(latencies, int(q[1:])) for q in ("p50", "p95", "p99")},
        "mean_latency_ms": statistics.fmean(latencies),
    }
    if stored_s is not None:
        figures["stored_chunks_per_s"] = chunks / stored_s
    if cpu_before is not None and cpu_after is not None:
        cpu = {name: cpu_after[name] - cpu_before[name] for name in cpu_before}
        cpu["bench"] = bench_after - bench_before
        figures["cpu_s"] = cpu
        figures["cpu_ms_per_page"] = {name: 1000 * seconds / len(pages) for name, seconds in cpu.items()}
        figures["cpu_bound_pages_per_s"] = cpu_ceiling(figures["cpu_ms_per_page"], usable_cores())
    return figures


def _arrived_keys(result: Any, wanted: Sequence[tuple[str, int]], strategies: Sequence[str]) -> list[Any]:
    """(doc_id, amendment, strategy) of every document's chunks that came; refused ones have none."""
    return [(doc, a, s) for doc, a in wanted for s in strategies if (doc, a, s) in result.arrived]


def _wait_stored(settings: Any, result: Any, timeout: float) -> float:
    from streams.sinks.mongo import MongoSink

    wanted = {r.chunk_id for r in result.records()}
    sink = MongoSink.of(settings)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sink.count() >= len(wanted):
                return time.time()
            time.sleep(0.2)
    finally:
        sink.close()
    raise BenchError(f"MongoDB held fewer than {len(wanted)} chunks after {timeout:.0f}s")


def run_pipeline_bench(
    docs: int = 200,
    strategies: Sequence[str] | None = None,
    partitions: int = 4,
    sinks: Sequence[str] = (),
    scaling: bool = True,
    progress: Progress | None = None,
    broker_kind: str = "noida",
    exactly_once: bool = False,
) -> dict[str, Any]:
    """`pages_per_s`, `chunks_per_s`, `latency_ms`, `in_process_pages_per_s`, `ratio_to_in_process`,
    `scaling`, plus the run's settings and the two-worker run's own figures, on a broker of `broker_kind`."""

    chosen = list(strategies or ["section"])
    unknown = [s for s in chosen if s not in STRATEGIES]
    if unknown:
        raise BenchError(f"unknown strategy {unknown[0]!r}; known: {', '.join(STRATEGIES)}")
    if docs < 1:
        raise BenchError("--docs must be at least 1")
    documents = synthetic_documents(docs, doc_type=bench_doc_type(chosen))
    if progress:
        progress("in-process chunking", 0, 1)
    before = in_process(documents, chosen)
    expected = before["chunks"]
    refused = before["rejected"]
    run = {"progress": progress, "expected_dead": refused, "broker_kind": broker_kind}
    one = end_to_end(documents, chosen, 1, partitions, expected, sinks, **run)
    # This VM's speed drifts by tens of percent over a minute: measure the baseline on both sides of the
    # end-to-end run and keep the faster, so a slow phase cannot flatter the ratio.
    after = in_process(documents, chosen, repeats=2)
    local = max(before, after, key=lambda run: run["pages_per_s"])
    two = end_to_end(documents, chosen, 2, partitions, expected, sinks, **run) if scaling else None
    report: dict[str, Any] = {
        "broker_kind": broker_kind,
        "docs": docs,
        "pages": sum(len(d) for d in documents),
        "strategies": chosen,
        "partitions": partitions,
        "sinks": list(sinks),
        "pages_per_s": one["pages_per_s"],
        "chunks_per_s": one["chunks_per_s"],
        "latency_ms": one["latency_ms"],
        "in_process_pages_per_s": local["pages_per_s"],
        "in_process_chunks_per_s": local["chunks_per_s"],
        "in_process_runs_pages_per_s": [before["pages_per_s"], after["pages_per_s"]],
        "refused_documents": len(refused),  # dead-lettered by a strategy, in process and on the bus alike
        "in_process_cpu_ms_per_page": local["cpu_ms_per_page"],
        "ratio_to_in_process": one["pages_per_s"] / local["pages_per_s"],
        "one_worker": one,
        "scaling": {
            "one_worker_pages_per_s": one["pages_per_s"],
            "two_workers_pages_per_s": two["pages_per_s"] if two else None,
            "ratio": two["pages_per_s"] / one["pages_per_s"] if two else None,
        },
    }
    if two:
        report["two_workers"] = two
    if exactly_once:  # the same one-worker run with Kafka transactions, right after: its cost, same run
        eos = end_to_end(documents, chosen, 1, partitions, expected, sinks, **run, guarantee="exactly_once")
        report["exactly_once"] = eos
        report["exactly_once_vs_at_least_once"] = eos["pages_per_s"] / one["pages_per_s"]
    report["ceilings"] = _ceilings(one, two, local["pages_per_s"])
    report["targets"] = {
        "ratio_to_in_process": {"target": ">= 0.67", "met": report["ratio_to_in_process"] >= 0.67},
    }
    if two:
        report["targets"]["two_workers_scaling"] = {"target": ">= 1.5", "met": report["scaling"]["ratio"] >= 1.5}
    return report


def _ceilings(one: dict[str, Any], two: dict[str, Any] | None, in_process_pages_per_s: float) -> dict[str, Any]:
    """The best each target's ratio could be on this machine, from the CPU every process spent per page."""
    bound_one = one.get("cpu_bound_pages_per_s")
    bound_two = two.get("cpu_bound_pages_per_s") if two else None
    return {
        "cores": usable_cores(),
        "ratio_to_in_process": bound_one / in_process_pages_per_s if bound_one else None,
        "two_workers_scaling": bound_two / one["pages_per_s"] if bound_two else None,
    }


def run_pipeline_bench_on(brokers: Sequence[str], **options: Any) -> dict[str, Any]:
    """The bench on each broker in one run (noida-db first, as the baseline), with Kafka's figures as
    ratios to noida-db's: pages per second and CPU seconds per page, process by process. The exactly-once run
    is Kafka's alone: exactly-once refuses noida-db (streams.settings)."""
    exactly_once = options.pop("exactly_once", False)
    reports = {
        kind: run_pipeline_bench(broker_kind=kind, exactly_once=exactly_once and kind == "kafka", **options)
        for kind in brokers
    }
    if len(reports) == 1:
        return next(iter(reports.values()))
    base, kafka = reports["noida"], reports["kafka"]
    ratios: dict[str, Any] = {"kafka_vs_noida_pages_per_s": kafka["pages_per_s"] / base["pages_per_s"]}
    if base.get("two_workers") and kafka.get("two_workers"):
        ratios["kafka_vs_noida_two_workers_pages_per_s"] = (
            kafka["two_workers"]["pages_per_s"] / base["two_workers"]["pages_per_s"]
        )
    return {"brokers": reports, "ratios": ratios}
