"""The report's I/O pattern views (Darshan-style, from the block trace) across runs: common access sizes,
sequential shares and the heat map of bytes over time, keyed so that one workload's direction reads across the
configurations."""
from __future__ import annotations

import pandas as pd

from .. import access_patterns, devices
from .runs import Run

IO_PATTERN_KEYS = ["workload", "sweep", "op", "configuration", "run_id", "workload_id", "host", "device"]
_OP_ORDER = {"read": 0, "write": 1, "all": 2}


def _io_pattern_table(runs: list[Run], measured: pd.DataFrame, order: list[str], pattern) -> pd.DataFrame:
    """`pattern` (an access_patterns view of `block_requests`) of every run's measured workload runs (`measured`:
    configurations.measured_configurations), each row with its workload, sweep key, configuration, run and the device's
    storage profile, sorted by workload, direction, configuration in `order`, device (and rank or time bin)."""
    frames = []
    for run in runs:
        frame = pattern(run.tables["block_requests"])
        mine = measured[measured["run_id"] == run.run_id] if not measured.empty else measured
        if frame.empty or mine.empty:
            continue
        profiles = devices.device_profiles(run.tables["devices"])
        frame = frame.astype({"host": str, "workload_id": str, "device": str, "op": str})
        frame = frame.assign(profile=[profiles.get(key, "") for key in zip(frame["host"], frame["device"])])
        frames.append(frame.merge(mine[["workload_id", "workload", "sweep", "configuration", "run_id"]],
                                  on="workload_id"))
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    extra = [c for c in dict.fromkeys(frame["configuration"]) if c not in order]
    frame["configuration"] = pd.Categorical(frame["configuration"], categories=order + extra, ordered=True)
    by = [c for c in IO_PATTERN_KEYS if c != "op"] + [c for c in ("rank", "bin_start_s") if c in frame]
    frame = frame.assign(_op=frame["op"].map(_OP_ORDER)).sort_values(
        ["workload", "sweep", "_op", *by[2:]], ignore_index=True).drop(columns="_op")
    leading = [*IO_PATTERN_KEYS, "profile"]
    return frame[leading + [c for c in frame.columns if c not in leading]]


def io_patterns(runs: list[Run], measured: pd.DataFrame, order: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The report's I/O pattern views of every measured workload run of the compared runs, from its block trace
    (`block_requests`): its common access sizes (access_patterns.common_access_sizes: per device and direction the
    most common request sizes, the others folded into one row) and its sequential shares
    (access_patterns.sequential_share: per device, reads, writes and both). Each row carries its workload run's
    workload and sweep key (like with like), its configuration, labelled as the run-time table labels it (`measured`:
    configurations.measured_configurations of `runs`), and the device's storage profile (`profile`); rows sorted by
    workload, direction, configuration in `order`, device, so that one direction of one workload reads across the
    runs."""
    return (_io_pattern_table(runs, measured, order, access_patterns.common_access_sizes),
            _io_pattern_table(runs, measured, order, access_patterns.sequential_share))


def io_heatmap(runs: list[Run], measured: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """The report's heat map of bytes over time for every measured workload run of the compared runs
    (access_patterns.bytes_heatmap: bytes and requests per time bin, host, device and direction), keyed and sorted
    as io_patterns' tables, then by time bin."""
    return _io_pattern_table(runs, measured, order, access_patterns.bytes_heatmap)
