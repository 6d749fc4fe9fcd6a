"""The per-document ledger end to end: manifests, `documents.indexed`, `streams status DOC`, audit and repair,
against the embedded broker, SecantusDB and LanceDB."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from confluent_kafka import Producer

from streams.codec.avro import AvroCodec
from streams.core.document import assemble
from streams.core.events import DocType, DocumentIndexed
from streams.core.records import build_records, is_table
from streams.ops.audit import audit, audit_stores, read_topic, repair
from streams.ops.pipeline import LocalPipeline, publish_pages
from streams.runtime.clients import client_config
from streams.settings import Settings
from streams.sinks.lance_target import LanceTarget
from streams.sinks.mongo import MongoSink
from tests.cli import streams
from tests.conftest import make_pages, strategy_chunker
from tests.integration.conftest import pipeline_settings
from tests.reliability.test_faults import documents

pytestmark = pytest.mark.integration

STRATEGIES = ["window", "section"]
TABLE_DOC = (
    "SECTION 1: SCOPE OF WORK\n\nThe contractor shall maintain every listed site for the base year. " * 12
    + "\n\nSECTION 2: PRICE SCHEDULE\n\n| CLIN | Item | Qty |\n|---|---|---|\n| 0001 | Mowing | 12 |\n"
)


def solicitations(docs: list) -> list:
    """The documents as solicitations named as seed 002's file filter wants: both strategies take them."""
    kind = {"doc_type": DocType.solicitation}
    return [[p.model_copy(update={**kind, "document_name": f"{p.doc_id}-rfp.txt"}) for p in pages] for pages in docs]


def expected_records(docs: list, strategies: list[str]) -> dict[tuple[str, int, str], list]:
    out = {}
    for pages in docs:
        doc = assemble(pages)
        for strategy in strategies:
            chunker = strategy_chunker(strategy)
            out[(doc.doc_id, doc.amendment_number, strategy)] = build_records(doc, chunker, chunker.chunk(doc))
    return out


def indexed_events(settings: Settings) -> list[DocumentIndexed]:
    codec = AvroCodec(settings.schema_registry_url)
    return [
        DocumentIndexed(**codec.decode("document_indexed", m.value()))
        for m in read_topic(settings, settings.topics.indexed)
        if m.value() is not None
    ]


def wait_indexed(pipeline: LocalPipeline, wanted: set[tuple], timeout: float = 300) -> list[DocumentIndexed]:
    """Until every (doc, amendment, strategy, store) in `wanted` has its event; supervises meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        pipeline.check_workers()
        events = indexed_events(pipeline.settings)
        seen = {(e.doc_id, e.amendment_number, e.strategy, e.store) for e in events}
        if wanted <= seen:
            return events
        assert time.monotonic() < deadline, f"not indexed: {sorted(wanted - seen)[:5]}"
        time.sleep(1)


def wanted_events(expected: dict) -> set[tuple]:
    return {(d, a, s, store) for (d, a, s) in expected for store in ("mongo", "vectors")}


def store_state(settings: Settings) -> tuple[dict, dict]:
    mongo = MongoSink.of(settings)
    try:
        rows = {
            d["_id"]: (d["checksum"], d["is_latest_version"])
            for d in mongo.collection.find({}, {"checksum": 1, "is_latest_version": 1})
        }
    finally:
        mongo.close()
    target = LanceTarget(settings.lance_dir, settings.lance_table)
    ids = target.ids()
    assert len(ids) == len(set(ids)), "a vector stored twice"
    return rows, target.flags(ids)


def run_audit(settings: Settings, **kwargs):
    stores = audit_stores(settings, ["mongo", "vectors"])
    try:
        report, ledger = audit(settings, STRATEGIES, stores)
        repaired = repair(settings, report, ledger, stores) if kwargs.get("repair") else None
    finally:
        for store in stores:
            store.close()
    return report, repaired


@contextmanager
def pushgateway() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """Stands in for a Prometheus Pushgateway: records each PUT of the text exposition format."""
    pushed: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"])).decode()
            pushed.append((self.path, body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", pushed
    finally:
        server.shutdown()


def cli(settings: Settings, *args: str, **extra_env: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        **extra_env,
        "STREAMS_DEPLOYMENT": settings.deployment,
        "STREAMS_BROKER": settings.broker,
        "STREAMS_MONGO_URL": settings.mongo_url,
        "STREAMS_DATA_DIR": str(settings.data_dir),
        "STREAMS_PARTITIONS": str(settings.partitions),
    }
    return streams(*args, env=env, timeout=600)


@pytest.mark.one_broker("kafka")  # the ledger is the sinks' and the store's: the broker under them has its own tests
def test_indexed_once_per_version_and_store_then_audit_finds_and_repairs_hand_damage(tmp_path: Path) -> None:
    docs = solicitations([*documents(6), make_pages("priced", [TABLE_DOC])])
    bad = make_pages("refused", ["   "])  # blank: dead-lettered by the assembler, never repaired
    settings = pipeline_settings(tmp_path, sink_assignment="manual")
    expected = expected_records(docs, STRATEGIES)
    assert any(is_table(r) for r in expected[("priced", 0, "section")])  # the vector store skips that one
    with LocalPipeline(settings, STRATEGIES, sinks=["mongo", "vectors"], supervise=True) as pipeline:
        settings = pipeline.settings
        publish_pages(settings, [p for d in [*docs, bad] for p in d])
        events = wait_indexed(pipeline, wanted_events(expected))
        time.sleep(3)  # a duplicate would show up here
        events = indexed_events(settings)
        counts = Counter((e.doc_id, e.amendment_number, e.strategy, e.store) for e in events)
        assert set(counts) == wanted_events(expected) and set(counts.values()) == {1}, counts
        for e in events:
            records = expected[(e.doc_id, e.amendment_number, e.strategy)]
            held = [r for r in records if e.store == "mongo" or not is_table(r)]
            assert e.chunk_count == len(held) and e.outcome == "indexed"
        clean = store_state(settings)

        with pushgateway() as (url, pushed):
            done = cli(settings, "audit", "--json", "-s", "window", "-s", "section", STREAMS_PUSHGATEWAY_URL=url)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary["gaps"]["dead_lettered"] == 1 and sum(summary["gaps"].values()) == 1, summary
        [(path, body)] = pushed  # the gap gauge alone, under the job the alert rule expects
        assert path == "/metrics/job/streams-audit"
        assert 'streams_audit_gaps{kind="dead_lettered"} 1.0' in body and "streams_records_in" not in body

        status = cli(settings, "status", "priced", "--json", "-s", "window", "-s", "section")
        assert status.returncode == 0, status.stderr
        life = json.loads(status.stdout)
        section = life["versions"][0]["strategies"]["section"]
        assert section["stores"]["mongo"]["held"] == len(expected[("priced", 0, "section")])
        assert section["stores"]["vectors"]["expected"] == section["stores"]["mongo"]["expected"] - 1
        assert section["stores"]["vectors"]["indexed_ms"] and life["gaps"] == []
        refused = json.loads(cli(settings, "status", "refused", "--json").stdout)
        assert refused["dead_letters"] and refused["dead_letters"][0]["stage"] == "assembly"

        # Damage by hand: rows deleted, vectors deleted, a flag flipped.
        mongo = MongoSink.of(settings)
        lost_rows = [r.chunk_id for r in expected[(docs[0][0].doc_id, 0, "window")]]
        mongo.collection.delete_many({"_id": {"$in": lost_rows}})
        flipped = expected[(docs[1][0].doc_id, 0, "section")][0].chunk_id
        mongo.set_latest([flipped], False)
        mongo.close()
        lost_vectors = [r.chunk_id for r in expected[(docs[2][0].doc_id, 0, "section")]]
        LanceTarget(settings.lance_dir, settings.lance_table).delete(lost_vectors)
        # An indexed event gone as a broker that loses acknowledged writes loses it (a tombstone reads the same).
        [unreported] = [e for e in events if (e.doc_id, e.strategy, e.store) == (docs[3][0].doc_id, "window", "mongo")]
        tombstone = Producer(client_config(settings))
        tombstone.produce(settings.topics.indexed, key=unreported.key.encode(), value=None)
        assert tombstone.flush(10) == 0

        report, _ = run_audit(settings)
        kinds = Counter(g.kind for g in report.gaps)
        assert kinds == {
            "rows_missing": 1,
            "vectors_missing": 1,
            "wrong_latest": 1,
            "unreported": 1,
            "dead_lettered": 1,
        }, kinds
        by_kind = {g.kind: g for g in report.gaps}
        assert sorted(by_kind["rows_missing"].ids) == sorted(lost_rows)
        assert sorted(by_kind["vectors_missing"].ids) == sorted(lost_vectors)
        assert by_kind["wrong_latest"].ids == [flipped]
        assert (by_kind["unreported"].doc_id, by_kind["unreported"].store) == (unreported.doc_id, "mongo")

        damaged = cli(settings, "audit", "--json", "-s", "window", "-s", "section")
        assert damaged.returncode == 1  # gaps remain: a CronJob fails, an alert fires

        _, repaired = run_audit(settings, repair=True)
        assert repaired.rechunked == 1 and repaired.resunk == len(lost_vectors) and repaired.flags == 1
        assert repaired.reported == 1
        deadline = time.monotonic() + 120
        while True:
            pipeline.check_workers()
            report, _ = run_audit(settings)
            if [g.kind for g in report.gaps] == ["dead_lettered"]:
                break
            assert time.monotonic() < deadline, [g.as_dict() for g in report.gaps]
            time.sleep(1)
        assert store_state(settings) == clean
        [resent] = [e for e in indexed_events(settings) if e.key == unreported.key][-1:]
        assert (resent.chunk_count, resent.outcome) == (unreported.chunk_count, "indexed")
