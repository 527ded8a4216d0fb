"""Spark event logs (JSON Lines, Spark 1.x to 3.5) to tidy tables: applications, jobs, stage
attempts, tasks, executors and SQL executions.

Accepted: a log file (plain, `.inprogress`, compressed `.lz4`/`.snappy`/`.zstd`, see
eventlog_codecs), a rolling-log folder `eventlog_v2_<app>/events_<n>_<app>[...]`, Spark 1.x's
legacy folder (`EVENT_LOG_1` beside `SPARK_VERSION_*`), or a folder holding any of these.

Speed: Spark writes `"Event"` as the first key, so each line's type is read from its prefix
without decoding it. Task-end lines (nearly all of a large log's bytes) are decoded in bulk by
Arrow's JSON reader with an explicit schema (only the fields used are materialized); the few
other events of interest go through json.loads; the rest (task starts, metric updates...) are
only counted. Event types Spark does not define are counted as unknown, lines that do not
decode (a crash cut the last one, garbage) are skipped and counted: neither stops the parse.
"""
from __future__ import annotations

import io
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.json as pajson

from .eventlog_codecs import MissingCodec, StreamState, codec_of, decompressed_chunks

__all__ = ["MissingCodec", "NotAnEventLog", "EventLog", "event_log_files", "parse_event_log", "parse_event_logs",
           "STAGE_COLUMNS", "TASK_COLUMNS"]

STAGE_COLUMNS = [
    "app_id", "stage_id", "attempt", "name", "num_tasks", "status", "submission_time_ms",
    "completion_time_ms", "duration_s", "input_bytes", "output_bytes", "shuffle_read_bytes",
    "shuffle_remote_bytes_read", "shuffle_local_bytes_read", "shuffle_write_bytes",
    "memory_spilled_bytes", "disk_spilled_bytes", "executor_run_time_s", "executor_cpu_time_s",
    "job_id", "job_group", "job_description", "sql_execution_id", "failed_tasks", "failure_reason",
]
APPLICATION_COLUMNS = ["app_id", "app_attempt_id", "app_name", "user", "spark_version", "start_time_ms",
                       "end_time_ms", "duration_s", "status", "events", "unknown_events", "unknown_event_types",
                       "skipped_lines", "truncated", "codec", "log_path"]
JOB_COLUMNS = ["app_id", "job_id", "job_group", "job_description", "sql_execution_id", "status",
               "submission_time_ms", "completion_time_ms", "duration_s", "num_stages", "stage_ids"]
EXECUTOR_COLUMNS = ["app_id", "executor_id", "executor_host", "total_cores", "max_memory_bytes", "added_time_ms",
                    "removed_time_ms", "removed_reason"]
SQL_COLUMNS = ["app_id", "execution_id", "root_execution_id", "description", "status", "start_time_ms",
               "end_time_ms", "duration_s", "error_message", "job_ids"]

# Task column -> path in a SparkListenerTaskEnd event, and its Arrow type.
_TASK_FIELDS = {
    "stage_id": (("Stage ID",), pa.int64()),
    "attempt": (("Stage Attempt ID",), pa.int64()),
    "task_type": (("Task Type",), pa.string()),
    "end_reason": (("Task End Reason", "Reason"), pa.string()),
    "task_id": (("Task Info", "Task ID"), pa.int64()),
    "index": (("Task Info", "Index"), pa.int64()),
    "task_attempt": (("Task Info", "Attempt"), pa.int64()),
    "executor_id": (("Task Info", "Executor ID"), pa.string()),
    "executor_host": (("Task Info", "Host"), pa.string()),
    "locality": (("Task Info", "Locality"), pa.string()),
    "speculative": (("Task Info", "Speculative"), pa.bool_()),
    "launch_time_ms": (("Task Info", "Launch Time"), pa.int64()),
    "finish_time_ms": (("Task Info", "Finish Time"), pa.int64()),
    "input_bytes": (("Task Metrics", "Input Metrics", "Bytes Read"), pa.int64()),
    "output_bytes": (("Task Metrics", "Output Metrics", "Bytes Written"), pa.int64()),
    "shuffle_remote_bytes_read": (("Task Metrics", "Shuffle Read Metrics", "Remote Bytes Read"), pa.int64()),
    "shuffle_local_bytes_read": (("Task Metrics", "Shuffle Read Metrics", "Local Bytes Read"), pa.int64()),
    "shuffle_fetch_wait_ms": (("Task Metrics", "Shuffle Read Metrics", "Fetch Wait Time"), pa.int64()),
    "shuffle_write_bytes": (("Task Metrics", "Shuffle Write Metrics", "Shuffle Bytes Written"), pa.int64()),
    "shuffle_write_time_ns": (("Task Metrics", "Shuffle Write Metrics", "Shuffle Write Time"), pa.int64()),
    "memory_spilled_bytes": (("Task Metrics", "Memory Bytes Spilled"), pa.int64()),
    "disk_spilled_bytes": (("Task Metrics", "Disk Bytes Spilled"), pa.int64()),
    "executor_run_time_ms": (("Task Metrics", "Executor Run Time"), pa.int64()),
    "executor_cpu_time_ns": (("Task Metrics", "Executor CPU Time"), pa.int64()),       # Spark 2.1+
    "jvm_gc_time_ms": (("Task Metrics", "JVM GC Time"), pa.int64()),
    "result_size_bytes": (("Task Metrics", "Result Size"), pa.int64()),
}
_BYTE_SUMS = ["input_bytes", "output_bytes", "shuffle_remote_bytes_read", "shuffle_local_bytes_read",
              "shuffle_write_bytes", "memory_spilled_bytes", "disk_spilled_bytes"]
# Time metrics in Spark's unit -> (our column, divisor to seconds).
_TIME_COLUMNS = {"executor_run_time_ms": ("executor_run_time_s", 1e3), "executor_cpu_time_ns": ("executor_cpu_time_s", 1e9),
                 "jvm_gc_time_ms": ("jvm_gc_time_s", 1e3), "shuffle_fetch_wait_ms": ("shuffle_fetch_wait_s", 1e3),
                 "shuffle_write_time_ns": ("shuffle_write_time_s", 1e9)}
TASK_COLUMNS = ["app_id", "stage_id", "attempt", "task_id", "index", "task_attempt", "task_type", "status",
                "executor_id", "executor_host", "locality", "speculative", "launch_time_ms", "finish_time_ms", "duration_s",
                *_BYTE_SUMS, "result_size_bytes", *[column for column, _ in _TIME_COLUMNS.values()]]

_EVENT_PREFIX = b'{"Event":"'
_TASK_END = "SparkListenerTaskEnd"
_TASK_END_PREFIX = _EVENT_PREFIX + _TASK_END.encode() + b'"'
_SQL = "org.apache.spark.sql.execution.ui."
# Events whose content is used (decoded one by one: there are few of them).
_DECODED = {"SparkListenerLogStart", "SparkListenerApplicationStart", "SparkListenerApplicationEnd",
            "SparkListenerJobStart", "SparkListenerJobEnd", "SparkListenerStageSubmitted",
            "SparkListenerStageCompleted", "SparkListenerExecutorAdded", "SparkListenerExecutorRemoved",
            "SparkListenerBlockManagerAdded", f"{_SQL}SparkListenerSQLExecutionStart",
            f"{_SQL}SparkListenerSQLExecutionEnd"}
# Everything else Spark's JsonProtocol (core, SQL, streaming) writes: counted, not decoded.
_KNOWN = _DECODED | {_TASK_END} | {f"SparkListener{name}" for name in (
    "EnvironmentUpdate", "BlockManagerRemoved", "TaskStart", "TaskGettingResult", "UnpersistRDD",
    "ExecutorMetricsUpdate", "StageExecutorMetrics", "ResourceProfileAdded", "SpeculativeTaskSubmitted",
    "ExecutorBlacklisted", "ExecutorUnblacklisted", "NodeBlacklisted", "NodeUnblacklisted",
    "ExecutorBlacklistedForStage", "NodeBlacklistedForStage", "ExecutorExcluded", "ExecutorUnexcluded",
    "NodeExcluded", "NodeUnexcluded", "ExecutorExcludedForStage", "NodeExcludedForStage", "BlockUpdated",
    "UnschedulableTaskSetAdded", "UnschedulableTaskSetRemoved", "MiscellaneousProcessAdded",
    "ExecutorDecommissioned")} | {f"{_SQL}{name}" for name in (
    "SparkListenerDriverAccumUpdates", "SparkListenerSQLAdaptiveExecutionUpdate",
    "SparkListenerSQLAdaptiveSQLMetricUpdates", "SparkListenerSQLExecutionStart")} | {
    f"org.apache.spark.sql.streaming.StreamingQueryListener${name}"
    for name in ("QueryStartedEvent", "QueryProgressEvent", "QueryTerminatedEvent", "QueryIdleEvent")}
_ROLLING_PART = re.compile(r"^events_(\d+)_")
_LEGACY_LOG = "EVENT_LOG_1"


class NotAnEventLog(ValueError):
    """The path holds no Spark event log."""


def _arrow_type(fields: dict) -> pa.DataType:
    return pa.struct([(name, _arrow_type(sub) if isinstance(sub, dict) else sub) for name, sub in fields.items()])


def _task_schema() -> pa.Schema:
    nested: dict = {}
    for path, kind in _TASK_FIELDS.values():
        node = nested
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = kind
    return pa.schema(list(_arrow_type(nested)))


_TASK_SCHEMA = _task_schema()
_TASK_PARSE = pajson.ParseOptions(explicit_schema=_TASK_SCHEMA, unexpected_field_behavior="ignore")


# ---------------------------------------------------------------- finding the logs

def _rolling_parts(folder: Path) -> list[Path]:
    parts = [p for p in folder.iterdir() if _ROLLING_PART.match(p.name)]
    return sorted(parts, key=lambda p: int(_ROLLING_PART.match(p.name).group(1)))


def _looks_like_log(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(".") and not path.name.endswith((".crc", ".json.gz"))


def event_log_files(path: Path) -> list[list[Path]]:
    """The logs under `path`, each as the ordered list of its files (one, or a rolling log's parts)."""
    path = Path(path)
    if path.is_file():
        return [[path]]
    if path.name.startswith("eventlog_v2_"):
        return [_rolling_parts(path)]
    if (path / _LEGACY_LOG).is_file():
        return [[path / _LEGACY_LOG]]
    logs = []
    for child in sorted(path.iterdir()):
        if child.is_dir() and child.name.startswith("eventlog_v2_"):
            logs.append(_rolling_parts(child))
        elif child.is_dir() and (child / _LEGACY_LOG).is_file():
            logs.append([child / _LEGACY_LOG])
        elif _looks_like_log(child):
            logs.append([child])
    return [files for files in logs if files]


# ---------------------------------------------------------------- reading one log

@dataclass
class _Reading:
    """Everything gathered from one log's lines before the tables are built."""
    counts: Counter = field(default_factory=Counter)
    skipped_lines: int = 0
    truncated: bool = False
    events: list[dict] = field(default_factory=list)
    task_tables: list[pa.Table] = field(default_factory=list)


def _lines(chunks: Iterable[bytes]) -> Iterator[list[bytes]]:
    """Complete lines, a list per chunk; a last line without its newline is given alone at the end."""
    rest = b""
    for chunk in chunks:
        data = rest + chunk if rest else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        rest = data[cut + 1:]
        yield data[:cut].split(b"\n")
    if rest.strip():
        yield [rest]


def _decode_task_ends(lines: list[bytes], reading: _Reading) -> None:
    if not lines:
        return
    buffer = b"\n".join(lines)
    try:
        table = pajson.read_json(io.BytesIO(buffer), read_options=pajson.ReadOptions(block_size=1 << 23),
                                 parse_options=_TASK_PARSE)
    except pa.ArrowInvalid:
        # Some line does not decode (or one is longer than a block): keep those json.loads accepts.
        good = []
        for line in lines:
            try:
                json.loads(line)
            except ValueError:
                reading.skipped_lines += 1
            else:
                good.append(line)
        if len(good) == len(lines):          # only a block-size problem: read as a single block
            table = pajson.read_json(io.BytesIO(buffer), parse_options=_TASK_PARSE,
                                     read_options=pajson.ReadOptions(block_size=len(buffer) + 1))
        elif not good:
            return
        else:
            return _decode_task_ends(good, reading)
    reading.task_tables.append(table)


def _read_lines(lines: list[bytes], reading: _Reading) -> None:
    task_ends = []
    counts = reading.counts
    for line in lines:
        if not line.endswith(b"}"):
            if line.strip():
                reading.skipped_lines += 1          # cut by a crash, or not JSON
            continue
        if line.startswith(_TASK_END_PREFIX):
            task_ends.append(line)
            continue
        if line.startswith(_EVENT_PREFIX):
            kind = line[10:line.find(b'"', 10)].decode("utf-8", "replace")
            if kind not in _DECODED:
                counts[kind] += 1
                continue
        try:
            event = json.loads(line)
            kind = event["Event"]
        except (ValueError, KeyError, TypeError):
            reading.skipped_lines += 1
            continue
        if kind == _TASK_END:
            task_ends.append(line)      # counted once decoded
            continue
        counts[kind] += 1
        if kind in _DECODED:
            reading.events.append(event)
    _decode_task_ends(task_ends, reading)


def _read_log(files: list[Path]) -> _Reading:
    reading = _Reading()
    for file in files:
        state = StreamState()
        for lines in _lines(decompressed_chunks(file, state)):
            _read_lines(lines, reading)
        reading.truncated |= state.truncated
    task_ends = sum(table.num_rows for table in reading.task_tables)
    if task_ends:
        reading.counts[_TASK_END] = task_ends
    return reading


# ---------------------------------------------------------------- tables

@dataclass
class EventLog:
    """The tables of one or more event logs (columns *_COLUMNS)."""
    applications: pd.DataFrame
    jobs: pd.DataFrame
    stages: pd.DataFrame
    tasks: pd.DataFrame
    executors: pd.DataFrame
    sql_executions: pd.DataFrame

    @classmethod
    def concat(cls, logs: list["EventLog"]) -> "EventLog":
        def join(name: str, columns: list[str]) -> pd.DataFrame:
            frames = [getattr(log, name) for log in logs if not getattr(log, name).empty]
            return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
        return cls(join("applications", APPLICATION_COLUMNS), join("jobs", JOB_COLUMNS),
                   join("stages", STAGE_COLUMNS), join("tasks", TASK_COLUMNS),
                   join("executors", EXECUTOR_COLUMNS), join("sql_executions", SQL_COLUMNS))


def _tasks_frame(reading: _Reading, app_id: str | None) -> pd.DataFrame:
    if not reading.task_tables:
        return pd.DataFrame(columns=TASK_COLUMNS)
    table = pa.concat_tables(reading.task_tables)
    columns = {}
    for column, (path, _kind) in _TASK_FIELDS.items():
        array = table.column(path[0])
        for key in path[1:]:
            array = pa.chunked_array([chunk.field(key) for chunk in array.chunks], type=array.type.field(key).type)
        columns[column] = array
    frame = pa.table(columns).to_pandas()
    frame["attempt"] = frame["attempt"].fillna(0).astype("int64")          # absent before Spark 1.1
    for column in [*_BYTE_SUMS, "result_size_bytes"]:
        frame[column] = frame[column].fillna(0).astype("int64")
    for source, (column, divisor) in _TIME_COLUMNS.items():
        frame[column] = frame.pop(source).astype("float64") / divisor
    frame["status"] = frame.pop("end_reason")
    frame["duration_s"] = ((frame["finish_time_ms"] - frame["launch_time_ms"]) / 1e3).where(frame["finish_time_ms"] > 0)
    frame["app_id"] = app_id
    return frame[TASK_COLUMNS]


def _first(events: list[dict], kind: str) -> dict:
    return next((e for e in events if e.get("Event") == kind), {})


def _properties(event: dict) -> dict:
    return event.get("Properties") or {}


def _sql_id(properties: dict) -> int | None:
    value = properties.get("spark.sql.execution.id")
    return int(value) if value not in (None, "") else None


def _jobs_frame(events: list[dict], app_id: str | None) -> pd.DataFrame:
    jobs: dict[int, dict] = {}
    for event in events:
        kind = event["Event"]
        if kind == "SparkListenerJobStart":
            properties = _properties(event)
            stage_ids = event.get("Stage IDs") or [s["Stage ID"] for s in event.get("Stage Infos", [])]
            jobs[event["Job ID"]] = {
                "app_id": app_id, "job_id": event["Job ID"], "job_group": properties.get("spark.jobGroup.id"),
                "job_description": properties.get("spark.job.description"),
                "sql_execution_id": _sql_id(properties), "status": "running",
                "submission_time_ms": event.get("Submission Time"), "completion_time_ms": None,
                "num_stages": len(stage_ids), "stage_ids": ",".join(map(str, stage_ids))}
        elif kind == "SparkListenerJobEnd" and event.get("Job ID") in jobs:
            job = jobs[event["Job ID"]]
            result = (event.get("Job Result") or {}).get("Result", "")
            job["status"] = "succeeded" if result == "JobSucceeded" else "failed"
            job["completion_time_ms"] = event.get("Completion Time")
    frame = pd.DataFrame(list(jobs.values()), columns=JOB_COLUMNS)
    _add_duration(frame, "submission_time_ms", "completion_time_ms")
    frame["sql_execution_id"] = frame["sql_execution_id"].astype("Int64")
    return frame


def _add_duration(frame: pd.DataFrame, start: str, end: str) -> None:
    frame[start] = pd.to_numeric(frame[start]).astype("Int64")
    frame[end] = pd.to_numeric(frame[end]).astype("Int64")
    frame["duration_s"] = (frame[end] - frame[start]).astype("Float64") / 1e3


def _stage_rows(events: list[dict]) -> dict[tuple[int, int], dict]:
    rows: dict[tuple[int, int], dict] = {}
    for event in events:
        kind = event["Event"]
        if kind not in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted"):
            continue
        info = event["Stage Info"]
        key = (info["Stage ID"], info.get("Stage Attempt ID", 0))
        row = rows.setdefault(key, {"stage_id": key[0], "attempt": key[1], "status": "running",
                                    "failure_reason": None})
        row["name"] = info.get("Stage Name", row.get("name"))
        row["num_tasks"] = info.get("Number of Tasks", row.get("num_tasks"))
        for source, column in (("Submission Time", "submission_time_ms"), ("Completion Time", "completion_time_ms")):
            if info.get(source) is not None:
                row[column] = info[source]
        properties = _properties(event)
        if properties.get("spark.jobGroup.id") is not None:
            row["job_group"] = properties["spark.jobGroup.id"]
        if properties.get("spark.job.description") is not None:
            row["job_description"] = properties["spark.job.description"]
        if kind == "SparkListenerStageCompleted":
            row["failure_reason"] = info.get("Failure Reason")
            row["status"] = "failed" if info.get("Failure Reason") else "succeeded"
    return rows


def _stages_frame(events: list[dict], tasks: pd.DataFrame, jobs: pd.DataFrame, app_id: str | None) -> pd.DataFrame:
    key = ["stage_id", "attempt"]
    rows = _stage_rows(events)
    info = pd.DataFrame(list(rows.values()), columns=[*key, "name", "num_tasks", "status", "submission_time_ms",
                                                      "completion_time_ms", "failure_reason", "job_group",
                                                      "job_description"])
    successful = tasks[tasks["status"] == "Success"]
    sums = successful.groupby(key, sort=False)[[*_BYTE_SUMS, "executor_run_time_s", "executor_cpu_time_s"]].sum()
    failed = tasks[tasks["status"] != "Success"].groupby(key, sort=False).size().rename("failed_tasks")
    frame = info.merge(sums.join(failed, how="outer").reset_index(), on=key, how="outer")
    if frame.empty:
        return pd.DataFrame(columns=STAGE_COLUMNS)
    frame["status"] = frame["status"].fillna("running")
    for column in _BYTE_SUMS:
        frame[column] = frame[column].fillna(0).astype("int64")
    for column in ("executor_run_time_s", "executor_cpu_time_s"):
        frame[column] = frame[column].fillna(0.0).astype("float64")
    frame["failed_tasks"] = frame["failed_tasks"].fillna(0).astype("int64")
    frame["shuffle_read_bytes"] = frame["shuffle_remote_bytes_read"] + frame["shuffle_local_bytes_read"]
    _add_duration(frame, "submission_time_ms", "completion_time_ms")
    frame["num_tasks"] = pd.to_numeric(frame["num_tasks"]).astype("Int64")
    # A stage belongs to the first job that lists it; that job's group fills in for logs before
    # Spark 2 (no stage properties).
    job_of_stage: dict[int, dict] = {}
    for job in jobs.sort_values("job_id").to_dict("records"):
        for stage_id in filter(None, str(job["stage_ids"]).split(",")):
            job_of_stage.setdefault(int(stage_id), job)
    for column, source in (("job_id", "job_id"), ("sql_execution_id", "sql_execution_id"),
                           ("job_group_of_job", "job_group"), ("job_description_of_job", "job_description")):
        frame[column] = [job_of_stage.get(s, {}).get(source) for s in frame["stage_id"]]
    for column in ("job_group", "job_description"):
        own = frame[column].astype(object)
        frame[column] = own.where(own.notna(), frame.pop(f"{column}_of_job"))
    frame["job_id"] = pd.array(frame["job_id"], dtype="Int64")
    frame["sql_execution_id"] = pd.array([None if pd.isna(v) else v for v in frame["sql_execution_id"]],
                                         dtype="Int64")
    frame["app_id"] = app_id
    return frame[STAGE_COLUMNS].sort_values(key, ignore_index=True)


def _executors_frame(events: list[dict], app_id: str | None) -> pd.DataFrame:
    executors: dict[str, dict] = {}

    def executor(executor_id: str) -> dict:
        return executors.setdefault(executor_id, {"app_id": app_id, "executor_id": executor_id})

    for event in events:
        kind = event["Event"]
        if kind == "SparkListenerExecutorAdded":
            row = executor(event["Executor ID"])
            details = event.get("Executor Info") or {}
            row.update(executor_host=details.get("Host"), total_cores=details.get("Total Cores"),
                       added_time_ms=event.get("Timestamp"))
        elif kind == "SparkListenerExecutorRemoved":
            executor(event["Executor ID"]).update(removed_time_ms=event.get("Timestamp"),
                                                  removed_reason=event.get("Removed Reason"))
        elif kind == "SparkListenerBlockManagerAdded":
            manager = event.get("Block Manager ID") or {}
            # Spark 1.x names the driver `<driver>`.
            row = executor("driver" if manager.get("Executor ID") == "<driver>" else manager.get("Executor ID"))
            row.setdefault("executor_host", manager.get("Host"))
            row.setdefault("added_time_ms", event.get("Timestamp"))
            row["max_memory_bytes"] = event.get("Maximum Memory")
    frame = pd.DataFrame(list(executors.values()), columns=EXECUTOR_COLUMNS)
    for column in ("total_cores", "max_memory_bytes", "added_time_ms", "removed_time_ms"):
        frame[column] = pd.to_numeric(frame[column]).astype("Int64")
    return frame


def _sql_frame(events: list[dict], jobs: pd.DataFrame, app_id: str | None) -> pd.DataFrame:
    executions: dict[int, dict] = {}
    for event in events:
        kind = event["Event"]
        if kind == f"{_SQL}SparkListenerSQLExecutionStart":
            executions[event["executionId"]] = {
                "app_id": app_id, "execution_id": event["executionId"],
                "root_execution_id": event.get("rootExecutionId", event["executionId"]),   # Spark 3.4+
                "description": event.get("description"), "status": "running",
                "start_time_ms": event.get("time"), "end_time_ms": None, "error_message": None}
        elif kind == f"{_SQL}SparkListenerSQLExecutionEnd" and event.get("executionId") in executions:
            row = executions[event["executionId"]]
            row["end_time_ms"] = event.get("time")
            row["error_message"] = event.get("errorMessage") or None       # Spark 3.4+
            row["status"] = "failed" if row["error_message"] else "succeeded"
    frame = pd.DataFrame(list(executions.values()), columns=SQL_COLUMNS)
    _add_duration(frame, "start_time_ms", "end_time_ms")
    job_ids = jobs.dropna(subset=["sql_execution_id"]).groupby("sql_execution_id")["job_id"].agg(
        lambda ids: ",".join(map(str, sorted(ids))))
    frame["job_ids"] = frame["execution_id"].map(job_ids)
    return frame


def _applications_frame(reading: _Reading, files: list[Path], app_id: str | None) -> pd.DataFrame:
    events = reading.events
    start = _first(events, "SparkListenerApplicationStart")
    end = _first(events, "SparkListenerApplicationEnd")
    unknown = {kind: n for kind, n in reading.counts.items() if kind not in _KNOWN}
    row = {"app_id": app_id, "app_attempt_id": start.get("App Attempt ID"), "app_name": start.get("App Name"),
           "user": start.get("User"), "spark_version": _first(events, "SparkListenerLogStart").get("Spark Version"),
           "start_time_ms": start.get("Timestamp"), "end_time_ms": end.get("Timestamp"),
           "status": "finished" if end else "incomplete", "events": sum(reading.counts.values()),
           "unknown_events": sum(unknown.values()),
           "unknown_event_types": "; ".join(f"{kind}={n}" for kind, n in sorted(unknown.items())) or None,
           "skipped_lines": reading.skipped_lines, "truncated": reading.truncated,
           "codec": codec_of(files[0]) or "none",
           "log_path": str(files[0].parent if len(files) > 1 or files[0].name == _LEGACY_LOG else files[0])}
    frame = pd.DataFrame([row], columns=APPLICATION_COLUMNS)
    _add_duration(frame, "start_time_ms", "end_time_ms")
    return frame


def parse_event_log(files: list[Path]) -> EventLog:
    """The tables of one log (a single file, or a rolling log's parts in order)."""
    files = [Path(f) for f in files]
    reading = _read_log(files)
    if not reading.counts and not reading.skipped_lines:
        raise NotAnEventLog(f"{files[0]}: empty, not a Spark event log")
    if not any(kind.startswith(("SparkListener", "org.apache.spark")) for kind in reading.counts):
        raise NotAnEventLog(f"{files[0]}: no Spark listener event in it, not a Spark event log")
    app_id = _first(reading.events, "SparkListenerApplicationStart").get("App ID")
    tasks = _tasks_frame(reading, app_id)
    jobs = _jobs_frame(reading.events, app_id)
    return EventLog(
        applications=_applications_frame(reading, files, app_id), jobs=jobs,
        stages=_stages_frame(reading.events, tasks, jobs, app_id), tasks=tasks,
        executors=_executors_frame(reading.events, app_id), sql_executions=_sql_frame(reading.events, jobs, app_id))


def parse_event_logs(path: Path) -> EventLog:
    """The tables of every event log under `path` (file, rolling folder, legacy folder, folder of logs)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such event log file or folder")
    logs = event_log_files(path)
    if not logs:
        raise NotAnEventLog(f"{path}: no Spark event log in this folder")
    parsed, refused = [], []
    for files in logs:
        try:
            parsed.append(parse_event_log(files))
        except NotAnEventLog as error:      # a stray file beside the logs of a folder
            refused.append(error)
    if not parsed:
        raise refused[0]
    return EventLog.concat(parsed)
