"""`streams demo`: the whole flow on the embedded default, showing what moves while it runs, then a summary."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from streams.core.chunkers import STRATEGIES
from streams.ingest.files import page_events
from streams.ops.embedded import ServiceError
from streams.ops.pipeline import Collected, Collector, LocalPipeline, publish_pages, sample_paths
from streams.runtime.procs import group_cpu_s
from streams.settings import Settings
from streams.sinks.base import is_table

#: What the demo runs: every registered strategy (a live view of the registry).
DEFAULT_DEMO = STRATEGIES

LOG_EVERY_S = 5.0  # without a terminal: one plain line at most this often


@dataclass
class DemoCounts:
    """What the live view shows; every figure is read from the bus or the stores, none is estimated."""

    stage: str = "starting"
    pages: int = 0
    pages_total: int = 0
    documents: int = 0
    assembled: int = 0
    chunks: dict[str, int] = field(default_factory=dict)
    chunked: dict[str, int] = field(default_factory=dict)  # documents complete per strategy
    rows: int = 0
    rows_wanted: int | None = None
    vectors: int = 0
    vectors_wanted: int | None = None
    dead: int = 0

    def line(self) -> str:
        chunks = ", ".join(f"{s} {n}" for s, n in self.chunks.items())
        return (
            f"{self.stage}: pages {self.pages}/{self.pages_total}, assembled {self.assembled}/{self.documents}, "
            f"chunks [{chunks}], stored {self.rows}, vectors {self.vectors}, dead letters {self.dead}"
        )


class DemoView:
    """A live rich table in a terminal; plain log lines every few seconds otherwise."""

    def __init__(self, console: Console, counts: DemoCounts, started: float) -> None:
        self.console, self.counts, self.started = console, counts, started
        self.live = Live(console=console, refresh_per_second=4, transient=True) if console.is_terminal else None
        self._last_line = 0.0

    def __enter__(self) -> DemoView:
        if self.live:
            self.live.__enter__()
        self.show()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.live.__exit__(None, None, None)

    def stage(self, text: str) -> None:
        self.counts.stage = text
        self.show(force=True)

    def show(self, force: bool = False) -> None:
        if self.live:
            self.live.update(self._render())
        elif force or time.monotonic() - self._last_line >= LOG_EVERY_S:
            self._last_line = time.monotonic()
            elapsed = time.monotonic() - self.started
            self.console.print(f"[{elapsed:5.1f}s] {self.counts.line()}", markup=False, highlight=False, soft_wrap=True)

    def _render(self) -> Group:
        c = self.counts
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
        table.add_column("")
        table.add_column("count", justify="right")
        table.add_column("of", justify="right")
        table.add_row("pages published", str(c.pages), str(c.pages_total))
        table.add_row("documents assembled", str(c.assembled), str(c.documents))
        for strategy, chunks in c.chunks.items():
            table.add_row(f"  {strategy}: chunks (documents done)", f"{chunks} ({c.chunked.get(strategy, 0)})", "")
        table.add_row("rows stored (MongoDB)", str(c.rows), "" if c.rows_wanted is None else str(c.rows_wanted))
        table.add_row("vectors written", str(c.vectors), "" if c.vectors_wanted is None else str(c.vectors_wanted))
        table.add_row("dead letters", str(c.dead), "")
        elapsed = time.monotonic() - self.started
        return Group(f"[bold]streams demo[/] {c.stage} [dim]{elapsed:.0f}s[/]", table)


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
    chosen = strategies or list(DEFAULT_DEMO)
    unknown = [s for s in chosen if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {unknown[0]!r}; known: {', '.join(STRATEGIES)}")
    documents = [page_events(p) for p in (paths or sample_paths())]
    pages = [e for doc in documents for e in doc]
    docs = sorted({(e.doc_id, e.amendment_number) for e in pages})
    counts = DemoCounts(pages_total=len(pages), documents=len(docs), chunks={s: 0 for s in chosen})
    try:
        settings = settings.model_copy(update={"sink_assignment": "manual"})  # one replica per sink
        with DemoView(console, counts, started) as view:
            pipeline = LocalPipeline(
                settings,
                chosen,
                sinks=["mongo", "vectors"] if sinks else [],
                on_stage=view.stage,
                supervise=True,
                on_event=lambda line: console.print(line, markup=False, highlight=False),
            )
            with pipeline:
                view.stage("publishing")
                published_at = time.time()

                def sent(n: int) -> None:
                    counts.pages = n
                    view.show()

                publish_pages(pipeline.settings, pages, on_sent=sent)
                view.stage("chunking")
                collector = Collector(pipeline.settings, watch_documents=True, watch_indexed=sinks)
                try:
                    result, stored = _follow(pipeline, collector, docs, chosen, sinks, timeout, counts, view)
                finally:
                    collector.close()
                cpu = {role: round(group_cpu_s(pid), 1) for role, pid in sorted(pipeline.pids().items())}
                cpu["demo"] = round(time.process_time(), 1)
                view.stage("stopping")
    finally:
        if not keep:
            shutil.rmtree(settings.data_dir, ignore_errors=True)
    return {
        "broker_kind": settings.broker_kind,
        "documents": len(docs),
        "pages": len(pages),
        "chunks": {s: counts.chunks.get(s, 0) for s in chosen},
        "dead_letters": len(result.dead),
        **stored,
        "seconds": round(time.monotonic() - started, 2),
        "cpu_seconds": cpu,
        "strategies": per_strategy(result, chosen, published_at),
    }


def _follow(
    pipeline: LocalPipeline,
    collector: Collector,
    docs: list[tuple[str, int]],
    chosen: list[str],
    sinks: bool,
    timeout: float,
    counts: DemoCounts,
    view: DemoView,
) -> tuple[Collected, dict]:
    """Until every document is chunked by every strategy (or dead-lettered) and, with sinks, `documents.indexed`
    reports each complete in both stores and their latest flags are final; then at once."""
    stores = _StoreCounts(pipeline) if sinks else None
    deadline = time.monotonic() + timeout
    result = collector.result
    want: dict | None = None
    got = {"mongo": (0, 0), "vectors": (0, 0)}
    try:
        while time.monotonic() < deadline:
            pipeline.check_workers()
            if failed := pipeline.failed():
                raise ServiceError(f"{failed[0].role} failed and was not restarted: {failed[0].last_exit}")
            collector.poll(0.5)
            counts.assembled = len(collector.documents_seen)
            counts.dead = len(result.dead)
            for strategy in chosen:
                counts.chunks[strategy] = sum(len(v) for (_, _, s), v in result.chunks.items() if s == strategy)
                counts.chunked[strategy] = sum(1 for d, a in docs if result.complete(d, a, strategy))
            settled = result.settled(docs, chosen)
            if settled and want is None:
                want = _wanted(result.records())
                counts.rows_wanted, counts.vectors_wanted = want["mongo"][0], want["vectors"][0]
                if sinks:
                    view.stage("storing")
            if stores is not None:
                # progress from `documents.indexed`; the stores are queried only once it says all is there
                indexed = collector.indexed
                counts.rows = sum(n for (_, _, _, store), n in indexed.items() if store == "mongo")
                counts.vectors = sum(n for (_, _, _, store), n in indexed.items() if store == "vectors")
                complete = [(d, a, s) for d, a in docs for s in chosen if result.complete(d, a, s)]
                if settled and all((*k, store) in indexed for k in complete for store in ("mongo", "vectors")):
                    got = stores.read()  # and the flips of older amendments, which no event covers
            view.show()
            if settled and (not sinks or got == want):
                break
        else:
            missing = [
                f"{d}@{a}/{s}"
                for d, a in docs
                for s in chosen
                if not result.complete(d, a, s) and (d, a, s) not in result.skipped
            ]
            what = f"{len(missing)} outputs: {', '.join(missing[:5])}" if missing else "the sinks"
            raise ServiceError(f"timed out after {timeout:.0f}s waiting for {what}")
    finally:
        if stores is not None:
            stores.close()
    if not sinks:
        return result, {}
    return result, {
        "mongo": {"chunks": got["mongo"][0], "latest": got["mongo"][1]},
        "vectors": {"vectors": got["vectors"][0], "latest": got["vectors"][1]},
    }


class _StoreCounts:
    """Rows and vectors stored so far, read at most once a second (each read is a query to each store)."""

    def __init__(self, pipeline: LocalPipeline) -> None:
        from streams.sinks.mongo import MongoSink

        self.pipeline = pipeline
        self.mongo = MongoSink.of(pipeline.settings)
        self._last = 0.0
        self._got = {"mongo": (0, 0), "vectors": (0, 0)}

    def read(self) -> dict[str, tuple[int, int]]:
        if time.monotonic() - self._last < 1.0:
            return self._got
        self._last = time.monotonic()
        from streams.sinks.lance_target import LanceTarget

        self._got["mongo"] = (self.mongo.count(), self.mongo.count(latest_only=True))
        try:
            lance = LanceTarget(self.pipeline.settings.lance_dir, self.pipeline.settings.lance_table)
            self._got["vectors"] = (lance.count(), lance.count(latest_only=True))
        except Exception:  # the table appears with the first batch
            self._got["vectors"] = (0, 0)
        return dict(self._got)

    def close(self) -> None:
        self.mongo.close()


def _wanted(records: list) -> dict[str, tuple[int, int]]:
    """What the stores hold once complete: every chunk in MongoDB, every non-table chunk as a vector."""

    latest_ids = _latest_ids(records)
    return {
        "mongo": (len(records), len(latest_ids)),
        "vectors": (
            sum(1 for r in records if not is_table(r)),
            sum(1 for r in records if not is_table(r) and r.chunk_id in latest_ids),
        ),
    }


def _latest_ids(records: list) -> set[str]:
    """Chunks of the newest amendment of each document, per strategy."""
    newest: dict[tuple[str, str], int] = {}
    for r in records:
        key = (r.doc_id, r.strategy)
        newest[key] = max(newest.get(key, -1), r.amendment_number)
    return {r.chunk_id for r in records if r.amendment_number == newest[(r.doc_id, r.strategy)]}


def output_digest(records: list) -> str:
    """One hash of a strategy's whole output (every chunk id with its checksum), so two runs, on two
    brokers say, show in one short string whether they published the same records byte for byte."""
    import hashlib

    lines = sorted(f"{r.chunk_id} {r.checksum}" for r in records)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def per_strategy(result: Collected, chosen: list[str], published_at: float) -> dict[str, dict]:
    """Documents, chunks, mean and max tokens, and seconds from publishing to the strategy's last chunk."""
    table: dict[str, dict] = {}
    for strategy in chosen:
        records = [r for (_, _, s), slot in result.chunks.items() if s == strategy for r in slot.values()]
        tokens = [r.token_count for r in records]
        last = max((t for (_, _, s), t in result.arrived.items() if s == strategy), default=published_at)
        table[strategy] = {
            "digest": output_digest(records),
            "documents": len({(r.doc_id, r.amendment_number) for r in records}),
            "skipped": sum(1 for (_, _, s) in result.skipped if s == strategy),
            "chunks": len(records),
            "mean_tokens": round(sum(tokens) / len(tokens), 1) if tokens else 0.0,
            "max_tokens": max(tokens, default=0),
            "seconds": round(max(0.0, last - published_at), 1),
        }
    return table


def print_summary(summary: dict, out: Console, err: Console, kept: Path | None) -> None:
    broker = "Apache Kafka" if summary.get("broker_kind") == "kafka" else "noida-db"
    table = Table(title=f"streams demo: {summary['documents']} documents, {summary['pages']} pages, on {broker}")
    for column in (
        "strategy",
        "documents",
        "not for it",
        "chunks",
        "mean tokens",
        "max tokens",
        "seconds",
        "output digest",
    ):
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for strategy, row in summary["strategies"].items():
        table.add_row(
            strategy,
            str(row["documents"]),
            str(row["skipped"]),
            str(row["chunks"]),
            f"{row['mean_tokens']:.0f}",
            str(row["max_tokens"]),
            f"{row['seconds']:.1f}",
            row["digest"],
        )
    out.print(table)
    line = f"dead letters: {summary['dead_letters']}; {summary['seconds']:.1f}s in all"
    if "mongo" in summary:
        line += (
            f"; MongoDB {summary['mongo']['chunks']} rows ({summary['mongo']['latest']} latest),"
            f" vectors {summary['vectors']['vectors']} ({summary['vectors']['latest']} latest)"
        )
    out.print(line, highlight=False)
    if kept:
        err.print(f"kept {kept} (streams broker --data-dir {kept})")
    err.print(
        "next: `streams up` keeps this stack running; from another terminal `streams publish FILE`, "
        '`streams search "your question"`, `streams tail --topic chunks.created`, `streams lag`',
        highlight=False,
    )
    err.print(
        "console: `streams up` also serves a web console (the address on its `console:` line, and `ui` in "
        "var/up.json): each document with its chunk boundaries, traces, lag, dead letters, search",
        highlight=False,
    )
