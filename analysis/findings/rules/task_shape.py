"""The shape of a stage's tasks (docs/findings.md: `skew`, `partition-sizing`, `failed-tasks`): which bytes are
skewed and where, whether the partitions are sized for the cores and the blocks, and failures that make a run
unfit for comparison."""
from __future__ import annotations

import math
from typing import Iterable

import pandas as pd

from ...formatting import count, format_bytes, number
from ...stages import stage_summary
from ..engine import Finding, Inputs, rule

BYTE_KINDS = {"input": "input_bytes", "shuffle read": "shuffle_read_bytes", "shuffle write": "shuffle_write_bytes",
              "spill": "disk_spilled_bytes"}


def stage_rows(inputs: Inputs) -> pd.DataFrame:
    """One row per stage of the measured workload runs (its attempts summed), with `stage`: its name and rank as a
    finding's place names it (analysis/stages.py identity: never a stage or application id), `attempts`, `sql`
    (a Spark SQL stage) and the executor cores its application had (`cores`)."""
    rows = stage_summary(inputs.workload_ids(inputs.table("stages")))
    if rows.empty:
        return rows
    rows = rows.rename(columns={"place": "stage"})
    cores = executor_cores(inputs)
    rows["cores"] = [cores.get((w, a), 0) for w, a in zip(rows["workload_id"], rows["app_id"])]
    return rows


def executor_cores(inputs: Inputs) -> dict[tuple[str, str], int]:
    """(workload run, application) -> the cores of its executors (the driver left out)."""
    executors = inputs.table("spark_executors")
    if executors.empty or "total_cores" not in executors:
        return {}
    executors = executors[executors["executor_id"].astype(str) != "driver"]
    cores = pd.to_numeric(executors["total_cores"], errors="coerce").fillna(0)
    return {k: int(v) for k, v in cores.groupby([executors["workload_id"], executors["app_id"]]).sum().items()}


def successful_tasks(inputs: Inputs) -> dict[tuple[str, str, int], pd.DataFrame]:
    """(workload run, application, stage) -> its successful task attempts, `shuffle_read_bytes` added."""
    tasks = inputs.workload_ids(inputs.table("spark_tasks"))
    if tasks.empty:
        return {}
    tasks = tasks[tasks["status"] == "Success"]
    tasks = tasks.assign(shuffle_read_bytes=tasks["shuffle_remote_bytes_read"] + tasks["shuffle_local_bytes_read"])
    return {(w, a, int(s)): group for (w, a, s), group in tasks.groupby(["workload_id", "app_id", "stage_id"])}


def partition_property(stage) -> str:
    """The property that sets a stage's partition count: Spark SQL's shuffle partitions or file splits, or the RDD
    default parallelism."""
    if stage["sql"]:
        return "spark.sql.files.maxPartitionBytes" if stage["input_bytes"] > 0 else "spark.sql.shuffle.partitions"
    return "spark.default.parallelism"


# ---------------------------------------------------------------- skew

def largest_against_others(values: pd.Series) -> tuple[float, float, float]:
    """(largest, median of the others, largest / that median): with two tasks the median of the others is the
    smaller one, so a stage of two tasks can show its skew (a median over both never exceeds the mean)."""
    ordered = values.sort_values(ascending=False)
    largest, others = float(ordered.iloc[0]), float(ordered.iloc[1:].median())
    return largest, others, (largest / others if others > 0 else math.inf if largest > 0 else 1.0)


def host_busy_s(tasks: pd.DataFrame) -> pd.Series:
    """Seconds of successful task time each executor host spent on the stage, most first."""
    return tasks.groupby("executor_host")["duration_s"].sum().sort_values(ascending=False)


@rule("skew", needs=(("spark_tasks", "duration_s"), ("stages", "duration_s")))
def skew(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    tasks_of = successful_tasks(inputs)
    for stage in stage_rows(inputs).to_dict("records"):
        tasks = tasks_of.get((stage["workload_id"], stage["app_id"], int(stage["stage_id"])))
        if tasks is None or len(tasks) < limits["tasks_min"] or stage["duration_s"] < limits["stage_min_s"]:
            continue
        longest, others, task_ratio = largest_against_others(tasks["duration_s"])
        holds_stage = longest >= limits["longest_share_min_pct"] / 100 * stage["duration_s"]
        task_skewed = task_ratio >= limits["max_over_median_min"] and holds_stage
        hosts = host_busy_s(tasks)
        spread_pct = 100 * (hosts.iloc[0] - hosts.iloc[-1]) / hosts.sum() if len(hosts) > 1 and hosts.sum() else 0.0
        host_skewed = spread_pct >= limits["node_spread_min_pct"]
        if not (task_skewed or host_skewed):
            continue
        skewed = []
        for kind, column in BYTE_KINDS.items():
            most, median, ratio = largest_against_others(tasks[column])
            if most >= limits["bytes_min"] and ratio >= limits["max_over_median_min"]:
                skewed.append((kind, most, median, ratio))
        host_ratio = hosts.iloc[0] / hosts.iloc[-1] if len(hosts) > 1 and hosts.iloc[-1] > 0 else 1.0
        said = [f"{stage['stage']}: longest task {number(longest, 's', 1)} against a median of "
                f"{number(others, 's', 2)} for the other {len(tasks) - 1} ({number(task_ratio, 'x', 1)}; "
                f"{number(100 * longest / stage['duration_s'], '%', 0)} of the {number(stage['duration_s'], 's', 1)} stage)"]
        if len(hosts) > 1:
            said.append(f"{hosts.index[0]} ran {number(hosts.iloc[0], 's', 1)} of its tasks against "
                        f"{number(hosts.iloc[-1], 's', 1)} on {hosts.index[-1]} ({number(spread_pct, '%', 0)} of the "
                        f"stage's task time apart)")
        said.append("skewed bytes: " + "; ".join(
            f"{kind} {format_bytes(most)} against {format_bytes(median)} ({_ratio(ratio)})"
            for kind, most, median, ratio in skewed) if skewed else
            "no byte count skewed: the longest task was slow on its own (CPU, GC, its node)")
        yield Finding("skew", stage["workload_id"], stage["stage"], "; ".join(said),
                      {"longest_task_s": longest, "others_median_s": others, "task_max_over_median": task_ratio,
                       "node_spread_pct": spread_pct, "skew_ratio": max(task_ratio if holds_stage else 1.0, host_ratio),
                       "stage_s": float(stage["duration_s"]), "tasks": int(len(tasks)),
                       "stage_share_pct": inputs.stage_share_pct(stage["workload_id"], stage["duration_s"]),
                       **{f"{kind.replace(' ', '_')}_max_over_median": ratio for kind, _, _, ratio in skewed}},
                      place=(("stage", stage["stage"]),),
                      recommendation=_skew_recommendation(stage, skewed, hosts, len(tasks), task_skewed))


def _ratio(ratio: float) -> str:
    return "only the largest task had any" if math.isinf(ratio) else number(ratio, "x", 1)


def _skew_recommendation(stage, skewed: list, hosts: pd.Series, tasks: int, task_skewed: bool) -> str:
    if not task_skewed:
        return (f"spread the stage over the nodes: {hosts.index[0]} did {number(hosts.iloc[0], 's', 1)} of task time "
                f"against {number(hosts.iloc[-1], 's', 1)} on {hosts.index[-1]}; give each worker the same executors "
                f"(spark.executor.instances = a multiple of the workers) or check {hosts.index[0]}'s devices")
    kinds = {kind for kind, *_ in skewed}
    finite = [ratio for *_, ratio in skewed if math.isfinite(ratio)]
    partitions = tasks * math.ceil(max(finite)) if finite else 2 * tasks
    if stage["sql"] and "shuffle read" in kinds:
        return ("spark.sql.adaptive.skewJoin.enabled = true (with spark.sql.adaptive.enabled = true): it splits the "
                f"shuffle partitions above 5x the median; or spark.sql.shuffle.partitions = {partitions} (from {tasks})")
    if "input" in kinds:
        return (f"{partition_property(stage)}: input splits of the median's size, {partitions} partitions (from "
                f"{tasks}); the largest task read {_ratio(max(finite) if finite else math.inf)} the median")
    return (f"{partition_property(stage)} = {partitions} (from {tasks}), or repartition by a salted key, so that the "
            "largest partition comes down to the median")


# ---------------------------------------------------------------- partition sizing

@rule("partition-sizing", needs=(("spark_tasks", "duration_s"), ("stages", "num_tasks")))
def partition_sizing(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    tasks_of = successful_tasks(inputs)
    for stage in stage_rows(inputs).to_dict("records"):
        tasks = tasks_of.get((stage["workload_id"], stage["app_id"], int(stage["stage_id"])))
        if tasks is None or stage["duration_s"] < limits["stage_min_s"] or not stage["cores"]:
            continue
        found = _sizing(stage, tasks, limits)
        if found is None:
            continue
        kind, suggested, said = found
        n = len(tasks)
        factor = max(suggested / n, n / suggested)
        yield Finding("partition-sizing", stage["workload_id"], stage["stage"],
                      f"{stage['stage']}: {count(n, 'task')} on {count(stage['cores'], 'executor core')} in "
                      f"{number(stage['duration_s'], 's', 1)}, median task {number(tasks['duration_s'].median(), 's', 2)}; "
                      f"{said}",
                      {"tasks": n, "cores": int(stage["cores"]), "suggested_partitions": suggested,
                       "partitions_factor": factor, "median_task_s": float(tasks["duration_s"].median()),
                       "input_per_task_bytes": float(tasks["input_bytes"].mean()), "stage_s": float(stage["duration_s"]),
                       "stage_share_pct": inputs.stage_share_pct(stage["workload_id"], stage["duration_s"])},
                      place=(("stage", stage["stage"]), ("sizing", kind)),
                      recommendation=_sizing_recommendation(stage, kind, suggested, n, limits))


def _sizing(stage, tasks: pd.DataFrame, limits: dict) -> tuple[str, int, str] | None:
    """(kind, suggested partitions, words) of the first way the stage's partitions are off, or None."""
    n, cores, median = len(tasks), int(stage["cores"]), float(tasks["duration_s"].median())
    if n < cores and stage["duration_s"] >= limits["few_tasks_stage_min_s"]:
        return "too-few", cores, f"{count(cores - n, 'core')} idle through the stage"
    if n >= limits["many_tasks_min"] and n > cores and median < limits["short_task_max_s"]:
        suggested = max(cores, math.ceil(tasks["duration_s"].sum() / limits["target_task_s"]))
        if suggested < n:
            return "too-many-short", suggested, (f"tasks shorter than {number(limits['short_task_max_s'], 's', 1)} "
                                                 f"spend their time starting, not working")
    block = limits["hdfs_block_bytes"]
    split = float(tasks["input_bytes"].median())
    if 0 < split < limits["split_small_max_pct"] / 100 * block:
        suggested = max(cores, math.ceil(float(tasks["input_bytes"].sum()) / block))
        if suggested < n:
            return "small-splits", suggested, (f"input splits of {format_bytes(split)} "
                                               f"({number(100 * split / block, '%', 0)} of a {format_bytes(block)} "
                                               f"HDFS block)")
    return None


def _sizing_recommendation(stage, kind: str, suggested: int, n: int, limits: dict) -> str:
    if stage["input_bytes"] > 0 and kind != "too-many-short":   # the input's splits set the partitions
        split = limits["hdfs_block_bytes"] if kind == "small-splits" else math.ceil(stage["input_bytes"] / suggested)
        setting = (f"spark.sql.files.maxPartitionBytes = {format_bytes(split)}" if stage["sql"] else
                   f"mapreduce.input.fileinputformat.split.{'minsize' if kind == 'small-splits' else 'maxsize'} = "
                   f"{int(split)} ({format_bytes(split)})")
        return (f"{setting}: {suggested} partitions (from {n}); where each split is a whole file, write "
                f"{'fewer, larger' if kind == 'small-splits' else 'more, smaller'} files instead")
    why = "one a core" if kind == "too-few" else f"tasks of about {number(limits['target_task_s'], 's', 1)}"
    return f"{partition_property(stage)} = {suggested} (from {n}): {why}"


# ---------------------------------------------------------------- failed tasks

@rule("failed-tasks", needs=(("spark_tasks", "status"),))
def failed_tasks(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    tasks = inputs.workload_ids(inputs.table("spark_tasks"))
    stages = inputs.workload_ids(inputs.table("stages"))
    for workload_id, attempts in tasks.groupby("workload_id"):
        failed = attempts[attempts["status"] != "Success"]
        resubmitted = stages[(stages["workload_id"] == workload_id) & (stages["attempt"] > 0)] if not stages.empty \
            else stages
        if len(failed) < limits["failed_attempts_min"] and resubmitted.empty:
            continue
        share = 100 * len(failed) / len(attempts)
        lost = float(failed["duration_s"].sum())
        statuses = ", ".join(f"{n} {status}" for status, n in failed["status"].value_counts().items())
        hosts = ", ".join(sorted(set(failed["executor_host"].astype(str))))
        said = (f"{count(len(failed), 'task attempt')} of {len(attempts)} did not succeed "
                f"({number(share, '%', 1)}: {statuses or 'none'}{f' on {hosts}' if hosts else ''}), "
                f"{number(lost, 's', 1)} of task time lost")
        if not resubmitted.empty:
            said += f"; {count(len(resubmitted), 'stage attempt')} resubmitted after a fetch failure"
        yield Finding("failed-tasks", workload_id, "Spark tasks", said,
                      {"failed_attempts": int(len(failed)), "task_attempts": int(len(attempts)),
                       "failed_share_pct": share, "lost_task_s": lost,
                       "fetch_failures": int((failed["status"] == "FetchFailed").sum()),
                       "resubmitted_stages": int(len(resubmitted))},
                      recommendation=_failure_recommendation(workload_id, failed, resubmitted))


def _failure_recommendation(workload_id: str, failed: pd.DataFrame, resubmitted: pd.DataFrame) -> str:
    statuses = set(failed["status"])
    advice = [f"leave {workload_id} out of the comparison and run it again (REPEAT=3)"]
    if "ExecutorLostFailure" in statuses:
        hosts = ", ".join(sorted(set(failed.loc[failed["status"] == "ExecutorLostFailure", "executor_host"].astype(str))))
        advice.append(f"an executor was lost on {hosts}: if it happens again, take that node out of the inventory's "
                      "workers")
    if "FetchFailed" in statuses or not resubmitted.empty:
        advice.append("fetch failures: spark.shuffle.io.maxRetries = 10 (from 3) and spark.shuffle.io.retryWait = 15s "
                      "(from 5s), or the external shuffle service (spark.shuffle.service.enabled = true)")
    if "ExceptionFailure" in statuses:
        advice.append("task exceptions: see the executor logs; an OutOfMemoryError wants a larger spark.executor.memory")
    return "; ".join(advice)
