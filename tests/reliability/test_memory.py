"""Memory held by half-assembled documents: the pure `Assembler` with 1,000 documents that each got only
their first page (~4 KB, the size of a dense text page), as when page 1 of many documents arrives long
before the rest.

Why: an assembler replica keeps every incomplete document in memory until its last page; the only bound is
`Limits.max_pending_bytes`. These tests show what that bound costs in Python memory (tracemalloc peak and
RSS, printed; run with `pytest -s`), and that the bound holds after every page, also when pages differ in
size (one eviction per page used to leave the total above the limit).

Each measurement runs in a fresh interpreter: tracemalloc in Python 3.11 can crash the process when it starts
or stops while other threads allocate (fixed upstream in 3.12.9/3.13.2, never in 3.11), and a pytest session
holds threads left by earlier tests (driver monitors, broker clients). A fresh interpreter also keeps those
tests' memory out of the figures.
"""

from __future__ import annotations

import gc
import json
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from streams.core.assembly import Assembler, Completed, Dead, Limits
from tests.conftest import make_pages, page_bytes
from tests.reliability.clean_run import WORDS

DOCS = 1_000
PAGES_PER_DOC = 3
#: The Python overhead allowed on top of the raw page bytes held (headers, dict slots, transient copies).
OVERHEAD = 3.0


def first_page_texts(count: int = DOCS, seed: int = 11) -> list[str]:
    """Page 1 text of each document, 3-5 KB of words (mean ~4 KB)."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        target, parts, size = rng.randint(3_000, 5_000), [], 0
        while size < target:
            word = rng.choice(WORDS)
            parts.append(word)
            size += len(word) + 1
        texts.append(" ".join(parts))
    return texts


def first_pages(texts: list[str]) -> Iterator[bytes]:
    """The wire bytes of page 1 of each multi-page document, built lazily so the measurement sees them
    allocated, as a consumer allocates each message it hands to the assembler."""
    for n, text in enumerate(texts):
        filler = [f"page {p} of mem-{n:04d}" for p in range(2, PAGES_PER_DOC + 1)]
        yield page_bytes(make_pages(f"mem-{n:04d}", [text, *filler])[0])


def rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


@dataclass
class Run:
    raw_bytes: int
    held_peak: int
    evicted: list[Dead]
    traced_peak: int
    rss_growth_kib: int
    max_rss_growth_kib: int
    seconds: float


def feed(assembler: Assembler, texts: list[str]) -> Run:
    """First pages into the assembler under tracemalloc; the pending bound is checked after every page."""
    limit = assembler.limits.max_pending_bytes
    assembler.pending_bytes()  # start the running total, as a worker does after recovery
    evicted: list[Dead] = []
    raw_total = held_peak = 0
    gc.collect()
    rss0, max_rss0 = rss_kib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    started = time.perf_counter()
    try:
        for now_ms, raw in enumerate(first_pages(texts)):
            raw_total += len(raw)
            for outcome in assembler.on_page(raw, partition=0, now_ms=now_ms):
                assert not isinstance(outcome, Completed), "a first page alone completed a multi-page document"
                assert outcome.code == "assembly_capacity", outcome.reason
                # The agent publishes the dead letter and lets go of the bytes; keep only the identity.
                evicted.append(Dead(outcome.code, outcome.reason, outcome.doc_id, [b""] * len(outcome.pages)))
            pending = assembler.pending_bytes()
            assert pending <= limit, f"pending {pending} bytes over the {limit}-byte limit after page {now_ms}"
            held_peak = max(held_peak, pending)
        seconds = time.perf_counter() - started
        _, traced_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return Run(
        raw_bytes=raw_total,
        held_peak=held_peak,
        evicted=evicted,
        traced_peak=traced_peak,
        rss_growth_kib=rss_kib() - rss0,
        max_rss_growth_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - max_rss0,
        seconds=seconds,
    )


def measure(limit: int) -> dict[str, object]:
    """Feed the first pages into a fresh assembler with `limit`; what the tests assert on, as plain data."""
    assembler = Assembler({}, {}, Limits(max_pending_bytes=limit))
    run = feed(assembler, first_page_texts())
    report("within the limit" if not run.evicted else "over the limit", run, assembler)
    return {
        "run": asdict(run) | {"evicted": [[dead.doc_id, len(dead.pages)] for dead in run.evicted]},
        "pending": assembler.pending_bytes(),
        "open_ids": sorted({key.split("\x1f")[0] for key in assembler.pages}),
        "headers": len(assembler.headers),
    }


def measured(limit: int) -> dict[str, object]:
    """`measure(limit)` in a fresh interpreter (see the module docstring); its report goes to our stdout."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "tests.reliability.test_memory", str(limit)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    print("\n".join(lines[:-1]))
    return json.loads(lines[-1])


def report(title: str, run: Run, assembler: Assembler) -> None:
    print(
        f"\n{title}: {DOCS} first pages, {run.raw_bytes / 1e6:.2f} MB raw "
        f"(mean {run.raw_bytes / DOCS:.0f} B/page); limit {assembler.limits.max_pending_bytes / 1e6:.2f} MB; "
        f"pending now {assembler.pending_bytes() / 1e6:.2f} MB, peak {run.held_peak / 1e6:.2f} MB; "
        f"evicted {len(run.evicted)}; tracemalloc peak {run.traced_peak / 1e6:.2f} MB "
        f"({run.traced_peak / max(run.held_peak, 1):.2f}x the pending peak); "
        f"RSS +{run.rss_growth_kib / 1024:.1f} MiB (max RSS +{run.max_rss_growth_kib / 1024:.1f} MiB); "
        f"{run.seconds:.2f}s"
    )


def test_thousand_half_assembled_documents_cost_little_over_their_bytes() -> None:
    """Under the limit nothing is evicted: every first page is held, at a bounded Python overhead."""
    got = measured(64_000_000)
    run = got["run"]
    assert not run["evicted"]
    assert got["pending"] == run["raw_bytes"] == run["held_peak"]
    assert len(got["open_ids"]) == DOCS and got["headers"] == DOCS
    assert 3_000 * DOCS < run["raw_bytes"] < 6_000 * DOCS  # realistic page sizes, ~4 KB
    assert run["traced_peak"] < OVERHEAD * run["raw_bytes"]


def test_pending_bytes_limit_holds_after_every_page() -> None:
    """Over the limit the oldest documents are dead-lettered (never dropped) until the total fits again."""
    limit = 1_500_000  # ~37% of the raw bytes: about 640 of the 1,000 documents must go
    got = measured(limit)
    run = got["run"]
    open_ids = set(got["open_ids"])
    evicted_ids = [doc_id for doc_id, _ in run["evicted"]]
    # Oldest first, each exactly once, each with its page; every document is either held or evicted.
    assert evicted_ids == [f"mem-{n:04d}" for n in range(len(evicted_ids))]
    assert all(pages == 1 for _, pages in run["evicted"])
    assert open_ids.isdisjoint(evicted_ids) and len(open_ids) + len(evicted_ids) == DOCS
    assert run["raw_bytes"] > 2 * limit and limit - 6_000 < run["held_peak"] <= limit
    assert run["traced_peak"] < OVERHEAD * limit


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]))))
