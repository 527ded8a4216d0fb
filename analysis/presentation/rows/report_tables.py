"""The rows of the run's page's own tables (report.html): times per placement and per executor cores, each
workload's and stage's I/O, MapReduce jobs, GlusterFS bricks, pfs clients, requests per stage, the shuffle
request-size model and the fio sweep."""
from __future__ import annotations

import pandas as pd

import run_protocol

from ... import metrics, statistics
from ...formatting import MISSING, count, format_bytes, number, rate, size_label
from .cells import spread_cell, verdict_cell


def placement_rows(by_placement: pd.DataFrame, noise: statistics.Noise | None = None) -> list[dict]:
    """Run-step time per workload configuration under each placement, with the ratio to the fastest median and
    whether the statistics tell that difference from noise: for each verdict the runs on its side in the order they
    ran with their times (a drift shows), their spread against the protocol's steady limit (run_protocol), the
    interval of the ratio and whether it is decided."""
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
                         "reason": "" if is_fastest else result.reason,
                         "runs": runs_in_order(row.get("run_order"), row.get("times_in_order")),
                         "spread": spread_text(row["samples"]),
                         "interval": "" if is_fastest else interval_text(result),
                         "decided": "" if is_fastest else decided_text(result)})
    return rows


def runs_in_order(ids, times) -> str:
    """'id time, id time, ...': one side's runs in the order they ran."""
    if not isinstance(ids, list) or not isinstance(times, list) or not ids:
        return MISSING
    return ", ".join(f"{wid} {number(seconds, 's', 1)}" for wid, seconds in zip(ids, times))


def spread_text(samples) -> str:
    """The slowest run over the fastest of one side, and whether that is as steady as the protocol asks."""
    spread = run_protocol.spread_pct(list(samples))
    if spread is None:
        return "1 run"
    steadiness = "steady" if run_protocol.steady(samples) else "not steady"
    return f"{number(spread, '%', 1)} ({steadiness}: at most {run_protocol.STEADY_SPREAD_PCT:g} %)"


def interval_text(result: statistics.Difference) -> str:
    """The interval of the ratio (fastest / this), or why there is none."""
    if pd.isna(result.low):
        return f"none: {result.baseline.n} vs {result.other.n} run(s), at least {statistics.MIN_RUNS} a side needed"
    return f"{number(result.low, 'x', 2)} to {number(result.high, 'x', 2)}"


def decided_text(result: statistics.Difference) -> str:
    return f"decided: {result.verdict}" if result.significant else f"not decided: {result.verdict}"


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


def fio_rows(curves: pd.DataFrame, expectations: pd.DataFrame) -> list[dict]:
    """One run's fio sweep (metrics.fio_curves), a row per data path, pattern, direction and block size; beside a
    point on a modelled drive, what the datasheet's formulas expect for it (hdd_datasheet.sweep_expectations) and
    the error; a point over its device class's limit says why (analysis/fio_limits.py)."""
    keys = ["host", "backend", "rw", "block_size_bytes"]
    expected = {tuple(e[k] for k in keys): e for e in expectations.to_dict("records")} if not expectations.empty \
        else {}
    rows = []
    for c in curves.itertuples():
        e = expected.get((c.host, c.backend, c.rw, c.block_size_bytes)) or {}
        value = e.get("expected_bytes_per_s", float("nan"))
        rows.append({"host": c.host, "backend": c.backend, "rw": c.rw, "direction": c.direction,
                     "bs": size_label(c.block_size_bytes), "bw": rate(c.bandwidth_bytes_per_s, 1),
                     "iops": number(c.iops, "IOPS", 0), "lat": number(c.lat_mean_s * 1e3, "ms", 3),
                     "expected": rate(value, 1) if value == value else MISSING,
                     "error": number(100 * (c.bandwidth_bytes_per_s / value - 1), "%", 1) if value == value else MISSING,
                     "expectation": e.get("expectation", ""),
                     "flag": getattr(c, "over_class_limit", "") or ""})
    return rows
