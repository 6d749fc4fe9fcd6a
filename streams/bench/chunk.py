"""`streams bench chunk`: throughput (MB/s) of each strategy beside the baselines, on the same texts.

Every candidate sees the same assembled document texts (`doc.text`, pages joined as the pipeline
joins them), the same tokenizer (tiktoken cl100k_base, offline) and one thread. A candidate is
rebuilt before each repeat (untimed) so no cache survives from one repeat to the next, and the
best repeat counts: on a shared machine the minimum is the least noisy estimate of the work.
Only the chunking call is timed: reading files, assembling documents, building the chunker and
counting the chunks' tokens afterwards are not. MB/s is decimal (10^6 bytes of UTF-8 text).
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streams.bench import BenchError, Progress, bench_chunker, bench_embedder, single_core
from streams.bench.quality import chonkie_embeddings
from streams.core.chunkers import EMBEDDING_STRATEGIES, STRATEGIES, ChunkingError
from streams.core.document import assemble
from streams.core.events import AssembledDocument
from streams.core.tokenizers import get_tokenizer, tiktoken_encoding
from streams.ingest.files import page_events
from streams.strategies import SENTENCE_UNITS

MB = 1_000_000
BASELINE_CHUNK_TOKENS = 512
BASELINES = (
    "langchain_recursive",
    "chonkie_recursive",
    "chonkie_token",
    "semchunk",
    "docling_hybrid",
    "langchain_semantic",
    "chonkie_semantic",
)
FLOOR = "tiktoken_encode"
FINANCE_TYPES = frozenset({"transcript", "release", "press", "slides"})
CORPUS_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".text", ".json", ".pdf", ".docx", ".html", ".htm"})
NOT_DOCUMENTS = frozenset({"readme", "manifest", "license", "licence", "notice"})

Runner = Callable[[AssembledDocument], list[str]]


# --- corpus --------------------------------------------------------------------------------------


def corpus_paths(directory: Path | None, max_files: int | None = None) -> list[Path]:
    """Documents of a folder (README/MANIFEST/LICENSE left out), or the shipped samples."""
    if directory is None:
        from streams.ops.pipeline import sample_paths

        paths = sample_paths()
    else:
        if not directory.is_dir():
            raise BenchError(f"{directory}: corpus directory not found")
        paths = sorted(
            p
            for p in directory.iterdir()
            if p.is_file() and p.suffix.lower() in CORPUS_SUFFIXES and p.stem.lower() not in NOT_DOCUMENTS
        )
    if max_files is not None:
        paths = paths[:max_files]
    if not paths:
        raise BenchError(f"{directory}: no documents to benchmark")
    return paths


def load_documents(paths: Sequence[Path]) -> list[AssembledDocument]:
    """Assemble each file exactly as the pipeline would (page events -> document stream)."""

    return [assemble(page_events(p)) for p in paths]


# --- measurements --------------------------------------------------------------------------------


@dataclass
class Candidate:
    """A strategy, baseline or floor. `make` builds a fresh runner (untimed); `reset` runs before
    each timed pass (the embedder's cache is cleared there so every pass starts cold)."""

    name: str
    kind: str
    make: Callable[[], Runner]
    reset: Callable[[], None] | None = None


@dataclass
class Measurement:
    """Per-repeat, per-document seconds; `None` where the document was skipped."""

    name: str
    kind: str
    times: list[list[float | None]] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)

    def accepted(self, n_docs: int) -> list[int]:
        return [i for i in range(n_docs) if i not in self.skipped]

    def seconds(self, subset: Iterable[int] | None = None) -> float:
        """Best repeat's total over `subset` (default: every document it chunked)."""
        if not self.times:
            return 0.0
        n_docs = len(self.times[0])
        wanted = [i for i in (range(n_docs) if subset is None else subset) if i not in self.skipped]
        return min(sum(row[i] or 0.0 for i in wanted) for row in self.times)


def _timed_pass(run: Runner, docs: Sequence[AssembledDocument], m: Measurement, keep_texts: bool) -> list[str]:
    """One pass over the corpus; a ChunkingError skips that document for good."""

    row: list[float | None] = []
    texts: list[str] = []
    for i, doc in enumerate(docs):
        if i in m.skipped:
            row.append(None)
            continue
        start = time.perf_counter()
        try:
            chunks = run(doc)
        except ChunkingError as exc:
            m.skipped[i] = exc.code
            row.append(None)
            continue
        row.append(time.perf_counter() - start)
        if keep_texts:
            texts.extend(chunks)
    m.times.append(row)
    return texts


def _count_tokens(texts: list[str]) -> list[int]:

    return get_tokenizer().count_many(texts) if texts else []


def measure(
    candidate: Candidate, docs: Sequence[AssembledDocument], repeats: int, tick: Callable[[str], None]
) -> Measurement:
    """Warm up on the smallest document (untimed), then `repeats` timed passes."""
    m = Measurement(candidate.name, candidate.kind)
    smallest = min(docs, key=lambda d: len(d.text))
    with contextlib.suppress(Exception):  # the timed pass reports (or skips) the same failure properly
        candidate.make()(smallest)
    for r in range(repeats):
        tick(f"{candidate.name} ({r + 1}/{repeats})")
        run = candidate.make()
        if candidate.reset:
            candidate.reset()
        texts = _timed_pass(run, docs, m, keep_texts=r == 0)
        if r == 0:
            m.chunk_tokens = _count_tokens(texts)
    return m


# --- candidates ----------------------------------------------------------------------------------


def _encoding() -> Any:

    return tiktoken_encoding("cl100k_base")


def _strategy(name: str) -> Candidate:

    bench_chunker(name)  # fail early (missing module or dependency) rather than inside the timing

    def make() -> Runner:
        return _drafts_runner(bench_chunker(name))

    return Candidate(name, "strategy", make)


def _langchain_recursive(size: int = BASELINE_CHUNK_TOKENS) -> Runner:
    """`RecursiveCharacterTextSplitter.from_tiktoken_encoder` without its download: the same
    splitter with the offline encoding's token count as the length function."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    encoding = _encoding()
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=0, length_function=lambda text: len(encoding.encode_ordinary(text))
    )
    return lambda doc: splitter.split_text(doc.text)


def _chonkie_recursive() -> Runner:
    from chonkie import RecursiveChunker

    chunker = RecursiveChunker(tokenizer=_encoding(), chunk_size=BASELINE_CHUNK_TOKENS)
    return lambda doc: [c.text for c in chunker.chunk(doc.text)]


def _chonkie_token() -> Runner:
    from chonkie import TokenChunker

    chunker = TokenChunker(tokenizer=_encoding(), chunk_size=BASELINE_CHUNK_TOKENS, chunk_overlap=0)
    return lambda doc: [c.text for c in chunker.chunk(doc.text)]


def _semchunk() -> Runner:
    import semchunk

    chunker = semchunk.chunkerify(_encoding(), BASELINE_CHUNK_TOKENS)
    return lambda doc: list(chunker(doc.text))


def _docling_hybrid() -> Runner:
    """What a user of Docling does with a Markdown text: convert it, then HybridChunker (tiktoken)."""
    from io import BytesIO

    from docling.datamodel.base_models import DocumentStream, InputFormat
    from docling.document_converter import DocumentConverter
    from docling_core.transforms.chunker import HybridChunker
    from docling_core.transforms.chunker.tokenizer.openai import OpenAITokenizer

    # docling warns on every document whose Markdown it repairs; the warning is not ours to act on
    warnings.filterwarnings("ignore", message="Detected potentially incorrect Markdown", category=UserWarning)
    converter = DocumentConverter(allowed_formats=[InputFormat.MD])
    chunker = HybridChunker(tokenizer=OpenAITokenizer(tokenizer=_encoding(), max_tokens=BASELINE_CHUNK_TOKENS))

    def run(doc: AssembledDocument) -> list[str]:
        stream = DocumentStream(name=f"{doc.doc_id}.md", stream=BytesIO(doc.text.encode("utf-8")))
        dl_doc = converter.convert(stream).document
        return [c.text for c in chunker.chunk(dl_doc=dl_doc)]

    return run


def langchain_embeddings(embed: Callable[[list[str]], list[list[float]]]) -> Any:
    """A LangChain `Embeddings` over one of the project's embedders, so a peer and streams use one model."""
    from langchain_core.embeddings import Embeddings

    class StreamsEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embed(texts)

        def embed_query(self, text: str) -> list[float]:
            return embed([text])[0]

    return StreamsEmbeddings()


def _stock_embedder() -> Any:
    """The baselines embed as their users would: sentence-transformers on torch, whatever backend the
    strategies are measured with."""

    return bench_embedder("truncate", backend="torch")


def _langchain_semantic() -> Runner:
    from langchain_experimental.text_splitter import SemanticChunker

    stock = _stock_embedder()
    splitter = SemanticChunker(langchain_embeddings(lambda texts: stock.encode(texts).tolist()))
    return lambda doc: splitter.split_text(doc.text)


def _chonkie_semantic() -> Runner:
    from chonkie import SemanticChunker

    chunker = SemanticChunker(embedding_model=chonkie_embeddings(_stock_embedder()), chunk_size=BASELINE_CHUNK_TOKENS)
    return lambda doc: [c.text for c in chunker.chunk(doc.text)]


def _floor() -> Runner:
    encoding = _encoding()

    def run(doc: AssembledDocument) -> list[str]:
        encoding.encode_ordinary(doc.text)
        return [doc.text]  # one "chunk" per document: its token count is the document's

    return run


BASELINE_FACTORIES: dict[str, Callable[[], Runner]] = {
    "langchain_recursive": _langchain_recursive,
    "chonkie_recursive": _chonkie_recursive,
    "chonkie_token": _chonkie_token,
    "semchunk": _semchunk,
    "docling_hybrid": _docling_hybrid,
    "langchain_semantic": _langchain_semantic,
    "chonkie_semantic": _chonkie_semantic,
}


def default_baselines(strategies: Sequence[str]) -> list[str]:
    """The cheap baselines always; Docling beside `hybrid`, LangChain semantic beside the embedders."""
    names = ["langchain_recursive", "chonkie_recursive", "chonkie_token", "semchunk"]
    if "hybrid" in strategies:
        names.append("docling_hybrid")
    if any(s in strategies for s in EMBEDDING_STRATEGIES):
        names += ["langchain_semantic", "chonkie_semantic"]
    return names


# --- the embedding strategies: measured together so the shared cache is accounted for -------------


def _drafts_runner(chunker: Any) -> Runner:
    return lambda doc: [d.text for d in chunker.chunk(doc)]


def _sentences(docs: Sequence[AssembledDocument]) -> list[list[str]]:
    """Per document, every sentence unit either embedding strategy embeds (deduplicated)."""

    units = [bench_chunker(name) for name in EMBEDDING_STRATEGIES]
    out = []
    for doc in docs:
        texts: dict[str, None] = {}
        for chunker in units:
            texts.update(dict.fromkeys(doc.text[s:e] for s, e in chunker.sentence_units(doc.text)))  # type: ignore[attr-defined]
        out.append(list(texts))
    return out


def _measure_embedding(
    names: Sequence[str], docs: Sequence[AssembledDocument], repeats: int, tick: Callable[[str], None]
) -> tuple[dict[str, Measurement], dict[str, float]]:
    """Each strategy cold (cache cleared), `semantic` then `cluster` sharing the cache, and the time
    to embed every sentence once: the last two give `semantic_cluster_ratio`."""

    embedder = bench_embedder(SENTENCE_UNITS)  # the one bench_chunker gives both strategies
    embedder.encode(["warm up the model"])  # load weights outside any timing
    measurements = {name: Measurement(name, "strategy") for name in names}
    for name in names:
        embedder.clear_cache()
        with contextlib.suppress(Exception):  # reported by the timed pass
            bench_chunker(name).chunk(min(docs, key=lambda d: len(d.text)))
    both = all(n in names for n in EMBEDDING_STRATEGIES)
    warm_cluster = Measurement("cluster_after_semantic", "strategy")
    embed_rows: list[float] = []
    sentences = _sentences(docs) if both else []
    for r in range(repeats):
        for name in names:
            tick(f"{name} ({r + 1}/{repeats})")
            chunker = bench_chunker(name)
            embedder.clear_cache()
            texts = _timed_pass(_drafts_runner(chunker), docs, measurements[name], r == 0)
            if r == 0:
                measurements[name].chunk_tokens = _count_tokens(texts)
            if both and name == "semantic":  # cluster right after, on the cache semantic filled
                _timed_pass(_drafts_runner(bench_chunker("cluster")), docs, warm_cluster, False)
        if both:
            tick(f"embed once ({r + 1}/{repeats})")
            embedder.clear_cache()
            start = time.perf_counter()
            for texts in sentences:
                embedder.encode(texts)
            embed_rows.append(time.perf_counter() - start)
    extras: dict[str, float] = {}
    if both:
        skipped = {*measurements["semantic"].skipped, *measurements["cluster"].skipped, *warm_cluster.skipped}
        subset = [i for i in range(len(docs)) if i not in skipped]
        pair = measurements["semantic"].seconds(subset) + warm_cluster.seconds(subset)
        extras["embed_once_s"] = min(embed_rows)
        extras["semantic_plus_cluster_s"] = pair
        extras["semantic_cluster_ratio"] = pair / min(embed_rows) if min(embed_rows) else 0.0
    return measurements, extras


# --- the run -------------------------------------------------------------------------------------


def _result(m: Measurement, docs: Sequence[AssembledDocument], sizes: Sequence[int]) -> dict[str, Any]:
    accepted = m.accepted(len(docs))
    nbytes = sum(sizes[i] for i in accepted)
    seconds = m.seconds()
    tokens = m.chunk_tokens
    return {
        "name": m.name,
        "kind": m.kind,
        "mb_per_s": round(nbytes / MB / seconds, 4) if seconds > 0 else 0.0,
        "chunks": len(tokens),
        "mean_tokens": round(sum(tokens) / len(tokens), 1) if tokens else 0.0,
        "max_tokens": max(tokens) if tokens else 0,
        "seconds": round(seconds, 5),
        "bytes": nbytes,
        "docs": len(accepted),
        "skipped": len(m.skipped),
        **({"skip_reasons": sorted(set(m.skipped.values()))} if m.skipped else {}),
    }


def _typed_subset(m: Measurement, docs: Sequence[AssembledDocument], types: frozenset[str]) -> list[int]:
    """The documents of the strategy's own type it chunked; all it chunked when the corpus has none."""
    accepted = m.accepted(len(docs))
    typed = [i for i in accepted if str(docs[i].doc_type) in types]
    return typed or accepted


def _ratio(a: Measurement, b: Measurement, subset: list[int]) -> float | None:
    """Throughput of `a` over throughput of `b` on the same documents (= b's time / a's time)."""
    subset = [i for i in subset if i not in b.skipped and i not in a.skipped]
    if not subset:
        return None
    ta, tb = a.seconds(subset), b.seconds(subset)
    return round(tb / ta, 3) if ta > 0 else None


TARGETS: dict[str, tuple[str, float]] = {
    "section/chonkie_recursive": (">=", 1.0),
    "section/langchain_recursive": (">=", 3.0),
    "letter/chonkie_recursive": (">=", 0.5),
    "finance/chonkie_recursive": (">=", 0.5),
    "semantic_cluster_ratio": ("<=", 1.15),
    "vs_langchain_semantic": (">=", 4.0),
    "cluster_vs_langchain_semantic": (">=", 3.0),
    "vs_chonkie_semantic": (">=", 1.5),
}


def _ratios(
    ms: dict[str, Measurement], docs: Sequence[AssembledDocument], extras: dict[str, float]
) -> dict[str, float | None]:
    ratios: dict[str, float | None] = {k: round(v, 4) for k, v in extras.items()}
    pairs = [
        ("section", "chonkie_recursive", None),
        ("section", "langchain_recursive", None),
        ("letter", "chonkie_recursive", frozenset({"letter"})),
        ("finance", "chonkie_recursive", FINANCE_TYPES),
        ("hybrid", "docling_hybrid", None),
        ("window", "chonkie_token", None),
    ]
    for strategy, baseline, types in pairs:
        if strategy in ms and baseline in ms:
            subset = _typed_subset(ms[strategy], docs, types) if types else ms[strategy].accepted(len(docs))
            ratios[f"{strategy}/{baseline}"] = _ratio(ms[strategy], ms[baseline], subset)
    if "langchain_semantic" in ms:
        for strategy, key in (("semantic", "vs_langchain_semantic"), ("cluster", "cluster_vs_langchain_semantic")):
            if strategy in ms:
                subset = ms[strategy].accepted(len(docs))
                ratios[key] = _ratio(ms[strategy], ms["langchain_semantic"], subset)
    if "chonkie_semantic" in ms and "semantic" in ms:
        ratios["vs_chonkie_semantic"] = _ratio(
            ms["semantic"], ms["chonkie_semantic"], ms["semantic"].accepted(len(docs))
        )
    return ratios


def _targets(ratios: dict[str, float | None]) -> dict[str, dict[str, Any]]:
    out = {}
    for key, (op, bound) in TARGETS.items():
        value = ratios.get(key)
        if value is None:
            continue
        met = value >= bound if op == ">=" else value <= bound
        out[key] = {"value": value, "target": f"{op} {bound}", "met": met}
    return out


def run_chunk_bench(
    corpus: Path | None = None,
    strategies: Sequence[str] | None = None,
    repeats: int = 3,
    baselines: Sequence[str] | None = None,
    max_files: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Measure strategies, baselines and the tiktoken floor; return the issue's JSON object
    (`corpus_bytes`, `results`) plus `ratios`, `targets`, `unavailable` and the run's settings."""

    if repeats < 1:
        raise BenchError("--repeat must be at least 1")
    chosen = list(strategies) if strategies else list(STRATEGIES)
    unknown = [s for s in chosen if s not in STRATEGIES]
    if unknown:
        raise BenchError(f"unknown strategy {unknown[0]!r}; known: {', '.join(STRATEGIES)}")
    wanted_baselines = list(baselines) if baselines is not None else default_baselines(chosen)
    bad = [b for b in wanted_baselines if b not in BASELINE_FACTORIES]
    if bad:
        raise BenchError(f"unknown baseline {bad[0]!r}; known: {', '.join(BASELINE_FACTORIES)}")

    docs = load_documents(corpus_paths(corpus, max_files))
    with single_core():
        return _run(corpus, docs, chosen, wanted_baselines, repeats, progress)


def _run(
    corpus: Path | None,
    docs: Sequence[AssembledDocument],
    chosen: Sequence[str],
    wanted_baselines: Sequence[str],
    repeats: int,
    progress: Progress | None,
) -> dict[str, Any]:
    sizes = [len(d.text.encode("utf-8")) for d in docs]

    plain = [s for s in chosen if s not in EMBEDDING_STRATEGIES]
    embedding = [s for s in chosen if s in EMBEDDING_STRATEGIES]
    total = (len(plain) + len(embedding) + len(wanted_baselines) + 1) * repeats
    total += repeats if len(embedding) == len(EMBEDDING_STRATEGIES) else 0
    done = 0

    def tick(description: str) -> None:
        nonlocal done
        if progress:
            progress(description, done, total)
        done += 1

    unavailable: dict[str, str] = {}
    measurements: dict[str, Measurement] = {}

    def attempt(name: str, build: Callable[[], Candidate]) -> None:
        nonlocal done
        try:
            candidate = build()
            measurements[name] = measure(candidate, docs, repeats, tick)
        except (ImportError, BenchError) as exc:
            unavailable[name] = f"{type(exc).__name__}: {exc}"
            done += repeats
        except Exception as exc:  # one broken candidate must not lose the whole table
            unavailable[name] = f"failed: {type(exc).__name__}: {exc}"
            done += repeats

    for name in plain:
        attempt(name, lambda n=name: _strategy(n))
    extras: dict[str, float] = {}
    if embedding:
        try:
            found, extras = _measure_embedding(embedding, docs, repeats, tick)
            measurements.update(found)
        except Exception as exc:  # no model or library: the rest of the table still stands
            unavailable.update({n: f"{type(exc).__name__}: {exc}" for n in embedding})
    for name in wanted_baselines:
        reset = _clear_embedder_cache if name in ("langchain_semantic", "chonkie_semantic") else None
        attempt(name, lambda n=name, z=reset: Candidate(n, "baseline", BASELINE_FACTORIES[n], z))
    attempt(FLOOR, lambda: Candidate(FLOOR, "floor", _floor))
    if progress:
        progress("done", total, total)

    order = [*chosen, *wanted_baselines, FLOOR]
    results = [_result(measurements[n], docs, sizes) for n in order if n in measurements]
    ratios = _ratios(measurements, docs, extras)
    return {
        "corpus": str(corpus) if corpus else "samples",
        "corpus_bytes": sum(sizes),
        "documents": len(docs),
        "results": results,
        "ratios": ratios,
        "targets": _targets(ratios),
        "unavailable": unavailable,
        "settings": {
            "repeats": repeats,
            "threads": 1,
            "tokenizer": "tiktoken:cl100k_base",
            "baseline_chunk_tokens": BASELINE_CHUNK_TOKENS,
            "timing": "best repeat; chunk() call only; MB = 10^6 bytes of UTF-8 document text",
        },
    }


def _clear_embedder_cache() -> None:

    bench_embedder().clear_cache()
    bench_embedder(SENTENCE_UNITS).clear_cache()
    _stock_embedder().clear_cache()


__all__ = ["BASELINES", "FLOOR", "Measurement", "corpus_paths", "langchain_embeddings", "run_chunk_bench"]
