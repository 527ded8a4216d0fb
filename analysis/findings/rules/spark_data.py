"""Spark's data on disk: rules on what Spark wrote and read on the local dirs beyond its shuffle's own bytes
(docs/findings.md: `spill`, `small-shuffle-reads`)."""
from __future__ import annotations

from typing import Iterable

import math

import pandas as pd

from ... import devices, metrics
from ...formatting import count, format_bytes, number
from ..engine import Finding, Inputs, rule
from . import task_shape


# ---------------------------------------------------------------- spill

# Spark's unified memory (UnifiedMemoryManager, its defaults): (heap - 300 MiB reserved) x spark.memory.fraction 0.6,
# which is what an executor's block manager reports as its `max_memory_bytes`
RESERVED_BYTES, MEMORY_FRACTION, MEMORY_STEP_BYTES = 300 * 2**20, 0.6, 128 * 2**20


@rule("spill", needs=(("stages", "disk_spilled_bytes"),))
def spill(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    tasks_of = task_shape.successful_tasks(inputs)
    unified = _unified_memory(inputs)
    for stage in task_shape.stage_rows(inputs).to_dict("records"):
        spilled, read = float(stage["disk_spilled_bytes"]), float(stage["input_bytes"] + stage["shuffle_read_bytes"])
        if spilled < limits["spill_min_bytes"] or spilled < read * limits["spill_share_min_pct"] / 100:
            continue
        share = 100 * spilled / read if read else math.inf
        tasks = tasks_of.get((stage["workload_id"], stage["app_id"], int(stage["stage_id"])), pd.DataFrame())
        spilling = tasks[tasks["disk_spilled_bytes"] > 0] if not tasks.empty else tasks
        # the tasks' own spill unrecorded (no task table, or one that disagrees): the data share alone grades it
        executors_pct = 100 * spilling["executor_id"].nunique() / tasks["executor_id"].nunique() \
            if not spilling.empty else None
        spread = share * (executors_pct if executors_pct is not None else 100) / 100
        on_executors = (f" on {spilling['executor_id'].nunique()} of {tasks['executor_id'].nunique()} executors "
                        f"({number(executors_pct, '%', 0)})" if executors_pct is not None else "")
        yield Finding("spill", stage["workload_id"], stage["stage"],
                      f"{stage['stage']} spilled {format_bytes(spilled)} to disk{on_executors} against "
                      f"{format_bytes(read)} it read (input and shuffle; {number(share, '%', 0)})",
                      {"disk_spilled_bytes": spilled, "stage_read_bytes": read,
                       "shuffle_write_bytes": float(stage["shuffle_write_bytes"]), "spill_share_pct": share,
                       "executors_spilled_pct": executors_pct, "spill_spread_pct": spread},
                      place=(("stage", stage["stage"]),),
                      recommendation=_spill_recommendation(stage, spilling, unified.get((stage["workload_id"],
                                                                                           stage["app_id"]))))


def _unified_memory(inputs: Inputs) -> dict[tuple[str, str], tuple[float, int]]:
    """(workload run, application) -> (an executor's unified memory, bytes; its cores)."""
    executors = inputs.table("spark_executors")
    if executors.empty or "max_memory_bytes" not in executors:
        return {}
    executors = executors[executors["executor_id"].astype(str) != "driver"]
    sizes = executors.assign(cores=pd.to_numeric(executors["total_cores"], errors="coerce").fillna(1)).groupby(
        ["workload_id", "app_id"]).agg(memory=("max_memory_bytes", "max"), cores=("cores", "max"))
    return {k: (float(r["memory"]), max(1, int(r["cores"]))) for k, r in sizes.iterrows()}


def _spill_recommendation(stage, spilling: pd.DataFrame, unified: tuple[float, int] | None) -> str:
    """The executor memory that holds what the largest task spilled, for every task an executor runs at once, or
    the partition count that brings each task's data within one task slot's memory."""
    n = int(stage["num_tasks"])
    if unified is None or not unified[0] > 0:
        return f"{task_shape.partition_property(stage)} = {2 * n} (from {n}), or a larger spark.executor.memory"
    memory, cores = unified
    largest = float(spilling["memory_spilled_bytes"].max()) if not spilling.empty else \
        float(stage["memory_spilled_bytes"]) / max(1, n)
    heap_now = memory / MEMORY_FRACTION + RESERVED_BYTES
    heap = math.ceil(((memory + largest * cores) / MEMORY_FRACTION + RESERVED_BYTES) / MEMORY_STEP_BYTES) * MEMORY_STEP_BYTES
    slot = memory / cores
    partitions = math.ceil(n * (slot + largest) / slot)
    return (f"spark.executor.memory = {heap // 2**20}m (from about {round(heap_now / 2**20)}m): the largest task "
            f"spilled {format_bytes(largest)} from memory, {count(cores, 'task')} at once an executor; or "
            f"{task_shape.partition_property(stage)} = {partitions} (from {n}) so that a task's data fits the "
            f"{format_bytes(slot)} of memory a task has")


# ---------------------------------------------------------------- small shuffle reads on a rotational device

@rule("small-shuffle-reads",
      needs=(("block_requests", "bytes"), ("stages", "shuffle_read_bytes"), ("devices", "rotational")))
def small_shuffle_reads(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    stages = inputs.workload_ids(inputs.table("stages"))
    local = devices.local_devices(inputs.table("workloads"), inputs.table("devices"))
    model = metrics.shuffle_request_size_model(inputs.table("block_requests"), stages, local)
    rotational = inputs.rotational()
    backend_of = inputs.backend_devices()
    if not model.empty:   # the rank among the workload run's shuffle readers of that name: no stage or app id
        model = model.assign(rank=model.groupby(["workload_id", "host", "stage_name"], dropna=False).cumcount() + 1)
    for r in model.to_dict("records"):
        spinning = rotational.get((r["host"], r["device"]))
        if spinning is None or pd.isna(spinning) or not bool(spinning) or r["measured_reads"] < limits["reads_min"] \
                or not r["measured_bytes"] < limits["mean_max_bytes"]:
            continue
        yield Finding("small-shuffle-reads", r["workload_id"], f"{r['stage']} on {r['device']}",
                      f"{r['stage']} read {count(r['measured_reads'], 'request')} of {format_bytes(r['measured_bytes'])} "
                      f"on average from {r['device']} (rotational) for {format_bytes(r['shuffle_read_bytes'])} of "
                      f"shuffle (expected block per map output {format_bytes(r['expected_bytes'])})",
                      {"reads": int(r["measured_reads"]), "mean_read_bytes": float(r["measured_bytes"]),
                       "expected_bytes": float(r["expected_bytes"])}, r["host"],
                      place=(("stage", f"{r['stage_name']} #{r['rank']}"),
                             ("device", f"{r['host']}:{backend_of.get((r['host'], r['device']), r['device'])}")))

