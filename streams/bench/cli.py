"""`streams bench chunk|quality`. Imported by `streams.cli` at start-up, so nothing heavy (torch,
LangChain, chonkie, docling) is imported here: each command imports what it runs."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

bench_app = typer.Typer(
    help="Benchmarks: chunking throughput beside other libraries, retrieval quality on gold spans.",
    no_args_is_help=True,
)
err = Console(stderr=True)
out = Console()

SHARED_CORPORA = Path("shared") / "corpora"
QUALITY_CORPUS = SHARED_CORPORA / "chunking_eval"


CorpusOpt = Annotated[Path | None, typer.Option("--corpus", help="Folder of documents (default: see the command).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]


@contextmanager
def _progress() -> Iterator[Callable[[str, int, int], None]]:
    """A transient rich bar on stderr; stdout stays clean for --json."""
    from streams.ops.progress import progress_bar

    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # the model loader's bars would fight ours
    with progress_bar(err) as bar:
        task = bar.add_task("starting", total=None)

        def update(description: str, completed: int, total: int) -> None:
            bar.update(task, description=description, completed=completed, total=total)

        yield update


def _emit_json(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload, sort_keys=True, default=_plain) + "\n")


def _plain(value: object) -> object:
    """numpy scalars (a comparison of two numpy floats is a numpy bool) as Python values: a long run must
    not end in a serialisation error."""
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


@bench_app.command("chunk")
def chunk(
    corpus: CorpusOpt = None,
    as_json: JsonOpt = False,
    strategy: Annotated[
        list[str] | None, typer.Option("--strategy", "-s", help="Strategy to measure (repeatable; default all).")
    ] = None,
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Timed passes; the best one counts.")] = 3,
    max_files: Annotated[
        int | None, typer.Option("--max-files", min=1, help="Only the first N files of the corpus (sorted).")
    ] = None,
) -> None:
    """Chunking throughput (MB/s, one core) beside the baselines; default corpus: the shipped samples."""
    from streams.bench.chunk import run_chunk_bench

    with _progress() as update:
        report = run_chunk_bench(corpus, strategy, repeat, max_files=max_files, progress=update)
    if as_json:
        _emit_json(report)
        return
    size = f"{report['corpus_bytes']:,} bytes, {report['documents']} docs"
    table = Table(title=f"bench chunk: {report['corpus']} ({size})")
    for column in ("name", "kind", "MB/s", "chunks", "mean tok", "max tok", "skipped"):
        table.add_column(column, justify="left" if column in {"name", "kind"} else "right", no_wrap=column == "name")
    for r in report["results"]:
        table.add_row(
            r["name"],
            r["kind"],
            f"{r['mb_per_s']:.3f}",
            str(r["chunks"]),
            f"{r['mean_tokens']:.0f}",
            str(r["max_tokens"]),
            str(r["skipped"]),
        )
    out.print(table)
    for key, value in report["ratios"].items():
        verdict = report["targets"].get(key)
        if verdict is None:
            out.print(f"{key}: {value}")
        else:
            out.print(f"{key}: {value} (target {verdict['target']} {'met' if verdict['met'] else 'missed'})")
    for name, reason in report["unavailable"].items():
        err.print(f"[yellow]{name} not measured:[/] {reason}", highlight=False)


def _quality_corpus(corpus: Path | None, default: Path = QUALITY_CORPUS) -> Path:
    """--corpus, else ../shared/corpora/chunking_eval from the working directory or the checkout."""
    if corpus is not None:
        return corpus
    for base in (Path.cwd().parent, Path(__file__).resolve().parents[3]):
        if (base / default).is_dir():
            return base / default
    return Path("..") / default


@bench_app.command("quality")
def quality(
    corpus: CorpusOpt = None,
    as_json: JsonOpt = False,
    k: Annotated[int, typer.Option("--k", min=1, help="Chunks retrieved per question.")] = 5,
    strategy: Annotated[
        list[str] | None, typer.Option("--strategy", "-s", help="Strategy to score (repeatable; default all).")
    ] = None,
    baselines: Annotated[
        bool, typer.Option("--baselines/--no-baselines", help="Score LangChain and chonkie beside the strategies.")
    ] = True,
    corpora: Annotated[
        list[str] | None,
        typer.Option(
            "--corpora",
            help="Corpora in the pool, comma-separated or repeated: chroma (default), gold (the project's own "
            "tuning pool, streams/bench/gold), holdout (gold corpora never tuned on), or one gold corpus by "
            "name. All selected corpora share one retrieval pool.",
        ),
    ] = None,
    shared: Annotated[
        Path | None,
        typer.Option("--shared-corpora", help="Where the gold corpora's sources are (default ../shared/corpora)."),
    ] = None,
    loco: Annotated[
        bool,
        typer.Option("--loco", help="Leave one corpus out: options chosen on the other corpora, scored on each."),
    ] = False,
    contextual: Annotated[
        bool,
        typer.Option("--contextual", help="Also score each strategy with its nearest heading prepended for embedding."),
    ] = False,
    variants: Annotated[
        list[str] | None,
        typer.Option(
            "--variants",
            help="Score semantic and cluster again on the pool in other shapes: lowercased, flat (no headings or "
            "blank lines), wrapped80, one_paragraph, plain (all at once), or all.",
        ),
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            min=1,
            help="Forward-pass threads (default: STREAMS_EMBED_THREADS if set, else every core this process may "
            "use). The figures do not depend on it; only the time does.",
        ),
    ] = None,
    vectors: Annotated[
        Path | None,
        typer.Option(
            "--vectors",
            help="A SQLite file that keeps the vectors between runs, so a re-run embeds only the texts it has not "
            "seen (after a chunker change: that chunker's). The figures are the same with it or without.",
        ),
    ] = None,
    chunk_backend: Annotated[
        str | None,
        typer.Option(
            "--chunk-backend",
            help="Embed the chunks with this backend (onnx-int8, torch) and the questions with the default, as "
            "a retriever that keeps the original model reads a store the vector sink filled.",
        ),
    ] = None,
) -> None:
    """Retrieval recall/precision/IoU on gold spans (Chroma's method); default ../shared/corpora/chunking_eval."""
    from streams.bench import environment, kept_vectors, usable_cores
    from streams.bench.quality import CHROMA, run_quality

    # Quality, unlike speed, is measured on every core: the vectors are the same bytes on any thread count
    # (test_onnx_backend.py) and the bench is 96% forward pass (docs/benchmarks.md, Retrieval quality).
    chosen = threads if threads is not None else os.environ.get("STREAMS_EMBED_THREADS") or usable_cores()
    kept = kept_vectors(vectors) if vectors is not None else nullcontext()
    with environment(STREAMS_EMBED_THREADS=str(chosen)), kept, _progress() as update:
        report = run_quality(
            _quality_corpus(corpus),
            k,
            strategy,
            baselines,
            progress=update,
            corpora=corpora or [CHROMA],
            shared=_quality_corpus(shared, SHARED_CORPORA),
            loco=loco,
            contextual=contextual,
            variants=variants or (),
            chunk_backend=chunk_backend,
        )
    if as_json:
        _emit_json(report)
        return
    worst = Table(title="worst corpus of each candidate (printed first: a mean can hide it)")
    for column in ("name", "worst corpus", "recall", "IoU", "mean tok", "max tok"):
        worst.add_column(column, justify="left" if column in {"name", "worst corpus"} else "right", no_wrap=True)
    for r in sorted(report["results"], key=lambda r: r.get("worst_corpus", {}).get("recall", 1.0)):
        w = r.get("worst_corpus")
        if w:
            worst.add_row(
                r["name"],
                w["corpus"],
                f"{w['recall']:.3f}",
                f"{w['iou']:.4f}",
                f"{w['mean_tokens']:.0f}",
                str(w["max_tokens"]),
            )
    out.print(worst)
    table = Table(title=f"bench quality: {report['questions']} questions, k={report['k']}")
    for column in ("name", "kind", "recall", "precision", "IoU", "mean tok", "max tok", "chunks", "long"):
        table.add_column(column, justify="left" if column in {"name", "kind"} else "right", no_wrap=column == "name")
    for r in report["results"]:
        table.add_row(
            r["name"],
            r["kind"],
            f"{r['recall']:.3f}",
            f"{r['precision']:.4f}",
            f"{r['iou']:.4f}",
            f"{r['mean_tokens']:.0f}",
            str(r.get("max_tokens", "")),
            str(r["chunks"]),
            str(r.get("long_chunks", "")),
        )
    out.print(table)
    _per_corpus_table(report)
    for name, held in report.get("loco", {}).items():
        table = Table(title=f"{name}: leave one corpus out (options chosen on the others; worst first)")
        for column in ("held-out corpus", "options chosen", "recall", "IoU", "mean tok", "max tok"):
            table.add_column(column, justify="left" if column in {"held-out corpus", "options chosen"} else "right")
        for cid, row in held["held_out"].items():
            options = ", ".join(f"{k}={v}" for k, v in row["options"].items()) or "defaults"
            table.add_row(
                cid,
                options,
                f"{row['recall']:.3f}",
                f"{row['iou']:.4f}",
                f"{row['mean_tokens']:.0f}",
                str(row["max_tokens"]),
            )
        out.print(table)
    if report["targets"]:
        t = report["targets"]
        out.print(f"best strategy {t['best_strategy']} vs {t['compared_with']}: {'met' if t['met'] else 'missed'}")
        _verdicts(t)
    for variant, part in report.get("variants", {}).items():
        dropped = f", {part['dropped_questions']} dropped with their evidence" if part["dropped_questions"] else ""
        out.print(f"[bold]variant {variant}[/] ({part['questions']} questions{dropped})")
        for r in part["results"]:
            size = f"mean {r['mean_tokens']:.0f} tok"
            if "retrieved_tokens" in r:
                size += f", retrieved {r['retrieved_tokens']:.0f}"
            out.print(f"  {r['name']}: recall {r['recall']:.3f}, IoU {r['iou']:.4f}, {size}")
        _verdicts(part["targets"], indent="  ")
        for name, reason in part["skipped"].items():
            err.print(f"  [yellow]{variant}: {name} skipped:[/] {reason}", highlight=False)
    for name, reason in report["skipped"].items():
        err.print(f"[yellow]{name} skipped:[/] {reason}", highlight=False)


@bench_app.command("gold")
def gold(
    name: Annotated[str, typer.Argument(help="Corpus name: the file written is NAME.json.")],
    evidence: Annotated[
        Path, typer.Option("--evidence", help='JSON lines {"question": ..., "evidence": [verbatim text, ...]}.')
    ],
    source: Annotated[
        str | None, typer.Option("--source", help="The document, relative to the shared corpora folder.")
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="What kind of document it is, in a few words.")] = None,
    build: Annotated[
        str | None, typer.Option("--build", help="text (the file as text; default) or ingest (the PDF ingest path).")
    ] = None,
    held_out: Annotated[
        bool | None,
        typer.Option("--held-out/--tuning", help="Keep it out of the tuning pool (--corpora gold); the default."),
    ] = None,
    shared: Annotated[Path | None, typer.Option("--shared-corpora", help="Default ../shared/corpora.")] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Folder to write to (default streams/bench/gold).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file of that name.")] = False,
    append: Annotated[
        bool,
        typer.Option(
            "--append",
            help="Add the questions to the existing NAME.json, whose questions, offsets, source and settings stay.",
        ),
    ] = False,
    joins: Annotated[
        str | None,
        typer.Option(
            "--joins",
            help="One of Chroma's corpora (chunking_eval) the questions add to: --source defaults to its file, "
            "its own questions count toward the minimum, and the file joins the tuning pool.",
        ),
    ] = None,
) -> None:
    """Write a gold-span corpus file from questions with verbatim evidence. The file holds offsets and
    hashes only; keep the evidence file outside the repository (it quotes the document)."""
    from streams.bench import BenchError
    from streams.bench.gold import GoldCorpus, build_document, corpus_from_evidence, dump_gold, read_gold
    from streams.bench.quality import chroma_questions, chroma_source

    folder = out_dir or Path(__file__).resolve().parent / "gold"
    target = folder / f"{name}.json"
    if append:
        if not target.exists():
            raise BenchError(f"{target} does not exist; nothing to --append to")
        base = read_gold(target)
        given = {
            "--source": (source, base.source),
            "--kind": (kind, base.kind),
            "--build": (build, base.build),
            "--held-out/--tuning": (held_out, base.held_out),
            "--joins": (joins, base.joins),
        }
        clash = [
            f"{flag} {new!r} (the file has {old!r})"
            for flag, (new, old) in given.items()
            if new is not None and new != old
        ]
        if clash:
            raise BenchError(f"--append keeps the file's settings; drop {', '.join(clash)}")
        source, kind, build, held_out, joins = base.source, base.kind, base.build, base.held_out, base.joins
    elif target.exists() and not force:
        raise BenchError(f"{target} exists; --force replaces it, --append adds to it")
    root = _quality_corpus(shared, SHARED_CORPORA)
    if joins and source is None:  # Chroma's own file of that corpus, whatever its suffix
        source = chroma_source(root / QUALITY_CORPUS.name, joins).relative_to(root).as_posix()
    if source is None or kind is None:
        raise BenchError("a new corpus needs --source and --kind")
    build, held_out = build or "text", (joins is None) if held_out is None else held_out
    try:
        rows = [json.loads(line) for line in evidence.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not all(isinstance(row, dict) for row in rows):
            raise ValueError("every line must be one JSON object")
        stub = GoldCorpus(name, kind, source, build, "", 0, ())
        text, _ = build_document(stub, root)
        asked = chroma_questions(root / QUALITY_CORPUS.name, joins, text) if joins else 0
        kept = base.questions if append else ()
        corpus, problems = corpus_from_evidence(
            name, kind, source, build, text, rows, held_out, kept, joins=joins, asked=asked
        )
    except (OSError, ValueError) as exc:  # GoldError and JSON errors are ValueErrors
        raise BenchError(f"{evidence}: {exc}") from exc
    if problems:
        for problem in problems:
            err.print(problem, highlight=False, markup=False)
        raise BenchError(f"{len(problems)} problem(s); nothing written")
    folder.mkdir(parents=True, exist_ok=True)
    target.write_text(dump_gold(corpus), encoding="utf-8")
    spans = sum(len(q.spans) for q in corpus.questions)
    out.print(f"wrote {target}: {len(corpus.questions)} questions, {spans} spans, {corpus.text_chars} characters")


def _verdicts(targets: dict[str, Any], indent: str = "") -> None:
    """The per-corpus verdicts of one pool: cluster's size, then the retrieval targets."""
    size = targets.get("cluster_size")
    if size:
        if size["target_tokens"] is None:
            out.print(f"{indent}cluster size: no target_tokens set, so no size target", highlight=False)
        else:
            means = ", ".join(f"{cid} {row['mean_tokens']:.0f}" for cid, row in size["corpora"].items())
            off = f"{', '.join(size['off'])} more than {size['tolerance']:.0%} off"
            verdict = "met" if size["met"] else f"missed: {off}"
            out.print(f"{indent}cluster size (target {size['target_tokens']}): {verdict} ({means})", highlight=False)
    keys = (
        "cluster_vs_chroma_cluster",
        "cluster_vs_chroma_cluster_matched_size",
        "cluster_vs_chroma_cluster_nearest_size",
        "semantic_vs_recursive_same_size",
        "semantic_vs_recursive_one_size",
        "semantic_vs_recursive_pool_size",
    )
    for key in keys:
        if key in targets:
            out.print(indent + _verdict_line(key, targets[key]), highlight=False)
        if key in targets and "chance" in targets[key]:
            out.print(
                indent + "  " + _chance_line(targets[key]["chance"], len(targets[key]["corpora"])), highlight=False
            )
        if key in targets and "sizes" in targets[key]:
            out.print(indent + "  " + _matched_sizes(targets[key]["sizes"]), highlight=False)


def _chance_line(chance: dict[str, Any], corpora: int) -> str:
    """The corpora below by more than one standard error beside what parity gives, which of them parity
    does not explain, the pooled margin, and what a chunker ahead by that margin everywhere would show:
    two equal chunkers show such misses, and so does one ahead on every corpus."""
    below = chance["below"]
    named = ", ".join(f"{cid} p {chance['p'][cid]:.3f}" for cid in below)
    beyond = ", ".join(chance["beyond_chance"]) or "none"
    pooled = chance["pooled"]
    return (
        f"below by more than one SE: {len(below)} of {corpora} corpora{f' ({named})' if below else ''}; "
        f"at parity {chance['expected_at_parity']:.1f} expected, {len(below)} or more in "
        f"{chance['p_at_least']:.0%} of {chance['draws']:,} sign flips; beyond chance (Holm, "
        f"{chance['alpha']:.0%}): {beyond}; over all {pooled['questions']} questions recall "
        f"{100 * pooled['recall']:+.1f} ± {100 * pooled['recall_se']:.1f}, IoU {100 * pooled['iou']:+.2f} ± "
        f"{100 * pooled['iou_se']:.2f} points; at that margin on every corpus, "
        f"{chance['expected_if_ahead']:.1f} expected below and none in {chance['none_if_ahead']:.0%} of draws"
    )


def _matched_sizes(sizes: dict[str, dict[str, float]]) -> str:
    """Which max_chunk_size Chroma's chunker ran at on each corpus (or which two, mixed with the larger's
    weight), its mean tokens and the target's."""
    parts = []
    for cid, row in sizes.items():
        if "max_chunk_size" in row:
            size = f"max {row['max_chunk_size']}"
        else:
            size = f"max {row['below']} and {row['above']} at {row['weight']:.2f}"
        parts.append(f"{cid} {size}: {row['mean_tokens']:.0f} tokens against {row['target_tokens']:.0f}")
    return "Chroma sized to cluster's mean: " + "; ".join(parts)


def _verdict_line(key: str, verdict: dict[str, Any]) -> str:
    """`met`, or `missed` with each corpus below and its margins in points (± the paired per-question
    standard error), so a miss by a fraction of one question reads differently from a real one."""
    label = key.replace("_", " ")
    if verdict.get("target") is False:
        label += f" (for reference: {verdict.get('reference') or 'not a target'})"
    below = []
    for cid, ok in verdict["corpora"].items():
        if ok:
            continue
        m = verdict.get("margins", {}).get(cid)
        if m:
            cid += (
                f" (recall {100 * m['recall']:+.1f} ± {100 * m['recall_se']:.1f},"
                f" IoU {100 * m['iou']:+.2f} ± {100 * m['iou_se']:.2f} points"
                + (
                    f"; retrieved {m['retrieved_tokens']:.0f} against {m['reference_retrieved_tokens']:.0f} tokens)"
                    if "retrieved_tokens" in m
                    else ")"
                )
            )
        below.append(cid)
    detail = f"; below on {', '.join(below)}" if below else ""
    return f"{label}: {'met' if verdict['met'] else 'missed'}{detail}"


def _per_corpus_table(report: dict[str, Any]) -> None:
    """One row per corpus and candidate: a mean over the pool can hide the corpus a chunker fails on."""
    table = Table(title="per corpus")
    for column in ("corpus", "source", "name", "recall", "IoU", "mean tok", "retrieved tok", "max tok", "chunks"):
        table.add_column(column, justify="left" if column in {"corpus", "source", "name"} else "right")
    sources = report.get("corpus_sources", {})
    for cid in report["corpora"]:
        for r in report["results"]:
            scores = r.get("per_corpus", {}).get(cid)
            if scores is None:
                continue
            table.add_row(
                cid,
                sources.get(cid, ""),
                r["name"],
                f"{scores['recall']:.3f}",
                f"{scores['iou']:.4f}",
                f"{scores['mean_tokens']:.0f}",
                f"{scores['retrieved_tokens']:.0f}",
                str(scores["max_tokens"]),
                str(scores["chunks"]),
            )
    out.print(table)


BROKER_NAMES = {"noida": "noida-db", "kafka": "Apache Kafka"}
BrokerOpt = Annotated[
    str,
    typer.Option("--broker", help="noida (the embedded default), or kafka: on Apache Kafka beside noida-db, one run."),
]


def _brokers(broker: str) -> list[str]:
    """`--broker kafka` measures Kafka with noida-db as the baseline in the same run (the machine is noisy)."""
    if broker not in BROKER_NAMES:
        raise typer.BadParameter(f"--broker: noida or kafka, not {broker!r}")
    return ["noida", "kafka"] if broker == "kafka" else ["noida"]


@bench_app.command("pipeline")
def pipeline(
    docs: Annotated[int, typer.Option("--docs", min=1, help="Synthetic documents to publish (1-5 pages each).")] = 200,
    as_json: JsonOpt = False,
    strategy: Annotated[
        list[str] | None, typer.Option("--strategy", "-s", help="Strategy to run (repeatable; default section).")
    ] = None,
    partitions: Annotated[int, typer.Option("--partitions", min=1, help="Partitions per topic.")] = 4,
    sink: Annotated[list[str] | None, typer.Option("--sink", help="Also store the chunks (mongo).")] = None,
    scaling: Annotated[bool, typer.Option("--scaling/--no-scaling", help="Also run two workers per role.")] = True,
    broker: BrokerOpt = "noida",
    exactly_once: Annotated[
        bool,
        typer.Option(
            "--exactly-once",
            help="Also one run with Kafka transactions (exactly_once) on Kafka, same run (needs --broker kafka).",
        ),
    ] = False,
) -> None:
    """End to end on a broker: pages/s, chunks/s, latency, ratio to in-process, 1 vs 2 workers."""
    from streams.bench.pipeline import run_pipeline_bench_on

    if exactly_once and broker != "kafka":
        raise typer.BadParameter("--exactly-once needs --broker kafka: exactly-once refuses noida-db")
    with _progress() as update:
        report = run_pipeline_bench_on(
            _brokers(broker),
            docs=docs,
            strategies=strategy,
            partitions=partitions,
            sinks=sink or [],
            scaling=scaling,
            progress=update,
            exactly_once=exactly_once,
        )
    if as_json:
        _emit_json(report)
        return
    for kind, one in report.get("brokers", {"": report}).items():
        if kind:
            out.print(f"[bold]on {BROKER_NAMES[kind]}[/]")
        _print_pipeline(one)
    for name, ratio in report.get("ratios", {}).items():
        out.print(f"{name}: {ratio:.2f}x")


def _print_pipeline(report: dict) -> None:
    title = f"bench pipeline: {report['docs']} docs, {report['pages']} pages, {', '.join(report['strategies'])}"
    table = Table(title=f"{title}, {report['partitions']} partitions")
    for column in ("run", "pages/s", "chunks/s", "p50 ms", "p95 ms", "p99 ms"):
        table.add_column(column, justify="left" if column == "run" else "right")
    table.add_row("in-process", f"{report['in_process_pages_per_s']:.1f}", f"{report['in_process_chunks_per_s']:.1f}")
    for name in ("one_worker", "two_workers"):
        if name in report:
            r = report[name]
            lat = r["latency_ms"]
            table.add_row(
                name.replace("_", " "),
                f"{r['pages_per_s']:.1f}",
                f"{r['chunks_per_s']:.1f}",
                *(f"{lat[q]:.0f}" for q in ("p50", "p95", "p99")),
            )
    out.print(table)
    out.print(f"end to end / in-process: {report['ratio_to_in_process']:.2f}x")
    cpu = ", ".join(f"{k} {v:.2f}" for k, v in report["one_worker"].get("cpu_ms_per_page", {}).items())
    out.print(f"CPU ms per page: in-process {report['in_process_cpu_ms_per_page']:.2f}; one worker per role: {cpu}")
    if report["scaling"]["ratio"] is not None:
        out.print(f"two workers / one: {report['scaling']['ratio']:.2f}x")
    if "exactly_once" in report:
        out.print(f"exactly-once / at-least-once, one worker: {report['exactly_once_vs_at_least_once']:.2f}x")
    ceilings = report["ceilings"]
    for key, verdict in report["targets"].items():
        best = ceilings.get(key)
        bound = f" (at most {best:.2f}x on {ceilings['cores']} cores, from the CPU per page)" if best else ""
        out.print(f"{key}: target {verdict['target']} {'met' if verdict['met'] else 'missed'}{bound}")


@bench_app.command("soak")
def soak(
    minutes: Annotated[float, typer.Option("--minutes", help="How long to publish.")] = 20.0,
    rate: Annotated[float, typer.Option("--rate", help="Pages per second to publish.")] = 20.0,
    strategy: Annotated[
        list[str] | None, typer.Option("--strategy", "-s", help="Strategy to run (repeatable; default section).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """A long steady run on the embedded broker, sampling each worker's resident memory (leak check)."""
    from streams.bench.soak import run_soak

    with _progress() as update:
        report = run_soak(minutes, rate, strategy, progress=update)
    if as_json:
        _emit_json(report)
        return
    table = Table(title=f"bench soak: {report['minutes']} min, {report['pages']:,} pages, {report['docs']:,} docs")
    for column in ("worker", "RSS start MiB", "end", "max", "MiB / 10 min", "MiB / 1,000 docs"):
        table.add_column(column, justify="left" if column == "worker" else "right")
    for role, w in report["workers"].items():
        table.add_row(
            role,
            str(w["rss_start_mib"]),
            str(w["rss_end_mib"]),
            str(w["rss_max_mib"]),
            str(w["slope_mib_per_10_min"]),
            str(w["growth_mib_per_1000_docs"]),
        )
    out.print(table)
    out.print(f"chunks {report['chunks']:,}, dead letters {report['dead_letters']}, missing {report['missing']}")


@bench_app.command("sinks")
def sinks(
    issued: Annotated[Path | None, typer.Argument(help="A document as issued (default: the sample RFP).")] = None,
    amended: Annotated[
        Path | None, typer.Argument(help="The same document as amended (default: the sample's amendment 1).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Sink throughput beside raw pymongo and raw embedding, and re-embedding after an amendment."""
    from streams.bench.sinks import run
    from streams.ops.embedded import document_store

    samples = Path(__file__).resolve().parent.parent / "samples"
    issued = issued or samples / "rfp_harbor_bridge_issued.md"
    amended = amended or samples / "rfp_harbor_bridge_amendment1.md"
    for path in (issued, amended):
        if not path.is_file():
            err.print(f"no such document: {path}")
            raise typer.Exit(2)

    with TemporaryDirectory() as tmp, document_store(Path(tmp)) as store:
        result = run(issued, amended, f"mongodb://{store.address}")
    if as_json:
        _emit_json(result)
    else:
        out.print_json(data=result)


@bench_app.command("metadata")
def metadata(
    documents: Annotated[list[Path] | None, typer.Argument(help="Documents (default: the samples).")] = None,
    rounds: Annotated[int, typer.Option(min=1, help="Alternating rounds of each run; medians are reported.")] = 5,
    copies: Annotated[int, typer.Option(min=1, help="Copies of each document, under their own ids.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """What a document's metadata costs: record bytes and sink throughput, with and without it, in one run."""
    from streams.bench.metadata import run
    from streams.ops.embedded import document_store

    samples = Path(__file__).resolve().parent.parent / "samples"
    paths = documents or sorted(p for p in samples.iterdir() if p.suffix in (".md", ".txt"))
    for path in paths:
        if not path.is_file():
            err.print(f"no such document: {path}")
            raise typer.Exit(2)
    with TemporaryDirectory() as tmp, document_store(Path(tmp)) as store:
        result = run(paths, f"mongodb://{store.address}", rounds, copies)
    if as_json:
        _emit_json(result)
    else:
        out.print_json(data=result)


@bench_app.command("backfill")
def backfill(
    model: Annotated[
        str | None, typer.Option("--model", help="The second index's model (default: the packaged one).")
    ] = None,
    backend: Annotated[str, typer.Option("--backend", help="The second index's backend.")] = "onnx",
    strategy: Annotated[list[str] | None, typer.Option("--strategy", "-s", help="Strategies (default: all).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """A second vector index backfilled beside the live one, after the demo's documents: time, CPU seconds per
    process against the first ingest's, and nothing missing."""
    from streams.bench.backfill import run_backfill
    from streams.settings import Settings

    with _progress() as update:
        report = run_backfill(Settings(), model, backend, strategy, on_stage=lambda s: update(s, 0, 0))
    if as_json:
        _emit_json(report)
    else:
        out.print_json(data=report)


@bench_app.command("ledger")
def ledger(
    runs: Annotated[int, typer.Option("--runs", min=1, help="Broker restarts (alternately SIGKILL and SIGTERM).")] = 20,
    docs: Annotated[int, typer.Option("--docs", min=1, help="Documents per run.")] = 200,
    first: Annotated[int, typer.Option("--first", min=0, help="Number of the first run (its seed).")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Broker restarts with writes in flight: documents lost, found by `streams audit`, left after the repair."""
    from streams.bench.ledger import run_ledger_bench

    with _progress() as update:
        # each run on stderr as it ends: a long bench stopped early still leaves its figures
        report = run_ledger_bench(runs, docs, update, lambda row: err.print(json.dumps(row, sort_keys=True)), first)
    if as_json:
        _emit_json(report)
        return
    table = Table(title=f"bench ledger: {runs} broker restarts with {docs} documents in flight")
    columns = (
        "run",
        "signal",
        "lost_before",
        "gap_documents",
        "lost_after",
        "detect_s",
        "repair_s",
        "audit_s_per_1000",
    )
    for column in columns:
        table.add_column(column.replace("_", " "), justify="left" if column == "signal" else "right")
    for row in report["runs"]:
        table.add_row(*(str(row[c]) for c in columns))
    out.print(table)


@bench_app.command("idle")
def idle(
    window: Annotated[float, typer.Option("--window", min=1, help="Seconds to sample.")] = 60.0,
    warmup: Annotated[float, typer.Option("--warmup", min=0, help="Seconds to let `streams up` settle.")] = 20.0,
    strategy: Annotated[
        list[str] | None, typer.Option("--strategy", "-s", help="Strategy to run (repeatable; default as up).")
    ] = None,
    as_json: JsonOpt = False,
    broker: BrokerOpt = "noida",
) -> None:
    """CPU per process of an idle `streams up` (% of one core over the window): idle must cost nothing."""
    from streams.bench.idle import run_idle_bench_on

    with _progress() as update:
        report = run_idle_bench_on(_brokers(broker), strategy, window, warmup, update)
    if as_json:
        _emit_json(report)
        return
    for kind, one in report.get("brokers", {"": report}).items():
        where = f" on {BROKER_NAMES[kind]}" if kind else ""
        title = f"bench idle{where}: {one['window_s']:.0f} s window after {one['warmup_s']:.0f} s warm-up"
        table = Table(title=title)
        table.add_column("process")
        table.add_column("% of one core", justify="right")
        for role, percent in sorted(one["cpu_percent"].items(), key=lambda item: -item[1]):
            table.add_row(role, f"{percent:.2f}")
        table.add_row("[bold]the project's processes[/]", f"[bold]{one['ours_percent']:.2f}[/]")
        table.add_row("total, with the broker and the store", f"{one['total_percent']:.2f}")
        out.print(table)
        for key, met in one["targets"].items():
            out.print(f"{key.replace('_', ' ')}: {'met' if met else 'missed'}")


@bench_app.command("corrections")
def corrections(
    without: Annotated[
        list[str] | None,
        typer.Option("--without", help="Points to take away in one run: all, or a list such as 1,4 (repeatable)."),
    ] = None,
    docs: Annotated[int, typer.Option("--docs", min=1, help="Synthetic documents per run (1-5 pages each).")] = 200,
    runs: Annotated[int, typer.Option("--runs", min=1, help="Runs of each set, the corrected one first.")] = 1,
    broker: Annotated[str, typer.Option("--broker", help="Broker to churn on: kafka or noida.")] = "kafka",
    as_json: JsonOpt = False,
) -> None:
    """Documents under rebalance churn with the transport's corrections taken away: what each prevents."""
    from streams.bench.corrections import run_corrections_bench

    if broker not in BROKER_NAMES:
        raise typer.BadParameter(f"--broker: noida or kafka, not {broker!r}")
    with _progress() as update:
        report = run_corrections_bench(broker, docs, without or ["all"], runs, update)
    if as_json:
        _emit_json(report)
        return
    table = Table(title=f"bench corrections on {BROKER_NAMES[broker]}: {docs} documents a run")
    for column in ("without", "rebalances", "stalled", "lost", "of them unassembled", "re-published", "seconds"):
        table.add_column(column, justify="left" if column == "without" else "right")
    for run in report["runs"]:
        keys = ("rebalances", "stalled", "lost", "lost_unassembled", "republished", "seconds")
        table.add_row(run["without"], *(str(run[key]) for key in keys))
    out.print(table)


@bench_app.command("ui")
def ui(
    pages: Annotated[int, typer.Option("--pages", min=1, help="Pages of the long synthetic document.")] = 300,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="Timed requests per view after the first.")] = 5,
    as_json: JsonOpt = False,
) -> None:
    """How fast the console serves a document view (largest sample, and a long document), against its JSON."""
    from streams.bench.ui import run_ui_bench

    with _progress() as update:
        report = run_ui_bench(pages, rounds, update)
    if as_json:
        _emit_json(report)
        return
    table = Table(title=f"bench ui: document view, ms (median of {rounds} after the first; browser: loaded)")
    for column in (
        "document",
        "pages",
        "chars",
        "chunks",
        "json",
        "view",
        "2 views",
        "first",
        "ratio",
        "browser",
    ):
        table.add_column(column, justify="left" if column == "document" else "right", no_wrap=True)
    for label, row in report["documents"].items():
        table.add_row(
            label,
            str(row["pages"]),
            f"{row['chars']:,}",
            f"{row['chunks']['window']}/{row['chunks']['section']}",
            f"{row['json_baseline']['median_ms']:.0f}",
            f"{row['view_one_strategy']['median_ms']:.0f}",
            f"{row['view_two_strategies']['median_ms']:.0f}",
            f"{row['view_two_strategies']['first_ms']:.0f}",
            f"{row['ratio_two_to_baseline']:.2f}",
            f"{row['browser_ms']['load_end']:.0f}" if "browser_ms" in row else "–",
        )
    out.print(table)
    if report["browser"] != "chromium":
        out.print(report["browser"])
    slowest = max(
        max(r["view_two_strategies"]["median_ms"], r.get("browser_ms", {}).get("load_end", 0))
        for r in report["documents"].values()
    )
    out.print(
        f"target: every view under {report['target_ms']} ms: {'met' if slowest < report['target_ms'] else 'missed'}"
    )


@bench_app.command("embedding")
def embedding(
    docs: Annotated[int, typer.Option("--docs", min=1, help="Synthetic documents (1-5 pages each).")] = 60,
    backend: Annotated[
        list[str] | None, typer.Option("--backend", "-b", help="Backend to time (repeatable; default all three).")
    ] = None,
    pipeline: Annotated[
        bool, typer.Option("--pipeline/--no-pipeline", help="Also run semantic alone and with cluster on the bus.")
    ] = True,
    graphs: Annotated[
        bool, typer.Option("--graphs/--no-graphs", help="Also time the built graph beside torch's export of it.")
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Forward-pass CPU per backend, the built graph beside the exported one, and semantic+cluster deployed
    together with and without the shared store."""
    from streams.bench.embedding import BACKENDS, run_embedding_bench

    with _progress() as update:
        report = run_embedding_bench(docs, backend or list(BACKENDS), pipeline, update, graphs)
    if as_json:
        _emit_json(report)
        return
    table = Table(
        title=f"bench embedding: {report['docs']} docs, {report['pages']} pages, {report['sentences']} sentences"
    )
    for column in ("backend", "CPU ms/page", "speed-up", "min cosine to torch"):
        table.add_column(column, justify="left" if column == "backend" else "right")
    for name, row in report.get("forward_pass", {}).items():
        table.add_row(
            name,
            f"{row['cpu_ms_per_page']:.1f}",
            f"{row['speedup_vs_first']:.2f}x",
            f"{row['min_cosine_to_first']:.4f}",
        )
    out.print(table)
    if "graphs" in report:
        figures = report["graphs"]
        peak = figures["sgemm_gflops_one_core"]
        graphs_table = Table(title=f"graphs, one thread (sgemm on one core: {peak:.0f} GFLOP/s)")
        for column in ("graph", "sentences", "GFLOP/s", "of peak", "passages", "GFLOP/s", "of peak"):
            graphs_table.add_column(column, justify="left" if column == "graph" else "right")
        for label, row in figures.items():
            if isinstance(row, dict):
                cells = [
                    cell
                    for part in ("sentences", "passages")
                    for cell in (
                        f"{row[part]['speedup_vs_baseline']:.2f}x",
                        f"{row[part]['gflops']:.0f}",
                        f"{row[part]['of_sgemm_peak']:.0%}",
                    )
                ]
                graphs_table.add_row(label, *cells)
        out.print(graphs_table)
    if "pipeline" in report:
        runs = Table(title="pipeline: chunker CPU per page")
        runs.add_column("run")
        runs.add_column("CPU ms/page", justify="right")
        for name, row in report["pipeline"].items():
            runs.add_row(name.replace("_", " "), f"{row['chunker_cpu_ms_per_page']:.1f}")
        out.print(runs)
        ratio = report["co_deployment_ratio"]
        out.print(
            f"together / alone: {ratio['shared_store']:.2f}x with the shared store, {ratio['no_store']:.2f}x without"
        )


@bench_app.command("mutation")
def mutation(
    module: Annotated[
        list[str] | None,
        typer.Option("--module", "-m", help="Module to mutate, as a path (repeatable; default the core's four)."),
    ] = None,
    test: Annotated[
        list[str] | None,
        typer.Option("--test", "-t", help="Test file or folder to run (repeatable; default the fast core tests)."),
    ] = None,
    rev: Annotated[str | None, typer.Option("--rev", help="Measure this commit instead of the working tree.")] = None,
    keep: Annotated[
        Path | None, typer.Option("--keep", help="Run in this empty folder and keep it (for `mutmut show NAME` there).")
    ] = None,
    read: Annotated[
        Path | None,
        typer.Option("--read", help="Report a run kept with --keep again, scored with the equivalents as now."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Mutation testing (mutmut, one worker, in a scratch copy) of records, document, assembly and text:
    per module, variants killed and survived, the score, and every survivor by line."""
    from streams.bench.mutation import MODULES, TESTS, reread, run_mutation_bench

    if read is not None:
        report = reread(read)
    else:
        with _progress() as update:
            report = run_mutation_bench(module or MODULES, test or TESTS, rev, keep, update)
    if as_json:
        _emit_json(report)
        return
    source = report["source"]
    where = f"commit {source['commit']}" if source["rev"] != "working tree" else f"working tree at {source['commit']}"
    where += " (with uncommitted changes)" if source["dirty"] else ""
    table = Table(title=f"bench mutation: {report['tool']}, {where}, {report['wall_s']:.0f} s")
    columns = ("module", "mutants", "killed", "timeout", "survived", "no tests", "other", "equivalent", "score %")
    for column in columns:
        table.add_column(column, justify="left" if column == "module" else "right", no_wrap=column == "module")
    for name, row in report["modules"].items():
        score = row["score_percent"]
        table.add_row(
            name,
            *(str(row[key]) for key in ("mutants", "killed", "timeout", "survived", "no_tests", "other", "equivalent")),
            "–" if score is None else f"{score:.1f}",
        )
    out.print(table)
    for name, row in report["modules"].items():
        for s in row["survivors"]:
            change = " / ".join(s["removed"]) or "(nothing)"
            into = " / ".join(s["added"]) or "(removed)"
            out.print(
                f"{name}:{s['line']} {s['function']} [{s['status']}]: {change}  ->  {into}",
                highlight=False,
                markup=False,
            )
    for stale in report["stale_equivalents"]:
        err.print(
            f"[yellow]stale equivalent in streams/bench/equivalents.md:[/] {stale['module']} {stale['function']}: "
            f"{' / '.join(stale['removed'])}",
            highlight=False,
        )
    verdict = "met" if report["target_met"] else "missed"
    out.print(
        f"every module at or above {report['target_percent']:.0f}%: {verdict} (overall {report['score_percent']}%)"
    )


@bench_app.command("ingest")
def ingest(
    corpus: CorpusOpt = None,
    documents: Annotated[
        int | None, typer.Option("--documents", min=1, help="Documents to ingest (default 60; with --corpus, all).")
    ] = None,
    broker: Annotated[
        list[str] | None,
        typer.Option("--broker", help="Run streams on noida (embedded) or kafka (repeatable; default both)."),
    ] = None,
    threads: Annotated[
        int | None, typer.Option("--threads", min=1, help="Forward-pass threads of every embedder (default: cores).")
    ] = None,
    as_json: JsonOpt = False,
    own: Annotated[
        bool,
        typer.Option(
            "--own-embeddings/--no-own-embeddings",
            help="Also run the peers on their own integrations of the model (HuggingFaceEmbedding, "
            "HuggingFaceEmbeddings: sentence-transformers on torch), as their users do.",
        ),
    ] = True,
) -> None:
    """Pages to stored vectors against LlamaIndex's IngestionPipeline and LangChain's index(): first ingest,
    then amendments of a fifth of the documents; same documents, model, chunk size and threads."""
    from streams.bench.ingest import BROKERS, run_ingest_bench

    for kind in broker or []:
        if kind not in BROKER_NAMES:
            raise typer.BadParameter(f"--broker: noida or kafka, not {kind!r}")
    with _progress() as update:
        report = run_ingest_bench(corpus, documents, broker or list(BROKERS), threads, update, own)
    if as_json:
        _emit_json(report)
        return
    _print_ingest(report)


def _print_ingest(report: dict[str, Any]) -> None:
    title = (
        f"bench ingest: {report['documents']} documents, {report['pages']} pages; amendments of "
        f"{report['amended_documents']} ({report['amended_pages']} pages); {report['threads']} embedding threads"
    )
    table = Table(title=title)
    columns = (
        "pipeline",
        "phase",
        "seconds",
        "pages/s",
        "CPU s",
        "others' CPU s",
        "wall/(CPU/cores)",
        "vectors",
        "embedded",
        "stale",
    )
    for column in columns:
        table.add_column(column, justify="left" if column in {"pipeline", "phase"} else "right", no_wrap=True)
    for r in report["results"]:
        ratio = r.get("wall_vs_cpu_per_core")
        table.add_row(
            r["pipeline"],
            r["phase"].replace("_", " "),
            f"{r['seconds']:.2f}",
            f"{r['pages_per_s']:.1f}",
            f"{r['cpu_s_total']:.1f}",
            f"{r['others_cpu_s']:.1f}" if "others_cpu_s" in r else "",
            f"{ratio:.2f}" if ratio else "",
            str(r["vectors_written"]),
            str(r["texts_embedded"]),
            str(r.get("superseded_vectors", "")),
        )
    out.print(table)
    for r in report["results"]:
        if r["pipeline"].startswith("streams/"):
            cpu = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["cpu_s"].items(), key=lambda kv: -kv[1]))
            out.print(f"{r['pipeline']} {r['phase'].replace('_', ' ')}, CPU s per process: {cpu}", highlight=False)
    for key, per_broker in report["ratios"].items():
        verdict = report["targets"][key]
        values = ", ".join(f"{BROKER_NAMES[b]} {v:.2f}x" for b, v in per_broker.items())
        out.print(f"{key}: {values} (target {verdict['target']}: {'met' if verdict['met'] else 'missed'})")
    for key in ("wall_vs_cpu_per_core", "superseded_vectors"):
        verdict = report["targets"][key]
        out.print(f"{key}: target {verdict['target']}: {'met' if verdict['met'] else 'missed'}")
    busy = [r for r in report["results"] if r.get("machine_cpu_s") and r["others_cpu_s"] > 0.1 * r["machine_cpu_s"]]
    if busy:
        share = max(r["others_cpu_s"] / r["machine_cpu_s"] for r in busy)
        err.print(
            f"[yellow]other jobs took up to {share:.0%} of the machine's busy CPU during a phase:[/] "
            "compare the CPU seconds; the rates and wall/(CPU/cores) depend on what else ran",
            highlight=False,
        )


@bench_app.command("routing")
def routing(
    corpus: Annotated[
        Path | None,
        typer.Option(
            "--corpus", help="A labelled set: a folder with manifest.json and docs/ (default: the shipped one)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The type detector on a labelled set: the confusion matrix and the documents off its diagonal."""
    from streams.bench.routing import ROUTING_SET, TYPES, run_routing_bench

    folder = corpus or ROUTING_SET
    try:
        with _progress() as update:
            report = run_routing_bench(folder, update)
    except (FileNotFoundError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}", soft_wrap=True, highlight=False)
        raise typer.Exit(2) from None
    if as_json:
        _emit_json(report)
        return
    table = Table(title=f"bench routing: {report['documents']} labelled documents, rows = label, columns = detected")
    table.add_column("label")
    for name in TYPES:
        table.add_column(name, justify="right")
    for label in TYPES:
        counts = report["matrix"][label]
        table.add_row(label, *(f"[bold]{counts[n]}[/bold]" if n == label else str(counts[n] or "·") for n in TYPES))
    out.print(table)
    out.print(
        f"{report['correct']} of {report['documents']} on the diagonal; "
        f"{report['generic_sent_to_a_typed_strategy']} generic documents sent to a typed strategy; "
        f"{report['typed_left_generic']} typed documents left generic",
        soft_wrap=True,
    )
    for miss in report["misses"]:
        out.print(
            f"  {miss['file']} ({miss['shape']}): {miss['label']} detected as {miss['detected']} "
            f"({miss['confidence']:.2f}): {miss['evidence']}",
            highlight=False,
            soft_wrap=True,
        )
