"""`streams bench corrections`: what each correction of the faust transport prevents on a given broker.

Documents flow through the assembler and a chunker while replicas of both keep joining and leaving (a
rebalance every few seconds, one leave in three a SIGKILL). The same run is made with the transport as it
is and then with corrections taken away (`uncorrect`: the named points fall back to faust's and aiokafka's
code as released). For each it counts the documents whose chunks never arrived while the churn went on
and for 90 s after (`stalled`), and those still missing after every worker was restarted from its
group's committed offsets (`lost`: committed without being processed), and of those how many never
became a document (lost by the assembler rather than the chunker). Re-published chunk records are
counted too; they are harmless (ids are deterministic) but show what a rebalance re-did.

A loss needs a rebalance at the wrong moment, so a run without a correction that loses nothing is weak
evidence that the correction is not needed; a run with a loss is proof that it is."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from streams.bench import BenchError, Progress
from streams.bench.pipeline import synthetic_documents
from streams.settings import Settings

#: Points of `streams/agents/transport.py` that a worker can run without (8 and 9 are about CPU, 11 about
#: exactly-once; each has its own measurement).
POINTS = (1, 2, 3, 4, 5, 6, 7, 10)
UNCORRECTED_DIR = Path(__file__).with_name("uncorrected")
STRATEGY = "window"


def parse_points(text: str) -> frozenset[int]:
    """`all`, `none` or a comma list of points (`1,4`)."""
    text = text.strip()
    if text == "all":
        return frozenset(POINTS)
    if text in ("", "none"):
        return frozenset()
    try:
        points = frozenset(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise BenchError(f"--without: 'all', 'none' or points such as 1,4, not {text!r}") from None
    if unknown := sorted(points - set(POINTS)):
        raise BenchError(f"--without: no point {unknown[0]}; choose from {', '.join(map(str, POINTS))}")
    return points


def uncorrect(points: Iterable[int]) -> None:
    """Take the named points away in this process, before the worker's app is built: each falls back to
    the released code it corrects. Taking point 2 away also stops the positions points 4 and 6 read, and
    point 4 takes point 7's net (it lives in the commit rule) with it."""
    from streams.agents import transport
    from streams.agents.transport import SeekingConsumer, SeekingConsumerThread

    def nothing(*_args: object, **_kwargs: object) -> None:
        return None

    async def keep(_self: object, records: Any, _active: object) -> Any:
        return records

    points = set(points)
    if 1 in points:  # faust acks a message its stream skipped mid-rebalance
        del SeekingConsumer.ack
    if 2 in points:  # aiokafka seeks no partition without a commit
        del SeekingConsumerThread.seek_to_committed
    if 3 in points:  # faust discards records of a partition it does not consider active
        SeekingConsumer._keep_paused_batches = keep  # type: ignore[method-assign]
    if 4 in points:  # faust's commit rule and its Cython stream iterator
        del SeekingConsumer._new_offset
        transport._use_python_stream_iterator = nothing  # type: ignore[assignment]
    if 5 in points:  # what resuming flow empties from the stream queues is forgotten
        SeekingConsumer._refetch_cleared_queues = nothing  # type: ignore[method-assign]
    if 6 in points:  # a jump in offsets is taken as records that do not exist
        del SeekingConsumer._add_gap
        SeekingConsumer._check_heads = nothing  # type: ignore[method-assign]
    if 7 in points:  # a cut-short hand-over counts as read; no net under a held commit
        SeekingConsumer._catch_cut_short_hand_overs = nothing  # type: ignore[method-assign]
        SeekingConsumer._held_before = nothing  # type: ignore[method-assign]
    if 10 in points:  # aiokafka's coordinator routine dies on an empty SyncGroup assignment
        transport._rejoin_on_empty_assignment = nothing  # type: ignore[assignment]


def label(points: frozenset[int]) -> str:
    if not points:
        return "none"
    return "all" if points == frozenset(POINTS) else ",".join(map(str, sorted(points)))


def run_churn(
    without: frozenset[int],
    docs: int,
    broker_kind: str,
    data_dir: Path,
    progress: Progress,
    seed: int = 23,
    settle_s: float = 90.0,
    min_churns: int = 4,
) -> dict[str, Any]:
    """One churn run (see the module's docstring) on its own broker and data directory."""
    from streams.ops.pipeline import Collector, LocalPipeline, publish_pages

    env = {"PYTHONPATH": str(UNCORRECTED_DIR), "UNCORRECTED_POINTS": label(without)} if without else {}
    documents = synthetic_documents(docs, seed=seed)
    warm = synthetic_documents(1, seed=seed + 1)[0]
    settings = Settings(
        data_dir=data_dir, broker_kind=broker_kind, partitions=6, assembly_timeout_s=600.0, sweep_interval_s=0.5
    )
    name = f"without {label(without)}" if without else "corrected"
    started = time.monotonic()
    with LocalPipeline(settings, [STRATEGY], worker_env=env) as pipeline:
        live = pipeline.settings
        collector = Collector(live, watch_documents=True)
        try:
            publish_pages(live, warm)
            collector.wait([(warm[0].doc_id, 0)], [STRATEGY], timeout=180)
            pages = [page for doc in documents for page in doc]
            batches = [pages[i : i + 8] for i in range(0, len(pages), 8)]
            published = threading.Event()

            def steady() -> None:  # pages of neighbouring documents in flight together, four a beat
                for batch in batches:
                    publish_pages(live, batch)
                    time.sleep(0.25)
                published.set()

            publisher = threading.Thread(target=steady, daemon=True)
            publisher.start()
            churns = 0
            roles = (f"chunker:{STRATEGY}", "assembler")
            while not published.is_set() or churns < min_churns:  # as many on a fast machine as on a slow one
                role = roles[churns % 2]
                churns += 1
                progress(f"{name}: rebalance {churns}", churns, len(batches) // 20 + 1)
                pipeline.start_worker(role, replica=2)
                time.sleep(3.0)
                pipeline.stop_worker(f"{role}#2", kill=churns % 3 == 0)
                time.sleep(2.0)
            publisher.join()
            wanted = [doc[0].doc_id for doc in documents]

            def missing() -> list[str]:
                collector.poll(1.0)
                return [d for d in wanted if not collector.result.complete(d, 0, STRATEGY)]

            def wait_missing(seconds: float) -> list[str]:
                deadline = time.monotonic() + seconds
                left = missing()
                while left and time.monotonic() < deadline:
                    left = missing()
                return left

            progress(f"{name}: settling", 0, 1)
            stalled = wait_missing(settle_s)
            lost = stalled
            if stalled:  # restarted from the committed offsets: what is still missing was committed unread
                progress(f"{name}: restarting every worker", 0, 1)
                for key in list(pipeline.workers):
                    pipeline.stop_worker(key)
                pipeline.start_worker("assembler")
                pipeline.start_worker(f"chunker:{STRATEGY}")
                lost = wait_missing(settle_s + 30)
            return {
                "without": label(without),
                "docs": docs,
                "rebalances": 2 * churns,
                "stalled": len(stalled),
                "lost": len(lost),
                "lost_ids": lost[:10],
                # where each was lost: its pages never made a document, or its document was never chunked
                "lost_unassembled": sum((d, 0) not in collector.documents_seen for d in lost),
                "republished": collector.result.duplicates,
                "seconds": round(time.monotonic() - started, 1),
            }
        finally:
            collector.close()


def run_corrections_bench(
    broker_kind: str, docs: int, withouts: Sequence[str], runs: int, progress: Progress, data_dir: Path | None = None
) -> dict[str, Any]:
    """The corrected transport first (the baseline), then each `--without` set, `runs` times each."""
    import tempfile

    sets = [frozenset()] + [parse_points(text) for text in withouts]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="streams-corrections-", dir=data_dir) as scratch:
        for n, points in enumerate(sets):
            for run in range(runs):
                results.append(run_churn(points, docs, broker_kind, Path(scratch) / f"{n}-{run}", progress))
    return {"bench": "corrections", "broker_kind": broker_kind, "docs": docs, "runs": results}
