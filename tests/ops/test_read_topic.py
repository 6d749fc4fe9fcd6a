"""Reading a topic to its end when it ends in transaction commit markers, as every output topic of an
exactly-once worker does: `streams audit`, the ledger, the web console and `streams tail` read topics this way."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from streams.ops.embedded import broker
from streams.ops.tail import read_topic, tail_topic
from streams.settings import Settings

pytestmark = pytest.mark.integration


def test_a_topic_ending_in_commit_markers_is_read_to_its_end_without_waiting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """librdkafka steps over a marker without returning anything, so the last record's offset never reached the
    end offset and each read gave up only after its idle wait (30 s a topic). The reader's position does reach
    it: every record is read, and no partition is left for the idle wait."""
    server = broker(tmp_path / "broker").start()
    try:
        admin = AdminClient({"bootstrap.servers": server.address})
        for future in admin.create_topics([NewTopic("marked", 2, 1)]).values():
            future.result(10)
        sent = []
        out = Producer({"bootstrap.servers": server.address, "transactional.id": "marker-writer"})
        out.init_transactions(30)
        for n in range(3):  # three transactions: each partition's log ends in a commit marker
            out.begin_transaction()
            for partition in (0, 1):
                value = f"record-{n}-{partition}".encode()
                out.produce("marked", value, partition=partition)
                sent.append(value)
            out.commit_transaction(30)
        settings = Settings(broker=server.address, data_dir=tmp_path)
        with caplog.at_level(logging.WARNING):
            read = [m.value() for m in read_topic(settings, "marked", idle_s=5.0)]
            # Where the console's reader keeps its place: after the last record, before its marker.
            again = list(read_topic(settings, "marked", starts={0: 5, 1: 5}, idle_s=5.0))
            tailed = list(tail_topic(settings, "marked", idle_timeout=5.0))  # `streams tail` reads the same way
            first = list(tail_topic(settings, "marked", idle_timeout=5.0, limit=2))
            absent = list(read_topic(settings, "absent", idle_s=5.0))
            with pytest.raises(ValueError, match="topic 'absent' does not exist"):
                list(tail_topic(settings, "absent", idle_timeout=5.0))
    finally:
        server.stop()
    assert sorted(read) == sorted(sent)
    assert again == []
    assert sorted(r["undecodable"].encode() for r in tailed) == sorted(sent)  # neither Avro nor JSON: shown raw
    assert len(first) == 2 and absent == []
    assert not [r for r in caplog.records if "stopped" in r.getMessage()], caplog.text
