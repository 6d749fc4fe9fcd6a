"""Shared by the fault-injection tests: deterministic documents, the chunks a clean run produces (computed
in-process, no bus), reading back what the stores hold, a gap forced on purpose for the audit to find
and `--repair` to close, and the assembler group's members."""

from __future__ import annotations

import json
import random
import time

from confluent_kafka.admin import AdminClient

from streams.core.document import assemble
from streams.core.events import PageEvent
from streams.core.records import build_records
from streams.ops.audit import AuditReport, audit, audit_stores
from streams.ops.pipeline import LocalPipeline
from streams.runtime.clients import client_config, group_id
from streams.settings import Settings
from streams.sinks.lance_target import LanceTarget
from streams.sinks.mongo import MongoSink
from tests.conftest import make_pages, strategy_chunker

WORDS = ["tide", "harbour", "ledger", "sensor", "bridge", "clause", "invoice", "granite", "orchard", "lantern"]


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count)) + "."


def documents(
    count: int, prefix: str, pages: tuple[int, int] = (1, 3), page_words: tuple[int, int] = (80, 400)
) -> list[list[PageEvent]]:
    """`count` documents of `pages` pages each (inclusive range), seeded by their index."""
    docs = []
    for n in range(count):
        rng = random.Random(f"{prefix}-{n}")
        texts = [words(rng, rng.randint(*page_words)) for _ in range(rng.randint(*pages))]
        docs.append(make_pages(f"{prefix}-{n:03d}", texts))
    return docs


def expected_chunks(docs: list[list[PageEvent]], strategy: str = "window") -> dict[str, str]:
    """chunk_id -> checksum of a clean run: assemble, chunk and build the records in this process."""
    chunker = strategy_chunker(strategy)
    expected: dict[str, str] = {}
    for pages in docs:
        doc = assemble(pages)
        for record in build_records(doc, chunker, chunker.chunk(doc)):
            expected[record.chunk_id] = record.checksum
    return expected


def stored_chunks(settings: Settings, want: int, timeout: float) -> tuple[dict[str, str], int]:
    """chunk_id -> checksum in MongoDB once it holds `want` chunks (or at the timeout), and the raw row count.

    The row count is read separately from the id map so a duplicate row (same id twice) would show.
    """
    sink = MongoSink.of(settings)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and sink.count() < want:
            time.sleep(0.5)
        rows = list(sink.collection.find({}, {"checksum": 1}))
        return {row["_id"]: row["checksum"] for row in rows}, len(rows)
    finally:
        sink.close()


def stored_vectors_and_audit(settings: Settings, want: int, timeout: float = 300) -> tuple[list[str], AuditReport]:
    """The vector store's chunk ids once it holds `want` (or `timeout` passed), and the window strategy's audit
    over both stores."""
    deadline = time.monotonic() + timeout
    while True:  # a LanceDB table read once stays at that version: open it afresh each time
        lance = LanceTarget(settings.lance_dir, settings.lance_table)
        if lance.count() >= want or time.monotonic() > deadline:
            break
        time.sleep(1)
    vectors = [row["chunk_id"] for row in lance.table.to_arrow().select(["chunk_id"]).to_pylist()]
    opened = audit_stores(settings, ["mongo", "vectors"])
    try:
        report, _ = audit(settings, ["window"], opened)
    finally:
        for opened_store in opened:
            opened_store.close()
    return vectors, report


def chunk_ids_by_document(docs: list[list[PageEvent]], strategy: str = "window") -> dict[str, list[str]]:
    """doc_id -> the chunk ids a clean run gives it, in order."""
    return {pages[0].doc_id: list(expected_chunks([pages], strategy)) for pages in docs}


def stored_counts(settings: Settings, mongo: MongoSink) -> tuple[int, int]:
    """Rows in MongoDB and vectors in LanceDB (0 while the vector sink has not made its table)."""
    from streams.sinks.lance_target import LanceTarget

    try:
        vectors = LanceTarget(settings.lance_dir, settings.lance_table).count()
    except Exception:
        vectors = 0
    return mongo.count(), vectors


def force_gap(settings: Settings, chunk_ids: dict[str, list[str]], strategy: str = "window") -> tuple[str, list[str]]:
    """Delete every row and vector of one document the ledger shows chunked, held whole by both stores and
    reported by both sinks: a gap made on purpose, so that the audit has one to name and `--repair` one to
    close whether or not the broker lost anything. Returns the document and its chunk ids."""
    from streams.ops.audit import lineage, read_ledger
    from streams.sinks.lance_target import LanceTarget

    ledger = read_ledger(settings)
    version = lineage(settings, strategy)
    target = LanceTarget(settings.lance_dir, settings.lance_table)
    vectors = set(target.ids())
    mongo = MongoSink.of(settings)
    try:
        for doc_id, ids in sorted(chunk_ids.items()):
            manifest = ledger.manifest(doc_id, 0, strategy, version)
            if manifest is None or manifest.chunk_ids != ids or not set(ids) <= vectors:
                continue
            if not all(ledger.reported(manifest, store) for store in ("mongo", "vectors")):
                continue
            if len(mongo.by_ids(ids)) != len(ids):
                continue
            mongo.collection.delete_many({"_id": {"$in": ids}})
            target.delete(ids)
            return doc_id, ids
    finally:
        mongo.close()
    raise AssertionError("no document is whole in both stores and reported: nothing to delete")


def audit_names_the_gaps_and_repair_closes_them(
    pipeline: LocalPipeline, forced: tuple[str, list[str]], versions: int, strategy: str = "window"
) -> list[dict]:
    """`streams audit` exits 1 and names the forced gap (every row and vector of its document missing) beside
    whatever the broker lost, none of it beyond repair; `--repair` re-chunks each version missing rows or
    chunking; the audit then exits 0. Returns the gaps other than the forced one: what the broker lost."""
    from streams.ops.audit import UNREPAIRABLE
    from tests.integration.conftest import audit_once
    from tests.integration.test_ledger import cli

    settings = pipeline.settings
    # --wait: what the sinks are still writing is backlog, not loss; past it the forced gap is loss (exit 1).
    found = cli(settings, "audit", "--wait", "120", "--json", "-s", strategy)
    assert found.returncode == 1, found.stderr
    report = json.loads(found.stdout)
    assert report["versions"] == versions, report  # every page the publisher sent is on the topic
    doc_id, ids = forced
    named = sorted((d["kind"], d["store"], d["ids"]) for d in report["details"] if d["doc_id"] == doc_id)
    assert named == [("rows_missing", "mongo", len(ids)), ("vectors_missing", "vectors", len(ids))], report
    lost = [d for d in report["details"] if d["doc_id"] != doc_id]
    assert not [d for d in lost if d["kind"] in UNREPAIRABLE], lost

    repaired = cli(settings, "audit", "--repair", "--json", "-s", strategy)
    assert repaired.returncode == 1, repaired.stderr  # the forced gap was still there when it looked
    again = json.loads(repaired.stdout)
    rechunk = {
        d["doc_id"] for d in again["details"] if d["kind"] in ("not_chunked", "rows_missing") and not d["pending"]
    }
    assert doc_id in rechunk and again["repaired"]["rechunked"] == len(rechunk), again
    deadline = time.monotonic() + 180
    while (report := audit_once(settings, [strategy])).gaps:  # in this process: no interpreter per look
        assert time.monotonic() < deadline, f"gaps remain after the repair: {report.as_dict()['details'][:5]}"
        pipeline.check_workers()
        time.sleep(1)
    last = cli(settings, "audit", "--json", "-s", strategy)
    assert last.returncode == 0 and not any(json.loads(last.stdout)["gaps"].values()), last.stdout[-2000:]
    return lost


def members(settings: Settings) -> dict[str, set[tuple[str, int]]]:
    """client id -> (topic, partition) of pages.cleaned it owns, per member of the assembler group."""
    admin = AdminClient(client_config(settings))
    group = group_id(settings, "assembler")
    description = admin.describe_consumer_groups([group], request_timeout=5)[group].result()
    return {
        m.client_id: {
            (tp.topic, tp.partition) for tp in m.assignment.topic_partitions if tp.topic == settings.topics.pages
        }
        for m in description.members
    }


def wait_split(settings: Settings, replicas: int, timeout: float) -> dict[str, set[tuple[str, int]]]:
    """Until `replicas` members each own at least one page partition and together own them all."""
    deadline = time.monotonic() + timeout
    seen: dict[str, set[tuple[str, int]]] = {}
    while time.monotonic() < deadline:
        try:
            seen = members(settings)
        except Exception:  # the group is between generations
            seen = {}
        owned = [tp for tps in seen.values() for tp in tps]
        if len(seen) == replicas and all(seen.values()) and len(set(owned)) == settings.partitions:
            return seen
        time.sleep(0.5)
    raise AssertionError(f"the assembler group did not settle on {replicas} members: {seen}")
