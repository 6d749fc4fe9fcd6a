"""A whole local pipeline: embedded broker, topics, worker processes, publishing and collecting.

Used by `streams demo`, the benchmarks and the integration tests, so all three exercise the same path.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, Producer, TopicPartition

from streams.core.events import ChunkRecord, DeadLetter, DocumentManifest, PageEvent
from streams.core.sealed import Shredded
from streams.ops.embedded import EmbeddedProcess, ServiceError, broker, document_store, free_port
from streams.ops.lag import active_groups, lag_report
from streams.ops.topics import ensure_topics
from streams.polling import quiet_consumer
from streams.runtime import metrics
from streams.runtime.clients import (
    DELIVERY_TIMEOUT_S,
    DeliveryReports,
    client_config,
    end_offsets,
    fetch_config,
    group_id,
    producer,
    reached_ends,
)
from streams.runtime.keyring import codec_for, page_sealer
from streams.runtime.lag import group_lag, known_groups
from streams.runtime.watchdog import EX_STALLED
from streams.settings import SETTINGS_ENV, Settings, is_setting_variable


def child_env(settings: Settings, **overrides: str) -> dict[str, str]:
    """The environment of a child process: this one's, with every setting replaced by `settings` whole,
    as one JSON object (`STREAMS_SETTINGS_JSON`), so nothing set here is lost on the way (a list of
    fields copied one by one left the security settings behind). The parent's own STREAMS_* settings
    variables are dropped, so values this process changed (the broker's address) are not overridden by
    the ones it started with; `overrides` are per-child settings (a worker's metrics port)."""
    env = {name: value for name, value in os.environ.items() if not is_setting_variable(name)}
    env[SETTINGS_ENV] = settings.handoff_json()
    env.update(overrides)
    return env


class Refusals(DeliveryReports):
    """Delivery reports that end a command: any record not acknowledged or refused is one clear error."""

    def check(self, out: Producer, what: str, timeout: float = DELIVERY_TIMEOUT_S + 5) -> None:
        if problem := self.problem(out, what, timeout):
            raise ServiceError(problem)


def publish_pages(settings: Settings, events: Iterable[PageEvent | tuple[bytes, bytes]], on_sent=None) -> int:
    """Publish page events (or raw key/value pairs, for hostile input) keyed by doc_id; with document keys
    on, each page sealed with its document's key, so a purge erases it on the pages topic too."""

    refusals = Refusals()
    out = producer(settings, refusals)
    seal = page_sealer(settings)
    sent = 0
    for event in events:
        if isinstance(event, PageEvent):
            key, value = event.doc_id.encode(), event.model_dump_json().encode()
            if seal is not None:
                value = seal(event.model_dump(), value)
        else:
            key, value = event
        out.produce(settings.topics.pages, key=key, value=value)
        out.poll(0)
        sent += 1
        if on_sent:
            on_sent(sent)
    refusals.check(out, "page events")
    return sent


@dataclass
class Collected:
    """What reached the output topics, grouped for completeness checks."""

    chunks: dict[tuple[str, int, str], dict[int, ChunkRecord]] = field(default_factory=lambda: defaultdict(dict))
    dead: list[DeadLetter] = field(default_factory=list)
    #: (doc_id, amendment, strategy) a strategy skipped as not for it, with the reason (its manifest says so)
    skipped: dict[tuple[str, int, str], str] = field(default_factory=dict)
    duplicates: int = 0
    # broker timestamp (epoch seconds) of the latest chunk per document, amendment and strategy
    arrived: dict[tuple[str, int, str], float] = field(default_factory=dict)
    #: documents whose records were read sealed under a deleted key (purged)
    purged: set[str] = field(default_factory=set)

    def add_chunk(self, record: ChunkRecord, timestamp: float | None = None) -> None:
        key = (record.doc_id, record.amendment_number, record.strategy)
        self.arrived[key] = max(self.arrived.get(key, 0.0), timestamp or time.time())
        slot = self.chunks[key]
        if record.position in slot:
            self.duplicates += 1
        slot[record.position] = record

    def complete(self, doc_id: str, amendment: int, strategy: str) -> bool:
        slot = self.chunks.get((doc_id, amendment, strategy))
        if not slot:
            return False
        count = next(iter(slot.values())).chunk_count
        return len(slot) == count

    def dead_for(self, doc_id: str, stage: str | None = None) -> list[DeadLetter]:
        return [d for d in self.dead if d.doc_id == doc_id and (stage is None or d.stage == stage)]

    def settled(self, docs: Iterable[tuple[str, int]], strategies: Iterable[str]) -> bool:
        """Every document has all its chunks per strategy, was skipped by it as not applicable, or was
        dead-lettered at that stage."""
        strategies = list(strategies)
        for doc_id, amendment in docs:
            if self.dead_for(doc_id, "assembly"):
                continue
            for strategy in strategies:
                if not (
                    self.complete(doc_id, amendment, strategy)
                    or (doc_id, amendment, strategy) in self.skipped
                    or self.dead_for(doc_id, f"chunk:{strategy}")
                ):
                    return False
        return True

    def records(self) -> list[ChunkRecord]:
        return [r for _, slot in sorted(self.chunks.items()) for _, r in sorted(slot.items())]


class Collector:
    """Reads chunks and dead letters from the beginning, without a consumer group commit."""

    def __init__(self, settings: Settings, watch_documents: bool = False, watch_indexed: bool = False) -> None:
        self.settings = settings
        self.codec = codec_for(settings)
        self.result = Collected()
        self.documents_seen: set[tuple[str, int]] = set()  # (doc_id, amendment) assembled, with watch_documents
        self.next_offsets: dict[tuple[str, int], int] = {}  # (topic, partition) -> the offset after the last read
        #: (doc_id, amendment, strategy, store) -> chunks, from `documents.indexed`, with watch_indexed
        self.indexed: dict[tuple[str, int, str, str], int] = {}
        self.consumer = quiet_consumer(
            Consumer(
                {
                    **client_config(settings),
                    "group.id": group_id(settings, f"collector-{os.getpid()}-{time.monotonic_ns()}"),
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    **fetch_config(settings),
                }
            ),
            settings.broker_kind,
        )
        topics = [settings.topics.chunks, settings.topics.dead_letter, settings.topics.manifests]
        if watch_documents:
            topics.append(settings.topics.documents)
        if watch_indexed:
            topics.append(settings.topics.indexed)
        self.consumer.assign([TopicPartition(t, p, 0) for t in topics for p in range(settings.partitions)])

    def poll(self, seconds: float = 0.5) -> int:
        got = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self.consumer.poll(0.1)
            if message is None or message.error():
                continue
            got += 1
            self.next_offsets[(message.topic(), message.partition())] = message.offset() + 1
            try:
                if message.topic() == self.settings.topics.chunks:
                    kind, stamp = message.timestamp()
                    self.result.add_chunk(
                        ChunkRecord(**self.codec.decode("chunk_record", message.value())),
                        stamp / 1000 if kind != TIMESTAMP_NOT_AVAILABLE else None,
                    )
                elif message.topic() == self.settings.topics.indexed:
                    event = self.codec.decode("document_indexed", message.value())
                    key = (event["doc_id"], event["amendment_number"], event["strategy"], event["store"])
                    self.indexed[key] = event["chunk_count"]
                elif message.topic() == self.settings.topics.manifests:
                    if message.value() is not None:
                        manifest = DocumentManifest(**self.codec.decode("document_manifest", message.value()))
                        if not manifest.applicable:
                            key = (manifest.doc_id, manifest.amendment_number, manifest.strategy)
                            self.result.skipped[key] = manifest.reason
                elif message.topic() == self.settings.topics.documents:
                    document = self.codec.decode("assembled_document", message.value())
                    self.documents_seen.add((document["doc_id"], document["amendment_number"]))
                else:
                    self.result.dead.append(DeadLetter(**self.codec.decode("dead_letter", message.value())))
            except Shredded as exc:  # a purged document's record: it can never be read
                self.result.purged.add(exc.key_id)
        return got

    def wait(
        self,
        docs: Iterable[tuple[str, int]],
        strategies: Iterable[str],
        timeout: float,
        on_progress: Callable[[Collected], None] | None = None,
        drain: bool = False,
    ) -> Collected:
        """Until every document is chunked by every strategy (or dead-lettered, or not for it); with `drain`,
        then until nothing is in flight either (`drain`), so that a duplicate would have been read."""
        docs, strategies = list(docs), list(strategies)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll(0.5)
            if on_progress:
                on_progress(self.result)
            if self.result.settled(docs, strategies):
                if drain:
                    self.drain(strategies, max(5.0, deadline - time.monotonic()))
                return self.result
        missing = [
            f"{d}@{a}/{s}"
            for d, a in docs
            for s in strategies
            if not self.result.dead_for(d)
            and not self.result.complete(d, a, s)
            and (d, a, s) not in self.result.skipped
        ]
        raise ServiceError(
            f"timed out after {timeout:.0f}s waiting for {len(missing)} outputs: {', '.join(missing[:5])}; "
            f"{where_groups_stood(self.settings)}"
        )

    def drain(self, strategies: Iterable[str], timeout: float) -> None:
        """Until nothing the collector reads can still arrive: the assembler and each strategy's chunker have
        committed to the end of their inputs (all they were given is written), and the collector has read its
        topics to their end offsets. An event to wait for, where a quiet spell only hoped to catch a late
        duplicate; raises ServiceError with where the groups stood if it does not come."""

        deadline = time.monotonic() + timeout
        writers = {group_id(self.settings, "assembler")} | {group_id(self.settings, f"chunker-{s}") for s in strategies}
        inputs = {g: t for g, t in known_groups(self.settings, list(strategies)).items() if g in writers}
        while any(r.lag for group, topics in inputs.items() for r in group_lag(self.settings, group, topics)):
            if time.monotonic() > deadline:
                raise ServiceError(f"in flight after {timeout:.0f}s: {where_groups_stood(self.settings)}")
            self.poll(0.5)
        topics = {tp.topic for tp in self.consumer.assignment()}
        partitions = range(self.settings.partitions)
        ends = {(t, p): end for t in topics for p, end in end_offsets(self.consumer, t, partitions).items()}

        def behind() -> list[tuple[str, int]]:
            """Partitions not read to their end: neither empty, nor delivered up to it, nor (past the commit
            markers librdkafka steps over without a record) positioned at it."""
            left = [k for k, end in ends.items() if end > 0 and self.next_offsets.get(k, 0) < end]
            at_end: set[tuple[str, int]] = set()
            for topic in {t for t, _ in left}:
                done = reached_ends(self.consumer, topic, {q: ends[(topic, q)] for q in partitions}, partitions)
                at_end |= {(topic, q) for q in done}
            return [k for k in left if k not in at_end]

        while left := behind():
            if time.monotonic() > deadline:
                raise ServiceError(f"could not read {left[:3]} to their ends in {timeout:.0f}s")
            self.poll(0.2)

    def pause(self) -> None:
        """Stop fetching altogether: a benchmark must not spend the CPU of the pipeline it measures."""
        self.consumer.hold()

    def resume(self) -> None:
        self.consumer.release()

    def produced(self, topic: str, timeout: float = 10.0) -> int:
        """Messages ever written to `topic`: the sum of its partitions' high watermarks."""
        return sum(end_offsets(self.consumer, topic, range(self.settings.partitions), timeout).values())

    def close(self) -> None:
        self.consumer.close()


EX_CONFIG = 78  # sysexits.h: what a worker exits with on a bad setting; restarting it cannot help

RESTART_MIN_S = 0.5  # the first restart waits this long; each further one twice as long ...
RESTART_MAX_S = 30.0  # ... up to this
CRASH_LOOP = (5, 60.0)  # this many crashes within this many seconds: the role is stopped as failed


def where_groups_stood(settings: Settings) -> str:
    """Where the stream stood: each group's lag and whether the broker lists it (a stalled rebalance shows
    as a listed group whose lag does not move), so a timeout says which stage stopped."""

    try:
        listed = active_groups(settings)
        totals = lag_report(settings, include_idle=True)["totals"]
    except Exception as exc:  # the broker itself may be what stopped
        return f"groups unknown ({exc})"
    return "lag " + ", ".join(f"{g} {n}{'' if g in listed else ' (not listed)'}" for g, n in sorted(totals.items()))


@dataclass
class RoleHealth:
    """What the supervisor knows of one role: `streams status` and the metrics show it."""

    role: str
    pid: int
    state: str = "running"  # running, restarting, failed
    started: float = field(default_factory=time.time)
    restarts: int = 0
    last_exit: str = ""
    crashes: list[float] = field(default_factory=list)  # monotonic times of recent crashes
    restart_at: float = 0.0

    def as_dict(self) -> dict:
        return {
            "role": self.role,
            "pid": self.pid,
            "state": self.state,
            "uptime_s": round(time.time() - self.started, 1) if self.state == "running" else 0.0,
            "restarts": self.restarts,
            "last_exit": self.last_exit,
        }


def exit_reason(code: int) -> str:
    """An exit code as a person reads it: the signal by name, not -9."""
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    if code == EX_CONFIG:
        return "bad setting (exit 78)"
    return "stalled (exit 75)" if code == EX_STALLED else f"exit code {code}"


class LocalPipeline:
    """Broker (embedded unless `broker_address` is given), topics and one worker per role.

    With `supervise=True` (`streams up`, the demo) a role that exits unexpectedly is restarted with
    exponential back-off while everything else keeps running, the broker and the document store included;
    a role that crashes `CRASH_LOOP` times in a row, or exits on a bad setting, is left stopped as failed.
    Without it (benchmarks, most tests) any exit is an error, as a measurement must not hide a crash.
    """

    def __init__(
        self,
        settings: Settings,
        strategies: list[str],
        own_broker: bool = True,
        sinks: list[str] | None = None,
        own_store: bool = True,
        metrics: bool = False,
        on_stage: Callable[[str], None] | None = None,
        supervise: bool = False,
        on_event: Callable[[str], None] | None = None,
        worker_env: Mapping[str, str] | None = None,
        crash_loop: tuple[int, float] = CRASH_LOOP,
    ) -> None:
        self.settings = settings
        self.crash_loop = crash_loop  # (crashes, seconds): a role crashing this often is left failed
        self.worker_env = dict(worker_env or {})  # added to every worker's environment (a bench's own switches)
        self.strategies = strategies
        self.own_broker = own_broker
        self.sinks = sinks or []
        self.own_store = own_store
        self.broker: EmbeddedProcess | None = None
        self.store: EmbeddedProcess | None = None
        self.workers: dict[str, subprocess.Popen] = {}
        self.metrics = metrics
        self.metrics_ports: dict[str, int] = {}
        self.on_stage = on_stage or (lambda _stage: None)
        self.supervise = supervise
        self.on_event = on_event or (lambda _line: None)
        self.health: dict[str, RoleHealth] = {}
        self.stopping = False
        self.ui_port = 0  # the console's port once `start_ui` gave it one: a restart keeps the address

    def start(self) -> LocalPipeline:
        # The two services start side by side: each launcher is a Python process that takes seconds.
        services = []
        if self.own_broker:
            self.broker = broker(
                self.settings.data_dir, kind=self.settings.broker_kind, nodes=self.settings.broker_nodes
            )
            services.append(self.broker)
        if "mongo" in self.sinks and self.own_store:
            self.store = document_store(self.settings.data_dir)
            services.append(self.store)
        if services:
            self.on_stage("starting " + " and ".join(s.name.replace("-", " ") for s in services))
        for service in services:
            service.launch()
        for service in services:
            service.ready()
        update: dict[str, object] = {}
        if self.broker is not None:
            update = {"broker": self.broker.address, "broker_kind": getattr(self.broker, "kind", "noida")}
            if self.settings.broker_nodes > 1:  # as deployed: a replica of every topic on three nodes
                update["replication_factor"] = min(3, self.settings.broker_nodes)
        if update.get("broker_kind", self.settings.broker_kind) == "noida":
            update["changelog_cleanup"] = "delete"  # see streams.ops.topics: compaction can stall faust's recovery
        self.settings = self.settings.model_copy(update=update)
        if self.store is not None:
            self.settings = self.settings.model_copy(update={"mongo_url": f"mongodb://{self.store.address}"})
        self.on_stage("creating topics")
        ensure_topics(self.settings)
        self.on_stage(f"starting {1 + len(self.strategies) + len(self.sinks)} workers")
        self.start_worker("assembler")
        for strategy in self.strategies:
            self.start_worker(f"chunker:{strategy}")
        for sink in self.sinks:
            self.start_worker(f"sink:{sink}")
        return self

    def start_worker(self, role: str, replica: int = 1) -> subprocess.Popen:
        """Start one worker process; replicas beyond the first are keyed `<role>#<n>` and join the same
        consumer group, so the broker splits the partitions between them."""
        key = role if replica == 1 else f"{role}#{replica}"
        log_dir = self.settings.data_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        log = (log_dir / f"{key.replace(':', '-').replace('#', '-')}.log").open("ab")
        # STREAMS_METRICS_PORT, if set for `streams up`, is its own endpoint: a worker inheriting it would
        # fight the others for the port (each gets its own below when metrics are asked for).
        metrics_port = "0"
        if self.metrics:
            self.metrics_ports[key] = self.metrics_ports.get(key) or free_port()
            metrics_port = str(self.metrics_ports[key])
        env = child_env(self.settings, STREAMS_METRICS_PORT=metrics_port, **self.worker_env)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streams",
                *self._command(role),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.workers[key] = proc
        previous = self.health.get(key)
        self.health[key] = RoleHealth(
            key,
            proc.pid,
            restarts=previous.restarts if previous else 0,
            last_exit=previous.last_exit if previous else "",
            crashes=previous.crashes if previous else [],
        )
        return proc

    def _command(self, role: str) -> list[str]:
        if role.startswith("sink:vectors."):  # one vector index's own sink (streams.sinks.indexes)
            return ["sink", "vectors", "--index", role.removeprefix("sink:vectors.")]
        if role.startswith("sink:"):
            return ["sink", role[5:]]
        if role == "ui":
            return ["ui", "--port", str(self.ui_port)]
        return ["worker", "--role", role]

    def start_ui(self) -> str:
        """The web console as one more supervised role, on a port that stays its own across restarts."""
        self.ui_port = self.ui_port or self.settings.ui_port or free_port()
        self.start_worker("ui")
        return f"http://{self.settings.ui_host}:{self.ui_port}/"

    def log_tail(self, role: str, lines: int = 3) -> str:
        log = self.settings.data_dir / "logs" / f"{role.replace(':', '-').replace('#', '-')}.log"
        if not log.exists():
            return ""
        with log.open("rb") as fh:
            fh.seek(max(0, log.stat().st_size - 4096))
            tail = fh.read().decode(errors="replace").strip().splitlines()[-lines:]
        return " | ".join(line.strip() for line in tail if line.strip())

    def pids(self) -> dict[str, int]:
        """Every process this pipeline started, by role: each leads its own process group."""
        found = {role: proc.pid for role, proc in self.workers.items()}
        for name, service in (("broker", self.broker), ("document-store", self.store)):
            if service is not None and service.proc is not None:
                found[name] = service.proc.pid
        return found

    def check_workers(self) -> None:
        """Without supervision: any exit is an error. With it: restart what crashed (see the class)."""
        if self.supervise:
            self._supervise()
            return
        for role, proc in self.workers.items():
            if proc.poll() is not None:
                tail = self.log_tail(role, 1)
                raise ServiceError(f"worker {role} exited with {exit_reason(proc.returncode)}: {tail}")

    def failed(self) -> list[RoleHealth]:
        return [h for h in self.health.values() if h.state == "failed"]

    def _supervise(self) -> None:
        if self.stopping:
            return
        now = time.monotonic()
        for service in self.services():
            if service.proc is not None and not service.alive():
                self._restart_service(service)
        for role, proc in list(self.workers.items()):
            health = self.health[role]
            if health.state == "restarting" and now >= health.restart_at:
                self.start_worker(role.split("#")[0], int(role.split("#")[1]) if "#" in role else 1)
                self.health[role].state = "running"
                continue
            if health.state != "running" or proc.poll() is None:
                continue
            health.last_exit = f"{exit_reason(proc.returncode)}: {self.log_tail(role)}".rstrip(": ")
            health.crashes = [t for t in health.crashes if now - t < self.crash_loop[1]] + [now]
            if proc.returncode == EX_CONFIG or len(health.crashes) >= self.crash_loop[0]:
                health.state = "failed"
                why = "a bad setting" if proc.returncode == EX_CONFIG else f"{len(health.crashes)} crashes"
                self.on_event(f"{role} failed ({why}), not restarted; last exit {health.last_exit}")
                continue
            health.restarts += 1
            health.state = "restarting"
            delay = min(RESTART_MIN_S * 2 ** (len(health.crashes) - 1), RESTART_MAX_S)
            health.restart_at = now + delay
            metrics.ROLE_RESTARTS.labels(role).inc()
            self.on_event(f"{role} exited ({health.last_exit}); restart {health.restarts} in {delay:.1f}s")

    def services(self) -> list[EmbeddedProcess]:
        """The processes the pipeline started besides its workers: each broker node, and the document store."""
        nodes = getattr(self.broker, "nodes", None) or ([self.broker] if self.broker is not None else [])
        return [*nodes, *([self.store] if self.store is not None else [])]

    def _restart_service(self, service: EmbeddedProcess) -> None:
        """The broker or the document store died: start it again on its port and data directory. The
        workers reconnect on their own (their clients retry), so nothing else is touched."""
        code = service.proc.returncode if service.proc is not None else None
        reason = exit_reason(code) if code is not None else "gone"
        health = self.health.setdefault(service.name, RoleHealth(service.name, service.proc.pid))
        health.restarts += 1
        health.last_exit = reason
        metrics.ROLE_RESTARTS.labels(service.name).inc()
        self.on_event(f"{service.name} exited ({reason}); restarting it on the same port and data")
        service.stop()  # reap what is left of its process group
        service.launch()
        service.ready()
        health.pid, health.started, health.state = service.proc.pid, time.time(), "running"

    def stop_worker(self, role: str, kill: bool = False) -> None:
        proc = self.workers.pop(role)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
        proc.wait(30)

    def stop(self) -> None:
        self.stopping = True
        for proc in self.workers.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.workers.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        self.workers.clear()
        if self.broker is not None:
            self.broker.stop()
        if self.store is not None:
            self.store.stop()

    def __enter__(self) -> LocalPipeline:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


def sample_paths() -> list[Path]:
    here = Path(__file__).resolve().parents[1] / "samples"
    return sorted(p for p in here.iterdir() if p.is_file() and p.name != "README.md" and not p.name.startswith("."))
