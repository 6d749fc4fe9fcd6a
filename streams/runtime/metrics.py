"""Prometheus metrics and health endpoints for workers and sinks.

One small HTTP server per process (`STREAMS_METRICS_PORT`, 0 = off) serves `/metrics`, `/healthz`
(the process is alive) and `/readyz` (it has reached the broker). Metric names follow Prometheus
conventions (`_total` counters, `_seconds` histograms) with low-cardinality labels.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

RECORDS_IN = Counter("streams_records_in", "Records consumed", ["role", "topic"])
RECORDS_OUT = Counter("streams_records_out", "Records produced", ["role", "topic"])
CHUNKS = Counter("streams_chunks", "Chunks published", ["strategy"])
SKIPPED = Counter("streams_documents_skipped", "Documents a strategy does not take (not applicable)", ["strategy"])
ROLE_RESTARTS = Counter("streams_role_restarts", "Restarts of a role by the supervisor of `streams up`", ["role"])
ROLE_STATE = Gauge("streams_role_state", "1 for the state a supervised role is in", ["role", "state"])
INDEXED = Counter("streams_documents_indexed", "Document versions complete in a store", ["store", "outcome"])
LEDGER_PENDING = Gauge("streams_ledger_pending", "Manifests a sink waits to see complete in its store", ["store"])
#: `streams audit` is a one-shot job: its gauge has a registry of its own, pushed alone to a Pushgateway.
AUDIT_REGISTRY = CollectorRegistry()
AUDIT_GAPS = Gauge(
    "streams_audit_gaps", "Gaps the last `streams audit` found, by kind", ["kind"], registry=AUDIT_REGISTRY
)
DEAD_LETTERS = Counter("streams_dead_letters", "Dead letters published", ["stage", "reason"])
LATENCY = Histogram(
    "streams_processing_latency_seconds",
    "page_to_chunk: first page of a document to its chunks published; chunk_to_stored: publish to sink write",
    ["stage"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)
TABLE_ENTRIES = Gauge("streams_table_entries", "Entries in a worker's state table", ["table"])
LONG_CHUNKS = Counter(
    "streams_vector_long_chunks",
    "Chunks longer than the embedding model reads (embedded truncated or as windows: STREAMS_EMBED_LONG_CHUNKS)",
    ["strategy"],
)
EMBED_BATCH = Histogram(
    "streams_embedding_batch_seconds",
    "Time to embed one batch",
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30),
)

REMOTE_REQUESTS = Counter(
    "streams_embedding_remote_requests",
    "Requests to the remote embedding endpoint, by outcome (ok, or the status or error that ended it)",
    ["outcome"],
)
REMOTE_TOKENS = Counter("streams_embedding_remote_tokens", "Tokens sent to the remote embedding endpoint")
REMOTE_RETRIES = Counter(
    "streams_embedding_remote_retries", "Retried requests to the remote embedding endpoint", ["reason"]
)
REMOTE_LATENCY = Histogram(
    "streams_embedding_remote_seconds",
    "Time of one request to the remote embedding endpoint, answered or not",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
)


class LagCollector(Collector):
    """Consumer lag of this process's group, computed at scrape time from the broker."""

    def __init__(self, lag: Callable[[], list]) -> None:
        self.lag = lag

    def collect(self):
        family = GaugeMetricFamily(
            "streams_consumer_lag",
            "End offset minus committed offset",
            labels=["group", "topic", "partition"],
        )
        try:
            for row in self.lag():
                family.add_metric([row.group, row.topic, str(row.partition)], row.lag)
        except Exception:  # a scrape must not fail because the broker is briefly away
            pass
        yield family


class EmbeddingCacheCollector(Collector):
    """Where this process's embedding vectors came from, read from the embedder at scrape time:
    `memory` (its LRU), `shared` (the deployment's store: someone else embedded it), `embedded` (here).
    The hit rate is (memory + shared) / all."""

    def __init__(self, stats: Callable[[], object]) -> None:
        self.stats = stats

    def collect(self):
        family = CounterMetricFamily(
            "streams_embedding_texts",
            "Texts the embedder was asked for, by where the vector came from",
            labels=["source"],
        )
        stats = self.stats()
        for source, attribute in (("memory", "hits"), ("shared", "shared_hits"), ("embedded", "misses")):
            family.add_metric([source], getattr(stats, attribute))
        yield family
        long = CounterMetricFamily(
            "streams_embedding_long_texts",
            "Texts embedded here that were longer than the model reads (truncated, or as windows)",
        )
        long.add_metric([], getattr(stats, "long", 0))
        yield long


class _State:
    ready: Callable[[], bool] = staticmethod(lambda: True)


def _handler_for(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/metrics"):
                body, status, ctype = generate_latest(REGISTRY), 200, CONTENT_TYPE_LATEST
            elif self.path.startswith("/healthz"):
                body, status, ctype = b"ok\n", 200, "text/plain"
            elif self.path.startswith("/readyz"):
                ok = bool(state.ready())
                body, status, ctype = (b"ready\n" if ok else b"not ready\n"), 200 if ok else 503, "text/plain"
            else:
                body, status, ctype = b"not found\n", 404, "text/plain"
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    return Handler


def serve(
    port: int, ready: Callable[[], bool] | None = None, lag: Callable[[], list] | None = None
) -> ThreadingHTTPServer:
    """Start the endpoints in a daemon thread; returns the server (its port is `server.server_port`)."""
    state = _State()
    if ready is not None:
        state.ready = ready
    if lag is not None:
        REGISTRY.register(LagCollector(lag))
    server = ThreadingHTTPServer(("0.0.0.0", port), _handler_for(state))
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics").start()
    return server
