"""Derived quantities the report shows, computed from the tidy tables (no plotting here)."""
from __future__ import annotations

import numpy as np
import pandas as pd

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def format_bytes(value: float) -> str:
    """`123.4 MiB` style (powers of 1024)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "-"
    value, unit = float(value), 0
    while abs(value) >= 1024 and unit < len(_BINARY_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.0f} {_BINARY_UNITS[unit]}" if unit == 0 else f"{value:.1f} {_BINARY_UNITS[unit]}"


def size_label(size_bytes: int) -> str:
    """Block-size label without decimals for powers of two: 4 KiB, 1 MiB."""
    value, unit = float(size_bytes), 0
    while value >= 1024 and unit < len(_BINARY_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:g} {_BINARY_UNITS[unit]}"


def fio_curves(fio: pd.DataFrame) -> pd.DataFrame:
    """Bandwidth and IOPS per (host, backend, rw, direction, block size), repeated points averaged."""
    if fio.empty or "block_size_bytes" not in fio:
        return pd.DataFrame()
    keys = ["host", "backend", "rw", "direction", "block_size_bytes"]
    return (fio.groupby(keys, observed=True)
            .agg(bandwidth_bytes_per_s=("bandwidth_bytes_per_s", "mean"), iops=("iops", "mean"),
                 lat_mean_s=("lat_mean_s", "mean"), points=("iops", "size"))
            .reset_index().sort_values(keys, ignore_index=True))


def request_size_histogram(requests: pd.DataFrame) -> pd.DataFrame:
    """Request counts and bytes per log2 size bin (bin_bytes = lower bound, a power of 2), per host,
    workload, device and op (read/write only: flushes and discards carry no data moved)."""
    if requests.empty or "bytes" not in requests:
        return pd.DataFrame()
    data = requests[requests["op"].astype(str).isin(["read", "write"]) & (requests["bytes"] > 0)]
    if data.empty:
        return pd.DataFrame()
    bins = np.left_shift(1, np.floor(np.log2(data["bytes"].to_numpy(np.float64))).astype(np.int64))
    grouped = (data.assign(bin_bytes=bins, op=data["op"].astype(str), device=data["device"].astype(str))
               .groupby(["host", "workload_id", "device", "op", "bin_bytes"], observed=True)
               .agg(requests=("bytes", "size"), bytes=("bytes", "sum")).reset_index())
    return grouped


def throughput_timeline(iostat: pd.DataFrame) -> pd.DataFrame:
    """iostat samples with read/write throughput per host, workload and device, time ordered."""
    if iostat.empty or "time" not in iostat:
        return pd.DataFrame()
    return iostat.sort_values(["host", "workload_id", "device", "time"], ignore_index=True)


def phase_spans(stages: pd.DataFrame, mr_jobs: pd.DataFrame) -> pd.DataFrame:
    """Time spans (epoch s) to mark on throughput plots: Spark stage attempts, MR map/reduce phases."""
    rows = []
    if not stages.empty and "submission_time_ms" in stages:
        for stage in stages.dropna(subset=["submission_time_ms"]).itertuples():
            end = stage.completion_time_ms if pd.notna(stage.completion_time_ms) else stage.submission_time_ms
            label = f"s{stage.stage_id}" + (f".{stage.attempt}" if stage.attempt else "")
            rows.append({"workload_id": stage.workload_id, "label": label, "start_s": stage.submission_time_ms / 1e3,
                         "end_s": end / 1e3, "status": stage.status})
    if not mr_jobs.empty and "job_id" in mr_jobs:
        for job in mr_jobs.itertuples():
            short = str(job.job_id).rsplit("_", 1)[-1]
            for phase in ("map", "reduce"):
                start, end = getattr(job, f"{phase}_phase_start_ms"), getattr(job, f"{phase}_phase_end_ms")
                if pd.notna(start) and pd.notna(end):
                    rows.append({"workload_id": job.workload_id, "label": f"{phase} {short}",
                                 "start_s": start / 1e3, "end_s": end / 1e3, "status": job.status})
    return pd.DataFrame(rows, columns=["workload_id", "label", "start_s", "end_s", "status"])


def mr_job_summary(mr_jobs: pd.DataFrame, mr_counters: pd.DataFrame) -> pd.DataFrame:
    """Per MR job: duration and the I/O counters comparable to Spark's stage metrics (bytes)."""
    if mr_jobs.empty or "job_id" not in mr_jobs:
        return pd.DataFrame()
    wanted = {"HDFS_BYTES_READ": "hdfs_read_bytes", "HDFS_BYTES_WRITTEN": "hdfs_written_bytes",
              "FILE_BYTES_READ": "local_read_bytes", "FILE_BYTES_WRITTEN": "local_written_bytes",
              "REDUCE_SHUFFLE_BYTES": "shuffle_bytes", "MAP_OUTPUT_MATERIALIZED_BYTES": "map_output_materialized_bytes",
              "SPILLED_RECORDS": "spilled_records"}
    summary = mr_jobs[["host", "workload_id", "job_id", "job_name", "status", "duration_s",
                       "total_maps", "total_reduces"]].copy()
    if not mr_counters.empty and "name" in mr_counters:
        totals = mr_counters[(mr_counters["scope"] == "total") & mr_counters["name"].isin(wanted)]
        pivot = totals.pivot_table(index="job_id", columns="name", values="value", aggfunc="sum")
        pivot = pivot.rename(columns=wanted).reset_index()
        summary = summary.merge(pivot, on="job_id", how="left")
    return summary


def workload_io_summary(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per workload run: how long it took and what it moved, by layer (bytes):
    Spark stages (sums over stage attempts), MapReduce job counters, and the devices themselves
    (diskstats window totals). The shuffle volume is the paper-comparable figure (NVMe-SSD-for-Spark, Table III)."""
    ids = set()
    for name in ("workloads", "stages", "mr_jobs", "disk_totals"):
        if "workload_id" in tables[name]:
            ids |= set(tables[name]["workload_id"].dropna())
    rows = {wid: {"workload_id": wid} for wid in sorted(ids)}
    workloads = tables["workloads"]
    for w in workloads.itertuples():
        rows[w.workload_id].update(status=w.status, duration_s=w.duration_s)
    stages = tables["stages"]
    if "stage_id" in stages and not stages.empty:
        sums = stages.groupby("workload_id").agg(
            spark_stages=("stage_id", "size"), input_bytes=("input_bytes", "sum"), output_bytes=("output_bytes", "sum"),
            shuffle_read_bytes=("shuffle_read_bytes", "sum"), shuffle_write_bytes=("shuffle_write_bytes", "sum"),
            spill_disk_bytes=("disk_spilled_bytes", "sum"))
        for wid, values in sums.iterrows():
            rows[wid].update(values.to_dict())
    summary = mr_job_summary(tables["mr_jobs"], tables["mr_counters"])
    if not summary.empty:
        for column in ("hdfs_read_bytes", "hdfs_written_bytes", "shuffle_bytes"):
            if column not in summary:
                summary[column] = np.nan
        mr = summary.groupby("workload_id").agg(mr_jobs=("job_id", "size"), mr_hdfs_read_bytes=("hdfs_read_bytes", "sum"),
                                                mr_hdfs_written_bytes=("hdfs_written_bytes", "sum"),
                                                mr_shuffle_bytes=("shuffle_bytes", "sum"))
        for wid, values in mr.iterrows():
            rows[wid].update(values.to_dict())
    totals = tables["disk_totals"]
    if "read_bytes" in totals and not totals.empty:
        device = totals.groupby("workload_id").agg(device_read_bytes=("read_bytes", "sum"),
                                                    device_write_bytes=("write_bytes", "sum"))
        for wid, values in device.iterrows():
            rows[wid].update(values.to_dict())
    return pd.DataFrame(list(rows.values()))


# ---------------------------------------------------------------- experiment variables: placement, cores

# What identifies "the same experiment" across runs of one bench: the runs differ only in repetition.
CONFIG_COLUMNS = ["workload", "sweep", "placement_hdfs", "placement_local", "executor_cores"]


def measured_runs(workloads: pd.DataFrame) -> pd.DataFrame:
    """The runs that count as results: completed and validated, warm-ups excluded. Failed and invalid
    runs stay in the tables (and the report lists them) but never enter a median."""
    if workloads.empty:
        return workloads
    return workloads[(workloads["status"] == "ok") & ~workloads["warmup"].astype(bool)]


def _spread(frame: pd.DataFrame, keys: list[str], column: str) -> pd.DataFrame:
    """Median, min, max and count of `column` per key (NaN keys kept, e.g. the cluster's default cores)."""
    grouped = frame.groupby(keys, dropna=False)[column]
    return grouped.agg(median="median", min="min", max="max", runs="count").reset_index()


def run_time_by_placement(workloads: pd.DataFrame) -> pd.DataFrame:
    """Run-step seconds per (workload, sweep point, executor cores) and placement, over the measured
    repetitions: the I/O-aware model paper's comparison of hybrid placements."""
    runs = measured_runs(workloads)
    if runs.empty:
        return pd.DataFrame(columns=CONFIG_COLUMNS + ["median", "min", "max", "runs"])
    return _spread(runs.dropna(subset=["run_s"]), CONFIG_COLUMNS, "run_s")


def stage_time_by_cores(stages: pd.DataFrame, workloads: pd.DataFrame) -> pd.DataFrame:
    """Stage seconds against executor cores per node (P), medians over measured repetitions.

    A stage is identified across runs by its application's order within the workload run (GATK runs one
    application per tool) plus its stage id and name, which a deterministic job keeps from run to run."""
    runs = measured_runs(workloads)
    columns = CONFIG_COLUMNS + ["app", "stage_id", "name", "median", "min", "max", "runs"]
    if runs.empty or stages.empty or "stage_id" not in stages:
        return pd.DataFrame(columns=columns)
    first = stages.groupby(["workload_id", "app_id"])["submission_time_ms"].min().reset_index()
    first["app"] = first.groupby("workload_id")["submission_time_ms"].rank(method="dense").astype(int)
    attempts = stages.merge(first[["workload_id", "app_id", "app"]], on=["workload_id", "app_id"])
    # a retried stage counts with all its attempts' time
    per_stage = attempts.groupby(["workload_id", "app", "stage_id", "name"], dropna=False)["duration_s"].sum()
    joined = per_stage.reset_index().merge(runs[["workload_id"] + CONFIG_COLUMNS], on="workload_id")
    if joined.empty:
        return pd.DataFrame(columns=columns)
    return _spread(joined, CONFIG_COLUMNS + ["app", "stage_id", "name"], "duration_s")[columns]
