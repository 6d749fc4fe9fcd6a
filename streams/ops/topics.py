"""Every topic is created up front with explicit partitions and configs (faust tables need their source
topic and changelog to have equal partition counts)."""

from __future__ import annotations

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
    ]
    for table in ("assembly-headers", "assembly-pages", "latest-amendments"):
        specs.append(TopicSpec(f"{group_id(settings, 'assembler')}-{table}-changelog", p, {**changelog, **big}))
    for strategy in STRATEGIES:
        specs.append(
            TopicSpec(f"{group_id(settings, f'chunker-{strategy}')}-chunk-versions-changelog", p, {**changelog, **big})
        )
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
    return created
