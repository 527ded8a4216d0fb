"""Spark event logs (JSON Lines, Spark 1.x to 3.5) to tidy tables: applications, jobs, stage
attempts, tasks, executors, SQL executions and the storage-relevant properties (spark_properties).

Accepted: a log file (plain, `.inprogress`, compressed `.lz4`/`.snappy`/`.zstd`, see
eventlog_codecs), a rolling-log folder `eventlog_v2_<app>/events_<n>_<app>[...]`, Spark 1.x's
legacy folder (`EVENT_LOG_1` beside `SPARK_VERSION_*`), or a folder holding any of these.

Speed: plain logs are memory-mapped and read in chunks of whole lines, each decoded in one msgspec
call into typed structs (a union tagged by `"Event"`, the first key Spark writes): task ends
(nearly all of a large log's bytes) materialize only the fields used, other known events only
their keys of interest or nothing (counted). A chunk that does not decode whole is read line by
line (json.loads where msgspec refuses a line). Event types Spark does not define are counted as unknown, lines that do not
decode (a crash cut the last one, garbage) are skipped and counted: neither stops the parse.
"""
from __future__ import annotations

import json
import mmap
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Union
from operator import attrgetter
from pathlib import Path

import numpy as np
import pandas as pd

from .. import safeio
from .eventlog_codecs import READ_SIZE, MissingCodec, StreamState, codec_of, decompressed_chunks
from .spark_properties import PROPERTIES_COLUMNS, properties_frame

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

# Task column -> path in a SparkListenerTaskEnd event.
_TASK_FIELDS = {
    "stage_id": ("Stage ID",),
    "attempt": ("Stage Attempt ID",),
    "task_type": ("Task Type",),
    "end_reason": ("Task End Reason", "Reason"),
    "task_id": ("Task Info", "Task ID"),
    "index": ("Task Info", "Index"),
    "task_attempt": ("Task Info", "Attempt"),
    "executor_id": ("Task Info", "Executor ID"),
    "executor_host": ("Task Info", "Host"),
    "locality": ("Task Info", "Locality"),
    "speculative": ("Task Info", "Speculative"),
    "launch_time_ms": ("Task Info", "Launch Time"),
    "finish_time_ms": ("Task Info", "Finish Time"),
    "input_bytes": ("Task Metrics", "Input Metrics", "Bytes Read"),
    "output_bytes": ("Task Metrics", "Output Metrics", "Bytes Written"),
    "shuffle_remote_bytes_read": ("Task Metrics", "Shuffle Read Metrics", "Remote Bytes Read"),
    "shuffle_local_bytes_read": ("Task Metrics", "Shuffle Read Metrics", "Local Bytes Read"),
    "shuffle_fetch_wait_ms": ("Task Metrics", "Shuffle Read Metrics", "Fetch Wait Time"),
    "shuffle_write_bytes": ("Task Metrics", "Shuffle Write Metrics", "Shuffle Bytes Written"),
    "shuffle_write_time_ns": ("Task Metrics", "Shuffle Write Metrics", "Shuffle Write Time"),
    "memory_spilled_bytes": ("Task Metrics", "Memory Bytes Spilled"),
    "disk_spilled_bytes": ("Task Metrics", "Disk Bytes Spilled"),
    "executor_run_time_ms": ("Task Metrics", "Executor Run Time"),
    "executor_cpu_time_ns": ("Task Metrics", "Executor CPU Time"),       # Spark 2.1+
    "jvm_gc_time_ms": ("Task Metrics", "JVM GC Time"),
    "result_size_bytes": ("Task Metrics", "Result Size"),
}
_STAGE_TASK_FIELDS = ("stage_id", "attempt", "end_reason", "input_bytes", "output_bytes",
                      "shuffle_remote_bytes_read", "shuffle_local_bytes_read", "shuffle_write_bytes",
                      "memory_spilled_bytes", "disk_spilled_bytes", "executor_run_time_ms", "executor_cpu_time_ns")
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
# Events whose content is used, and the top-level keys the tables read (their values are kept whole).
_DECODED_KEYS = {
    "SparkListenerLogStart": ("Spark Version",),
    "SparkListenerApplicationStart": ("App Name", "App ID", "Timestamp", "User", "App Attempt ID"),
    "SparkListenerApplicationEnd": ("Timestamp",),
    "SparkListenerJobStart": ("Job ID", "Submission Time", "Stage Infos", "Stage IDs", "Properties"),
    "SparkListenerJobEnd": ("Job ID", "Completion Time", "Job Result"),
    "SparkListenerStageSubmitted": ("Stage Info", "Properties"),
    "SparkListenerStageCompleted": ("Stage Info",),
    "SparkListenerExecutorAdded": ("Executor ID", "Timestamp", "Executor Info"),
    "SparkListenerExecutorRemoved": ("Executor ID", "Timestamp", "Removed Reason"),
    "SparkListenerBlockManagerAdded": ("Block Manager ID", "Maximum Memory", "Timestamp"),
    # the allow-listed names are kept (spark_properties.py); System Properties and the classpath are not decoded
    "SparkListenerEnvironmentUpdate": ("Spark Properties", "Hadoop Properties"),
    f"{_SQL}SparkListenerSQLExecutionStart": ("executionId", "rootExecutionId", "description", "time"),
    f"{_SQL}SparkListenerSQLExecutionEnd": ("executionId", "time", "errorMessage"),
}
_DECODED = set(_DECODED_KEYS)
# Everything else Spark's JsonProtocol (core, SQL, streaming) writes: counted, not decoded.
_KNOWN = _DECODED | {_TASK_END} | {f"SparkListener{name}" for name in (
    "BlockManagerRemoved", "TaskStart", "TaskGettingResult", "UnpersistRDD",
    "ExecutorMetricsUpdate", "StageExecutorMetrics", "ResourceProfileAdded", "SpeculativeTaskSubmitted",
    "ExecutorBlacklisted", "ExecutorUnblacklisted", "NodeBlacklisted", "NodeUnblacklisted",
    "ExecutorBlacklistedForStage", "NodeBlacklistedForStage", "ExecutorExcluded", "ExecutorUnexcluded",
    "NodeExcluded", "NodeUnexcluded", "ExecutorExcludedForStage", "NodeExcludedForStage", "BlockUpdated",
    "UnschedulableTaskSetAdded", "UnschedulableTaskSetRemoved", "MiscellaneousProcessAdded",
    "ExecutorDecommissioned")} | {f"{_SQL}{name}" for name in (
    "SparkListenerDriverAccumUpdates", "SparkListenerSQLAdaptiveExecutionUpdate",
    "SparkListenerSQLAdaptiveSQLMetricUpdates", "SparkListenerSQLExecutionStart")} | {
    f"org.apache.spark.sql.streaming.StreamingQueryListener${name}"
    for name in ("QueryStartedEvent", "QueryProgressEvent", "QueryTerminatedEvent", "QueryIdleEvent")} | {
    # JsonProtocol writes this one under its class name (a YARN client-mode AM, Spark 3.4 and later)
    "org.apache.spark.scheduler.SparkListenerMiscellaneousProcessAdded"}
_ROLLING_PART = re.compile(r"^events_(\d+)_")
_LEGACY_LOG = "EVENT_LOG_1"


class NotAnEventLog(ValueError):
    """The path holds no Spark event log."""


# What a line that does not decode raises: msgspec's DecodeError/ValidationError and json's errors are
# ValueErrors; both raise RecursionError on nesting deeper than they go (damage, or a line made to crash us).
_UNDECODABLE = (ValueError, RecursionError)


def _nested_fields(columns: Iterable[str]) -> dict:
    """The _TASK_FIELDS of `columns` as a tree of JSON keys; leaves are the column names."""
    nested: dict = {}
    for column in columns:
        path = _TASK_FIELDS[column]
        node = nested
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = column
    return nested


def _task_end_decoder(columns: Iterable[str] = tuple(_TASK_FIELDS)):
    """A msgspec decoder of task-end events that materializes only the _TASK_FIELDS of `columns`
    (the other keys are skipped in C), and per column its attribute path; None without msgspec
    (json.loads is used)."""
    try:
        import msgspec
    except ImportError:
        return None, {}
    paths: dict[str, str] = {}

    def struct(name: str, tree: dict, prefix: str, **tag):
        fields, rename = [], {}
        for number, (key, sub) in enumerate(tree.items()):
            attribute = f"f{number}"
            rename[attribute] = key
            if isinstance(sub, dict):
                fields.append((attribute, struct(f"{name}{number}", sub, f"{prefix}{attribute}.") | None, None))
            else:
                fields.append((attribute, object, None))
                paths[sub] = prefix + attribute
        # gc=False: millions of these would otherwise make every GC pass walk them all.
        return msgspec.defstruct(name, fields, rename=rename, gc=False, **tag)

    task_end = struct("TaskEnd", _nested_fields(columns), "", tag_field="Event", tag=_TASK_END)
    return msgspec.json.Decoder(task_end), paths


_TASK_END_DECODER, _TASK_END_PATHS = _task_end_decoder()
# What the stage table reads of a task end: a quarter of the fields, so fewer objects to build.
_STAGE_TASK_END_DECODER, _STAGE_TASK_END_PATHS = _task_end_decoder(_STAGE_TASK_FIELDS)

def _chunk_decoder(task_end_decoder):
    """A decoder of whole chunks of lines: a union tagged by "Event" of the task-end struct, a struct
    per decoded event type (its _DECODED_KEYS) and an empty struct per other known type (skipped
    in C). A chunk with a line of another type, or a cut line, fails whole and is read line by
    line. Returns (decoder, struct type -> event type name); (None, {}) without msgspec."""
    if task_end_decoder is None:
        return None, {}
    import msgspec
    kinds = {task_end_decoder.type: _TASK_END}
    for number, kind in enumerate(sorted(_KNOWN - {_TASK_END})):
        keys = _DECODED_KEYS.get(kind, ())
        fields = [(f"f{i}", object, None) for i in range(len(keys))]
        struct = msgspec.defstruct(f"Event{number}", fields, rename=dict(zip((f for f, _, _ in fields), keys)),
                                   tag_field="Event", tag=kind, gc=False)
        kinds[struct] = kind
    return msgspec.json.Decoder(Union[tuple(kinds)]), kinds


def _as_event(struct, kind: str) -> dict:
    """A decoded event as json.loads gives it (absent keys left out)."""
    event = {"Event": kind}
    for attribute, key in zip(struct.__struct_fields__, struct.__struct_encode_fields__):
        value = getattr(struct, attribute)
        if value is not None:
            event[key] = value
    return event


_CHUNK_DECODER, _KIND_OF_STRUCT = _chunk_decoder(_TASK_END_DECODER)
# The same for logs read for their stage table only (tasks read again if asked for).
_STAGE_CHUNK_DECODER, _STAGE_KIND_OF_STRUCT = _chunk_decoder(_STAGE_TASK_END_DECODER)


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
    task_ends: list = field(default_factory=list)         # msgspec structs, or dicts without msgspec
    refused_by_msgspec: bool = False                      # some task_ends are _DictTaskEnd
    # False: read for the stage table only. Task ends of chunks decoded whole are then kept only
    # as the stage columns of each chunk (arrays, in stage_chunks), taken while the structs are
    # fresh in the CPU cache; task_ends holds those read line by line.
    keep_tasks: bool = True
    stage_chunks: list[dict[str, np.ndarray]] = field(default_factory=list)
    stage_chunk_tasks: int = 0


def _decode_task_end(line, reading: _Reading) -> None:
    if _TASK_END_DECODER is not None:
        try:
            reading.task_ends.append(_TASK_END_DECODER.decode(line))
            return
        except _UNDECODABLE:        # msgspec's DecodeError/ValidationError: try the forgiving decoder
            pass
    try:
        event = json.loads(bytes(line))
    except _UNDECODABLE:
        reading.skipped_lines += 1
        return
    if _TASK_END_DECODER is None:
        reading.task_ends.append(event)
    else:
        reading.task_ends.append(_as_struct(event))
        reading.refused_by_msgspec = True


def _as_struct(event: dict):
    """A task end msgspec refused (a field of another type, e.g. a string count): keep it as a dict
    of columns, wrapped so the column extraction treats it like the structs."""
    return _DictTaskEnd({column: _path_value(event, path) for column, path in _TASK_FIELDS.items()})


class _DictTaskEnd(dict):
    pass


def _path_value(event: dict, path: tuple[str, ...]):
    value = event
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _read_chunk(lines, reading: _Reading) -> bool:
    """Complete lines decoded in one call (see _chunk_decoder); False if they must be read one by one."""
    decoder, kind_of_struct = ((_CHUNK_DECODER, _KIND_OF_STRUCT) if reading.keep_tasks
                               else (_STAGE_CHUNK_DECODER, _STAGE_KIND_OF_STRUCT))
    try:
        events = decoder.decode_lines(lines)
    except _UNDECODABLE:                # msgspec's DecodeError and ValidationError
        return False
    counts = Counter(map(type, events))
    task_end = next(struct for struct, kind in kind_of_struct.items() if kind == _TASK_END)
    for struct, count in counts.items():
        if struct is not task_end:
            reading.counts[kind_of_struct[struct]] += count
    if counts[task_end] == len(events):
        task_ends, others = events, []
    else:
        task_ends = [event for event in events if type(event) is task_end]
        others = [event for event in events if event.__struct_fields__ and type(event) is not task_end]
    if reading.keep_tasks:
        reading.task_ends += task_ends
    elif task_ends:
        reading.stage_chunks.append(_stage_arrays(_struct_columns(task_ends, _STAGE_TASK_FIELDS,
                                                                  _STAGE_TASK_END_PATHS)))
        reading.stage_chunk_tasks += len(task_ends)
    reading.events += [_as_event(event, kind_of_struct[type(event)]) for event in others]
    return True


def _read_buffer(data, reading: _Reading, size: int, final: bool) -> int:
    """Reads the complete lines of data[:size] (bytes or bytearray); returns where the unread rest starts.
    All at once by _read_chunk when it can; else line by line: lines located with find() and decoded
    from memoryview slices (no copy of the big ones), consecutive task ends in one decoder call."""
    view = memoryview(data)
    complete = size if final else data.rfind(b"\n", 0, size) + 1
    if _CHUNK_DECODER is not None and complete > 0 and _read_chunk(view[:complete], reading):
        return complete
    counts = reading.counts
    pos = 0
    run_start = run_end = -1            # the current run of consecutive task-end lines
    while pos < size:
        end = data.find(b"\n", pos, size)
        if end < 0:
            if not final:
                break
            end = size
        if end > pos and data[end - 1] == 0x7D:                # "}": a line cut short never ends so
            if data.startswith(_TASK_END_PREFIX, pos):
                if run_start < 0:
                    run_start = pos
                run_end = end
                pos = end + 1
                continue
            if run_start >= 0:
                _decode_task_ends(view[run_start:run_end], reading)
                run_start = -1
            if data.startswith(_EVENT_PREFIX, pos) and (
                    kind := bytes(view[pos + 10:data.find(b'"', pos + 10, end)]).decode("utf-8", "replace")
            ) not in _DECODED:
                counts[kind] += 1
            else:
                _decode_other(view[pos:end], reading)
        elif data[pos:end].strip():
            reading.skipped_lines += 1
        pos = end + 1
    if run_start >= 0:
        _decode_task_ends(view[run_start:run_end], reading)
    return min(pos, size)


def _decode_task_ends(lines, reading: _Reading) -> None:
    """Task-end lines (newline separated) at once; line by line where one does not decode."""
    if _TASK_END_DECODER is not None:
        try:
            reading.task_ends += _TASK_END_DECODER.decode_lines(lines)
            return
        except _UNDECODABLE:
            pass
    for line in bytes(lines).split(b"\n"):
        _decode_task_end(line, reading)


def _decode_other(line, reading: _Reading) -> None:
    try:
        event = json.loads(bytes(line))
        kind = event["Event"]
        if not isinstance(kind, str):
            raise TypeError("an Event name that is not text")
    except (*_UNDECODABLE, KeyError, TypeError):
        reading.skipped_lines += 1
        return
    if kind == _TASK_END:                   # "Event" not first: not from Spark's writer, but valid
        _decode_task_end(line, reading)
        return
    reading.counts[kind] += 1
    if kind in _DECODED:
        reading.events.append(event)


def _read_plain(file: Path, reading: _Reading) -> None:
    """An uncompressed log, memory-mapped: chunks of whole lines go to the decoder straight from the
    page cache (no copy into a buffer, no fresh memory per chunk: page faults cost more than the
    parsing on a VM), and each chunk's pages are released once read, so RSS holds one chunk."""
    with safeio.open_source(file, "eventlog") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            start = 0
            while start < size:
                end = mapped.rfind(b"\n", start, start + READ_SIZE) + 1 if start + READ_SIZE < size else size
                if end <= start:                            # a line longer than a chunk
                    end = mapped.find(b"\n", start, start + safeio.MAX_LINE_BYTES + 1) + 1 or size
                    _check_line(end - start, file)
                with memoryview(mapped) as view, view[start:end] as chunk:
                    if not (_CHUNK_DECODER is not None and _read_chunk(chunk, reading)):
                        # Not all plain Spark lines (or the last one cut): line by line, on a copy.
                        data = bytes(chunk)
                        _read_buffer(data, reading, len(data), final=True)
                page_start = start - start % mmap.PAGESIZE
                if hasattr(mapped, "madvise") and end - page_start >= mmap.PAGESIZE:
                    mapped.madvise(mmap.MADV_DONTNEED, page_start, (end - page_start) // mmap.PAGESIZE * mmap.PAGESIZE)
                start = end


def _read_log(files: list[Path], keep_tasks: bool = True) -> _Reading:
    reading = _Reading(keep_tasks=keep_tasks)
    for file in files:
        if codec_of(file) is None:
            _read_plain(file, reading)
            continue
        state = StreamState()
        rest = b""
        for chunk in decompressed_chunks(file, state):
            data = rest + chunk if rest else chunk
            rest = data[_read_buffer(data, reading, len(data), final=False):]
            _check_line(len(rest), file)
        _read_buffer(rest, reading, len(rest), final=True)
        reading.truncated |= state.truncated
    if reading.task_ends or reading.stage_chunk_tasks:
        reading.counts[_TASK_END] = len(reading.task_ends) + reading.stage_chunk_tasks
    return reading


def _check_line(size: int, file: Path) -> None:
    """A line is held whole until it ends: one longer than any Spark writes is refused before it fills memory."""
    if size > safeio.MAX_LINE_BYTES:
        raise safeio.Refused(f"{file}: a line longer than {safeio.size_text(safeio.MAX_LINE_BYTES)}: not a Spark "
                             "event log line, not read further")


class EventLog:
    """The tables of one or more event logs (columns *_COLUMNS). `tasks` is built when first read:
    the stage table needs only a few of its columns. `properties_left_out`: allowed properties whose value was not
    kept (spark_properties.properties_frame)."""

    def __init__(self, applications: pd.DataFrame, jobs: pd.DataFrame, stages: pd.DataFrame,
                 tasks: Callable[[], pd.DataFrame] | pd.DataFrame, executors: pd.DataFrame,
                 sql_executions: pd.DataFrame, properties: pd.DataFrame | None = None,
                 properties_left_out: int = 0) -> None:
        self.applications, self.jobs, self.stages = applications, jobs, stages
        self.executors, self.sql_executions = executors, sql_executions
        self.properties = pd.DataFrame(columns=PROPERTIES_COLUMNS) if properties is None else properties
        self.properties_left_out = properties_left_out
        self._tasks = tasks

    @property
    def tasks(self) -> pd.DataFrame:
        if callable(self._tasks):
            self._tasks = self._tasks()
        return self._tasks

    @classmethod
    def concat(cls, logs: list["EventLog"]) -> "EventLog":
        if len(logs) == 1:
            return logs[0]

        def join(name: str, columns: list[str]) -> pd.DataFrame:
            frames = [getattr(log, name) for log in logs if not getattr(log, name).empty]
            return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
        return cls(join("applications", APPLICATION_COLUMNS), join("jobs", JOB_COLUMNS),
                   join("stages", STAGE_COLUMNS), lambda: join("tasks", TASK_COLUMNS),
                   join("executors", EXECUTOR_COLUMNS), join("sql_executions", SQL_COLUMNS),
                   join("properties", PROPERTIES_COLUMNS), sum(log.properties_left_out for log in logs))


def _task_columns(reading: _Reading, wanted: Iterable[str]) -> dict[str, list]:
    task_ends = reading.task_ends
    if type(task_ends[0]) is dict:             # decoded by json.loads (no msgspec)
        return {column: [_path_value(e, _TASK_FIELDS[column]) for e in task_ends] for column in wanted}
    if reading.refused_by_msgspec:
        return {column: [e[column] if type(e) is _DictTaskEnd else _safe_get(e, _TASK_END_PATHS[column])
                         for e in task_ends] for column in wanted}
    return _struct_columns(task_ends, wanted)


def _struct_columns(task_ends: list, wanted: Iterable[str], paths: dict[str, str] | None = None) -> dict[str, list]:
    """Columns of msgspec task-end structs (attribute `paths` of their decoder, the full one's by default)."""
    columns = {}
    for column in wanted:
        path = (paths or _TASK_END_PATHS)[column]
        try:
            columns[column] = list(map(attrgetter(path), task_ends))     # one C loop per column
        except AttributeError:          # some task has no parent object (e.g. no "Input Metrics")
            columns[column] = [_safe_get(e, path) for e in task_ends]
    return columns


def _safe_get(struct, path: str):
    for attribute in path.split("."):
        if struct is None:
            return None
        struct = getattr(struct, attribute)
    return struct


def _int_column(values: list, absent_is_zero: bool):
    """int64 (absent values -> 0) or nullable Int64; numpy's fromiter when no value is missing."""
    try:
        return np.fromiter(values, dtype=np.int64, count=len(values))
    except TypeError:                   # a None: the field is absent in some events
        column = pd.to_numeric(pd.Series(values, dtype=object))
        return column.fillna(0).astype("int64") if absent_is_zero else column.astype("Int64")


def _stage_arrays(columns: dict[str, list]) -> dict:
    """The stage table's task columns (_STAGE_TASK_FIELDS) as arrays, converted as _tasks_frame
    does (int64, or nullable Int64 where a value is absent); `success` for the end reason."""
    arrays: dict = {}
    for column, values in columns.items():
        if column == "end_reason":
            arrays["success"] = np.fromiter(map("Success".__eq__, values), dtype=bool, count=len(values))
        else:
            arrays[column] = _int_column(values, absent_is_zero=column in ("attempt", *_BYTE_SUMS))
    return arrays


def _stage_tasks_frame(reading: _Reading) -> pd.DataFrame:
    """Per task, what the stage table sums: the key, `success`, the byte and time columns."""
    chunks = list(reading.stage_chunks)
    if reading.task_ends:
        chunks.append(_stage_arrays(_task_columns(reading, _STAGE_TASK_FIELDS)))
    if not chunks:
        frame = pd.DataFrame(columns=["stage_id", "attempt", *_BYTE_SUMS, "executor_run_time_s", "executor_cpu_time_s"])
        return frame.assign(success=pd.Series(dtype=bool))
    frame = {}
    for column in chunks[0]:
        parts = [chunk[column] for chunk in chunks]
        frame[column] = (np.concatenate(parts) if all(isinstance(part, np.ndarray) for part in parts)
                         else pd.concat([pd.Series(part) for part in parts], ignore_index=True))
    for column in ("executor_run_time_ms", "executor_cpu_time_ns"):
        name, divisor = _TIME_COLUMNS[column]
        values = frame.pop(column)
        frame[name] = (values if isinstance(values, np.ndarray) else values.astype("Int64")).astype("float64") / divisor
    return pd.DataFrame(frame)


def _tasks_frame(reading: _Reading, app_id: str | None, wanted: Iterable[str] = tuple(_TASK_FIELDS)) -> pd.DataFrame:
    """The tasks table (all of TASK_COLUMNS), or only the columns from the `wanted` fields."""
    complete = tuple(wanted) == tuple(_TASK_FIELDS)
    if not reading.task_ends:
        return pd.DataFrame(columns=TASK_COLUMNS)
    columns = _task_columns(reading, wanted)
    frame = {}
    for column, values in columns.items():
        if column in ("stage_id", "task_id", "index", "task_attempt", "launch_time_ms", "finish_time_ms"):
            frame[column] = _int_column(values, absent_is_zero=False)
        elif column in _TIME_COLUMNS:
            name, divisor = _TIME_COLUMNS[column]
            frame[name] = _int_column(values, absent_is_zero=False).astype("float64") / divisor
        elif column in ("attempt", "result_size_bytes", *_BYTE_SUMS):      # attempt: absent before Spark 1.1
            frame[column] = _int_column(values, absent_is_zero=True)
        else:
            frame[column] = values
    frame = pd.DataFrame(frame)
    frame["status"] = frame.pop("end_reason")
    if not complete:
        return frame
    finish, launch = frame["finish_time_ms"], frame["launch_time_ms"]
    frame["duration_s"] = ((finish - launch) / 1e3).where(finish > 0)
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
    successful = tasks[tasks["success"]]
    sums = successful.groupby(key, sort=False)[[*_BYTE_SUMS, "executor_run_time_s", "executor_cpu_time_s"]].sum()
    failed = tasks[~tasks["success"]].groupby(key, sort=False).size().rename("failed_tasks")
    frame = info.merge(sums.join(failed, how="outer").reset_index(), on=key, how="outer")
    if frame.empty:
        return pd.DataFrame(columns=STAGE_COLUMNS)
    frame["status"] = frame["status"].fillna("running")
    frame[key] = frame[key].astype("int64")
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


def parse_event_log(files: list[Path], keep_tasks: bool = True) -> EventLog:
    """The tables of one log (a single file, or a rolling log's parts in order). keep_tasks=False
    reads the log for the other tables (the task ends' stage columns only, a fifth faster); the
    tasks table then reads it again when first asked for."""
    files = [Path(f) for f in files]
    reading = _read_log(files, keep_tasks)
    if not reading.counts and not reading.skipped_lines:
        raise NotAnEventLog(f"{files[0]}: empty, not a Spark event log")
    if not any(kind.startswith(("SparkListener", "org.apache.spark")) for kind in reading.counts):
        raise NotAnEventLog(f"{files[0]}: no Spark listener event in it, not a Spark event log")
    app_id = _first(reading.events, "SparkListenerApplicationStart").get("App ID")
    jobs = _jobs_frame(reading.events, app_id)
    properties, properties_left_out = properties_frame(reading.events, app_id)
    return EventLog(
        applications=_applications_frame(reading, files, app_id), jobs=jobs,
        stages=_stages_frame(reading.events, _stage_tasks_frame(reading), jobs, app_id),
        tasks=(lambda: _tasks_frame(reading, app_id)) if keep_tasks else (lambda: _tasks_frame(_read_log(files), app_id)),
        executors=_executors_frame(reading.events, app_id), sql_executions=_sql_frame(reading.events, jobs, app_id),
        properties=properties, properties_left_out=properties_left_out)


def parse_event_logs(path: Path) -> EventLog:
    """The tables of every event log under `path` (file, rolling folder, legacy folder, folder of logs).
    Read for the stage table (see parse_event_log's keep_tasks): `tasks` reads the logs again."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such event log file or folder")
    logs = event_log_files(path)
    if not logs:
        raise NotAnEventLog(f"{path}: no Spark event log in this folder")
    parsed, refused = [], []
    for files in logs:
        try:
            parsed.append(parse_event_log(files, keep_tasks=False))
        except NotAnEventLog as error:      # a stray file beside the logs of a folder
            refused.append(error)
    if not parsed:
        if path.is_dir():
            raise NotAnEventLog(f"{path}: no Spark event log in this folder ({len(refused)} other file(s), "
                                f"e.g. {refused[0]})")
        raise refused[0]
    return EventLog.concat(parsed)
