"""Spark event logs (JSON Lines) to one row per stage attempt.

Accepted: a log file (plain, `.inprogress`, compressed `.zstd`/`.lz4`/`.snappy` when the codec's
Python package is installed), a rolling-log folder `eventlog_v2_<app>/events_<n>_<app>[...]`, or a
folder holding any of these. Only the few event types needed are decoded: the rest of the lines
are skipped on a substring test, so large logs parse at the speed of reading them.
"""
from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import IO, Iterable, Iterator

import pandas as pd

STAGE_COLUMNS = [
    "app_id", "stage_id", "attempt", "name", "num_tasks", "status", "submission_time_ms",
    "completion_time_ms", "duration_s", "input_bytes", "output_bytes", "shuffle_read_bytes",
    "shuffle_remote_bytes_read", "shuffle_local_bytes_read", "shuffle_write_bytes",
    "memory_spilled_bytes", "disk_spilled_bytes", "executor_run_time_s", "executor_cpu_time_s",
]
_WANTED = ("SparkListenerApplicationStart", "SparkListenerStageSubmitted", "SparkListenerStageCompleted",
           "SparkListenerTaskEnd", "SparkListenerLogStart")
_BYTE_SUMS = ("input_bytes", "output_bytes", "shuffle_remote_bytes_read", "shuffle_local_bytes_read",
              "shuffle_write_bytes", "memory_spilled_bytes", "disk_spilled_bytes")
_ROLLING_PART = re.compile(r"^events_(\d+)_")


class MissingCodec(RuntimeError):
    pass


def _open_text(path: Path) -> IO[str]:
    name = path.name
    for suffix in (".inprogress",):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith(".zstd") or name.endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raise MissingCodec(f"{path}: zstd-compressed event log needs the `zstandard` package "
                               "(pip install zstandard, pinned in requirements.txt)") from None
        # Spark writes one zstd frame per flush; read_across_frames reads them all.
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), read_across_frames=True)
        return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    if name.endswith(".lz4"):
        try:
            import lz4.frame
        except ImportError:
            raise MissingCodec(f"{path}: lz4-compressed event log needs the `lz4` package") from None
        return io.TextIOWrapper(lz4.frame.open(path, "rb"), encoding="utf-8", errors="replace")
    if name.endswith(".snappy"):
        raise MissingCodec(f"{path}: snappy event logs are not supported: use spark.eventLog.compression.codec=zstd")
    return open(path, "r", encoding="utf-8", errors="replace")


def _rolling_parts(folder: Path) -> list[Path]:
    parts = [p for p in folder.iterdir() if _ROLLING_PART.match(p.name)]
    return sorted(parts, key=lambda p: int(_ROLLING_PART.match(p.name).group(1)))


def event_log_files(path: Path) -> list[list[Path]]:
    """The logs under `path`, each as the ordered list of its files (one, or a rolling log's parts)."""
    path = Path(path)
    if path.is_file():
        return [[path]]
    if path.name.startswith("eventlog_v2_"):
        return [_rolling_parts(path)]
    logs = []
    for child in sorted(path.iterdir()):
        if child.is_dir() and child.name.startswith("eventlog_v2_"):
            logs.append(_rolling_parts(child))
        elif child.is_file() and not child.name.startswith(".") and not child.name.endswith((".crc", ".json.gz")):
            logs.append([child])
    return logs


def read_events(files: Iterable[Path]) -> Iterator[dict]:
    """The decoded events of interest, in order; a last line cut by a crash is ignored."""
    for file in files:
        with _open_text(file) as handle:
            for line in handle:
                if not any(kind in line[:60] for kind in _WANTED):
                    continue
                try:
                    yield json.loads(line)
                except ValueError:
                    continue


def _task_sums(metrics: dict) -> dict:
    shuffle_read = metrics.get("Shuffle Read Metrics") or {}
    shuffle_write = metrics.get("Shuffle Write Metrics") or {}
    return {
        "input_bytes": (metrics.get("Input Metrics") or {}).get("Bytes Read", 0),
        "output_bytes": (metrics.get("Output Metrics") or {}).get("Bytes Written", 0),
        "shuffle_remote_bytes_read": shuffle_read.get("Remote Bytes Read", 0),
        "shuffle_local_bytes_read": shuffle_read.get("Local Bytes Read", 0),
        "shuffle_write_bytes": shuffle_write.get("Shuffle Bytes Written", 0),
        "memory_spilled_bytes": metrics.get("Memory Bytes Spilled", 0),
        "disk_spilled_bytes": metrics.get("Disk Bytes Spilled", 0),
        "executor_run_time_s": metrics.get("Executor Run Time", 0) / 1e3,       # ms
        "executor_cpu_time_s": metrics.get("Executor CPU Time", 0) / 1e9,       # ns
    }


def stage_attempts(events: Iterable[dict]) -> pd.DataFrame:
    """One row per stage attempt (STAGE_COLUMNS); sums over the attempt's successful tasks."""
    app_id = None
    stages: dict[tuple[int, int], dict] = {}

    def stage(info: dict) -> dict:
        key = (info["Stage ID"], info.get("Stage Attempt ID", 0))
        row = stages.setdefault(key, {"stage_id": key[0], "attempt": key[1], "status": "running",
                                      **{c: 0 for c in _BYTE_SUMS},
                                      "executor_run_time_s": 0.0, "executor_cpu_time_s": 0.0})
        row["name"] = info.get("Stage Name", row.get("name"))
        row["num_tasks"] = info.get("Number of Tasks", row.get("num_tasks"))
        for field, column in (("Submission Time", "submission_time_ms"), ("Completion Time", "completion_time_ms")):
            if info.get(field) is not None:
                row[column] = info[field]
        return row

    for event in events:
        kind = event.get("Event")
        if kind == "SparkListenerApplicationStart":
            app_id = event.get("App ID", app_id)
        elif kind == "SparkListenerStageSubmitted":
            stage(event["Stage Info"])
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            row = stage(info)
            row["status"] = "failed" if info.get("Failure Reason") else "succeeded"
        elif kind == "SparkListenerTaskEnd":
            if (event.get("Task End Reason") or {}).get("Reason") != "Success":
                continue
            key = (event["Stage ID"], event.get("Stage Attempt ID", 0))
            row = stages.get(key) or stage({"Stage ID": key[0], "Stage Attempt ID": key[1]})
            for column, value in _task_sums(event.get("Task Metrics") or {}).items():
                row[column] += value
    frame = pd.DataFrame(list(stages.values()))
    if frame.empty:
        return pd.DataFrame(columns=STAGE_COLUMNS)
    frame["app_id"] = app_id
    for column in ("submission_time_ms", "completion_time_ms", "name", "num_tasks"):
        if column not in frame:
            frame[column] = None
    frame["shuffle_read_bytes"] = frame["shuffle_remote_bytes_read"] + frame["shuffle_local_bytes_read"]
    frame["submission_time_ms"] = pd.to_numeric(frame["submission_time_ms"]).astype("Int64")
    frame["completion_time_ms"] = pd.to_numeric(frame["completion_time_ms"]).astype("Int64")
    frame["duration_s"] = (frame["completion_time_ms"] - frame["submission_time_ms"]).astype("Float64") / 1e3
    frame["num_tasks"] = pd.to_numeric(frame["num_tasks"]).astype("Int64")
    return frame[STAGE_COLUMNS].sort_values(["stage_id", "attempt"], ignore_index=True)


def parse_event_logs(path: Path) -> pd.DataFrame:
    """Stage attempts of every event log under `path` (file, rolling folder, or folder of logs)."""
    frames = [stage_attempts(read_events(files)) for files in event_log_files(path) if files]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=STAGE_COLUMNS)
    return pd.concat(frames, ignore_index=True)
