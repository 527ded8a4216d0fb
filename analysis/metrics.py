"""Derived quantities the report shows, computed from the tidy tables (no plotting here)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .devices import device_backends
from .stages import IDENTITY_ORDER, STAGE_IDENTITY, with_application_order, with_identity

def fio_curves(fio: pd.DataFrame) -> pd.DataFrame:
    """Bandwidth and IOPS per (host, backend, rw, direction, block size), repeated points averaged (also the bytes
    moved and how long fio issued I/O, for the expectations of write points); the queue depth, and the device-class
    limit and why a point is over it (analysis/fio_limits.py: empty when none), where the
    table has them."""
    if fio.empty or "block_size_bytes" not in fio:
        return pd.DataFrame()
    keys = ["host", "backend", "rw", "direction", "block_size_bytes"]
    fio = fio.assign(over_class_limit=fio["over_class_limit"].fillna("") if "over_class_limit" in fio else "",
                     class_limit_bytes_per_s=fio.get("class_limit_bytes_per_s", np.nan),
                     io_bytes=fio.get("io_bytes", np.nan), issue_s=fio.get("issue_s", np.nan))
    return (fio.groupby(keys, observed=True)
            .agg(bandwidth_bytes_per_s=("bandwidth_bytes_per_s", "mean"), iops=("iops", "mean"),
                 lat_mean_s=("lat_mean_s", "mean"), points=("iops", "size"), iodepth=("iodepth", "max"),
                 io_bytes=("io_bytes", "mean"), issue_s=("issue_s", "mean"),
                 class_limit_bytes_per_s=("class_limit_bytes_per_s", "first"),
                 over_class_limit=("over_class_limit", lambda causes: "; ".join(sorted(set(causes) - {""}))))
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
        for column in ("hdfs_read_bytes", "hdfs_written_bytes", "shuffle_bytes", "map_output_materialized_bytes"):
            if column not in summary:
                summary[column] = np.nan
        mr = summary.groupby("workload_id").agg(mr_jobs=("job_id", "size"), mr_hdfs_read_bytes=("hdfs_read_bytes", "sum"),
                                                mr_hdfs_written_bytes=("hdfs_written_bytes", "sum"),
                                                mr_shuffle_bytes=("shuffle_bytes", "sum"),
                                                mr_shuffle_written_bytes=("map_output_materialized_bytes", "sum"))
        for wid, values in mr.iterrows():
            rows[wid].update(values.to_dict())
    totals = tables["disk_totals"]
    if "read_bytes" in totals and not totals.empty:
        device = totals.groupby("workload_id").agg(device_read_bytes=("read_bytes", "sum"),
                                                    device_write_bytes=("write_bytes", "sum"))
        for wid, values in device.iterrows():
            rows[wid].update(values.to_dict())
    return pd.DataFrame(list(rows.values()))


def on_backend_devices(frame: pd.DataFrame, device_backends: dict[tuple[str, str], str]) -> pd.DataFrame:
    """Rows of `frame` (host, device columns) on a backend's device, with `backend` ((host, device) -> backend:
    analysis.devices.device_backends); the host's own disks and an emulation's lower devices left out (they would
    count the same bytes twice)."""
    if frame.empty or not device_backends:
        return frame.iloc[0:0].assign(backend=pd.Series(dtype=str))
    keys = list(zip(frame["host"], frame["device"].astype(str)))
    named = frame.assign(backend=[device_backends.get(k) for k in keys])
    return named[named["backend"].notna()]


# What the applications read, by the layer that asked: Spark's input and shuffle read, MapReduce's HDFS reads.
# The devices' reads against these tell how much came from the devices rather than the page cache.
APPLICATION_READ_COLUMNS = ("input_bytes", "shuffle_read_bytes", "mr_hdfs_read_bytes")


def application_read_bytes(io: pd.DataFrame) -> pd.Series:
    """Per workload run (index workload_id) of workload_io_summary: the bytes its applications read."""
    read = pd.Series(0.0, index=io["workload_id"] if "workload_id" in io else [])
    for column in APPLICATION_READ_COLUMNS:
        if column in io:
            read = read.add(io.set_index("workload_id")[column].fillna(0), fill_value=0)
    return read


# The overview's paths: name -> the columns of workload_io_summary that add up to it (Spark stage sums and
# MapReduce job counters; a workload run has one or the other). MapReduce counts spilled records, not bytes: its
# spill stays unknown (NaN), never 0.
PATH_COLUMNS = {"hdfs_read_bytes": ("input_bytes", "mr_hdfs_read_bytes"),
                "hdfs_write_bytes": ("output_bytes", "mr_hdfs_written_bytes"),
                "shuffle_read_bytes": ("shuffle_read_bytes", "mr_shuffle_bytes"),
                "shuffle_write_bytes": ("shuffle_write_bytes", "mr_shuffle_written_bytes"),
                "spill_bytes": ("spill_disk_bytes",)}


def workload_overview(tables: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What each measured workload run moved, for the report's overview: (one row per run: its configuration,
    run-step seconds, bytes by path (PATH_COLUMNS), what its applications read, what the backends' devices read and
    wrote and the share of the applications' reads the devices served (%; the page cache served the rest),
    one row per run and backend: the bytes its devices read and wrote). Devices are the backends' devices only
    (disk_totals: the kernel's counters over the workload's window, whoever asked)."""
    measured = measured_runs(tables["workloads"])
    columns = ["workload_id", *CONFIG_COLUMNS, "run_s", *PATH_COLUMNS, "app_read_bytes", "device_read_bytes",
               "device_write_bytes", "device_read_share_pct"]
    backend_columns = ["workload_id", "backend", "read_bytes", "write_bytes"]
    if measured.empty:
        return pd.DataFrame(columns=columns), pd.DataFrame(columns=backend_columns)
    io = workload_io_summary(tables).set_index("workload_id")
    overview = measured[["workload_id", *CONFIG_COLUMNS, "run_s"]].reset_index(drop=True)
    for path, sources in PATH_COLUMNS.items():
        present = [io[c] for c in sources if c in io]
        summed = pd.concat(present, axis=1).sum(axis=1, min_count=1) if present else pd.Series(dtype=float)
        overview[path] = overview["workload_id"].map(summed).astype(float)
    overview["app_read_bytes"] = overview["workload_id"].map(application_read_bytes(io.reset_index())).astype(float)
    totals = tables["disk_totals"]
    on_backends = on_backend_devices(totals, device_backends(tables["devices"])) \
        if "read_bytes" in totals else pd.DataFrame(columns=["workload_id", "backend", "read_bytes", "write_bytes"])
    per_backend = (on_backends[on_backends["workload_id"].isin(overview["workload_id"])]
                   .groupby(["workload_id", "backend"], as_index=False)[["read_bytes", "write_bytes"]].sum())
    per_run = per_backend.groupby("workload_id")[["read_bytes", "write_bytes"]].sum()
    overview["device_read_bytes"] = overview["workload_id"].map(per_run["read_bytes"]).astype(float)
    overview["device_write_bytes"] = overview["workload_id"].map(per_run["write_bytes"]).astype(float)
    overview["device_read_share_pct"] = 100 * overview["device_read_bytes"] / \
        overview["app_read_bytes"].where(overview["app_read_bytes"] > 0)
    return overview[columns], per_backend[backend_columns].reset_index(drop=True)


# ---------------------------------------------------------------- experiment variables: placement, cores

# What identifies "the same experiment" across runs of one bench: the runs differ only in repetition.
CONFIG_COLUMNS = ["workload", "sweep", "placement_hdfs", "placement_local", "executor_cores"]


# Workloads that measure the devices themselves (workloads/fio-sweep): their requests are the benchmark's own, chosen
# small and random on purpose, so what they did says nothing of how a workload uses storage.
DEVICE_BENCHMARKS = frozenset({"fio-sweep"})


def workload_runs(workloads: pd.DataFrame) -> pd.DataFrame:
    """The measured runs (measured_runs) of workloads, the device benchmarks left out: what the findings judge."""
    measured = measured_runs(workloads)
    if measured.empty or "workload" not in measured:
        return measured
    return measured[~measured["workload"].isin(DEVICE_BENCHMARKS)]


def measured_runs(workloads: pd.DataFrame) -> pd.DataFrame:
    """The runs that count as results: completed and validated, warm-ups excluded. Failed and invalid
    runs stay in the tables (and the report lists them) but never enter a median."""
    if workloads.empty:
        return workloads
    return workloads[(workloads["status"] == "ok") & ~workloads["warmup"].astype(bool)]


def _spread(frame: pd.DataFrame, keys: list[str], column: str) -> pd.DataFrame:
    """Median, min, max and count of `column` per key (NaN keys kept, e.g. the cluster's default cores), and the
    repetitions themselves (`samples`, sorted: what analysis.statistics tests a difference on)."""
    grouped = frame.groupby(keys, dropna=False)[column]
    spread = grouped.agg(median="median", min="min", max="max", runs="count").reset_index()
    spread["samples"] = grouped.agg(lambda values: sorted(values.dropna().astype(float))).reset_index(drop=True)
    return spread


# Repetitions whose (max - min) / median exceeds this disagree too much for their median to be read alone.
SPREAD_LIMIT = 0.2


def wide_spread(median, low, high):
    """Whether repetitions spread by more than SPREAD_LIMIT of their median; element-wise on Series."""
    return (high - low) / median > SPREAD_LIMIT


def run_time_by_placement(workloads: pd.DataFrame) -> pd.DataFrame:
    """Run-step seconds per (workload, sweep point, executor cores) and placement, over the measured
    repetitions: the I/O-aware model paper's comparison of hybrid placements. `run_order` and `times_in_order`:
    each configuration's workload ids and run-step seconds in the order they ran, so that a drift can be seen."""
    runs = measured_runs(workloads)
    if runs.empty:
        return pd.DataFrame(columns=CONFIG_COLUMNS + ["median", "min", "max", "runs", "samples", "run_order",
                                     "times_in_order"])
    timed = runs.dropna(subset=["run_s"])
    spread = _spread(timed, CONFIG_COLUMNS, "run_s")
    order = "start_time_s" if "start_time_s" in timed else "workload_id"
    grouped = timed.sort_values(order, kind="stable").groupby(CONFIG_COLUMNS, dropna=False)
    in_order = pd.DataFrame({"run_order": grouped["workload_id"].agg(list),
                             "times_in_order": grouped["run_s"].agg(lambda v: list(v.astype(float)))})
    return spread.merge(in_order.reset_index(), on=CONFIG_COLUMNS, how="left")


def stage_time_by_cores(stages: pd.DataFrame, workloads: pd.DataFrame) -> pd.DataFrame:
    """Stage seconds against executor cores per node (P), medians over measured repetitions.

    A stage is matched across runs by its identity (analysis.stages), not by its stage id. `stage_id` is the
    stage's id in the first workload run that has it."""
    runs = measured_runs(workloads)
    columns = CONFIG_COLUMNS + ["app", "stage_id", "name", "median", "min", "max", "runs", "samples"]
    if runs.empty or stages.empty or "stage_id" not in stages:
        return pd.DataFrame(columns=columns)
    defaults = {"job_group": "", "num_tasks": 0, **{c: 0.0 for c in IDENTITY_ORDER if c != "submitted_ms"}}
    stages = stages.assign(**{c: v for c, v in defaults.items() if c not in stages})
    attempts = with_application_order(stages)
    # a retried stage counts with all its attempts' time
    per_stage = attempts.groupby(["workload_id", "app", "stage_id", "name"], dropna=False).agg(
        duration_s=("duration_s", "sum"), num_tasks=("num_tasks", "max"), job_group=("job_group", "first"),
        submitted_ms=("submission_time_ms", "min"),
        **{c: (c, "sum") for c in IDENTITY_ORDER if c != "submitted_ms"}).reset_index()
    per_stage = pd.concat([with_identity(run) for _, run in per_stage.groupby("workload_id")], ignore_index=True)
    joined = per_stage.merge(runs[["workload_id"] + CONFIG_COLUMNS], on="workload_id")
    if joined.empty:
        return pd.DataFrame(columns=columns)
    run_order = joined["workload_id"].map({w: i for i, w in enumerate(runs["workload_id"])})
    shown_id = joined.assign(order=run_order).sort_values(["order", "submitted_ms"]) \
        .groupby(STAGE_IDENTITY, dropna=False)["stage_id"].first().rename("shown_id").reset_index()
    joined = joined.merge(shown_id, on=STAGE_IDENTITY).drop(columns="stage_id").rename(columns={"shown_id": "stage_id"})
    return _spread(joined, CONFIG_COLUMNS + STAGE_IDENTITY + ["stage_id"], "duration_s")[columns]


# ---------------------------------------------------------------- block requests against Spark stages

_DATA_OPS = ("read", "write")
OUTSIDE_STAGES = "outside stages"


def data_requests(requests: pd.DataFrame) -> pd.DataFrame:
    """Reads and writes that moved data (flushes and discards carry none)."""
    if requests.empty or "bytes" not in requests:
        return pd.DataFrame(columns=["host", "workload_id", "device", "issue_time_s", "op", "sector", "bytes"])
    data = requests[requests["op"].astype(str).isin(_DATA_OPS) & (requests["bytes"] > 0)]
    return data.assign(op=data["op"].astype(str), device=data["device"].astype(str))


def stage_label(stage) -> str:
    """`s<id>[.attempt] <app suffix>`: stage ids restart in every application of a workload (GATK runs
    several), so the application's last id digits go with them."""
    app = str(stage.app_id).rsplit("_", 1)[-1]
    return f"s{stage.stage_id}" + (f".{stage.attempt}" if stage.attempt else "") + f" (app …{app})"


def attribute_requests_to_stages(requests: pd.DataFrame, stages: pd.DataFrame) -> pd.DataFrame:
    """Data requests with the Spark stage attempt that was running when they were issued (`stage` label,
    `stage_index` = row of `stages`, -1 outside every stage). A stage runs on every executor of its application:
    requests of every host count, whichever host's event log (the driver's) named the stage.

    Where stages overlap (TPC-H runs independent scans concurrently) a request goes to the most recently
    submitted running stage: the newest stage is the likeliest to be in its I/O-heavy start (reading
    input, fetching shuffle blocks) while older ones are finishing, and one owner per request keeps the
    per-stage totals summing to the device's total (attributing to every overlapping stage would count
    the same bytes several times)."""
    data = data_requests(requests).reset_index(drop=True)
    owner = np.full(len(data), -1, dtype=np.int64)
    if not data.empty and not stages.empty and "submission_time_ms" in stages:
        timed = stages.dropna(subset=["submission_time_ms"]).sort_values("submission_time_ms")
        issue = data["issue_time_s"].to_numpy(np.float64)
        for index, stage in zip(timed.index, timed.itertuples()):
            end_ms = stage.completion_time_ms if pd.notna(stage.completion_time_ms) else np.inf
            # later submissions overwrite earlier ones: the loop runs in submission order
            inside = ((data["workload_id"] == stage.workload_id).to_numpy()
                      & (issue >= stage.submission_time_ms / 1e3) & (issue <= end_ms / 1e3))
            owner[inside] = index
    labels = {index: stage_label(stage) for index, stage in zip(stages.index, stages.itertuples())} \
        if not stages.empty and "stage_id" in stages else {}
    return data.assign(stage_index=owner, stage=[labels.get(i, OUTSIDE_STAGES) for i in owner])


def _size_stats(group: pd.DataFrame) -> pd.Series:
    sizes = group["bytes"]
    return pd.Series({"requests": len(sizes), "bytes": sizes.sum(), "mean_bytes": sizes.mean(),
                      "median_bytes": sizes.median(),
                      "read_pct": 100.0 * (group["op"] == "read").mean()})


def stage_request_sizes(requests: pd.DataFrame, stages: pd.DataFrame,
                        device_backends: dict[tuple[str, str], str] | None = None) -> pd.DataFrame:
    """Per workload, stage attempt (or `outside stages`) and device: requests, bytes, mean and median
    request size (bytes), % of requests that are reads; `backend` names the device's storage backend
    ((host, device) -> backend: analysis.devices.device_backends of the devices table)."""
    attributed = attribute_requests_to_stages(requests, stages)
    columns = ["host", "workload_id", "stage", "stage_index", "device", "backend", "requests", "bytes",
               "mean_bytes", "median_bytes", "read_pct"]
    if attributed.empty:
        return pd.DataFrame(columns=columns)
    keys = ["host", "workload_id", "stage", "stage_index", "device"]
    grouped = attributed.groupby(keys, observed=True)[["bytes", "op"]].apply(_size_stats).reset_index()
    backends = device_backends or {}
    grouped["backend"] = [backends.get((h, d), "") for h, d in zip(grouped["host"], grouped["device"])]
    # stage rows in submission order, the unattributed remainder last
    order = grouped["stage_index"].where(grouped["stage_index"] >= 0, np.iinfo(np.int64).max)
    submitted = stages["submission_time_ms"].reindex(grouped["stage_index"]).to_numpy() \
        if "submission_time_ms" in stages else np.zeros(len(grouped))
    grouped = grouped.assign(_submitted=np.where(order == np.iinfo(np.int64).max, np.inf, submitted), _order=order)
    return grouped.sort_values(["workload_id", "_submitted", "_order", "device"])[columns].reset_index(drop=True)


def shuffle_parent_stages(stages: pd.DataFrame, reader) -> tuple[pd.DataFrame, str]:
    """The shuffle-map stages whose outputs a shuffle-reading stage attempt fetched, approximated from the
    stage table (which has no parent ids): among the stages of the same application that wrote shuffle
    data and completed before the reader was submitted, (1) the most recent one that wrote exactly the
    bytes the reader read, else (2) those of the reader's job, else (3) all of them. Returns the
    parents and which rule applied."""
    app = stages[(stages["app_id"] == reader.app_id) & (stages["workload_id"] == reader.workload_id)
                 & (stages["shuffle_write_bytes"] > 0)
                 & (stages["completion_time_ms"] <= reader.submission_time_ms)]
    exact = app[app["shuffle_write_bytes"] == reader.shuffle_read_bytes]
    if not exact.empty:
        return exact.sort_values("completion_time_ms").tail(1), "same bytes"
    same_job = app[app["job_id"] == reader.job_id] if "job_id" in app else app.iloc[0:0]
    if not same_job.empty:
        return same_job, "same job"
    return app, "all earlier"


def shuffle_request_size_model(requests: pd.DataFrame, stages: pd.DataFrame, local_devices: dict) -> pd.DataFrame:
    """The I/O-aware model paper's expected shuffle-read request size against the measured one, per stage
    attempt that read shuffle data.

    expected_bytes = (shuffle_read_bytes / num_tasks) / map outputs, i.e. the block one reducer fetches
    from one map output (the paper: 27 MB per reducer over 973 map outputs ~ 30 KB), map outputs = tasks
    of the parent shuffle-map stage(s) (see shuffle_parent_stages). measured_bytes = mean size of the read
    requests issued during the stage on the device of the backend holding the local (shuffle) dirs,
    `local_devices`: (host, workload_id) -> device. NaN where that device saw no read; device_read_bytes
    (their sum) against shuffle_read_bytes tells how much of the shuffle came from the device rather
    than the page cache."""
    columns = ["host", "workload_id", "stage", "stage_name", "num_tasks", "shuffle_read_bytes", "map_outputs",
               "parents_rule", "expected_bytes", "device", "measured_reads", "measured_bytes", "device_read_bytes",
               "ratio"]
    if stages.empty or "shuffle_read_bytes" not in stages:
        return pd.DataFrame(columns=columns)
    data = data_requests(requests)
    reads = data[data["op"] == "read"]
    rows = []
    for reader in stages[stages["shuffle_read_bytes"] > 0].sort_values("submission_time_ms").itertuples():
        parents, rule = shuffle_parent_stages(stages, reader)
        map_outputs = int(parents["num_tasks"].sum())
        per_reducer = reader.shuffle_read_bytes / reader.num_tasks if reader.num_tasks else np.nan
        expected = per_reducer / map_outputs if map_outputs else np.nan
        device = local_devices.get((reader.host, reader.workload_id))
        end_ms = reader.completion_time_ms if pd.notna(reader.completion_time_ms) else np.inf
        during = reads[(reads["host"] == reader.host) & (reads["workload_id"] == reader.workload_id)
                       & (reads["device"] == device) & (reads["issue_time_s"] >= reader.submission_time_ms / 1e3)
                       & (reads["issue_time_s"] <= end_ms / 1e3)]["bytes"]
        measured = during.mean() if len(during) else np.nan
        rows.append({"host": reader.host, "workload_id": reader.workload_id, "stage": stage_label(reader),
                     "stage_name": reader.name, "num_tasks": reader.num_tasks, "shuffle_read_bytes": reader.shuffle_read_bytes,
                     "map_outputs": map_outputs, "parents_rule": rule if map_outputs else "no parent found",
                     "expected_bytes": expected, "device": device, "measured_reads": len(during),
                     "measured_bytes": measured, "device_read_bytes": during.sum(),
                     "ratio": measured / expected if expected else np.nan})
    return pd.DataFrame(rows, columns=columns)


def request_offsets(requests: pd.DataFrame, max_points: int = 20000, seed: int = 0) -> pd.DataFrame:
    """Data requests with `offset_bytes` (sector x 512), for offset-over-time plots (NVMe paper Fig. 8);
    at most `max_points` per (host, workload, device), drawn at random (fixed seed: the same figure for
    the same run), so a fio sweep's hundreds of thousands of requests stay plottable."""
    data = data_requests(requests)
    data = data[data["sector"] >= 0]
    if data.empty:
        return data.assign(offset_bytes=pd.Series(dtype=np.int64))
    shuffled = data.sample(frac=1.0, random_state=seed)
    kept = shuffled[shuffled.groupby(["host", "workload_id", "device"], observed=True).cumcount() < max_points]
    return kept.assign(offset_bytes=kept["sector"].astype(np.int64) * 512).sort_values("issue_time_s", ignore_index=True)


STAGE_IO_COLUMNS = ("input_bytes", "output_bytes", "shuffle_read_bytes", "shuffle_write_bytes")


def stage_io_rate(stages: pd.DataFrame, bin_s: float = 1.0) -> pd.DataFrame:
    """The application's I/O volume rate over time (NVMe paper Fig. 5), bytes/s per `bin_s` bin: each stage
    attempt's input, output, shuffle read and shuffle write bytes spread evenly over its duration and
    summed over stages, per workload. `time` is the bin start (epoch s). Spark records bytes per task at
    its end, so the even spread is an approximation of when they moved."""
    columns = ["workload_id", "time", *(c.replace("_bytes", "_bytes_per_s") for c in STAGE_IO_COLUMNS)]
    if stages.empty or "submission_time_ms" not in stages:
        return pd.DataFrame(columns=columns)
    timed = stages.dropna(subset=["submission_time_ms", "completion_time_ms"])
    frames = []
    for workload_id, per_workload in timed.groupby("workload_id"):
        start = np.floor(per_workload["submission_time_ms"].min() / 1e3 / bin_s) * bin_s
        edges = np.arange(start, per_workload["completion_time_ms"].max() / 1e3 + bin_s, bin_s)
        if len(edges) < 2:
            edges = np.array([start, start + bin_s])
        sums = np.zeros((len(edges) - 1, len(STAGE_IO_COLUMNS)))
        for stage in per_workload.itertuples():
            begin, end = stage.submission_time_ms / 1e3, stage.completion_time_ms / 1e3
            volumes = np.array([getattr(stage, c) or 0 for c in STAGE_IO_COLUMNS], dtype=np.float64)
            if end <= begin:   # instantaneous: all of it in its bin
                overlap = ((edges[:-1] <= begin) & (begin < edges[1:])).astype(np.float64)
            else:
                overlap = np.clip(np.minimum(edges[1:], end) - np.maximum(edges[:-1], begin), 0, None) / (end - begin)
            sums += np.outer(overlap, volumes)
        frame = pd.DataFrame(sums / bin_s, columns=columns[2:])
        frames.append(frame.assign(workload_id=workload_id, time=edges[:-1])[columns])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


# ---------------------------------------------------------------- the Prometheus archive

# dashboards.queries ids of the device throughput panels, labelled by backend (spillway_disk_info join)
THROUGHPUT_QUERIES = {"disk_read_bytes": "read", "disk_write_bytes": "write"}


def backend_throughput(series: pd.DataFrame) -> pd.DataFrame:
    """Device throughput summed per backend (over nodes and devices) from the table `prometheus_series`:
    workload_id, backend, direction, time_s, bytes_per_s. Empty when the run has no archive or no series
    attributed to a backend."""
    columns = ["workload_id", "backend", "direction", "time_s", "bytes_per_s"]
    if series.empty or "backend" not in series.columns or "query_id" not in series.columns:
        return pd.DataFrame(columns=columns)
    rows = series[series["query_id"].isin(list(THROUGHPUT_QUERIES)) & series["backend"].notna()]
    summed = (rows.assign(direction=rows["query_id"].map(THROUGHPUT_QUERIES))
              .groupby(["workload_id", "backend", "direction", "time_s"], as_index=False)["value"].sum(min_count=1))
    return summed.rename(columns={"value": "bytes_per_s"})[columns]
