"""`hibench.report`: the run's workload runs in HiBench's own report lines, so that scripts written for HiBench's
`report/hibench.report` read Spillway's runs unchanged (docs/workloads.md, "HiBench's report").

HiBench (bin/functions/workload_functions.sh, `gen_report`) writes a header and one line per workload run with
the format `%-12s %-10s %-8s %-20s %-20s %-20s %-20s` and the columns Type, Date, Time, Input_data_size,
Duration(s), Throughput(bytes/s), Throughput/node. Its values, and ours:

| column | HiBench | Spillway |
|---|---|---|
| Type | the workload's name in HiBench (`HadoopTerasort`, `ScalaSparkTerasort`, `ScalaSparkKmeans`, `ScalaSparkJoin`...) | the same name where HiBench has the workload (`HIBENCH_TYPES`), else `Spillway<Workload>` |
| Date, Time | when the line was written (local time, `%F`, `%T`) | the end of the run step (UTC, `%Y-%m-%d`, `%H:%M:%S`) |
| Input_data_size | `hadoop fs -du -s` of the input, bytes | the workload's `input_size` sample (its prepare's size of the input in HDFS), bytes |
| Duration(s) | the job command's wall time, 3 decimals | the run command's own time (`workload_commands`, steps `run`), 3 decimals |
| Throughput(bytes/s) | size / duration, integer division (`bc`) | the same |
| Throughput/node | throughput / the number of slaves, integer division | throughput / the run's worker nodes |

A line is written for each workload run that validated (`status` ok) and is not a warm-up; a run without an input
size (fio-sweep, GATK4) or without a timed run command has none, and `left_out` says why (the report page lists it).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pandas as pd

from .parsers.manifest import worker_nodes

COLUMN_FORMATS = "%-12s %-10s %-8s %-20s %-20s %-20s %-20s"
HEADER = ("Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)", "Throughput/node")
# Our workload -> the name HiBench's run scripts give the same workload (`enter_bench <Type> ...`), or, where one of
# our workloads is several of HiBench's, the parameter that tells which and HiBench's name for each of its values
HIBENCH_TYPES = {
    "terasort": ("engine", {"mapreduce": "HadoopTerasort", "spark": "ScalaSparkTerasort"}),
    "kmeans": "ScalaSparkKmeans",
    "websql": ("query", {"scan": "ScalaSparkScan", "join": "ScalaSparkJoin", "aggregation": "ScalaSparkAggregation"}),
    # HiBench's dfsioe runs TestDFSIOEnh in two scripts, run_write.sh and run_read.sh (`enter_bench HadoopDfsioe-write`,
    # `HadoopDfsioe-read`); ours runs Hadoop's TestDFSIO the same two ways
    "dfsio": ("mode", {"write": "HadoopDfsioe-write", "read": "HadoopDfsioe-read"}),
    "wordcount": "ScalaSparkWordcount",
    "sort": "ScalaSparkSort",
}


@dataclass
class HibenchReport:
    text: str
    lines: int
    left_out: list[tuple[str, str]] = field(default_factory=list)   # (workload_id, why)


def hibench_type(workload: str, parameters: str | None) -> str:
    """HiBench's name of a workload run, else `Spillway<Workload>` (never one of HiBench's names for another
    workload)."""
    known = HIBENCH_TYPES.get(workload)
    if isinstance(known, tuple):
        parameter, names = known
        try:
            known = names.get(str(json.loads(parameters or "{}").get(parameter)))
        except (ValueError, AttributeError):     # not the JSON object the workloads table holds
            known = None
    return known or "Spillway" + "".join(part.capitalize() for part in str(workload).replace("_", "-").split("-"))


def _line(*values) -> str:
    return COLUMN_FORMATS % tuple(values)


def hibench_report(tables: dict[str, pd.DataFrame], manifest: dict) -> HibenchReport:
    workloads, samples = tables["workloads"], tables["workload_samples"]
    commands, steps = tables["workload_commands"], tables["steps"]
    # a run that recorded none of a table's rows has the table without its columns
    input_bytes = {} if samples.empty else \
        samples[samples["metric"] == "input_size"].groupby("workload_id")["value"].last()
    run_commands = {} if commands.empty else \
        commands[commands["step"] == "run"].groupby("workload_id")["duration_s"].sum()
    workload_steps = steps if steps.empty else steps[steps["scope"] == "workload"]
    run_ends = {} if workload_steps.empty else \
        workload_steps[workload_steps["name"] == workload_steps["workload_id"] + ": run"] \
        .set_index("workload_id")["ended_at"]
    nodes = worker_nodes(manifest) or 1
    lines, left_out = [_line(*HEADER)], []
    for run in workloads.itertuples(index=False):
        if run.status != "ok" or run.warmup:
            continue
        size, seconds, ended = input_bytes.get(run.workload_id), run_commands.get(run.workload_id), \
            run_ends.get(run.workload_id)
        if size is None or pd.isna(size):
            left_out.append((run.workload_id, "no input size (its prepare records none)"))
            continue
        if seconds is None or not seconds > 0 or not isinstance(ended, str):
            left_out.append((run.workload_id, "no timed run command in its run step's log"))
            continue
        try:
            end = datetime.fromisoformat(ended).astimezone(timezone.utc)
        except ValueError:
            left_out.append((run.workload_id, f"its run step's end {ended!r} is not an ISO 8601 time"))
            continue
        duration = round(float(seconds), 3)
        throughput = int(int(size) // duration)
        lines.append(_line(hibench_type(run.workload, getattr(run, "parameters", None)), end.strftime("%Y-%m-%d"),
                           end.strftime("%H:%M:%S"), int(size), f"{duration:.3f}", throughput, throughput // nodes))
    return HibenchReport("\n".join(lines) + "\n", len(lines) - 1, left_out)
