"""Consumer lag per group, topic and partition: committed offset against the end offset.

Groups are the project's own (assembler, one per strategy, one per sink) plus any other group the
broker lists. A partition without a committed offset counts from the log start, which is what a new
consumer with `auto.offset.reset=earliest` will read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from confluent_kafka import Consumer, TopicPartition

from streams.core.chunkers import STRATEGIES
from streams.ops.topics import client_config
from streams.settings import Settings


@dataclass(frozen=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    committed: int  # -1 when the group never committed on this partition
    end: int
    lag: int


def known_groups(settings: Settings, strategies: list[str] | None = None) -> dict[str, list[str]]:
    """group -> topics it consumes, for every role this project runs."""
    t = settings.topics
    groups = {"streams-assembler": [t.pages]}
    for strategy in strategies or list(STRATEGIES):
        groups[f"streams-chunker-{strategy}"] = [t.documents]
    for sink in ("mongo", "vectors"):
        groups[f"streams-sink-{sink}"] = [t.chunks, t.status]
    return groups


def group_lag(settings: Settings, group: str, topics: list[str], timeout: float = 10.0) -> list[PartitionLag]:
    consumer = Consumer({**client_config(settings), "group.id": group, "enable.auto.commit": False})
    try:
        wanted: list[TopicPartition] = []
        metadata = consumer.list_topics(timeout=timeout).topics
        for topic in topics:
            if topic in metadata:
                wanted += [TopicPartition(topic, p) for p in sorted(metadata[topic].partitions)]
        committed = consumer.committed(wanted, timeout=timeout) if wanted else []
        rows = []
        for tp in committed:
            low, high = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=timeout)
            position = tp.offset if tp.offset >= 0 else low
            committed_offset = tp.offset if tp.offset >= 0 else -1
            rows.append(PartitionLag(group, tp.topic, tp.partition, committed_offset, high, max(0, high - position)))
        return rows
    finally:
        consumer.close()


def active_groups(settings: Settings) -> set[str]:
    """Groups the broker knows about (empty when the broker does not support listing)."""
    from confluent_kafka.admin import AdminClient

    try:
        result = AdminClient(client_config(settings)).list_consumer_groups(request_timeout=5).result()
        return {g.group_id for g in result.valid}
    except Exception:
        return set()


def lag_report(settings: Settings, only_group: str | None = None, include_idle: bool = False) -> dict:
    groups = known_groups(settings)
    listed = active_groups(settings)
    rows: list[PartitionLag] = []
    for group, topics in groups.items():
        if only_group and group != only_group:
            continue
        found = group_lag(settings, group, topics)
        # A group that never committed anything is not running here; show it only when asked.
        if only_group or include_idle or group in listed or any(r.committed >= 0 for r in found):
            rows += found
    totals: dict[str, int] = {}
    for row in rows:
        totals[row.group] = totals.get(row.group, 0) + row.lag
    return {"partitions": [asdict(r) for r in rows], "totals": totals, "total_lag": sum(totals.values())}


def lag_table(report: dict):
    """A rich table of a lag report, one row per partition and a total per group."""
    from rich.table import Table

    table = Table(title=f"consumer lag (total {report['total_lag']})")
    for column in ("group", "topic", "partition", "committed", "end", "lag"):
        numeric = column in ("partition", "committed", "end", "lag")
        table.add_column(column, justify="right" if numeric else "left", no_wrap=True)
    for row in report["partitions"]:
        table.add_row(
            row["group"],
            row["topic"],
            str(row["partition"]),
            str(row["committed"]),
            str(row["end"]),
            str(row["lag"]),
        )
    for group, total in report["totals"].items():
        table.add_row(f"[bold]{group}[/]", "", "", "", "total", f"[bold]{total}[/]")
    return table
