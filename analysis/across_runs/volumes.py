"""I/O volumes across runs: cluster and node throughput per configuration, shuffle bytes per application."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import metrics
from ..parsers.manifest import worker_nodes
from ..stages import with_application_order
from .configurations import with_configuration
from .runs import Run


def _measured_io(run: Run) -> pd.DataFrame:
    """Per measured workload run: its configuration columns, run-step seconds and what it moved (bytes)."""
    measured = metrics.measured_runs(run.tables["workloads"])
    io = metrics.workload_io_summary(run.tables)
    if measured.empty or io.empty:
        return pd.DataFrame()
    io = io.drop(columns=[c for c in ("status", "duration_s") if c in io])
    joined = measured.merge(io, on="workload_id", how="left")
    for column in ("output_bytes", "mr_hdfs_written_bytes", "shuffle_write_bytes", "mr_shuffle_bytes"):
        if column not in joined:
            joined[column] = np.nan
    spark_output = joined["output_bytes"].where(joined["output_bytes"] > 0)
    joined["result_bytes"] = spark_output.fillna(joined["mr_hdfs_written_bytes"])
    joined["shuffle_bytes"] = joined["shuffle_write_bytes"].where(joined["shuffle_write_bytes"] > 0).fillna(
        joined["mr_shuffle_bytes"])
    workers = worker_nodes(run.manifest) or 1
    joined["nodes"] = workers
    joined["cluster_bytes_per_s"] = joined["result_bytes"] / joined["run_s"]
    joined["node_bytes_per_s"] = joined["cluster_bytes_per_s"] / workers
    return joined


def throughput_table(runs: list[Run], order: list[str]) -> pd.DataFrame:
    """Cluster throughput = result size / run-step time (DataWarp's definition), per node = / worker nodes;
    medians over measured repetitions, with the shuffle volume (Spark shuffle write, else MR shuffle bytes)."""
    frame = with_configuration(runs, [_measured_io(r) for r in runs])
    if frame.empty:
        return pd.DataFrame()
    keys = ["workload", "sweep", "configuration"]
    table = (frame.groupby(keys, dropna=False, observed=True)
             .agg(result_bytes=("result_bytes", "median"), shuffle_bytes=("shuffle_bytes", "median"),
                  run_s=("run_s", "median"), cluster_bytes_per_s=("cluster_bytes_per_s", "median"),
                  node_bytes_per_s=("node_bytes_per_s", "median"), nodes=("nodes", "first"),
                  runs=("run_s", "count"), run_id=("run_id", "first"))
             .reset_index())
    table["configuration"] = pd.Categorical(table["configuration"], categories=order, ordered=True)
    return table.sort_values(["workload", "sweep", "configuration"], ignore_index=True)


def shuffle_per_application(runs: list[Run]) -> pd.DataFrame:
    """Shuffle bytes per application (Spark app, by its order in the workload run; MR job), medians over
    measured repetitions."""
    frames = []
    for run in runs:
        measured = metrics.measured_runs(run.tables["workloads"])
        parts = []
        stages = run.tables["stages"]
        if not stages.empty and "stage_id" in stages:
            ordered = with_application_order(stages)
            spark = ordered.assign(application="Spark app " + ordered["app"].astype(str)) \
                .groupby(["workload_id", "application"])
            parts.append(spark.agg(shuffle_write_bytes=("shuffle_write_bytes", "sum"),
                                   shuffle_read_bytes=("shuffle_read_bytes", "sum")).reset_index())
        mr = metrics.mr_job_summary(run.tables["mr_jobs"], run.tables["mr_counters"])
        if not mr.empty and "shuffle_bytes" in mr:
            mr = mr.assign(application="MR " + mr["job_name"].fillna("job").astype(str),
                           shuffle_write_bytes=mr.get("map_output_materialized_bytes", np.nan),
                           shuffle_read_bytes=mr["shuffle_bytes"])
            parts.append(mr[["workload_id", "application", "shuffle_write_bytes", "shuffle_read_bytes"]])
        if parts and not measured.empty:
            frames.append(pd.concat(parts, ignore_index=True).merge(
                measured[["workload_id"] + metrics.CONFIG_COLUMNS], on="workload_id"))
        else:
            frames.append(pd.DataFrame())
    frame = with_configuration(runs, frames)
    if frame.empty:
        return frame
    return (frame.groupby(["workload", "sweep", "application", "configuration"], dropna=False)
            .agg(shuffle_write_bytes=("shuffle_write_bytes", "median"),
                 shuffle_read_bytes=("shuffle_read_bytes", "median"), runs=("workload_id", "count"))
            .reset_index())
