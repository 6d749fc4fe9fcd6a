"""The operator's lag report: consumer lag per group, topic and partition, for `streams lag`.

Groups are the project's own (assembler, one per strategy, one per sink) plus any other group the
broker lists. One group's lag is `streams.runtime.lag.group_lag`, which the workers' metrics report too.
"""

from __future__ import annotations

from dataclasses import asdict

from streams.runtime.clients import client_config, group_id
from streams.runtime.lag import PartitionLag, group_lag, known_groups
from streams.settings import Settings
from streams.sinks.indexes import DEFAULT, indexes


def active_groups(settings: Settings) -> set[str]:
    """Groups the broker knows about (empty when the broker does not support listing)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(settings))  # held until the answer: a client dropped first cancels it
    try:
        result = admin.list_consumer_groups(request_timeout=5).result()
        return {g.group_id for g in result.valid}
    except Exception:
        return set()


def index_groups(settings: Settings) -> dict[str, list[str]]:
    """The sinks of the vector indexes besides `default` (none when the catalogue cannot be read)."""
    try:
        names = [i.name for i in indexes(settings, timeout_ms=1000) if i.name != DEFAULT]
    except Exception:  # no MongoDB here: the groups the settings know are still reported
        return {}
    topics = [settings.topics.chunks, settings.topics.status]
    return {group_id(settings, f"sink-vectors.{name}"): topics for name in names}


def lag_report(settings: Settings, only_group: str | None = None, include_idle: bool = False) -> dict:
    groups = {**known_groups(settings), **index_groups(settings)}
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
