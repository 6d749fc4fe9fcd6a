"""The audit's gap kinds that no running pipeline leaves behind, made on purpose against a real broker and
MongoDB-protocol store with no worker running: a version whose pages never all arrived (`never_assembled`),
a complete version no chunker took (`not_chunked`) and rows no manifest names (`orphan`); what `--repair`
re-drives and what it leaves; `--since`, which reads only the pages published after a time; and
`streams lag --watch`, which keeps its table current. One broker and store serve the whole module."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from streams.core.document import assemble
from streams.core.records import build_records
from streams.ops.audit import audit, audit_stores, lineage
from streams.ops.embedded import broker, document_store
from streams.ops.pipeline import publish_pages
from streams.ops.topics import ensure_topics
from streams.runtime.clients import client_config
from streams.settings import Settings
from streams.sinks.mongo import MongoSink
from tests.cli import streams
from tests.conftest import make_pages, strategy_chunker

pytestmark = pytest.mark.integration

WORDS = ["harbor", "tides", "mooring", "lines", "sourdough", "ovens", "budgets", "votes"]


def text(seed: int, words: int = 400) -> str:
    return " ".join(WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(words)) + "."


@dataclass
class Stack:
    settings: Settings

    def cli(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """A `streams` command as an operator runs it, pointed at this module's broker and store."""
        return streams(*args, env=stack_env(self.settings), timeout=timeout)


def stack_env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMS_") or k == "STREAMS_BROKER_KIND"}
    return {
        **env,
        "STREAMS_DEPLOYMENT": settings.deployment,
        "STREAMS_BROKER": settings.broker,
        "STREAMS_MONGO_URL": settings.mongo_url,
        "STREAMS_DATA_DIR": str(settings.data_dir),
        "STREAMS_PARTITIONS": str(settings.partitions),
    }


@pytest.fixture(scope="module")
def stack(bus: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp(f"audit-{bus}")
    with broker(tmp) as service, document_store(tmp) as store:
        settings = Settings(broker=service.address, mongo_url=f"mongodb://{store.address}", data_dir=tmp, partitions=2)
        ensure_topics(settings)
        yield Stack(settings)


def test_audit_names_each_gap_kind_and_repairs_only_what_it_can(stack: Stack) -> None:
    settings = stack.settings
    half = make_pages("audit-half", [text(1), text(2)])[:1]  # page 2 of 2 never sent
    whole = make_pages("audit-whole", [text(3), text(4)])
    publish_pages(settings, [*half, *whole])
    # Rows for audit-whole from another lineage (other window options): no manifest names them.
    stray = assemble(whole)
    chunker = strategy_chunker("window", chunk_size_words=120, chunk_overlap_words=0)
    strays = build_records(stray, chunker, chunker.chunk(stray))
    mongo = MongoSink.of(settings)
    try:
        mongo.write_chunks(strays)
    finally:
        mongo.close()

    done = stack.cli("audit", "--json", "-s", "window", "--stores", "mongo")
    assert done.returncode == 1, done.stderr  # gaps remain
    report = json.loads(done.stdout)
    assert report["versions"] == 2
    gaps = {kind: n for kind, n in report["gaps"].items() if n}
    assert gaps == {"never_assembled": 1, "not_chunked": 1, "orphan": 1}, report
    details = {d["kind"]: d for d in report["details"]}
    assert (
        details["never_assembled"]["doc_id"] == "audit-half" and "1 of 2 pages" in details["never_assembled"]["detail"]
    )
    assert (details["not_chunked"]["doc_id"], details["not_chunked"]["strategy"]) == ("audit-whole", "window")
    assert details["orphan"]["doc_id"] == "audit-whole" and details["orphan"]["ids"] == len(strays)

    # --repair re-chunks the version no chunker took (its manifest and chunks go on the bus, for the sinks)
    # and leaves what no repair can mend: pages that never came, rows nothing names.
    repaired = stack.cli("audit", "--json", "--repair", "-s", "window", "--stores", "mongo")
    assert repaired.returncode == 1, repaired.stderr
    assert json.loads(repaired.stdout)["repaired"]["rechunked"] == 1
    [mongo] = audit_stores(settings, ["mongo"])
    try:
        after, ledger = audit(settings, ["window"], [mongo])
    finally:
        mongo.close()
    # No sink runs here: the re-chunked version's rows are missing now, not its chunking; its manifest
    # names exactly the chunks the offline path makes.
    assert {kind: n for kind, n in after.counts().items() if n} == {
        "never_assembled": 1,
        "rows_missing": 1,
        "orphan": 1,
    }
    offline = strategy_chunker("window")
    expected = [r.chunk_id for r in build_records(stray, offline, offline.chunk(stray))]
    [missing] = [g for g in after.gaps if g.kind == "rows_missing"]
    assert missing.doc_id == "audit-whole" and sorted(missing.ids) == sorted(expected)
    assert ledger.manifest("audit-whole", 0, "window", lineage(settings, "window")).chunk_ids == expected


def test_audit_since_reads_only_the_pages_published_after_it(stack: Stack) -> None:
    settings = stack.settings
    publish_pages(settings, make_pages("since-before", [text(5)]))
    time.sleep(0.5)
    since = datetime.now(UTC).isoformat()
    time.sleep(0.5)
    publish_pages(settings, make_pages("since-after", [text(6)]))

    later = stack.cli("audit", "--json", "-s", "window", "--stores", "mongo", "--since", since)
    assert later.returncode == 1, later.stderr
    report = json.loads(later.stdout)
    assert report["versions"] == 1  # of at least two on the topic
    assert [(d["kind"], d["doc_id"]) for d in report["details"]] == [("not_chunked", "since-after")]
    bad = stack.cli("audit", "--json", "--since", "yesterday")
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def commit_behind(settings: Settings, group: str, behind: int) -> None:
    """Commit `group`'s offsets on the chunk topic `behind` records short of each partition's end, as a sink
    that consumed that far would (the module's other tests may have put chunks there already)."""
    consumer = Consumer({**client_config(settings), "group.id": group, "enable.auto.commit": False})
    try:
        ends = [
            consumer.get_watermark_offsets(TopicPartition(settings.topics.chunks, p), timeout=10, cached=False)[1]
            for p in range(settings.partitions)
        ]
        assert min(ends) >= behind
        partitions = [TopicPartition(settings.topics.chunks, p, end - behind) for p, end in enumerate(ends)]
        consumer.commit(offsets=partitions, asynchronous=False)
    finally:
        consumer.close()


def test_lag_watch_refreshes_its_table_as_lag_changes(stack: Stack) -> None:
    settings = stack.settings
    group = "streams-sink-mongo"
    producer = Producer(client_config(settings))
    for i in range(6):
        producer.produce(settings.topics.chunks, key=f"w{i}".encode(), value=b"x", partition=i % 2)
    assert producer.flush(10) == 0
    commit_behind(settings, group, 2)  # lag 2 on each of the 2 partitions
    first = json.loads(stack.cli("lag", "--json", "--group", group).stdout)
    assert first["totals"][group] == 4

    env = {**stack_env(settings), "COLUMNS": "200", "TTY_COMPATIBLE": "1", "TERM": "xterm"}  # as in a terminal
    watch = subprocess.Popen(
        [sys.executable, "-m", "streams", "lag", "--group", group, "--watch", "0.5"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    shown = bytearray()
    reader = threading.Thread(target=lambda: [shown.extend(chunk) for chunk in iter(lambda: watch.stdout.read1(), b"")])
    reader.start()

    def totals() -> list[int]:
        """The total of each table drawn so far (one per refresh, in its title)."""
        return [int(n) for n in re.findall(r"consumer lag \(total (\d+)\)", shown.decode(errors="replace"))]

    def until(done, what: str) -> None:
        deadline = time.monotonic() + 60
        while not done():
            assert watch.poll() is None, watch.stderr.read().decode(errors="replace")
            assert time.monotonic() < deadline, f"{what}: {totals()}"
            time.sleep(0.2)

    try:
        until(lambda: totals().count(4) >= 2, "two refreshes at lag 4")
        for i in range(10):
            producer.produce(settings.topics.chunks, key=f"v{i}".encode(), value=b"x", partition=i % 2)
        assert producer.flush(10) == 0
        until(lambda: 14 in totals(), "the same process showing lag 14")  # nothing restarted
    finally:
        os.killpg(watch.pid, signal.SIGINT)
        _, stderr = watch.communicate(timeout=30)
        reader.join(10)
    assert "Traceback" not in stderr.decode(errors="replace"), stderr
    # A refresh may land between the two partitions' writes (a total between 4 and 14): lag only grows
    # here, from 4 to 14, whatever the watch happened to catch on the way.
    seen = totals()
    assert seen == sorted(seen) and seen[0] == 4 and seen[-1] == 14 and set(seen) <= set(range(4, 15)), seen
