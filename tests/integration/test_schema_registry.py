"""Confluent framing against a real schema registry (Apicurio Registry's Confluent-compatible API): pages
published, chunked, stored by both sinks, tailed and replayed with every record framed by a registry id."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient

from streams.ops.registry import schema_registry
from streams.runtime.clients import client_config
from tests.cli import streams
from tests.integration.test_versions_sinks import RELABEL, run_amendments

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    service = schema_registry(tmp_path_factory.mktemp("registry")).start()
    try:
        yield service.confluent_url
    finally:
        service.stop()


def raw_values(settings, topic: str) -> list[bytes]:
    """Every value on `topic`, as bytes, read without decoding."""
    consumer = Consumer({**client_config(settings), "group.id": "registry-test", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(settings.partitions)])
    values: list[bytes] = []
    idle = 0
    while idle < 6:
        message = consumer.poll(0.5)
        if message is None or message.error():
            idle += 1
            continue
        idle = 0
        values.append(message.value())
    consumer.close()
    return values


def tail_json(settings, topic: str) -> list[dict]:
    env = {**os.environ, "STREAMS_BROKER": settings.broker, "STREAMS_SCHEMA_REGISTRY_URL": settings.schema_registry_url}
    done = streams(
        "tail",
        "--topic",
        topic,
        "--json",
        "--timeout",
        "3",
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.one_broker("kafka")  # a schema registry stands beside a Kafka cluster; the bytes are the same on noida-db
def test_publish_chunk_sink_tail_and_replay_through_a_real_registry(tmp_path_factory, registry: str) -> None:
    from streams.embedding.model import Embedder

    def inspect(settings) -> dict:
        return {
            "chunks": raw_values(settings, settings.topics.chunks),
            "documents": raw_values(settings, settings.topics.documents),
            "tailed": tail_json(settings, settings.topics.chunks),
        }

    run = run_amendments(
        tmp_path_factory.mktemp("registry-run"),
        [0, 1],
        Embedder(),
        replay=RELABEL,
        inspect=inspect,
        schema_registry_url=registry,
    )
    seen = run["inspected"]
    client = SchemaRegistryClient({"url": registry})
    subjects = set(client.get_subjects())
    assert {"chunks.created-value", "documents.assembled-value"} <= subjects
    chunk_id = client.get_latest_version("chunks.created-value").schema_id
    # Confluent framing: a zero byte, then the registry's id of the schema, on every record
    assert seen["chunks"] and all(v[0] == 0 for v in seen["chunks"])
    assert {int.from_bytes(v[1:5], "big") for v in seen["chunks"]} == {chunk_id}
    assert seen["documents"] and all(v[0] == 0 for v in seen["documents"])
    # the sinks decoded them: every chunk of both amendments stored, the replay relabelled them all
    total = len(run["expected"][0]) + len(run["expected"][1])
    assert run["mongo_total"] == total
    assert {d["chunker_version"] for d in run["mongo"].values()} == {RELABEL["chunker_version"]}
    # `streams tail` decodes them through the registry: the original and the replayed lineage
    tailed = [r for r in seen["tailed"] if "chunk_id" in r]
    assert len(tailed) == len(seen["chunks"])
    assert {r["chunk_id"] for r in tailed} == run["expected"][0] | run["expected"][1]
    assert RELABEL["chunker_version"] in {r["chunker_version"] for r in tailed}


@pytest.mark.one_broker("kafka")  # the registry alone: no broker is involved
def test_every_published_evolution_is_accepted_under_backward_and_a_breaking_one_is_not(registry: str) -> None:
    """Each subject's history registered in order, then the current schema: Apicurio, with BACKWARD as its
    global rule, accepts every step (the typed metadata among them); a field added without a default is refused,
    so the rule is in force."""
    from confluent_kafka.schema_registry import Schema
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    from streams.codec.avro import SchemaSet
    from streams.codec.history import history_files

    client = SchemaRegistryClient({"url": registry})
    current = SchemaSet().expanded
    for subject, versions in history_files().items():
        name = f"evolution-{subject}-value"
        for text in [p.read_text() for p in versions] + [json.dumps(current[subject])]:
            client.register_schema(name, Schema(text, "AVRO"))
    assert len(client.get_versions("evolution-chunk_record-value")) >= 6
    breaking = dict(current["chunk_record"])
    breaking["fields"] = [*breaking["fields"], {"name": "tenant", "type": "string"}]
    with pytest.raises(SchemaRegistryError):
        client.register_schema("evolution-chunk_record-value", Schema(json.dumps(breaking), "AVRO"))
