"""MapReduce job history files (`.jhist`, Avro-JSON): the job's outcome, phases and counters.

Layout: line 1 `Avro-Binary` (Hadoop 3's default, mapreduce.jobhistory.jhist.format=binary) or
`Avro-Json`, line 2 the Avro schema, then the events: binary-encoded back to back, or one JSON per
line `{"type": "JOB_FINISHED", "event": {"org.apache.hadoop.mapreduce.jobhistory.JobFinished": {...}}}`.
Counters are `{"name", "groups": [{"name", "displayName", "counts": [{"name", "displayName", "value"}]}]}`.
Times are epoch milliseconds.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Iterator

import pandas as pd

from .. import safeio
from .avro_binary import AvroDecoder

JOB_COLUMNS = ["job_id", "job_name", "status", "submit_time_ms", "launch_time_ms", "finish_time_ms",
               "duration_s", "total_maps", "total_reduces", "finished_maps", "finished_reduces",
               "failed_maps", "failed_reduces", "map_phase_start_ms", "map_phase_end_ms",
               "reduce_phase_start_ms", "reduce_phase_end_ms"]
COUNTER_COLUMNS = ["job_id", "scope", "counter_group", "name", "value"]
_COUNTER_SCOPES = {"totalCounters": "total", "mapCounters": "map", "reduceCounters": "reduce"}


def read_events(path: Path) -> Iterator[tuple[str, dict]]:
    """(type, payload) of each event of a .jhist file, binary (Hadoop 3's default) or JSON."""
    data = safeio.read_bytes(path, "mr-history")
    first_end = data.find(b"\n")
    schema_end = data.find(b"\n", first_end + 1)
    if first_end < 0 or schema_end < 0:
        return
    version = data[:first_end].strip()
    if version == b"Avro-Binary":
        decoder = AvroDecoder(safeio.load_json(data[first_end + 1:schema_end], f"{path} (schema)"))
        pos = schema_end + 1
        while pos < len(data):
            try:
                record, pos = decoder.read(data, pos)
            except (IndexError, KeyError, struct.error):
                return                      # a last event cut by a crash
            yield record.get("type", ""), record.get("event") or {}
        return
    if version != b"Avro-Json":
        raise ValueError(f"{path}: not a job history file (first line {version[:20]!r})")
    for line in data[schema_end + 1:].decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            record = safeio.load_json(line, str(path))
        except ValueError:
            continue                        # a last line cut by a crash
        if not isinstance(record, dict):
            raise ValueError(f"{path}: an event that is {type(record).__name__}, not a JSON object")
        body = record.get("event") or {}
        # JSON encoding wraps the union's branch: {"org.apache...JobFinished": {...}}
        payload = next(iter(body.values()), {}) if isinstance(body, dict) and len(body) == 1 else body
        yield record.get("type", ""), payload or {}


def _unwrap(value):
    """Avro-JSON unions wrap non-null values as {"type": value}."""
    if isinstance(value, dict) and len(value) == 1:
        inner = next(iter(value.values()))
        if not isinstance(inner, (dict, list)):
            return inner
    return value


def counters(job_id: str, scope: str, counter_set: dict | None) -> list[dict]:
    rows = []
    for group in (counter_set or {}).get("groups", []):
        for count in group.get("counts", []):
            rows.append({"job_id": job_id, "scope": scope, "counter_group": group.get("name"),
                         "name": count.get("name"), "value": int(count.get("value", 0))})
    return rows


def parse_jhist(path: Path) -> tuple[dict, list[dict]]:
    """(job row with JOB_COLUMNS, counter rows with COUNTER_COLUMNS) of one .jhist file."""
    job: dict = {c: None for c in JOB_COLUMNS}
    counter_rows: list[dict] = []
    phase: dict[str, list[int]] = {"MAP": [], "REDUCE": []}
    phase_end: dict[str, list[int]] = {"MAP": [], "REDUCE": []}
    job["status"] = "RUNNING"
    for kind, event in read_events(path):
        if kind == "JOB_SUBMITTED":
            job.update(job_id=event.get("jobid"), job_name=_unwrap(event.get("jobName")),
                       submit_time_ms=event.get("submitTime"))
        elif kind == "JOB_INITED":
            job.update(launch_time_ms=event.get("launchTime"), total_maps=event.get("totalMaps"),
                       total_reduces=event.get("totalReduces"))
        elif kind == "TASK_STARTED" and event.get("taskType") in phase:
            phase[event["taskType"]].append(event.get("startTime"))
        elif kind == "TASK_FINISHED" and event.get("taskType") in phase_end:
            phase_end[event["taskType"]].append(event.get("finishTime"))
        elif kind == "JOB_FINISHED":
            job.update(status="SUCCEEDED", finish_time_ms=event.get("finishTime"),
                       finished_maps=event.get("finishedMaps"), finished_reduces=event.get("finishedReduces"),
                       failed_maps=event.get("failedMaps"), failed_reduces=event.get("failedReduces"))
            job_id = event.get("jobid") or job["job_id"]
            for field, scope in _COUNTER_SCOPES.items():
                counter_rows += counters(job_id, scope, event.get(field))
        elif kind in ("JOB_FAILED", "JOB_KILLED", "JOB_ERROR"):
            job.update(status=_unwrap(event.get("jobStatus")) or kind.split("_")[1],
                       finish_time_ms=event.get("finishTime"),
                       finished_maps=event.get("finishedMaps"), finished_reduces=event.get("finishedReduces"))
            for field, scope in _COUNTER_SCOPES.items():
                counter_rows += counters(event.get("jobid") or job["job_id"], scope, _unwrap(event.get(field)))
    for task_type, prefix in (("MAP", "map"), ("REDUCE", "reduce")):
        starts = [t for t in phase[task_type] if t]
        ends = [t for t in phase_end[task_type] if t]
        job[f"{prefix}_phase_start_ms"] = min(starts) if starts else None
        job[f"{prefix}_phase_end_ms"] = max(ends) if ends else None
    if job["launch_time_ms"] and job["finish_time_ms"]:
        job["duration_s"] = (job["finish_time_ms"] - job["launch_time_ms"]) / 1e3
    return job, counter_rows


def jhist_tables(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    """The mr_jobs row and mr_counters rows of one .jhist file."""
    job, counter_rows = parse_jhist(path)
    return {"mr_jobs": pd.DataFrame([job], columns=JOB_COLUMNS),
            "mr_counters": pd.DataFrame(counter_rows, columns=COUNTER_COLUMNS)}, ""
