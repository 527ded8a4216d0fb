"""The I/O pattern section (Darshan-style views of the block trace): the report's, one entry per workload run
with its heat map, common access sizes and sequential shares, and the comparison's, the same views side by
side per configuration (across_runs.io_patterns)."""
from __future__ import annotations

import pandas as pd

from ... import access_patterns
from ...across_runs.io_patterns import IO_PATTERN_KEYS
from ...formatting import MISSING, count, exact_size, format_bytes, number
from .cells import workload_name


def _device_text(host: str, device: str, backend: str | None) -> str:
    """`loop1 (hdd) on vm`: a device with what it held (a backend, or a storage profile across runs) and its host."""
    return device + (f" ({backend})" if backend else "") + f" on {host}"


def _device_name(row: dict, backends: dict) -> str:
    return _device_text(row["host"], row["device"], backends.get((row["host"], row["device"])))


def _direction(op: str) -> str:
    return "reads and writes" if op == "all" else op + "s"


def _size_text(row: dict) -> str:
    """A common access size, `8 KiB` (formatting.exact_size), or the folded rest, `7 other sizes`."""
    if pd.isna(row["size_bytes"]):
        return number(row["sizes"], "other sizes", 0)
    return exact_size(row["size_bytes"])


def access_size_rows(sizes: pd.DataFrame, backends: dict) -> list[dict]:
    """access_patterns.common_access_sizes as rows: per device and direction its most common request sizes, each
    with its count, share of the direction's requests and bytes, then the other sizes as one row."""
    rows = []
    for r in sizes.to_dict("records"):
        rows.append({"device": _device_name(r, backends), "op": _direction(r["op"]),
                     "rank": "rest" if pd.isna(r["size_bytes"]) else str(int(r["rank"])), "size": _size_text(r),
                     "requests": f"{number(r['requests'], '', 0)} of {number(r['device_requests'], '', 0)}",
                     "share": number(r["share_pct"], "%", 1), "bytes": format_bytes(r["bytes"])})
    return rows


def _share_text(pct, requests, decided) -> str:
    if not decided:
        return f"{MISSING} (no request had a predecessor)"
    return f"{number(pct, '%', 1)} ({number(requests, '', 0)} of {number(decided, '', 0)})"


def _sequential_cells(r: dict) -> dict:
    """One access_patterns.sequential_share row's counts and shares, each share with the requests it is of."""
    decided = int(r["sequential"] + r["random"])
    return {"op": _direction(r["op"]), "requests": number(r["requests"], "", 0), "first": number(r["first"], "", 0),
            "sequential": _share_text(r["sequential_pct"], r["sequential"], decided),
            "random": _share_text(100.0 * r["random"] / decided if decided else None, r["random"], decided),
            "forward": _share_text(r["forward_pct"], r["forward"], decided)}


def sequential_rows(shares: pd.DataFrame, backends: dict) -> list[dict]:
    """access_patterns.sequential_share as rows: per device, reads, writes and both, the share of requests that
    start where the previous one of their direction ended, of those that start elsewhere (random), and of those
    that start at or after it (forward)."""
    return [{"device": _device_name(r, backends), **_sequential_cells(r)} for r in shares.to_dict("records")]


def _no_trace(workload_id: str, sources: pd.DataFrame) -> str:
    """Why a workload has no I/O pattern: no trace recorded, a trace that could not be used, or one without data."""
    views = "there is no heat map, no access sizes and no sequential share"
    traces = sources[(sources["source"] == "blocktrace") & (sources["workload_id"] == workload_id)] \
        if not sources.empty else sources
    if traces.empty:
        return (f"No block trace was recorded for {workload_id} (no blocktrace collector output, so no rows of "
                f"block_requests): {views}. Its device throughput over time (iostat), where recorded, is in "
                "\"Device throughput over time with stages\".")
    failed = traces[traces["status"] != "ok"]
    if not failed.empty:
        return (f"The block trace of {workload_id} could not be used ("
                + "; ".join(f"{t.host}: {t.status}" + (f" — {t.message}" if isinstance(t.message, str) and t.message
                                                         else "") for t in failed.itertuples())
                + f"): {views}.")
    return f"The block trace of {workload_id} holds no read or write that moved data: {views}."


def io_pattern_sections(workload_ids: list[str], heatmaps: list[dict], sizes: pd.DataFrame, shares: pd.DataFrame,
                        backends: dict, sources: pd.DataFrame) -> list[dict]:
    """The report's "I/O pattern" section, one entry per workload run: its heat map
    (figures.heatmaps.heatmap_figures), its common access sizes and sequential shares as rows, or, without a usable
    block trace, what is missing."""
    figures_by_workload = {f["workload_id"]: f for f in heatmaps}
    sections = []
    for workload_id in workload_ids:
        heatmap = figures_by_workload.get(workload_id)
        mine = [(t[t["workload_id"] == workload_id] if not t.empty else t) for t in (sizes, shares)]
        sections.append({"workload_id": workload_id, "heatmap": heatmap,
                         "size_rows": access_size_rows(mine[0], backends),
                         "sequential_rows": sequential_rows(mine[1], backends),
                         "missing": "" if heatmap else _no_trace(workload_id, sources)})
    return sections


def _pattern_keys(r: dict) -> dict:
    """The columns every row of the comparison's I/O pattern tables starts with (across_runs.io_patterns)."""
    return {"workload": workload_name(r["workload"], r["sweep"]), "configuration": str(r["configuration"]),
            "workload_run": r["workload_id"], "device": _device_text(r["host"], r["device"], r["profile"])}


def compare_access_size_rows(sizes: pd.DataFrame, top: int = access_patterns.COMMON_SIZES) -> list[dict]:
    """across_runs.io_patterns' common access sizes as rows, in its order: one per workload, direction, configuration
    and device, its `top` most common sizes side by side, each cell a size and its count (`8 KiB:`,
    `36 requests, 29.8 %` of the direction's requests on the device), then the other sizes folded (`7 other
    sizes:`, ...), and the direction's requests and bytes."""
    rows = []
    if sizes.empty:
        return rows
    for _, group in sizes.groupby(IO_PATTERN_KEYS, sort=False, observed=True, dropna=False):
        cells = {int(r["rank"]): (f"{_size_text(r)}:",
                                  f"{count(r['requests'], 'request')}, {number(r['share_pct'], '%', 1)}")
                 for r in group.to_dict("records")}
        first = group.iloc[0].to_dict()
        rows.append({**_pattern_keys(first), "op": _direction(first["op"]),
                     "requests": count(first["device_requests"], "request"),
                     "bytes": format_bytes(group["bytes"].sum()),
                     "sizes": [cells.get(rank, (MISSING, "")) for rank in range(1, top + 1)],
                     "rest": cells.get(top + 1, (MISSING, "(no other size)"))})
    return rows


def compare_sequential_rows(shares: pd.DataFrame) -> list[dict]:
    """across_runs.io_patterns' sequential shares as rows, in its order: per workload, direction, configuration and
    device, the share of requests that are sequential, random and forward (sequential_rows)."""
    return [{**_pattern_keys(r), **_sequential_cells(r)} for r in shares.to_dict("records")]
