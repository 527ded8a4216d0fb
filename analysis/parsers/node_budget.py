"""The node-budget collector's snapshots of a node's budget groups (docs/collectors.md, node-budget), and what
happened inside the budget over a workload's window.

A snapshot (`node-budget.start` / `.stop`) is one JSON object: `epoch`; `memory` with the memory group's
`usage_in_bytes`, `limit_in_bytes`, `max_usage_in_bytes`, `failcnt`, `oom_kill` and `stat` (memory.stat: `total_cache`,
`total_rss`, `total_pgmajfault`, ...); `cpu` with `cfs_quota_us`, `cfs_period_us` and `stat` (cpu.stat:
`nr_periods`, `nr_throttled`, `throttled_time` in ns). Either group may be absent (a budget of one kind only).
Counters are cumulative since the group was created: the window's value is stop minus start.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import safeio

COLUMNS = ["window_s", "memory_limit_bytes", "memory_usage_bytes", "page_cache_bytes", "process_memory_bytes",
           "limit_hits", "oom_kills", "major_faults", "cpu_quota_cores", "cpu_throttled_s", "throttled_period_share"]
# memory.limit_in_bytes when no limit is set: the largest multiple of the page size below 2^63
UNLIMITED_BYTES = 1 << 62


def read_snapshot(path: Path) -> dict:
    return parse_snapshot(safeio.read_text(path, "node-budget"), path)


def parse_snapshot(text: str, path: Path) -> dict:
    snapshot = safeio.load_json(text, str(path))
    if not isinstance(snapshot, dict) or "epoch" not in snapshot:
        raise ValueError(f"{path}: not a node-budget snapshot (a JSON object with epoch)")
    return snapshot


def _number(snapshot: dict, *keys) -> float | None:
    value = snapshot
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{'.'.join(keys)} is {value!r}, not a number")
    return value


def window_row(start: Path, stop: Path) -> dict:
    """One row: the budget, where its memory was at stop, and what its counters counted between the snapshots."""
    # Both read before either is parsed: a stop the read rules refuse is recorded as refused, whatever the start holds.
    texts = [safeio.read_text(path, "node-budget") for path in (start, stop)]
    before, after = parse_snapshot(texts[0], start), parse_snapshot(texts[1], stop)

    def delta(*keys):
        first, last = _number(before, *keys), _number(after, *keys)
        if first is None or last is None:
            return None
        if last < first:
            raise ValueError(f"{'.'.join(keys)} went down between start and stop ({first} -> {last}): the group "
                             "was made anew inside the window (a provisioning during the workload)")
        return last - first

    limit = _number(after, "memory", "limit_in_bytes")
    quota, period = _number(after, "cpu", "cfs_quota_us"), _number(after, "cpu", "cfs_period_us")
    periods, throttled_periods = delta("cpu", "stat", "nr_periods"), delta("cpu", "stat", "nr_throttled")
    throttled_ns = delta("cpu", "stat", "throttled_time")
    return {
        "window_s": float(_number(after, "epoch")) - float(_number(before, "epoch")),
        "memory_limit_bytes": limit if limit is not None and limit < UNLIMITED_BYTES else None,
        "memory_usage_bytes": _number(after, "memory", "usage_in_bytes"),
        "page_cache_bytes": _number(after, "memory", "stat", "total_cache"),
        "process_memory_bytes": _number(after, "memory", "stat", "total_rss"),
        "limit_hits": delta("memory", "failcnt"),
        "oom_kills": delta("memory", "oom_kill"),
        "major_faults": delta("memory", "stat", "total_pgmajfault"),
        "cpu_quota_cores": quota / period if quota is not None and quota > 0 and period else None,
        "cpu_throttled_s": throttled_ns / 1e9 if throttled_ns is not None else None,
        "throttled_period_share": throttled_periods / periods if periods else None,
    }



def node_budget_table(start: Path, stop: Path) -> pd.DataFrame:
    """The node_budget table of one window: its one row."""
    return pd.DataFrame([window_row(start, stop)], columns=COLUMNS)
