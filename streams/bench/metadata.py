"""What carrying a document's metadata costs: Avro bytes per chunk record, and the MongoDB and vector sinks'
throughput, the same records with and without it, in one run (alternating rounds, medians)."""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streams.bench import bench_chunker
from streams.codec.avro import AvroCodec
from streams.core.document import assemble
from streams.core.events import ChunkRecord
from streams.core.metadata import size_of
from streams.core.publish import publish
from streams.embedding.model import Embedder
from streams.ingest.files import page_events
from streams.runtime.keyring import KeyRing, SealingCodec

#: A publisher's metadata as ingestion pipelines send it: provenance, dates, tags, tenant and 20 readers.
METADATA: dict[str, Any] = {
    "source_uri": "s3://acme-ingest/contracts/2026/03/harbour-bridge-rfp.pdf",
    "title": "Harbour Bridge Structural Monitoring: Request for Proposals",
    "author": "Port Authority Procurement Office",
    "created": "2026-03-04T09:30:00Z",
    "modified": "2026-03-18T16:02:11Z",
    "year": 2026,
    "language": "en",
    "tags": ["procurement", "bridge", "monitoring", "sensors", "infrastructure"],
    "tenant": "acme-port-authority",
    "acl": [f"group:procurement-{n:02d}" for n in range(20)],
    "confidential": False,
    "page_quality": 0.97,
}
#: What the vectors carry of it.
VECTOR_KEYS = {"source_uri": "str", "year": "int", "created": "date", "tags": "list", "tenant": "str", "acl": "list"}


def _records(paths: list[Path], metadata: dict[str, Any], copies: int) -> list[ChunkRecord]:
    """Every document `copies` times under its own ids: enough chunks that a round is not a few milliseconds."""

    chunker = bench_chunker("section")
    out: list[ChunkRecord] = []
    for n, path in enumerate(paths):
        for copy in range(copies):
            update = {"doc_id": f"doc-{n}-{copy}", "metadata": dict(metadata)}
            out += publish(assemble([p.model_copy(update=update) for p in page_events(path)]), chunker).records
    return out


def _median_s(rounds: int, runs: dict[str, Callable[[int], None]]) -> dict[str, float]:
    """Median seconds of each run, alternating so that a noisy moment hits both alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for n in range(rounds):
        for name, run in runs.items():
            started = time.perf_counter()
            run(n)
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(t) for name, t in times.items()}


def run(paths: list[Path], mongo_url: str, rounds: int = 5, copies: int = 20) -> dict[str, Any]:
    from streams.sinks.lance_target import LanceTarget
    from streams.sinks.mongo import MongoSink
    from streams.sinks.vectors import VectorSink

    plain, given = _records(paths, {}, copies), _records(paths, METADATA, copies)
    if [r.chunk_id for r in plain] != [r.chunk_id for r in given]:
        raise RuntimeError("chunk ids changed with the document's metadata: they must not depend on it")
    codec = AvroCodec(None)

    def avro_bytes(records: list[ChunkRecord]) -> float:
        return statistics.mean(len(codec.encode("chunk_record", r.model_dump(mode="json"))) for r in records)

    result: dict[str, Any] = {
        "documents": len(paths),
        "chunks": len(plain),
        "metadata_json_bytes": size_of(METADATA),
        "record_bytes": {"without": avro_bytes(plain), "with": avro_bytes(given)},
    }
    result["record_bytes"]["ratio"] = result["record_bytes"]["with"] / result["record_bytes"]["without"]

    sinks = {name: MongoSink(mongo_url, "bench-metadata", name) for name in ("without", "with")}

    def mongo(name: str, records: list[ChunkRecord]) -> Callable[[int], None]:
        def write(_n: int) -> None:
            sinks[name].collection.drop()
            sinks[name].write_chunks(records)

        return write

    seconds = _median_s(rounds, {"without": mongo("without", plain), "with": mongo("with", given)})
    result["mongo_chunks_per_s"] = {k: len(plain) / v for k, v in seconds.items()}
    result["mongo_chunks_per_s"]["ratio"] = seconds["without"] / seconds["with"]
    for sink in sinks.values():
        sink.close()

    # The sink's line per document with long chunks would repeat every round: said once, by the warm-up.
    quiet = logging.getLogger("streams.sinks.vectors")
    with tempfile.TemporaryDirectory() as tmp:
        embedder = Embedder()
        warm = VectorSink(LanceTarget(Path(tmp) / "warm"), Path(tmp) / "warm.sqlite", embedder=embedder)
        warm.write_chunks(plain)  # every vector in the embedding store: the rounds time the sink, not the model

        def vectors(name: str, records: list[ChunkRecord], keys: dict[str, str]) -> Callable[[int], None]:
            def write(n: int) -> None:
                where = Path(tmp) / f"{name}-{n}"
                target = LanceTarget(where / "lance", columns=keys)
                VectorSink(target, where / "state.sqlite", embedder=embedder, metadata_keys=keys).write_chunks(records)

            return write

        level, _ = quiet.level, quiet.setLevel(logging.ERROR)
        try:
            seconds = _median_s(
                rounds, {"without": vectors("without", plain, {}), "with": vectors("with", given, VECTOR_KEYS)}
            )
        finally:
            quiet.setLevel(level)
    result["vector_chunks_per_s"] = {k: len(plain) / v for k, v in seconds.items()}
    result["vector_chunks_per_s"]["ratio"] = seconds["without"] / seconds["with"]
    result["document_keys"] = _sealing(given, mongo_url, rounds)
    result["rounds"], result["copies"] = rounds, copies
    return result


def _sealing(records: list[ChunkRecord], mongo_url: str, rounds: int) -> dict[str, Any]:
    """What document keys cost a chunk record: its bytes sealed, and encode plus decode per second, plain and
    sealed (keys warm in the ring's cache, as a worker's are within a document)."""
    from pymongo import MongoClient

    client: MongoClient = MongoClient(mongo_url)
    try:
        codecs = {"plain": AvroCodec(None), "sealed": SealingCodec(KeyRing(client["bench-metadata"]["keys"]))}
        bodies = [r.model_dump(mode="json") for r in records]

        def round_trip(codec: AvroCodec) -> Callable[[int], None]:
            def run(_n: int) -> None:
                for body in bodies:
                    codec.decode("chunk_record", codec.encode("chunk_record", body))

            return run

        round_trip(codecs["sealed"])(0)  # every document's key made and cached before the rounds
        sizes = {n: statistics.mean(len(c.encode("chunk_record", b)) for b in bodies) for n, c in codecs.items()}
        seconds = _median_s(rounds, {name: round_trip(codec) for name, codec in codecs.items()})
    finally:
        client.close()
    per_s = {name: len(bodies) / s for name, s in seconds.items()}
    return {
        "record_bytes": {**sizes, "ratio": sizes["sealed"] / sizes["plain"]},
        "encode_decode_per_s": {**per_s, "ratio": seconds["plain"] / seconds["sealed"]},
    }
