"""A seven-strategy `streams up`, driven as a user would: each strategy takes the documents it is for and
skips the rest as not applicable (nothing in the dead-letter topic), and `streams audit` without
`--strategy` checks every strategy the stack runs: rows deleted by hand under each strategy in turn are
found and repaired."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from streams.ingest.files import page_events
from streams.ops.demo import DEFAULT_DEMO
from streams.ops.pipeline import Collector, sample_paths
from streams.sinks.mongo import MongoSink
from tests.cli import streams
from tests.integration.conftest import audited, start_up, up_settings, user_env

pytestmark = pytest.mark.integration

GENERIC = "A plain page of notes about nothing in particular: no letter, no filing, no solicitation. " * 30
#: What each strategy takes of the samples plus one generic page (the seeds' scope, `doc_types`).
TAKES = {
    "letter": {"letter"},
    "finance": {"release", "transcript"},
    "section": {"solicitation"},
}


def cli(env: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return streams(*args, env=env, timeout=timeout)


def audit(env: dict, *args: str) -> tuple[int, dict, str]:
    done = cli(env, "audit", "--json", *args)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def until_clean(env: dict, timeout: float = 240) -> dict:
    """The audit of every deployed strategy, in this process until it finds no gap; then `streams audit`
    as the operator runs it, whose report is returned."""
    report = audited(up_settings(Path(env["STREAMS_DATA_DIR"])), timeout=timeout)
    assert report.versions and not report.gaps, f"gaps remain: {report.as_dict()['details'][:5]}"
    code, found, _ = audit(env)
    assert code == 0, found["details"][:5]
    return found


@pytest.mark.one_broker  # routing and the audit read records, not a broker: the transport has its own tests
def test_each_strategy_takes_its_documents_and_the_default_audit_covers_all_seven(tmp_path: Path) -> None:
    up = start_up(tmp_path / "var", "--no-ui")
    env = user_env(tmp_path / "var")
    try:
        first = json.loads(up.stdout.readline())
        generic = tmp_path / "plain-notes.txt"
        generic.write_text(GENERIC)
        published = cli(env, "publish", *map(str, sample_paths()), str(generic))
        assert published.returncode == 0, published.stderr
        report = until_clean(env)
        settings = up_settings(tmp_path / "var")  # as a command beside the stack reads it
        collector = Collector(settings)
        collector.poll(3.0)
        collector.close()
        result = collector.result
        assert result.dead == [], [f"{d.stage} {d.reason_code}: {d.reason}" for d in result.dead]
        assert report["strategies"] == DEFAULT_DEMO
        # every document accounted for by every strategy: chunked if it is for it, else skipped
        types = {r.doc_id: r.doc_type for r in result.records()}  # window takes every document
        published_ids = {page_events(p)[0].doc_id for p in sample_paths()} | {"plain-notes"}
        assert set(types) == published_ids and types["plain-notes"] == "generic", types
        for strategy in DEFAULT_DEMO:
            taken = {d for (d, _, s) in result.chunks if s == strategy}
            skipped = {d for (d, _, s) in result.skipped if s == strategy}
            wanted = {d for d, t in types.items() if t in TAKES.get(strategy, {t})}
            assert taken == wanted, strategy
            assert skipped == set(types) - wanted, strategy
        # the workers published what `streams chunk` gives offline, id for id and checksum for checksum:
        # one path for both (streams.core.publish)
        files = [*map(str, sample_paths()), str(generic)]
        for strategy in DEFAULT_DEMO:
            offline = cli(env, "chunk", "--strategy", strategy, *files)
            assert offline.returncode == 0, offline.stderr
            # the checksum is the sha256 of every stable field as the builder made it (metadata included)
            want = {row["chunk_id"]: row["checksum"] for row in map(json.loads, offline.stdout.splitlines())}
            got = {r.chunk_id: r.checksum for r in result.records() if r.strategy == strategy}
            assert want and got == want, strategy
        versions = {(r.doc_id, r.amendment_number) for r in result.records()}  # the RFP comes twice
        assert report["not_applicable"]["letter"] == len(versions) - 1  # all but the letter itself

        mongo = MongoSink(first["mongo_url"], first["mongo_database"])
        try:
            deleted: dict[str, list[str]] = {}  # rows of every strategy at once: one audit must name them all
            for strategy in DEFAULT_DEMO:
                rows = [r["_id"] for r in mongo.collection.find({"strategy": strategy}, {"_id": 1}).limit(3)]
                assert rows, strategy
                mongo.collection.delete_many({"_id": {"$in": rows}})
                deleted[strategy] = rows
            code, found, line = audit(env)
            assert code == 1 and found["gaps"]["rows_missing"] >= len(DEFAULT_DEMO), found["gaps"]
            named = {g["strategy"] for g in found["details"] if g["kind"] == "rows_missing"}
            assert named == set(DEFAULT_DEMO), named  # each strategy's own gap, under its own name
            assert "from the running `streams up`" in line and ", ".join(DEFAULT_DEMO) in line
            repaired = cli(env, "audit", "--repair")
            assert repaired.returncode in (0, 1), repaired.stderr
            until_clean(env)
            for strategy, rows in deleted.items():  # every deleted row is back, by its id
                assert mongo.collection.count_documents({"_id": {"$in": rows}, "text": {"$exists": True}}) == len(
                    rows
                ), strategy
        finally:
            mongo.close()
    finally:
        os.killpg(up.pid, signal.SIGINT)
        up.wait(90)


ROUTING_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "routing"


@pytest.mark.one_broker  # the classifier runs before any broker is involved
def test_documents_published_without_a_type_reach_the_strategy_built_for_them(tmp_path: Path, bus: str) -> None:
    """A shareholder letter as raw PDF text (its performance table first, the salutation on page 2, no
    "letter" in its name) and a draft RFP whose file name runs the acronym into the next word, published
    with no `--doc-type`: the assembler detects each type from the text, `letter` and `section` chunk
    them, and `streams status` says how each type was decided."""
    letter = ROUTING_FIXTURES / "northwind_2031_annual.txt"
    rfp = ROUTING_FIXTURES / "Draft_RFPfor_Engineering_Services.md"
    up = start_up(tmp_path / "var", "--no-ui", "-s", "letter", "-s", "section")
    env = user_env(tmp_path / "var")
    try:
        first = json.loads(up.stdout.readline())
        assert first["broker_kind"] == bus
        published = cli(env, "publish", str(letter), str(rfp))
        assert published.returncode == 0, published.stderr
        report = until_clean(env)
        assert report["strategies"] == ["letter", "section"]
        collector = Collector(up_settings(tmp_path / "var"))
        collector.poll(3.0)
        collector.close()
        result = collector.result
        assert result.dead == [], [f"{d.stage} {d.reason_code}: {d.reason}" for d in result.dead]
        letter_id, rfp_id = page_events(letter)[0].doc_id, page_events(rfp)[0].doc_id
        chunked = {(d, s) for (d, _, s) in result.chunks}
        assert chunked == {(letter_id, "letter"), (rfp_id, "section")}, chunked
        skipped = {(d, s) for (d, _, s) in result.skipped}
        assert skipped == {(letter_id, "section"), (rfp_id, "letter")}, skipped
        for record in result.records():
            assert record.routing is not None and record.routing.source == "detected", record.routing
        assert {r.doc_type for r in result.records() if r.doc_id == letter_id} == {"letter"}
        assert {r.doc_type for r in result.records() if r.doc_id == rfp_id} == {"solicitation"}
        status = cli(env, "status", letter_id, "--json")
        assert status.returncode == 0, status.stderr
        typed = json.loads(status.stdout)["versions"][0]["doc_type"]
        assert typed["type"] == "letter" and typed["source"] == "detected"
        assert "salutation to owners" in typed["evidence"], typed
        shown = cli(env, "status", rfp_id)
        assert shown.returncode == 0 and "type solicitation (detected" in shown.stdout, shown.stdout
    finally:
        os.killpg(up.pid, signal.SIGINT)
        up.wait(90)
