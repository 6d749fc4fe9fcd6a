"""Two deployments on one broker and one MongoDB, as staging runs beside production: `STREAMS_DEPLOYMENT`
prefixes every topic, consumer group, changelog and database name, so each audits clean and neither reads
the other's records."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from pymongo import MongoClient

from streams.ops.embedded import broker, document_store
from tests.cli import streams
from tests.integration.conftest import audited, start_up, up_settings, user_env

# The broker and the store are the test's own: what it asserts is every name on them.
pytestmark = [pytest.mark.integration, pytest.mark.own_services]

DEPLOYMENTS = ("staging", "production")


def note(path: Path, name: str) -> Path:
    """A short document of the deployment's own, so that any record read across is told apart by its id."""
    path.write_text(
        f"Field notes of the {name} team.\n\nThe {name} kiln is fired twice a week and cooled overnight; "
        f"glazes for {name} are mixed on Mondays and tested on small tiles before a batch.\n"
    )
    return path


@pytest.mark.one_broker("kafka")  # sharing one cluster between deployments is a Kafka deployment's case
def test_two_prefixed_deployments_share_one_broker_and_one_mongodb_apart(tmp_path: Path, bus: str) -> None:
    with broker(tmp_path / "shared") as kafka, document_store(tmp_path / "shared") as mongo:
        shared = {"STREAMS_BROKER": kafka.address, "STREAMS_MONGO_URL": f"mongodb://{mongo.address}"}
        ups = {
            name: start_up(
                tmp_path / name,
                "--external",
                "--no-ui",
                "-s",
                "window",
                STREAMS_DEPLOYMENT=name,
                STREAMS_PARTITIONS="2",
                **shared,
            )
            for name in DEPLOYMENTS
        }
        try:
            firsts = {name: json.loads(up.stdout.readline()) for name, up in ups.items()}
            for name, first in firsts.items():
                assert (first["deployment"], first["broker"]) == (name, kafka.address)
                assert first["mongo_database"] == f"{name}-streams"
                env = user_env(tmp_path / name)  # up.json names the broker and the deployment
                done = streams("publish", str(note(tmp_path / f"{name}.txt", name)), "--doc-id", f"{name}-doc", env=env)
                assert done.returncode == 0, done.stderr
                assert f"to {name}.pages.cleaned" in done.stderr
            for name in DEPLOYMENTS:
                report = audited(up_settings(tmp_path / name))  # in this process, until clean
                assert report.versions == 1 and not report.gaps, (name, report.as_dict())
                done = streams("audit", "--json", "-s", "window", env=user_env(tmp_path / name), timeout=120)
                assert done.returncode == 0, done.stderr  # and the operator's command, from up.json, agrees
                assert json.loads(done.stdout)["versions"] == 1

            client = MongoClient(f"mongodb://{mongo.address}", serverSelectionTimeoutMS=10_000)
            try:
                for name in DEPLOYMENTS:
                    held = client[f"{name}-streams"]["chunks"].distinct("doc_id")
                    assert held == [f"{name}-doc"], (name, held)
                assert "streams" not in client.list_database_names()  # nothing unprefixed
            finally:
                client.close()

            admin = AdminClient({"bootstrap.servers": kafka.address})
            topics = [t for t in admin.list_topics(timeout=10).topics if not t.startswith("__")]
            assert topics and all(t.split(".", 1)[0] in DEPLOYMENTS for t in topics), sorted(topics)
            for name in DEPLOYMENTS:
                assert f"{name}.streams-assembler-assembly-pages-changelog" in topics
            groups = [g.group_id for g in admin.list_consumer_groups(request_timeout=10).result().valid]
            ours = [g for g in groups if ".streams-" in g]
            assert {g.split(".", 1)[0] for g in ours} == set(DEPLOYMENTS), groups
            assert not [g for g in groups if g.startswith("streams-")], groups
            for group in ours:  # each group committed offsets on its own deployment's topics alone
                result = admin.list_consumer_group_offsets([_request(group)])[group].result()
                read = {tp.topic for tp in result.topic_partitions if tp.offset >= 0}
                assert read and all(t.startswith(group.split(".", 1)[0] + ".") for t in read), (group, read)
        finally:
            for up in ups.values():
                os.killpg(up.pid, signal.SIGINT)
            for up in ups.values():
                up.wait(60)
    assert all(up.returncode == 0 for up in ups.values())


def _request(group: str):
    from confluent_kafka import ConsumerGroupTopicPartitions

    return ConsumerGroupTopicPartitions(group)


@pytest.mark.one_broker  # no broker at all: the settings refuse before one is dialled
def test_a_bad_deployment_name_is_one_line_and_a_refusal_to_start(tmp_path: Path) -> None:
    env = {**user_env(tmp_path), "STREAMS_DEPLOYMENT": "Staging.Blue"}
    done = streams("topics", env=env, timeout=60)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "STREAMS_DEPLOYMENT" in lines[0] and "lowercase letters" in lines[0], done.stderr
