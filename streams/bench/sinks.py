"""Sink throughput beside the raw clients on the same data: MongoSink vs plain pymongo bulk upserts,
VectorSink (embed + LanceDB upsert) vs plain batched embedding, and the re-embedding an amendment costs."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from pymongo import MongoClient, ReplaceOne

from streams.bench import bench_chunker
from streams.core.document import assemble
from streams.core.events import ChunkRecord
from streams.core.publish import publish
from streams.core.versions import decide
from streams.embedding.model import Embedder
from streams.ingest.files import page_events
from streams.sinks.mongo import MongoSink, chunk_document


def version_records(issued: Path, amended: Path, strategy: str = "section") -> dict[int, list[ChunkRecord]]:

    chunker = bench_chunker(strategy)
    out: dict[int, list[ChunkRecord]] = {}
    state = None
    for number, path in ((0, issued), (1, amended)):
        pages = [p.model_copy(update={"doc_id": "rfp", "amendment_number": number}) for p in page_events(path)]
        doc = assemble(pages)
        records = publish(doc, chunker).records
        decision = decide(state, number, [r.chunk_id for r in records])
        state = decision.state
        out[number] = records
    return out


def run(issued: Path, amended: Path, mongo_url: str) -> dict[str, Any]:
    from streams.sinks.lance_target import LanceTarget
    from streams.sinks.vectors import VectorSink

    versions = version_records(issued, amended)
    records = versions[0] + versions[1]
    texts = [r.text for r in records if not r.metadata.get("is_table")]
    result: dict[str, Any] = {"chunks_per_version": {str(k): len(v) for k, v in versions.items()}}

    raw = MongoClient(mongo_url)["bench"]["raw"]
    raw.drop()
    started = time.perf_counter()
    raw.bulk_write(
        [
            ReplaceOne(
                {"_id": r.chunk_id}, {**chunk_document(r), "is_latest_version": True, "retired": False}, upsert=True
            )
            for r in records
        ]
    )
    raw_s = time.perf_counter() - started
    sink = MongoSink(mongo_url, "bench", "sink")
    sink.collection.drop()
    sink.ensure_indexes()
    started = time.perf_counter()
    for start in range(0, len(records), 256):
        sink.write_chunks(records[start : start + 256])
    sink_s = time.perf_counter() - started
    sink.close()
    result["mongo"] = {
        "chunks": len(records),
        "sink_chunks_per_s": round(len(records) / sink_s, 1),
        "raw_pymongo_chunks_per_s": round(len(records) / raw_s, 1),
        "ratio": round(raw_s / sink_s, 3),
    }

    embedder = Embedder()
    embedder.encode(["warm up"])
    started = time.perf_counter()
    Embedder(embedder.model_path).encode(texts)  # a cold cache: every text embedded once
    raw_embed_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Embedder(embedder.model_path)
        fresh._model = embedder.model  # same loaded model, empty cache
        vectors = VectorSink(LanceTarget(Path(tmp) / "lance"), Path(tmp) / "state.sqlite", embedder=fresh)
        started = time.perf_counter()
        vectors.write_chunks(versions[0])
        first = vectors.stats.embedded
        vectors.write_chunks(versions[1])
        sink_embed_s = time.perf_counter() - started
        result["vectors"] = {
            "vectors": vectors.stats.upserted,
            "embedded_original": first,
            "re_embedded_after_amendment": vectors.stats.embedded - first,
            "reused_after_amendment": vectors.stats.reused,
            "sink_vectors_per_s": round(vectors.stats.upserted / sink_embed_s, 1),
            "raw_embed_texts_per_s": round(len(texts) / raw_embed_s, 1),
            "ratio": round(raw_embed_s / sink_embed_s, 3),
        }
        vectors.close()
    return result
