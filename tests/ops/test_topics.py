"""`ensure_topics` returns once the broker's metadata shows every topic it created, each partition with a
leader: a worker started right after must find them (faust ignores a topic missing at start for good)."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from streams.ops.embedded import broker
from streams.ops.topics import ensure_topics, visible
from streams.settings import Settings

pytestmark = pytest.mark.integration


def test_created_topics_are_visible_with_a_leader_when_ensure_topics_returns(tmp_path: Path) -> None:
    with broker(tmp_path) as service:
        settings = Settings(broker=service.address, partitions=2, data_dir=tmp_path)
        created = ensure_topics(settings)
        admin = AdminClient({"bootstrap.servers": service.address})
        topics = admin.list_topics(timeout=10).topics
        assert settings.topics.documents in created
        assert all(all(p.leader >= 0 for p in topics[name].partitions.values()) for name in created)
        with pytest.raises(TimeoutError, match="not visible after 1 s: never-created"):
            visible(admin, ["never-created"], 1.0)
