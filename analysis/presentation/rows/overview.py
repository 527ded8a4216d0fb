"""The report's overview, one row per measured workload run: where its stage time went, what it moved by path
and backend, who served its reads."""
from __future__ import annotations

import pandas as pd

from ...formatting import format_bytes, number
from .cells import workload_name


_PATH_NAMES = {"hdfs_read_bytes": "HDFS read", "hdfs_write_bytes": "HDFS write", "shuffle_read_bytes": "shuffle read",
               "shuffle_write_bytes": "shuffle write", "spill_bytes": "spill"}


def overview_rows(overview: pd.DataFrame, per_backend: pd.DataFrame, shares: pd.DataFrame) -> list[dict]:
    """One row per measured workload run (metrics.workload_overview, models.bottleneck.time_shares): where its
    stage time went, the bytes it moved by path and by backend, and who served its reads, in words and numbers."""
    rows = []
    for run in overview.to_dict("records"):
        mine = shares[shares["workload_id"] == run["workload_id"]] if not shares.empty else shares
        devices = per_backend[per_backend["workload_id"] == run["workload_id"]]
        rows.append({
            "workload": workload_name(run["workload"], run["sweep"]),
            "workload_id": run["workload_id"],
            "placement": f"HDFS {run['placement_hdfs']}, local {run['placement_local']}"
                         + ("" if pd.isna(run["executor_cores"]) else f", P={int(run['executor_cores'])}"),
            "run": number(run["run_s"], "s", 1),
            "time": _time_text(mine),
            "paths": ", ".join(f"{name} {format_bytes(run[path])}" for path, name in _PATH_NAMES.items()),
            "devices": "; ".join(f"{d['backend']} read {format_bytes(d['read_bytes'])}, "
                                 f"wrote {format_bytes(d['write_bytes'])}" for d in devices.to_dict("records"))
                       or "not recorded (no disk counters)",
            "reads": _reads_text(run)})
    return rows


def _time_text(shares: pd.DataFrame) -> str:
    if shares.empty:
        return "no Spark stages: no per-stage bottleneck (MapReduce, or no event log)"
    names = {"cpu": "CPU", "network": "network"}
    parts = [f"{names.get(r['resource']) or 'disk ' + r['backend']} {number(r['share_pct'], '%', 0)}"
             for r in shares.to_dict("records")]
    first = shares.iloc[0]
    return ", ".join(parts) + f" of {number(first['stages_s'], 's', 1)} in {int(first['stages'])} stages"


def _reads_text(run: dict) -> str:
    read, device = run["app_read_bytes"], run["device_read_bytes"]
    if pd.isna(device):
        return f"the applications read {format_bytes(read)}; the devices' reads were not recorded"
    if pd.isna(run["device_read_share_pct"]):
        return f"the applications read nothing; the devices read {format_bytes(device)}"
    share = run["device_read_share_pct"]
    if share > 100:
        return (f"the devices read {format_bytes(device)}, more than the applications' {format_bytes(read)} "
                f"({number(share, '%', 0)}: read-ahead, spill, other readers)")
    return (f"devices {number(share, '%', 1)}, page cache {number(100 - share, '%', 1)} of the "
            f"{format_bytes(read)} the applications read")
