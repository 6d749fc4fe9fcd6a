"""Processes and process groups from /proc: liveness for the supervisor and the group janitor, CPU seconds
for the demo's summary and the benchmarks. Linux only; callers fall back where /proc is absent."""

from __future__ import annotations

import os
from collections.abc import Iterator


def proc_stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first, then ppid, pgrp, ...);
    None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None


def process_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (a killed child nobody has reaped yet)."""
    try:
        fields = proc_stat(pid)
    except OSError:  # pragma: no cover - no /proc (not Linux): fall back to signal 0
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return fields is not None and fields[0] != "Z"


def _all_stats() -> Iterator[list[str]]:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = proc_stat(entry)
        except OSError:  # gone meanwhile
            continue
        if fields is not None:
            yield fields


def group_alive(pgid: int) -> bool:
    """True while a process of the group runs (zombies, already dead but not yet reaped, do not count)."""
    return any(fields[0] != "Z" and int(fields[2]) == pgid for fields in _all_stats())


def groups_cpu_s(groups: dict[str, int], reaped: bool = False) -> dict[str, float]:
    """User plus system CPU seconds of each named process group's live processes; with `reaped`, also of
    the children they have reaped (the launchers of the embedded servers run the server as a child)."""
    by_group = {pgid: 0 for pgid in groups.values()}
    last = 15 if reaped else 13  # utime, stime[, cutime, cstime]: fields 14 to 17 of stat
    for fields in _all_stats():
        if int(fields[2]) in by_group:
            by_group[int(fields[2])] += sum(map(int, fields[11:last]))
    ticks = os.sysconf("SC_CLK_TCK")
    return {name: by_group[pgid] / ticks for name, pgid in groups.items()}


def group_cpu_s(pgid: int) -> float:
    """CPU seconds (user + system) of the live processes of one process group."""
    return groups_cpu_s({"group": pgid})["group"]


def process_cpu_s(pid: int) -> float:
    fields = proc_stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else 0.0
