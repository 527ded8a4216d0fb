"""The rows of the pages' HTML tables: every number formatted with its unit (analysis.formatting), one
builder per table, shared where both pages show the same quantity (the spread of repetitions)."""
from __future__ import annotations

import pandas as pd

from .. import access_patterns, metrics, statistics
from ..across_runs.io_patterns import IO_PATTERN_KEYS
from ..formatting import MISSING, count, exact_size, format_bytes, number, rate, size_label, spread
from ..models.sensitivity import MODEL_NAMES


# ---------------------------------------------------------------- rows of the single-run report

def spread_cell(row) -> str:
    """median (min–max, n runs) of a metrics spread row, flagged when repetitions disagree by more than
    metrics.SPREAD_LIMIT."""
    text = spread(row["median"], row["min"], row["max"], row["runs"])
    if text != MISSING and row["runs"] > 1 and row["median"] and \
            metrics.wide_spread(row["median"], row["min"], row["max"]):
        text += f" ⚠ spread > {metrics.SPREAD_LIMIT * 100:.0f} %"
    return text


def verdict_cell(ratio_text: str, verdict: str) -> str:
    """A ratio as the statistics allow it to be read: `1.39 x slower` only when significant; otherwise the ratio in
    parentheses with `not significant` or `cannot tell` (analysis.statistics), so that no page ranks noise."""
    if ratio_text == MISSING or verdict == statistics.BASELINE:
        return ratio_text
    if verdict in (statistics.FASTER, statistics.SLOWER):
        return f"{ratio_text} {verdict}"
    return f"({ratio_text}) {verdict}"


def placement_rows(by_placement: pd.DataFrame, noise: statistics.Noise | None = None) -> list[dict]:
    """Run-step time per workload configuration under each placement, with the ratio to the fastest median and
    whether the statistics tell that difference from noise."""
    if by_placement.empty or by_placement[["placement_hdfs", "placement_local"]].drop_duplicates().shape[0] < 2:
        return []
    rows = []
    keys = ["workload", "sweep", "executor_cores"]
    for _, group in by_placement.groupby(keys, dropna=False, sort=False):
        fastest = group.loc[group["median"].idxmin()]
        for row in group.sort_values(["placement_hdfs", "placement_local"]).to_dict("records"):
            result = statistics.compare(fastest["samples"], row["samples"], noise)
            is_fastest = row["median"] == fastest["median"]
            ratio = number(row["median"] / fastest["median"], "x", 2) if fastest["median"] else MISSING
            rows.append({"workload": row["workload"], "sweep": row["sweep"],
                         "cores": "default" if pd.isna(row["executor_cores"]) else int(row["executor_cores"]),
                         "hdfs": row["placement_hdfs"], "local": row["placement_local"], "time": spread_cell(row),
                         "ratio": ratio if is_fastest else verdict_cell(ratio, result.verdict),
                         "reason": "" if is_fastest else result.reason})
    return rows


def cores_rows(by_cores: pd.DataFrame) -> tuple[list, list[dict]]:
    """Stage time per P as columns: (the P values, one row per stage)."""
    cores = sorted(int(c) for c in by_cores["executor_cores"].dropna().unique())
    if len(cores) < 2:
        return [], []
    keys = ["workload", "sweep", "placement_hdfs", "placement_local", "app", "stage_id", "name"]
    rows = []
    for key, group in by_cores.dropna(subset=["executor_cores"]).groupby(keys, dropna=False, sort=False):
        by_p = {int(r["executor_cores"]): spread_cell(r) for r in group.to_dict("records")}
        rows.append({"workload": key[0], "sweep": key[1], "placement": f"hdfs={key[2]}, local={key[3]}",
                     "stage": f"app {key[4]} s{key[5]}", "name": key[6],
                     "times": [by_p.get(p, MISSING) for p in cores]})
    return cores, rows


# ---------------------------------------------------------------- the report's overview, per workload run

def workload_name(workload: str, sweep: str) -> str:
    """`terasort (engine=spark)`: a workload with its sweep point, as the pages' workload filter reads it."""
    return workload + (f" ({sweep})" if sweep else "")


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


# ---------------------------------------------------------------- storage sensitivity (both pages)

def sensitivity_context(table: pd.DataFrame) -> dict:
    """models.sensitivity.storage_sensitivity as a table: one row per workload (and P, N), one column per placement,
    each cell the run step measured (median, range, runs) or predicted (with the model's error), then the model's
    error and the runs it was measured on."""
    if table.empty:
        return {"placements": [], "rows": []}
    placements = list(dict.fromkeys(zip(table["hdfs"], table["local"])))
    rows = []
    for key, group in table.groupby(["workload", "sweep", "cores", "nodes"], sort=False):
        by_placement = {(r["hdfs"], r["local"]): r for r in group.to_dict("records")}
        first = group.iloc[0]
        error = (f"median {number(first['error_median_pct'], '%', 1)}, worst {number(first['error_worst_pct'], '%', 1)}"
                 if not pd.isna(first["error_median_pct"]) else "not measured")
        rows.append({"workload": key[0] + (f" ({key[1]})" if key[1] else ""), "cores": f"P={key[2]}, N={key[3]}",
                     "cells": [_sensitivity_cell(by_placement.get(p)) for p in placements],
                     "model": first["model"], "error": error, "basis": first["error_basis"],
                     "inputs": [f"{h}, local {l}: {r['inputs']}" for (h, l), r in by_placement.items() if r["inputs"]]})
    return {"placements": [f"HDFS {h}, local {l}" for h, l in placements], "rows": rows}


def _sensitivity_cell(row) -> dict:
    if row is None:
        return {"text": MISSING, "how": "", "title": ""}
    if row["how"] == "measured":
        check = "" if pd.isna(row["error_pct"]) else \
            f"the model, from the other placements: {number(row['predicted_s'], 's', 1)} ({row['error_pct']:+.1f} %)"
        return {"text": spread(row["run_s"], row["min_s"], row["max_s"], row["runs"]), "how": "measured",
                "title": check}
    error = "" if pd.isna(row["error_median_pct"]) else f" ± {number(row['error_median_pct'], '%', 0)}"
    inputs = f"; {row['inputs']}" if row["inputs"] else ""
    return {"text": number(row["run_s"], "s", 1) + error, "how": f"predicted ({row['model']})",
            "title": f"predicted by {MODEL_NAMES.get(row['model'], row['model'])}; ± its median error{inputs}",
            "inputs": row["inputs"]}


def workload_io_rows(tables: dict[str, pd.DataFrame]) -> list[dict]:
    rows = []
    for w in metrics.workload_io_summary(tables).to_dict("records"):
        get = w.get
        status = get("status")
        rows.append({"workload": w["workload_id"],
                     "status": status if isinstance(status, str) else "missing",
                     "duration": number(get("duration_s"), "s", 1),
                     "input": format_bytes(get("input_bytes")), "output": format_bytes(get("output_bytes")),
                     "shuffle_read": format_bytes(get("shuffle_read_bytes")),
                     "shuffle_write": format_bytes(get("shuffle_write_bytes")),
                     "spill": format_bytes(get("spill_disk_bytes")),
                     "mr_hdfs": f"{format_bytes(get('mr_hdfs_read_bytes'))} / "
                                f"{format_bytes(get('mr_hdfs_written_bytes'))}",
                     "mr_shuffle": format_bytes(get("mr_shuffle_bytes")),
                     "device": f"{format_bytes(get('device_read_bytes'))} / "
                               f"{format_bytes(get('device_write_bytes'))}"})
    return rows


def stage_rows(stages: pd.DataFrame) -> list[dict]:
    rows = []
    if stages.empty or "stage_id" not in stages:
        return rows
    for s in stages.itertuples():
        group = getattr(s, "job_group", None)
        rows.append({"workload": s.workload_id, "host": s.host, "app": s.app_id,
                     "group": group if isinstance(group, str) else "", "stage": f"{s.stage_id}" + (f" (attempt {s.attempt})" if s.attempt else ""),
                     "name": s.name, "tasks": s.num_tasks, "status": s.status, "duration": number(s.duration_s, "s"),
                     "input": format_bytes(s.input_bytes), "output": format_bytes(s.output_bytes),
                     "shuffle_read": format_bytes(s.shuffle_read_bytes),
                     "shuffle_write": format_bytes(s.shuffle_write_bytes),
                     "spill": f"{format_bytes(s.memory_spilled_bytes)} mem / "
                              f"{format_bytes(s.disk_spilled_bytes)} disk",
                     "cpu": number(s.executor_cpu_time_s, "s"), "run": number(s.executor_run_time_s, "s")})
    return rows


def mr_rows(mr_jobs: pd.DataFrame, mr_counters: pd.DataFrame) -> list[dict]:
    summary = metrics.mr_job_summary(mr_jobs, mr_counters)
    rows = []
    for job in summary.to_dict("records"):
        rows.append({"workload": job["workload_id"], "job": job["job_id"], "name": job.get("job_name"),
                     "status": job["status"], "duration": number(job.get("duration_s"), "s"),
                     "tasks": f"{job.get('total_maps')} maps / {job.get('total_reduces')} reduces",
                     **{k: format_bytes(job.get(k)) for k in
                        ("hdfs_read_bytes", "hdfs_written_bytes", "shuffle_bytes", "local_written_bytes")},
                     "spilled": number(job.get("spilled_records"), "records", 0)})
    return rows


def gluster_rows(bricks: pd.DataFrame, fops: pd.DataFrame, most: int = 4) -> list[dict]:
    """Per workload and brick of a harness-built GlusterFS volume: bytes moved and the file operations that took
    the most time at the brick (calls x average latency)."""
    if bricks.empty:
        return []
    rows = []
    for brick in bricks.sort_values(["workload_id", "volume", "brick_host"]).to_dict("records"):
        key = {k: brick[k] for k in ("workload_id", "volume", "brick_host", "brick_path")}
        mine = fops.loc[(fops[list(key)] == pd.Series(key)).all(axis=1)].nlargest(most, "latency_total_s")
        rows.append({"workload": brick["workload_id"], "brick": f"{brick['brick_host']}:{brick['brick_path']}",
                     "volume": brick["volume"], "window": number(brick["duration_s"], "s", 0),
                     "read": format_bytes(brick["read_bytes"]),
                     "written": format_bytes(brick["write_bytes"]),
                     "fops": ", ".join(f"{f['fop']} {f['calls']:,} x {number(f['latency_avg_s'] * 1e3, 'ms')}"
                                       for f in mine.to_dict("records"))})
    return rows


def pfs_client_rows(counters: pd.DataFrame) -> list[dict]:
    """Per workload, worker and pfs backend: what the file system's client counted over the window."""
    if counters.empty:
        return []
    rows = []
    for (workload, host, backend, fstype), group in counters.groupby(["workload_id", "host", "backend", "fstype"]):
        value = group.set_index("counter")["value"]
        calls = {fop: value.get(f"fop.{fop}.calls") for fop in ("READ", "WRITE")}
        rows.append({"workload": workload, "host": host, "backend": f"{backend} ({fstype})",
                     "window": number(value.get("window"), "s", 0),
                     "read": format_bytes(value.get("bytes_read", value.get("read_bytes.sum"))),
                     "written": format_bytes(value.get("bytes_written", value.get("write_bytes.sum"))),
                     "calls": ", ".join(f"{fop} {int(n):,}" for fop, n in calls.items() if n is not None)})
    return rows


def stage_request_tables(sizes: pd.DataFrame, stages: pd.DataFrame) -> list[dict]:
    """One table per workload: stage -> requests, bytes, mean/median size, % reads, per device."""
    tables = []
    for workload_id, per_workload in sizes.groupby("workload_id", sort=False):
        rows = []
        for r in per_workload.to_dict("records"):
            index = r["stage_index"]
            name = stages.at[index, "name"] if index >= 0 else "requests issued while no stage of this host ran"
            rows.append({"stage": r["stage"], "name": name, "host": r["host"],
                         "device": r["device"] + (f" ({r['backend']})" if r["backend"] else ""),
                         "requests": number(r["requests"], "", 0), "bytes": format_bytes(r["bytes"]),
                         "mean": format_bytes(r["mean_bytes"]), "median": format_bytes(r["median_bytes"]),
                         "reads": number(r["read_pct"], "%", 1)})
        attributed = per_workload.loc[per_workload["stage_index"] >= 0, "stage_index"]
        tables.append({"workload_id": workload_id, "rows": rows, "stages": attributed.nunique()})
    return tables


def shuffle_model_rows(model: pd.DataFrame, backends: dict) -> list[dict]:
    return [{"workload": r["workload_id"], "stage": r["stage"], "tasks": int(r["num_tasks"]),
             "shuffle_read": format_bytes(r["shuffle_read_bytes"]),
             "per_reducer": format_bytes(r["shuffle_read_bytes"] / r["num_tasks"]) if r["num_tasks"] else MISSING,
             "map_outputs": r["map_outputs"], "rule": r["parents_rule"],
             "expected": format_bytes(r["expected_bytes"]),
             "device": MISSING if r["device"] is None else f"{r['device']} ({backends.get((r['host'], r['device']), '?')})",
             "reads": f"{count(r['measured_reads'], 'request')}, {format_bytes(r['device_read_bytes'])} "
                      f"({number(100 * r['device_read_bytes'] / r['shuffle_read_bytes'], '%', 0)} of the shuffle read)",
             "measured": format_bytes(r["measured_bytes"]), "ratio": number(r["ratio"], "x", 2)}
            for r in model.to_dict("records")]


# ---------------------------------------------------------------- the I/O pattern section (Darshan-style views)

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
    """The report's "I/O pattern" section, one entry per workload run: its heat map (figures.heatmap_figures), its
    common access sizes and sequential shares as rows, or, without a usable block trace, what is missing."""
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


def fio_rows(fio: pd.DataFrame) -> list[dict]:
    curves = metrics.fio_curves(fio)
    return [{"host": c.host, "backend": c.backend, "rw": c.rw, "direction": c.direction,
             "bs": size_label(c.block_size_bytes), "bw": rate(c.bandwidth_bytes_per_s, 1),
             "iops": number(c.iops, "IOPS", 0), "lat": number(c.lat_mean_s * 1e3, "ms", 3)} for c in curves.itertuples()]


# ---------------------------------------------------------------- rows of the comparison page

def pivot_rows(table: pd.DataFrame, keys: list[str], order: list[str]) -> list[dict]:
    """Rows for the page: per key, each configuration's `median (min–max, n runs)` and speedup."""
    rows = []
    if table.empty:
        return rows
    for key, group in table.groupby(keys, dropna=False, sort=False, observed=True):
        by_config = {row["configuration"]: row for row in group.to_dict("records")}
        cells = []
        for config in order:
            row = by_config.get(config)
            if row is None:
                cells.append({"time": "not run", "speedup": MISSING, "reason": "", "flag": False})
                continue
            verdict = row.get("verdict", statistics.BASELINE)
            cells.append({"time": spread_cell({"median": row["median_s"], "min": row["min_s"], "max": row["max_s"],
                                                "runs": row["runs"]}),
                          "speedup": verdict_cell(number(row["speedup_vs_baseline"], "x", 2), verdict),
                          "reason": row.get("verdict_reason", ""), "flag": bool(row["spread_flag"])})
        rows.append({"key": dict(zip(keys, key)), "cells": cells})
    return rows


def _pattern_keys(r: dict) -> dict:
    """The columns every row of the comparison's I/O pattern tables starts with (comparison.io_patterns)."""
    return {"workload": workload_name(r["workload"], r["sweep"]), "configuration": str(r["configuration"]),
            "workload_run": r["workload_id"], "device": _device_text(r["host"], r["device"], r["profile"])}


def compare_access_size_rows(sizes: pd.DataFrame, top: int = access_patterns.COMMON_SIZES) -> list[dict]:
    """comparison.io_patterns' common access sizes as rows, in its order: one per workload, direction, configuration
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
    """comparison.io_patterns' sequential shares as rows, in its order: per workload, direction, configuration and
    device, the share of requests that are sequential, random and forward (sequential_rows)."""
    return [{**_pattern_keys(r), **_sequential_cells(r)} for r in shares.to_dict("records")]


def gate_rows(table: pd.DataFrame) -> list[dict]:
    """The regression gate's verdicts (analysis.gate), failures first, each time and slowdown with its unit."""
    order = {verdict: rank for rank, verdict in enumerate(("slower", "pass", "faster"))}
    ranked = table.assign(_rank=table["gate"].map(order).fillna(len(order))).sort_values("_rank", kind="stable")
    return [{"gate": r.gate, "workload": r.workload, "sweep": r.sweep, "stage": r.stage,
             "configuration": r.configuration, "median": number(r.median_s, "s", 2),
             "baseline_median": number(r.baseline_median_s, "s", 2),
             "slowdown": _change_text(r.slowdown_pct), "reason": r.reason} for r in ranked.itertuples()]


def _change_text(slowdown_pct) -> str:
    """`12.5 % slower`, `3.0 % faster`, `0.0 %` (no change at this precision)."""
    if pd.isna(slowdown_pct):
        return MISSING
    text = number(abs(slowdown_pct), "%", 1)
    if text == number(0, "%", 1):
        return text
    return f"{text} {'slower' if slowdown_pct > 0 else 'faster'}"


def fio_ratio_rows(ratios: pd.DataFrame) -> list[dict]:
    return [{"series": r.series, "rw": r.rw, "direction": r.direction, "bs": size_label(r.block_size_bytes),
             "bw": rate(r.bandwidth_bytes_per_s, 1), "bw_base": rate(r.bandwidth_bytes_per_s_baseline, 1),
             "bw_ratio": number(r.bandwidth_ratio, "x", 2), "iops_ratio": number(r.iops_ratio, "x", 2)}
            for r in ratios.itertuples()]


def io_rows(throughput: pd.DataFrame) -> list[dict]:
    return [{"workload": r.workload, "sweep": r.sweep, "configuration": r.configuration,
             "result": format_bytes(r.result_bytes), "shuffle": format_bytes(r.shuffle_bytes),
             "run": number(r.run_s, "s", 1), "cluster": rate(r.cluster_bytes_per_s, 2),
             "node": rate(r.node_bytes_per_s, 2), "nodes": int(r.nodes), "runs": int(r.runs)}
            for r in throughput.dropna(subset=["result_bytes", "shuffle_bytes"], how="all").itertuples()]


def shuffle_rows(shuffle: pd.DataFrame) -> list[dict]:
    return [{"workload": r.workload, "sweep": r.sweep, "application": r.application,
             "configuration": r.configuration, "write": format_bytes(r.shuffle_write_bytes),
             "read": format_bytes(r.shuffle_read_bytes), "runs": int(r.runs)} for r in shuffle.itertuples()]


# ---------------------------------------------------------------- findings (both pages)

def finding_groups(statuses: list[dict], table: pd.DataFrame, shown: int = 3) -> dict:
    """The findings section: one group per rule that fired (its title, action and evidence lines, the first
    `shown` open and the rest folded), then the rules that did not fire and those the run had no data for."""
    groups = []
    for status in statuses:
        if status["status"] != "fired":
            continue
        mine = table[table["rule"] == status["rule"]]
        lines = [{"where": f"{r['workload_id']}" + (f" · {r['run']}" if r.get("run") else ""), "evidence": r["evidence"]}
                 for r in mine.to_dict("records")]
        groups.append({"rule": status["rule"], "title": status["title"], "action": status["action"],
                       "lines": lines[:shown], "more": lines[shown:]})
    return {"groups": groups,
            "quiet": [s["rule"] for s in statuses if s["status"] == "did not fire"],
            "no_data": [f"{s['rule']} ({s['why']})" for s in statuses if s["status"] == "no data"]}


def noise_text(noise: statistics.Noise | None) -> str:
    if noise is None:
        return ("No noise level of this host is known (no configuration was repeated): a configuration with one run "
                "cannot be told apart from another.")
    return f"Noise of this host: {number(noise.pct, '%', 1)} ({noise.source}); a difference must exceed it to count."


def findings_context(statuses: list[dict], table: pd.DataFrame, noise: statistics.Noise | None,
                     files: str = "") -> dict:
    """The Findings section (templates/_findings.html.j2) of either page."""
    return {**finding_groups(statuses, table), "statistics": statistics.METHOD, "noise": noise_text(noise),
            "files": files, "error": ""}
