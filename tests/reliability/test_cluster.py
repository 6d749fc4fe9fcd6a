"""The pipeline on a three-node Kafka cluster as it is deployed (replication factor 3, min ISR 2, every
producer idempotent with acks=all), through four faults in turn under one steady stream of documents:

1. SIGKILL of the node that leads most partitions of `pages.cleaned` and `chunks.created` (leaders move,
   producers retry), started again 8 s later on its port and data;
2. SIGKILL of the active controller (the quorum elects another), started again 8 s later;
3. a rolling restart of all three, one at a time, each back in sync before the next goes, as an upgrade does;
4. one node frozen for 30 s (SIGSTOP, then SIGCONT): the controller fences it, and it catches up.

At-least-once and exactly-once (then transaction coordinators move too). Every document lands in MongoDB and
the vector store exactly once, the audit finds nothing to repair, and `lag`, `status`, `audit` and the web
console answer against the cluster. Reported: the longest gap in output around each fault, and the records
re-published under the same ids."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource
from starlette.testclient import TestClient

from streams.ops.embedded import document_store
from streams.ops.kafka import KafkaBroker, KafkaCluster, kafka_jars
from streams.ops.pipeline import Collector, LocalPipeline, child_env, publish_pages
from streams.ops.topics import topic_specs
from streams.runtime.clients import client_config
from streams.settings import Settings
from streams.ui.app import create_app
from tests.cli import streams
from tests.conftest import KAFKA_NEEDS
from tests.debian import ensure
from tests.integration.conftest import pipeline_settings
from tests.reliability.clean_run import documents, expected_chunks, stored_chunks, stored_vectors_and_audit

# A cluster of its own (started here): in the Kafka pass alone
pytestmark = [pytest.mark.integration, pytest.mark.kafka_only, pytest.mark.own_services]

DESCRIBE_PRODUCERS = Path(__file__).parent / "java" / "DescribeProducers.java"


def partitions_of(admin: AdminClient, topics: list[str]) -> dict[tuple[str, int], object]:
    metadata = admin.list_topics(timeout=10)
    return {(t, p): part for t in topics if t in metadata.topics for p, part in metadata.topics[t].partitions.items()}


def busiest_leader(settings: Settings, cluster: KafkaCluster) -> KafkaBroker:
    """The node leading most partitions of the pages and chunks topics."""
    admin = AdminClient(client_config(settings))
    leaders = Counter(
        part.leader for part in partitions_of(admin, [settings.topics.pages, settings.topics.chunks]).values()
    )
    return cluster.nodes[leaders.most_common(1)[0][0] - 1]


def active_controller(cluster: KafkaCluster) -> KafkaBroker:
    """The quorum's leader, as the nodes' own quorum-state files name it (the latest epoch wins): a KRaft
    broker answers DescribeCluster with any live broker, not the controller."""
    states = []
    for node in cluster.nodes:
        path = node.log_dir / "__cluster_metadata-0" / "quorum-state"
        if path.exists():
            state = json.loads(path.read_text())
            states.append((state["leaderEpoch"], state["leaderId"]))
    return cluster.nodes[max(states)[1] - 1]


def wait_in_sync(settings: Settings, timeout: float = 180.0) -> None:
    """Until every partition of every topic has all its replicas in sync again."""
    admin = AdminClient(client_config(settings))
    deadline = time.monotonic() + timeout
    while True:
        try:
            lagging = [
                key
                for key, part in partitions_of(admin, [spec.name for spec in topic_specs(settings)]).items()
                if len(part.isrs) < len(part.replicas)
            ]
        except Exception as exc:  # a metadata request to a node going down
            lagging = [str(exc)]
        if not lagging:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"still out of sync after {timeout:.0f}s: {lagging[:5]}")
        time.sleep(0.5)


def restart(node: KafkaBroker, down_s: float, kill: bool) -> None:
    if kill:
        node.kill()
    else:  # a controlled shutdown, as an upgrade does
        node.throwaway = False
        node.stop(60)
        node.throwaway = True
    time.sleep(down_s)
    node.launch()
    node.ready()


def freeze(node: KafkaBroker, seconds: float) -> None:
    assert node.proc is not None
    os.kill(node.proc.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(node.proc.pid, signal.SIGCONT)


def faults(settings: Settings, cluster: KafkaCluster) -> dict[str, Callable[[], None]]:
    def rolling() -> None:
        for node in cluster.nodes:
            restart(node, 0, kill=False)
            wait_in_sync(settings)

    return {
        "leader killed": lambda: restart(busiest_leader(settings, cluster), 8, kill=True),
        "controller killed": lambda: restart(active_controller(cluster), 8, kill=True),
        "rolling restart": rolling,
        "node frozen 30 s": lambda: freeze(busiest_leader(settings, cluster), 30),
    }


def longest_gap(stamps: list[float], start: float, end: float) -> float:
    """The longest time without a chunk record produced, across the window [start, end]."""
    inside = [t for t in stamps if start <= t <= end]
    before = [t for t in stamps if t < start][-1:] or [start]
    after = [t for t in stamps if t > end][:1] or [end]
    points = [*before, *inside, *after]
    return max(b - a for a, b in pairwise(points))


def produced_at(settings: Settings) -> list[float]:
    """The timestamps (s) of every chunk record on the topic, committed ones alone, in order."""
    consumer = Consumer({**client_config(settings), "group.id": "cluster-gaps", "enable.auto.commit": False})
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(settings.topics.chunks, p), timeout=10)[1]
        for p in range(settings.partitions)
    }
    consumer.assign([TopicPartition(settings.topics.chunks, p, 0) for p in range(settings.partitions)])
    stamps: list[float] = []
    deadline = time.monotonic() + 120
    try:
        while (
            any(
                consumer.position([TopicPartition(settings.topics.chunks, p)])[0].offset < end
                for p, end in ends.items()
                if end > 0
            )
            and time.monotonic() < deadline
        ):
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                stamps.append(message.timestamp()[1] / 1000)
    finally:
        consumer.close()
    return sorted(stamps)


def idempotent_producers(settings: Settings, topics: list[str]) -> dict[str, int]:
    """topic -> producer states the brokers keep for it, from the brokers' own view (Admin.describeProducers):
    a producer without idempotence has none."""
    parts = [f"{t}:{p}" for t in topics for p in range(settings.partitions)]
    out = subprocess.run(
        ["java", "-cp", f"{kafka_jars()}/*", str(DESCRIBE_PRODUCERS), settings.broker, *parts],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-600:]
    return Counter(line.split()[0] for line in out.stdout.splitlines() if line.strip())


def deployed_replication(settings: Settings) -> dict[str, tuple[int, str]]:
    """topic -> (replicas of partition 0, min.insync.replicas), for the project's topics and Kafka's own."""
    admin = AdminClient(client_config(settings))
    names = [*(spec.name for spec in topic_specs(settings)), "__consumer_offsets", "__transaction_state"]
    parts = partitions_of(admin, names)
    present = sorted({name for name, _ in parts})
    configs = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, name) for name in present])
    isr = {res.name: fut.result()["min.insync.replicas"].value for res, fut in configs.items()}
    return {name: (len(parts[(name, 0)].replicas), isr[name]) for name in present}


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_a_three_node_cluster_loses_nothing_to_lost_restarted_and_frozen_nodes(tmp_path: Path, guarantee: str) -> None:
    if missing := ensure(KAFKA_NEEDS):
        pytest.fail(f"Apache Kafka cannot run here: {missing}")
    docs = documents(400, f"cluster-{guarantee}", pages=(1, 3), page_words=(60, 200))
    warm = documents(1, "warm", pages=(1, 1))
    store = document_store(tmp_path).start()
    settings = pipeline_settings(
        tmp_path,
        partitions=6,
        broker_kind="kafka",
        broker_nodes=3,
        processing_guarantee=guarantee,
        mongo_url=f"mongodb://{store.address}",
        sink_assignment="group",
        assembly_timeout_s=600.0,
        lancedb_path=tmp_path / "lance",
    )
    windows: dict[str, tuple[float, float]] = {}
    try:
        with LocalPipeline(settings, ["window"], sinks=["mongo", "vectors"], own_store=False) as pipeline:
            live = pipeline.settings
            cluster = pipeline.broker
            assert isinstance(cluster, KafkaCluster) and len(cluster.nodes) == 3
            collector = Collector(live)
            publish_pages(live, warm[0])
            collector.wait([(warm[0][0].doc_id, 0)], ["window"], timeout=180)
            replication = deployed_replication(live)  # Kafka's own topics exist once a group or transaction did

            published: list[list] = []
            done = threading.Event()

            def steady() -> None:  # a steady stream: one document every half second until the faults are over
                for doc in docs:
                    if done.is_set():
                        return
                    publish_pages(live, doc)
                    published.append(doc)
                    time.sleep(0.5)

            publisher = threading.Thread(target=steady)
            publisher.start()
            time.sleep(8)
            for name, fault in faults(live, cluster).items():
                started = time.time()
                fault()
                wait_in_sync(live)
                windows[name] = (started, time.time())
                time.sleep(5)
            done.set()
            publisher.join()
            expected = expected_chunks(published + warm)
            result = collector.wait([(d[0].doc_id, 0) for d in published], ["window"], timeout=600, drain=True)
            stamps = produced_at(live)
            collector.close()
            stored, rows = stored_chunks(live, len(expected), timeout=300)
            vectors, report = stored_vectors_and_audit(live, len(expected))
            env = child_env(live)
            lag = streams("lag", "--json", env=env, timeout=120)
            status = streams("status", published[0][0].doc_id, "--json", env=env, timeout=120)
            audited = streams("audit", "-s", "window", "--json", env=env, timeout=300)
            producers = idempotent_producers(live, [live.topics.pages, live.topics.documents, live.topics.chunks])
            with TestClient(create_app(live)) as console:  # the web console, reading the same cluster
                index = console.get("/")
                console_lag = console.get("/api/lag").json()
                first_doc = console.get(f"/doc/{published[0][0].doc_id}")
    finally:
        store.stop()
    gaps = {name: longest_gap(stamps, *window) for name, window in windows.items()}
    print(
        f"\nthree-node cluster, {guarantee}: {len(published)} docs, {len(expected)} chunks; longest output gap "
        + ", ".join(f"{name} {gap:.1f}s" for name, gap in gaps.items())
        + f"; re-published {result.duplicates}; stored {rows} rows, {len(vectors)} vectors; "
        f"audit gaps {report.counts()}; idempotent producer states {dict(producers)}"
    )
    assert replication == {name: (3, "2") for name in replication}  # every topic, Kafka's own too
    internal = {"__consumer_offsets", *(["__transaction_state"] if guarantee == "exactly_once" else [])}
    assert internal <= set(replication) and len(replication) == len(topic_specs(settings)) + len(internal)
    assert {r.chunk_id: r.checksum for r in result.records()} == expected
    assert stored == expected and rows == len(expected)  # MongoDB holds each chunk once
    assert sorted(vectors) == sorted(expected)  # the vector store too: window has no table chunks
    assert not report.gaps, [g.as_dict() for g in report.gaps[:5]]  # nothing for `--repair` to do
    assert lag.returncode == 0 and json.loads(lag.stdout), lag.stderr
    assert status.returncode == 0 and json.loads(status.stdout), status.stderr
    assert audited.returncode == 0, audited.stdout[-600:] + audited.stderr[-600:]
    assert index.status_code == 200 and all(f'href="/doc/{d[0].doc_id}"' in index.text for d in published)
    assert console_lag["total_lag"] == 0 and console_lag["partitions"]
    assert first_doc.status_code == 200
    # the project's publisher, the assembler's and the chunker's producers: idempotent, as the brokers see them
    assert set(producers) == {settings.topics.pages, settings.topics.documents, settings.topics.chunks}
