"""Supervision: a role killed with SIGKILL comes back by itself while the rest keeps running, the broker and
the document store included, and every document still ends up stored exactly once; a role that fails on a
bad setting is reported once and not restarted; `streams up` shows health and stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from streams.core.chunkers import get_chunker
from streams.core.document import assemble
from streams.core.records import build_records
from streams.ops.pipeline import EX_CONFIG, LocalPipeline, exit_reason, publish_pages, where_groups_stood
from streams.sinks.lance_target import LanceTarget
from streams.sinks.mongo import MongoSink
from tests.cli import streams
from tests.integration.conftest import pipeline_settings, start_up, user_env
from tests.reliability.test_faults import documents

# it kills or freezes its broker or store: services of its own
pytestmark = [pytest.mark.integration, pytest.mark.own_services]


def _expected(docs: list) -> dict[str, str]:
    chunker = get_chunker("window")
    return {
        r.chunk_id: r.checksum
        for pages in docs
        for r in build_records(assemble(pages), chunker, chunker.chunk(assemble(pages)))
    }


def _supervise_until(pipeline: LocalPipeline, done, timeout: float, every: float = 0.25, state=None) -> None:
    """Wait for `done()` while the supervisor restarts what dies; on time out, `state()` says what was missing
    (a stall that shows up once in a clean-clone run must be diagnosable from that run's output alone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pipeline.check_workers()
        if done():
            return
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s" + (f"\n{state()}" if state else ""))


def _stalled(pipeline: LocalPipeline, missing: set[tuple]) -> str:
    """What a stalled pipeline looked like: what was missing, each group's lag and each role's last log lines."""
    from collections import Counter

    by_store = ", ".join(f"{store} {n}" for store, n in sorted(Counter(m[-1] for m in missing).items()))
    lines = [f"missing: {len(missing)} ({by_store}), first {sorted(missing)[:4]}"]
    lines.append(where_groups_stood(pipeline.settings))
    lines += [f"--- {role}: {pipeline.log_tail(role, 15)}" for role in sorted(pipeline.workers)]
    return "\n".join(lines)


def _kill(pid: int) -> None:
    os.killpg(pid, signal.SIGKILL)


def _window_to_mongo(tmp_path: Path, events: list[str]) -> LocalPipeline:
    settings = pipeline_settings(tmp_path, sink_assignment="manual")
    return LocalPipeline(settings, ["window"], sinks=["mongo"], supervise=True, on_event=events.append)


def _stored(pipeline: LocalPipeline, mongo: MongoSink, chunks: int) -> bool:
    """Whether both stores hold at least `chunks` rows (the vector table may not exist yet)."""
    try:
        vectors = LanceTarget(pipeline.settings.lance_dir, pipeline.settings.lance_table).count()
    except Exception:
        vectors = 0
    return mongo.count() >= chunks and vectors >= chunks


def _kill_broker(pipeline: LocalPipeline) -> None:
    """SIGKILL the embedded broker and supervise until it listens again."""
    assert pipeline.broker is not None and pipeline.broker.proc is not None
    killed = pipeline.broker.proc.pid
    _kill(killed)
    _supervise_until(pipeline, lambda: pipeline.broker.proc.pid != killed and pipeline.broker.alive(), 90)


def test_exit_reasons_name_signals() -> None:
    assert exit_reason(-9) == "SIGKILL" and exit_reason(-15) == "SIGTERM"
    assert exit_reason(1) == "exit code 1" and "bad setting" in exit_reason(EX_CONFIG)
    assert exit_reason(75) == "stalled (exit 75)"


def test_killed_roles_come_back_and_every_document_is_stored_exactly_once(tmp_path: Path) -> None:
    docs = documents(40)
    expected = _expected(docs)
    events: list[str] = []
    settings = pipeline_settings(tmp_path, sink_assignment="manual")
    pipeline = LocalPipeline(settings, ["window"], sinks=["mongo", "vectors"], supervise=True, on_event=events.append)
    with pipeline:
        pages = [p for d in docs for p in d]
        first, second = pages[: len(pages) // 2], pages[len(pages) // 2 :]
        publish_pages(pipeline.settings, first)
        untouched = {role: proc.pid for role, proc in pipeline.workers.items()}
        # Each kind of role, killed in turn with documents in flight; the others must keep their process.
        for role in ["chunker:window", "assembler", "sink:mongo", "sink:vectors"]:
            victim = pipeline.workers[role].pid
            _kill(victim)
            _supervise_until(
                pipeline,
                lambda r=role, v=victim: pipeline.workers[r].pid != v and pipeline.health[r].state == "running",
                60,
            )
            untouched.pop(role)
            assert all(pipeline.workers[r].pid == pid for r, pid in untouched.items())
        publisher = threading.Thread(target=publish_pages, args=(pipeline.settings, second))
        publisher.start()
        assert pipeline.store is not None
        store_pid = pipeline.store.proc.pid
        _kill(store_pid)  # the document store, while the second half is on its way
        _supervise_until(pipeline, lambda: pipeline.store.proc.pid != store_pid and pipeline.store.alive(), 60)
        publisher.join()
        mongo = MongoSink.of(pipeline.settings)
        try:
            _supervise_until(pipeline, lambda: _stored(pipeline, mongo, len(expected)), 400)
            rows = {d["_id"]: d["checksum"] for d in mongo.collection.find({}, {"checksum": 1})}
            vector_ids = LanceTarget(pipeline.settings.lance_dir, pipeline.settings.lance_table).ids()
        finally:
            mongo.close()
        health = {role: h.as_dict() for role, h in pipeline.health.items()}
        tails = {role: pipeline.log_tail(role, 20) for role in pipeline.workers}
    assert rows == expected  # every chunk once, nothing else
    assert sorted(vector_ids) == sorted(expected)  # exactly once: no id twice
    for role in ["chunker:window", "assembler", "sink:mongo", "sink:vectors"]:
        # A second restart must say why from this run's output alone: its exit, the events, the role's log.
        why = f"{role}: last exit {health[role]['last_exit']}; events {events}; log:\n{tails[role]}"
        assert health[role]["restarts"] == 1 and health[role]["last_exit"].startswith("SIGKILL"), why
    assert health["document-store"]["restarts"] == 1
    assert sum("SIGKILL" in line and "restart 1" in line for line in events) == 4, events


def test_a_role_that_fails_on_a_bad_setting_is_not_restarted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    pipeline = LocalPipeline(pipeline_settings(tmp_path), ["window"], supervise=True, on_event=events.append)
    with pipeline:
        from streams.ops import pipeline as harness

        handed = harness.child_env  # only the worker started now gets a bad value of its own
        monkeypatch.setattr(harness, "child_env", lambda s, **o: {**handed(s, **o), "STREAMS_WEB_PORT": "not a port"})
        pipeline.stop_worker("chunker:window")
        pipeline.start_worker("chunker:window")
        monkeypatch.setattr(harness, "child_env", handed)
        _supervise_until(pipeline, lambda: bool(pipeline.failed()), 60)
        for _ in range(8):  # it stays failed; nothing is restarted in a loop
            pipeline.check_workers()
            time.sleep(0.25)
        assert pipeline.workers["assembler"].poll() is None
    [failed] = pipeline.failed()
    assert failed.role == "chunker:window" and failed.restarts == 0
    assert len(events) == 1 and "bad setting" in events[0] and "STREAMS_WEB_PORT" in events[0], events


def test_up_restarts_a_killed_worker_reports_health_and_stops_cleanly(tmp_path: Path) -> None:
    from urllib.request import urlopen

    from streams.ops.embedded import free_port

    port = free_port()
    env = user_env(tmp_path / "var", STREAMS_METRICS_PORT=str(port))
    up = start_up(tmp_path / "var", "-s", "window", stderr=subprocess.PIPE, STREAMS_METRICS_PORT=str(port))
    try:
        json.loads(up.stdout.readline())
        up_file = tmp_path / "var" / "up.json"
        victim = json.loads(up_file.read_text())["processes"]["chunker:window"]
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 60
        status: dict = {}
        while time.monotonic() < deadline:
            time.sleep(1)
            done = streams("status", "--json", env=env, timeout=60)
            status = json.loads(done.stdout) if done.returncode == 0 else {}
            role = status.get("roles", {}).get("chunker:window", {})
            if role.get("restarts") == 1 and role.get("state") == "running":
                break
        role = status["roles"]["chunker:window"]
        assert role["restarts"] == 1 and role["pid"] != victim and role["last_exit"].startswith("SIGKILL")
        assert all(r["state"] == "running" for r in status["roles"].values()), status
        assert {"broker", "document-store", "assembler", "sink:mongo", "sink:vectors"} <= set(status["roles"])
        scraped = urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        assert 'streams_role_restarts_total{role="chunker:window"} 1.0' in scraped
        assert 'streams_role_state{role="chunker:window",state="running"} 1.0' in scraped
    finally:
        os.killpg(up.pid, signal.SIGTERM)
        _, stderr = up.communicate(timeout=90)
    assert up.returncode == 0, stderr[-2000:]
    assert "chunker:window exited (SIGKILL" in stderr
    assert stderr.count("exited (") == 1  # the shutdown restarted nothing and reported no crash


def test_a_killed_broker_is_restarted_and_the_workers_wait_for_it(tmp_path: Path) -> None:
    docs = documents(12)
    expected = _expected(docs)
    events: list[str] = []
    pipeline = _window_to_mongo(tmp_path, events)
    with pipeline:
        before, after = docs[:6], docs[6:]
        publish_pages(pipeline.settings, [p for d in before for p in d])
        mongo = MongoSink.of(pipeline.settings)
        try:
            _supervise_until(pipeline, lambda: mongo.count() >= len(_expected(before)), 120)
            workers = {role: proc.pid for role, proc in pipeline.workers.items()}
            _kill_broker(pipeline)
            publish_pages(pipeline.settings, [p for d in after for p in d])

            def state() -> str:
                stored = {d["_id"] for d in mongo.collection.find({}, {"_id": 1})}
                return _stalled(pipeline, {(chunk, "mongo") for chunk in set(expected) - stored})

            _supervise_until(pipeline, lambda: mongo.count() >= len(expected), 300, state=state)
            rows = {d["_id"]: d["checksum"] for d in mongo.collection.find({}, {"checksum": 1})}
        finally:
            mongo.close()
        restarted_workers = [role for role, pid in workers.items() if pipeline.workers[role].pid != pid]
    assert rows == expected
    assert pipeline.health["broker"].restarts == 1 and pipeline.health["broker"].last_exit == "SIGKILL"
    assert restarted_workers == [], events  # they waited for the broker instead of crashing


@pytest.mark.one_broker  # the supervisor's own rule: broker-agnostic
def test_a_crash_loop_is_stopped_as_failed_and_the_rest_stays_up(tmp_path: Path) -> None:
    events: list[str] = []
    # Five crashes, however long this machine takes to start a process five times: the window is an hour.
    pipeline = LocalPipeline(
        pipeline_settings(tmp_path), ["window"], supervise=True, on_event=events.append, crash_loop=(5, 3600.0)
    )
    with pipeline:
        # Exits with an error at every start. (An unknown strategy would be a bad setting: exit 78, never
        # restarted; tests/core/test_options.py.)
        pipeline.start_worker("no-such-role")
        _supervise_until(pipeline, lambda: bool(pipeline.failed()), 120)
        for _ in range(8):
            pipeline.check_workers()
            time.sleep(0.25)
        assert pipeline.workers["chunker:window"].poll() is None and pipeline.workers["assembler"].poll() is None
    [failed] = pipeline.failed()
    assert failed.role == "no-such-role" and failed.restarts == 4
    delays = [float(line.rsplit(" in ", 1)[1].rstrip("s")) for line in events if "; restart " in line]
    assert delays == [0.5, 1.0, 2.0, 4.0]  # exponential back-off between the crashes
    assert "5 crashes" in events[-1] and "not restarted" in events[-1]


def _settled(pipeline: LocalPipeline, mongo: MongoSink, quiet_s: float = 12.0, timeout: float = 300) -> None:
    """Until the stores stop changing for `quiet_s` (whatever the broker kept has been worked off)."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, "the stores never settled"
        pipeline.check_workers()
        try:
            vectors = LanceTarget(pipeline.settings.lance_dir, pipeline.settings.lance_table).count()
        except Exception:
            vectors = -1
        now = (mongo.count(), vectors)
        if now != last:
            last, since = now, time.monotonic()
        time.sleep(1)


def _frozen_until_restarted(pipeline: LocalPipeline, role: str, pages: list) -> int:
    """Freeze the document store (SIGSTOP: its port still takes connections, nothing answers), publish
    `pages`, wait until the supervisor has started `role` again, thaw the store; its pid."""
    assert pipeline.store is not None and pipeline.store.proc is not None
    store, stuck = pipeline.store.proc.pid, pipeline.workers[role].pid
    os.killpg(store, signal.SIGSTOP)
    try:
        publish_pages(pipeline.settings, pages)
        _supervise_until(pipeline, lambda: pipeline.workers[role].pid != stuck, 120)
    finally:
        os.killpg(store, signal.SIGCONT)
    return store


@pytest.mark.one_broker  # a frozen store, not a broker: broker-agnostic
def test_a_sink_stuck_on_a_frozen_store_exits_as_stalled_and_its_restart_stores_everything(
    tmp_path: Path, bus: str
) -> None:
    """The document store is frozen (SIGSTOP: its port still accepts connections, nothing answers) while
    chunks wait for MongoDB's sink. The sink is alive and stuck, with nothing in its health to say so; its
    watchdog sees records waiting, nothing committed and an idle core for STREAMS_STALL_TIMEOUT_S, writes
    one line and exits 75, and the supervisor starts it again. Once the store thaws, every chunk is stored,
    and nothing else was restarted."""
    docs = documents(12)
    expected = _expected(docs)
    first = _expected(docs[:6])
    events: list[str] = []
    settings = pipeline_settings(tmp_path, sink_assignment="manual", stall_timeout_s=6.0)
    pipeline = LocalPipeline(settings, ["window"], sinks=["mongo"], supervise=True, on_event=events.append)
    with pipeline:
        live = pipeline.settings
        mongo = MongoSink.of(live)
        try:
            publish_pages(live, [p for d in docs[:6] for p in d])
            _supervise_until(pipeline, lambda: mongo.count() == len(first), 120)
            others = {role: proc.pid for role, proc in pipeline.workers.items() if role != "sink:mongo"}
            store = _frozen_until_restarted(pipeline, "sink:mongo", [p for d in docs[6:] for p in d])
            _supervise_until(pipeline, lambda: mongo.count() == len(expected), 120)
            rows = {d["_id"]: d["checksum"] for d in mongo.collection.find({}, {"checksum": 1})}
        finally:
            mongo.close()
        health = pipeline.health["sink:mongo"]
        restarted = {role: proc.pid for role, proc in pipeline.workers.items() if role != "sink:mongo"}
    stalls = [e for e in events if e.startswith("sink:mongo exited (stalled (exit 75)")]
    assert len(stalls) == 1, events
    assert "sink:mongo: stalled: " in stalls[0] and " records waiting on chunks.created[" in stalls[0], stalls
    assert (health.restarts, health.state) == (1, "running"), events
    assert restarted == others and pipeline.store.proc.pid == store, events  # nothing else was touched
    assert rows == expected


@pytest.mark.one_broker  # a frozen embedding store, not a broker: broker-agnostic
def test_a_chunker_stuck_on_a_frozen_embedding_store_exits_as_stalled_and_its_restart_chunks_everything(
    tmp_path: Path, bus: str
) -> None:
    """A faust worker stuck in its agent: `semantic` keeps its vectors in MongoDB (STREAMS_EMBED_CACHE=mongo)
    and the store is frozen while new documents wait, so the agent waits on it with the event loop held. The
    watchdog thread still runs: records waiting on the documents topic, nothing committed, an idle core; one
    line, exit 75, and the supervisor starts the worker again. Once the store thaws every document is chunked,
    with the same chunks as offline."""
    from streams.ops.pipeline import Collector
    from tests.integration.test_pipeline import expected_records

    docs = documents(8)
    events: list[str] = []
    settings = pipeline_settings(tmp_path, embed_cache="mongo", stall_timeout_s=6.0)
    pipeline = LocalPipeline(settings, ["semantic"], sinks=["mongo"], supervise=True, on_event=events.append)
    with pipeline:
        live = pipeline.settings
        publish_pages(live, [p for d in docs[:4] for p in d])
        collector = Collector(live)
        try:
            collector.wait([(d[0].doc_id, 0) for d in docs[:4]], ["semantic"], 180, lambda _: pipeline.check_workers())
            _frozen_until_restarted(pipeline, "chunker:semantic", [p for d in docs[4:] for p in d])
            every = [(d[0].doc_id, 0) for d in docs]
            result = collector.wait(every, ["semantic"], 240, lambda _: pipeline.check_workers())
        finally:
            collector.close()
        health = pipeline.health["chunker:semantic"]
    stalls = [e for e in events if e.startswith("chunker:semantic exited (stalled (exit 75)")]
    assert stalls and "chunker:semantic: stalled: " in stalls[0], events
    assert " records waiting on documents.assembled[" in stalls[0], stalls
    assert health.restarts >= 1 and health.state == "running", events
    offline = expected_records(docs, "semantic")
    assert sorted(r.chunk_id for r in result.records()) == sorted(r.chunk_id for r in offline)


def test_a_broker_killed_with_documents_in_flight_loses_none_of_them_after_an_audit(tmp_path: Path, bus: str) -> None:
    """The broker is SIGKILLed once every page is acknowledged and the first rows are stored, while the stores
    still lack chunks (measured with the broker down). Apache Kafka logs a record before acknowledging it:
    after the restart the pipeline finishes on its own, every version is reported indexed in both stores and
    the audit finds nothing, with no repair. noida-db keeps its state in memory and saves it as it changes: a
    SIGKILL loses what it had not saved yet, acknowledged or not (chunks, manifests, offsets). There, one
    document's rows and vectors are also deleted by hand, so the audit always has a gap to name and
    `--repair` one to close beside whatever the broker lost; the audit names them all and after the repair
    finds none. Either way the end state equals a clean run, on the topic and in both stores."""
    from tests.integration.test_ledger import cli, indexed_events
    from tests.reliability.clean_run import (
        audit_names_the_gaps_and_repair_closes_them,
        chunk_ids_by_document,
        force_gap,
        stored_counts,
    )

    docs = documents(30)
    expected = _expected(docs)
    events: list[str] = []
    # A page of a document may be read before the kill and the next one after the restart: no assembly
    # timeout (4 s in the integration defaults) may turn that wait into a dead letter. The sinks write
    # batches of 8, so that the kill finds MongoDB's sink mid-stream too, not only the vector sink. A role
    # that comes back from the outage alive but stuck is restarted by its watchdog after 60 s (the default's
    # 300 s is the whole wait below): "finishes on its own" includes that, and the line printed says so.
    settings = pipeline_settings(
        tmp_path, sink_assignment="manual", assembly_timeout_s=120.0, sink_batch_size=8, stall_timeout_s=60.0
    )
    pipeline = LocalPipeline(settings, ["window"], sinks=["mongo", "vectors"], supervise=True, on_event=events.append)
    with pipeline:
        live = pipeline.settings
        pages = [p for d in docs for p in d]
        publish_pages(live, pages)  # every page acknowledged before the kill
        mongo = MongoSink.of(live)
        try:
            _supervise_until(pipeline, lambda: mongo.count() > 0, 120, every=0.02)  # documents are moving
            assert pipeline.broker is not None and pipeline.broker.proc is not None
            killed = pipeline.broker.proc.pid
            _kill(killed)
            rows, vectors = stored_counts(live, mongo)  # the broker gone: at least what was stored when it went
            assert rows > 0 and rows + vectors < 2 * len(expected), (rows, vectors, len(expected))
            _supervise_until(pipeline, lambda: pipeline.broker.proc.pid != killed and pipeline.broker.alive(), 90)
            if bus == "kafka":
                wanted = {(d[0].doc_id, 0, "window", store) for d in docs for store in ("mongo", "vectors")}
                _supervise_until(
                    pipeline,
                    lambda: wanted <= _indexed(live),
                    300,
                    every=1.0,
                    state=lambda: _stalled(pipeline, wanted - _indexed(live)),
                )
                found = cli(live, "audit", "--json", "-s", "window")
                assert found.returncode == 0, found.stdout + found.stderr
                report = json.loads(found.stdout)
                assert report["versions"] == len(docs) and not any(report["gaps"].values()), report
                lost: list[dict] = []
            else:
                _settled(pipeline, mongo)
                forced = force_gap(live, chunk_ids_by_document(docs))
                lost = audit_names_the_gaps_and_repair_closes_them(pipeline, forced, len(docs))
            _supervise_until(pipeline, lambda: _stored(pipeline, mongo, len(expected)), 120)
            stored = {d["_id"]: (d["checksum"], d["is_latest_version"]) for d in mongo.collection.find({})}
            target = LanceTarget(live.lance_dir, live.lance_table)
            vector_ids = target.ids()
            flags = target.flags(vector_ids)
            on_topic = {r.chunk_id for r in _topic_chunks(pipeline)}
            indexed = {(e.doc_id, e.store) for e in indexed_events(live)}
        finally:
            mongo.close()
        broker = pipeline.health["broker"]
    assert (broker.restarts, broker.last_exit) == (1, "SIGKILL")
    print(
        f"\n[{bus}] at the kill: {len(pages)} pages acknowledged, {rows} rows and {vectors} vectors of "
        f"{len(expected)} chunks stored; gaps the broker left: {lost or 'none'}; "
        f"stalled roles restarted: {[e for e in events if '(stalled' in e] or 'none'}"
    )
    assert stored == {cid: (checksum, True) for cid, checksum in expected.items()}, events
    assert sorted(vector_ids) == sorted(expected) and all(flags.values())
    assert on_topic == set(expected)
    assert indexed == {(pages[0].doc_id, store) for pages in docs for store in ("mongo", "vectors")}


def _indexed(settings) -> set[tuple]:
    """(doc_id, amendment, strategy, store) of every `documents.indexed` event; none while a broker just
    restarted still answers that it leads no partition (Kafka, until its partitions have their leader)."""
    from confluent_kafka import KafkaException

    from tests.integration.test_ledger import indexed_events

    try:
        return {(e.doc_id, e.amendment_number, e.strategy, e.store) for e in indexed_events(settings)}
    except KafkaException as exc:
        if not exc.args[0].retriable():
            raise
        return set()


def _topic_chunks(pipeline: LocalPipeline) -> list:
    from streams.codec.avro import AvroCodec
    from streams.core.events import ChunkRecord
    from streams.ops.audit import read_topic

    codec = AvroCodec(None)
    topic = pipeline.settings.topics.chunks
    return [ChunkRecord(**codec.decode("chunk_record", m.value())) for m in read_topic(pipeline.settings, topic)]
