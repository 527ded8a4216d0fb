"""Darshan-style access patterns of the block trace (`block_requests`, docs/tables.md "I/O pattern views"): bytes
over time per host and device (the heat map's grid), the common request sizes per device and direction, and the
share of requests that are sequential. Reads and writes that moved data only (metrics.data_requests): flushes and
discards carry no bytes and no position."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .metrics import data_requests

DEVICE_KEYS = ["host", "workload_id", "device"]
SECTOR_BYTES = 512

# Bin widths of the heat map's time axis, seconds: the smallest that keeps a workload's trace within MAX_BINS bins.
BIN_STEPS_S = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)
MAX_BINS = 120


def heatmap_bin_s(duration_s: float, max_bins: int = MAX_BINS) -> float:
    """The bin width (s) for a trace lasting `duration_s`: the first of BIN_STEPS_S giving at most `max_bins` bins."""
    for step in BIN_STEPS_S:
        if duration_s / step < max_bins:
            return float(step)
    return float(np.ceil(duration_s / max_bins / BIN_STEPS_S[-1]) * BIN_STEPS_S[-1])


HEATMAP_COLUMNS = ["host", "workload_id", "device", "op", "bin_start_s", "bin_s", "requests", "bytes"]


def bytes_heatmap(requests: pd.DataFrame) -> pd.DataFrame:
    """Bytes and requests per time bin, host, device and direction, each request counted whole in the bin of its
    dispatch (`issue_time_s`). Per workload one bin width (heatmap_bin_s of its trace's span), bins starting at
    the workload's first dispatch rounded down to a multiple of the width (epoch s). Only bins with requests are
    rows: a missing bin moved nothing."""
    data = data_requests(requests)
    if data.empty:
        return pd.DataFrame(columns=HEATMAP_COLUMNS)
    frames = []
    for workload_id, per_workload in data.groupby("workload_id", observed=True):
        issue = per_workload["issue_time_s"].to_numpy(np.float64)
        width = heatmap_bin_s(float(issue.max() - issue.min()))
        origin = np.floor(issue.min() / width) * width
        start = origin + np.floor((issue - origin) / width) * width
        grouped = (per_workload.assign(bin_start_s=start)
                   .groupby(["host", "device", "op", "bin_start_s"], observed=True)
                   .agg(requests=("bytes", "size"), bytes=("bytes", "sum")).reset_index())
        frames.append(grouped.assign(workload_id=workload_id, bin_s=width))
    return pd.concat(frames, ignore_index=True)[HEATMAP_COLUMNS]


SIZE_COLUMNS = ["host", "workload_id", "device", "op", "rank", "size_bytes", "sizes", "requests", "share_pct",
                "bytes", "device_requests"]


def access_sizes(requests: pd.DataFrame) -> pd.DataFrame:
    """Every request size per host, workload, device and direction: `requests` of that exact size, their share of
    the direction's requests on the device (`share_pct`, %), the bytes they moved, and `rank` (1 = most common;
    ties go to the smaller size). `device_requests` is the direction's total on the device, which the counts add up
    to."""
    data = data_requests(requests)
    if data.empty:
        return pd.DataFrame(columns=SIZE_COLUMNS)
    keys = [*DEVICE_KEYS, "op"]
    sizes = (data.rename(columns={"bytes": "size_bytes"}).groupby([*keys, "size_bytes"], observed=True)
             .size().rename("requests").reset_index())
    sizes = sizes.sort_values([*keys, "requests", "size_bytes"], ascending=[True] * len(keys) + [False, True],
                              ignore_index=True)
    total = sizes.groupby(keys, observed=True)["requests"].transform("sum")
    return sizes.assign(rank=sizes.groupby(keys, observed=True).cumcount() + 1, sizes=1,
                        share_pct=100.0 * sizes["requests"] / total, bytes=sizes["requests"] * sizes["size_bytes"],
                        device_requests=total)[SIZE_COLUMNS]


# How many of a device's request sizes per direction the pages list before folding the others into one row.
COMMON_SIZES = 4


def common_access_sizes(requests: pd.DataFrame, top: int = COMMON_SIZES) -> pd.DataFrame:
    """Darshan's "common access sizes" per device and direction: the `top` most common request sizes, then the
    other sizes folded into one row (`size_bytes` NaN, `sizes` = how many distinct sizes it holds, `rank` top + 1),
    so that each direction's rows still add up to its requests and bytes."""
    every = access_sizes(requests)
    common = every[every["rank"] <= top]
    rest = every[every["rank"] > top]
    if rest.empty:
        return common.reset_index(drop=True)
    keys = [*DEVICE_KEYS, "op"]
    folded = (rest.groupby(keys, observed=True)
              .agg(sizes=("size_bytes", "size"), requests=("requests", "sum"), share_pct=("share_pct", "sum"),
                   bytes=("bytes", "sum"), device_requests=("device_requests", "first"))
              .reset_index().assign(rank=top + 1, size_bytes=np.nan))
    both = pd.concat([common.astype({"size_bytes": "float64"}), folded[SIZE_COLUMNS]], ignore_index=True)
    return both.sort_values([*keys, "rank"], ignore_index=True)


def sequential_flags(requests: pd.DataFrame) -> pd.DataFrame:
    """The data requests with `sequential`: True when the request starts at the sector where the previous request
    of the same direction on the same host and device ended (sector + bytes / 512), in dispatch order
    (`issue_time_s`; the trace's order among equal times); False when it starts elsewhere; NA for the first request
    of its direction on the device, which has no previous one. Darshan's "consecutive" rule, per direction as Darshan
    keeps its last read and last written byte apart. `forward` (NA likewise): the request starts at or after that
    end, adjacent or past a gap (Darshan's "sequential"): a strided forward scan is forward but not sequential."""
    data = data_requests(requests)
    data = data[data["sector"] >= 0].sort_values("issue_time_s", kind="stable")
    ends = data["sector"].astype(np.int64) + data["bytes"].astype(np.int64) // SECTOR_BYTES
    previous_end = ends.groupby([data[k] for k in [*DEVICE_KEYS, "op"]], observed=True).shift(1)
    first = previous_end.isna()
    return data.assign(sequential=(data["sector"] == previous_end).astype("boolean").mask(first),
                       forward=(data["sector"] >= previous_end).astype("boolean").mask(first))


SEQUENTIAL_COLUMNS = ["host", "workload_id", "device", "op", "requests", "first", "sequential", "random",
                      "sequential_pct", "forward", "forward_pct"]


def sequential_share(requests: pd.DataFrame) -> pd.DataFrame:
    """Per host, workload, device and direction (`read`, `write`, and `all` for both): requests, the first ones
    without a predecessor (`first`, one per direction), the sequential and random (= not sequential) ones and the
    forward ones (sequential_flags); `sequential_pct` = sequential / (sequential + random) and `forward_pct` =
    forward / (sequential + random), % (NaN when no request had a predecessor). The first requests count in
    neither share."""
    flagged = sequential_flags(requests)
    if flagged.empty:
        return pd.DataFrame(columns=SEQUENTIAL_COLUMNS)
    counted = flagged.assign(first=flagged["sequential"].isna(), seq=flagged["sequential"].fillna(False),
                             rnd=~flagged["sequential"].fillna(True), fwd=flagged["forward"].fillna(False))
    counts = ["requests", "first", "sequential", "random", "forward"]
    per_op = (counted.groupby([*DEVICE_KEYS, "op"], observed=True)
              .agg(requests=("bytes", "size"), first=("first", "sum"), sequential=("seq", "sum"),
                   random=("rnd", "sum"), forward=("fwd", "sum")).reset_index())
    both = per_op.groupby(DEVICE_KEYS, observed=True)[counts].sum().reset_index().assign(op="all")
    table = pd.concat([per_op, both], ignore_index=True).astype({c: np.int64 for c in counts})
    decided = (table["sequential"] + table["random"]).astype(np.float64)
    decided = decided.where(decided > 0)
    table = table.assign(sequential_pct=100.0 * table["sequential"] / decided,
                         forward_pct=100.0 * table["forward"] / decided)
    order = table["op"].map({"read": 0, "write": 1, "all": 2})
    return table.assign(_order=order).sort_values([*DEVICE_KEYS, "_order"], ignore_index=True)[SEQUENTIAL_COLUMNS]
