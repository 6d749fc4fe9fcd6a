"""Every topic is created up front with explicit partitions and configs (faust tables need their source
topic and changelog to have equal partition counts)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient, NewTopic

from streams.core.chunkers import STRATEGIES
from streams.runtime.clients import client_config, dead_letter_limit, group_id
from streams.settings import Settings

LONG = {"retention.ms": "-1"}
COMPACTED = {"cleanup.policy": "compact"}


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict[str, str]


def topic_specs(settings: Settings) -> list[TopicSpec]:
    t = settings.topics
    p = settings.partitions
    big = {"max.message.bytes": str(settings.max_message_bytes)}
    # faust recovers a table by reading its changelog up to the high watermark; on the embedded broker a
    # compaction pass can remove the last offsets and recovery then waits forever, so changelogs there
    # keep everything (`STREAMS_CHANGELOG_CLEANUP=delete` + infinite retention). Kafka keeps `compact`.
    changelog = COMPACTED if settings.changelog_cleanup == "compact" else LONG
    specs = [
        TopicSpec(t.pages, p, {**LONG, **big}),
        TopicSpec(t.ticks, p, {"retention.ms": "3600000"}),
        TopicSpec(t.documents, p, {**LONG, **big, "compression.type": "producer"}),
        TopicSpec(t.chunks, p, {**LONG, **big}),
        TopicSpec(t.versions, p, COMPACTED),
        TopicSpec(t.status, p, COMPACTED),
        TopicSpec(t.manifests, p, {**COMPACTED, **big}),
        TopicSpec(t.indexed, p, COMPACTED),
        TopicSpec(t.dead_letter, p, {**LONG, "max.message.bytes": str(dead_letter_limit(settings))}),
        TopicSpec(t.redriven, p, COMPACTED),
    ]
    for table in ("assembly-headers", "assembly-pages", "latest-amendments"):
        specs.append(TopicSpec(f"{group_id(settings, 'assembler')}-{table}-changelog", p, {**changelog, **big}))
    for strategy in STRATEGIES:
        specs.append(
            TopicSpec(f"{group_id(settings, f'chunker-{strategy}')}-chunk-versions-changelog", p, {**changelog, **big})
        )
    if settings.replication_factor > 1:  # a write is acknowledged once this many replicas have it
        isr = {"min.insync.replicas": str(settings.topic_min_isr)}
        specs = [TopicSpec(s.name, s.partitions, {**s.config, **isr}) for s in specs]
    return specs


def ensure_topics(settings: Settings, timeout: float | None = None) -> list[str]:
    """Create missing topics; returns the names created. Existing topics are left as they are."""
    timeout = timeout or settings.connect_timeout_s
    admin = AdminClient(client_config(settings))
    existing = set(admin.list_topics(timeout=timeout).topics)
    wanted = [
        NewTopic(s.name, s.partitions, settings.replication_factor, config=s.config)
        for s in topic_specs(settings)
        if s.name not in existing
    ]
    created: list[str] = []
    if not wanted:
        return created
    for name, future in admin.create_topics(wanted, request_timeout=timeout).items():
        try:
            future.result(timeout)
            created.append(name)
        except Exception as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
    visible(admin, created, timeout)
    return created


def visible(admin: AdminClient, names: list[str], timeout: float) -> None:
    """Wait until the broker's metadata shows every named topic with a leader for each partition. Kafka
    creates a topic asynchronously: a faust worker started at once could find it missing, log "Ignoring
    missing topic" and never consume it (a chunker on a loaded machine waited for ever)."""
    deadline = time.monotonic() + timeout
    waiting = set(names)
    while waiting:
        topics = admin.list_topics(timeout=max(deadline - time.monotonic(), 0.1)).topics
        waiting = {
            name
            for name in waiting
            if name not in topics
            or topics[name].error is not None
            or not topics[name].partitions
            or any(p.leader < 0 for p in topics[name].partitions.values())
        }
        if waiting and time.monotonic() > deadline:
            raise TimeoutError(f"topics created but not visible after {timeout:.0f} s: {', '.join(sorted(waiting))}")
        if waiting:
            time.sleep(0.1)
