"""Parse a run directory's raw/ into the tidy tables of docs/tables.md (tables/<name>.parquet).

A source that fails to parse never stops the others: the failure is recorded in the `sources`
table (and shown in the report) with the file and the error.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from .parsers import (blocktrace, diskstats, eventlog, fio, gluster_profile, iostat, jhist, manifest as manifest_parser,
                      pfs_client, prometheus)
from .rundir import RawOutput, load_manifest, raw_outputs

# Spark event log tables: EventLog attribute -> table name.
SPARK_TABLES = {"applications": "spark_applications", "jobs": "spark_jobs", "stages": "stages",
                "tasks": "spark_tasks", "executors": "spark_executors", "sql_executions": "spark_sql"}
TABLE_NAMES = ("fio", "fio_latency_bins", "iostat", "disk_totals", "block_requests", *SPARK_TABLES.values(), "mr_jobs",
               "mr_counters", "gluster_bricks", "gluster_fops", "gluster_block_sizes", "pfs_client",
               "prometheus_series", "steps", "workloads", "sources")
SOURCE_COLUMNS = ["host", "source", "workload_id", "file", "status", "rows", "message"]


class _Collector:
    """Accumulates the frames of one table and the per-file outcome of parsing."""

    def __init__(self) -> None:
        self.frames: dict[str, list[pd.DataFrame]] = {name: [] for name in TABLE_NAMES}
        self.sources: list[dict] = []

    def parse(self, table: str, raw: "raw_outputs", file: Path, parse: Callable[[Path], pd.DataFrame],
              note: str = "") -> None:
        self.parse_many(raw, file, lambda path: ({table: parse(path)}, note), counted=table)

    def parse_many(self, raw: "raw_outputs", file: Path,
                   parse: Callable[[Path], tuple[dict[str, pd.DataFrame], str]], counted: str) -> None:
        """One file that feeds several tables; parse gives (table -> frame, note for `sources`);
        `rows` counts those of table `counted`."""
        entry = {"host": raw.host, "source": raw.source, "workload_id": raw.workload_id,
                 "file": str(file.relative_to(raw.path.parents[2])), "status": "ok", "rows": 0, "message": ""}
        try:
            frames, entry["message"] = parse(file)
        except Exception as error:  # noqa: BLE001 - one bad file must not hide the others
            entry.update(status="error", message=f"{type(error).__name__}: {error}")
        else:
            for table, frame in frames.items():
                frame.insert(0, "workload_id", raw.workload_id)
                frame.insert(0, "host", raw.host)
                self.frames[table].append(frame)
            entry["rows"] = len(frames[counted])
        self.sources.append(entry)

    def _without_rows(self, raw, what: str, status: str, message: str) -> None:
        self.sources.append({"host": raw.host, "source": raw.source, "workload_id": raw.workload_id,
                             "file": what, "status": status, "rows": 0, "message": message[:500]})

    def missing(self, raw, what: str) -> None:
        """No `what`, with the collector's own word on why where it left one (its error, else its last note)."""
        why = ""
        for name, line in (("collector-error.txt", 0), ("collector-notes.txt", -1)):
            file = raw.path / name
            said = file.read_text(errors="replace").strip().splitlines() if file.exists() else []
            if said:
                why = said[line]
                break
        self._without_rows(raw, what, "missing", f"no {what}" + (f": {why}" if why else ""))

    def none_or_missing_device(self, raw, what: str) -> None:
        """No file of a block-device collector: none when it said the host has no device to observe
        (nothing-here.txt: e.g. a worker whose only data path is a network file system), else missing."""
        reason = raw.path / "nothing-here.txt"
        if reason.exists():
            self._without_rows(raw, what, "none", reason.read_text(errors="replace").strip())
        else:
            self.missing(raw, what)

    def none_or_missing(self, raw, what: str) -> None:
        """No file of an application-level collector: the workload ran no such application, unless
        the collector said it failed (collector-error.txt), in which case the data is missing."""
        error = raw.path / "collector-error.txt"
        if error.exists():
            self._without_rows(raw, what, "missing", error.read_text(errors="replace").strip())
        else:
            self._without_rows(raw, what, "none", f"no {what}: the workload ran none")


def _fio_tables(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    return {"fio": pd.DataFrame(fio.parse_fio_json(path)),
            "fio_latency_bins": pd.DataFrame(fio.parse_fio_latency_bins(path), columns=fio.LATENCY_BIN_COLUMNS)}, ""


def _iostat_frame(path: Path) -> pd.DataFrame:
    frame, _info = iostat.parse_iostat_json(path)
    return frame


def _jhist_jobs(path: Path) -> pd.DataFrame:
    job, _counters = jhist.parse_jhist(path)
    return pd.DataFrame([job], columns=jhist.JOB_COLUMNS)


def _jhist_counters(path: Path) -> pd.DataFrame:
    _job, rows = jhist.parse_jhist(path)
    return pd.DataFrame(rows, columns=jhist.COUNTER_COLUMNS)


def _spark_tables(files: list[Path]) -> tuple[dict[str, pd.DataFrame], str]:
    """The Spark tables of one log, and a note of what was skipped or not understood."""
    log = eventlog.parse_event_log(files)
    app = log.applications.iloc[0]
    notes = []
    if app["skipped_lines"]:
        notes.append(f"repaired: {app['skipped_lines']} cut or malformed line(s) skipped")
    if app["unknown_events"]:
        notes.append(f"{app['unknown_events']} event(s) of unknown type counted, not parsed: {app['unknown_event_types']}")
    return {table: getattr(log, attribute) for attribute, table in SPARK_TABLES.items()}, "; ".join(notes)


def _prometheus_tables(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    frame, failed = prometheus.parse_archive(path)
    note = f"{len(failed)} quer(ies) failed when archived: {'; '.join(failed)}"[:500] if failed else ""
    return {"prometheus_series": frame}, note


def build_tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    """Every table of the run, in memory."""
    run_dir = Path(run_dir)
    acc = _Collector()
    for raw in raw_outputs(run_dir, "workload"):
        for file in sorted(raw.path.glob("fio-*.json")):
            acc.parse_many(raw, file, _fio_tables, counted="fio")
    for raw in raw_outputs(run_dir, "iostat"):
        file = raw.path / "iostat.json"
        if file.exists():
            acc.parse("iostat", raw, file, _iostat_frame,
                      note="repaired: iostat was stopped mid-report" if _is_truncated(file) else "")
        elif (raw.path / "iostat.txt").exists():          # iostat -x text report (iostat without JSON output)
            acc.parse("iostat", raw, raw.path / "iostat.txt", lambda path: iostat.parse_iostat_text(path)[0])
        else:
            acc.none_or_missing_device(raw, "iostat.json")
        if (raw.path / "diskstats.start").exists() and (raw.path / "diskstats.stop").exists():
            acc.parse("disk_totals", raw, raw.path / "diskstats.stop",
                      lambda stop: diskstats.window_totals(stop.with_name("diskstats.start"), stop))
    for raw in raw_outputs(run_dir, "blocktrace"):
        file = raw.path / "blocktrace.tsv"
        if file.exists():
            acc.parse("block_requests", raw, file, blocktrace.parse_blocktrace)
        else:
            acc.none_or_missing_device(raw, "blocktrace.tsv")
    for raw in raw_outputs(run_dir, "eventlog"):
        folder = raw.path / "eventlogs" if (raw.path / "eventlogs").is_dir() else raw.path
        logs = [files for files in eventlog.event_log_files(folder) if files]
        if not logs:
            acc.none_or_missing(raw, "Spark event log")
        for files in logs:
            acc.parse_many(raw, files[0] if len(files) == 1 else files[0].parent,
                           lambda _p, files=files: _spark_tables(files), counted="stages")
    for raw in raw_outputs(run_dir, "mr-history"):
        files = sorted(raw.path.rglob("*.jhist"))
        if not files:
            acc.none_or_missing(raw, ".jhist")
        for file in files:
            acc.parse("mr_jobs", raw, file, _jhist_jobs)
            acc.parse("mr_counters", raw, file, _jhist_counters)
    for raw in raw_outputs(run_dir, "gluster-profile"):
        for file in sorted(raw.path.glob("profile-*.xml")):
            acc.parse_many(raw, file, gluster_profile.gluster_profile_tables, counted="gluster_fops")
    for raw in raw_outputs(run_dir, "pfs-client"):
        starts = sorted(raw.path.glob("client-*.start"))
        if not starts:
            acc.none_or_missing_device(raw, "client-<backend>.start")
        for start in starts:
            stop = start.with_suffix(".stop")
            if stop.exists():
                acc.parse("pfs_client", raw, stop, lambda path, start=start: pfs_client.window_deltas(start, path))
            else:
                acc.missing(raw, stop.name)
    # The Prometheus archive is cluster-wide (the series carry their node): raw/prometheus/<workload-id>.json,
    # no host folder; its rows in `sources` have an empty host.
    for file in sorted((run_dir / "raw" / "prometheus").glob("*.json")):
        acc.parse_many(RawOutput("", "prometheus", file.stem, file.with_suffix("")), file, _prometheus_tables,
                       counted="prometheus_series")

    manifest = load_manifest(run_dir)
    tables = {name: _concat(frames) for name, frames in acc.frames.items() if name != "sources"}
    tables["prometheus_series"] = tables["prometheus_series"].drop(columns="host")
    tables["steps"] = manifest_parser.steps_table(manifest)
    tables["workloads"] = manifest_parser.workloads_table(manifest)
    tables["sources"] = pd.DataFrame(acc.sources, columns=SOURCE_COLUMNS)
    return tables


def _is_truncated(path: Path) -> bool:
    _node, _samples, truncated = iostat.read_samples(path.read_text(errors="replace"))
    return truncated


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame({"host": pd.Series(dtype="string"), "workload_id": pd.Series(dtype="string")})
    frame = pd.concat(frames, ignore_index=True)
    for column in frame.columns:
        if frame[column].dtype == object and frame[column].map(type).isin([dict, list]).any():
            frame[column] = frame[column].astype(str)
    return frame


def write_tables(run_dir: Path) -> dict[str, Path]:
    """Build every table and write tables/<name>.parquet; returns name -> path."""
    out_dir = Path(run_dir) / "tables"
    out_dir.mkdir(exist_ok=True)
    paths = {}
    for name, frame in build_tables(run_dir).items():
        path = out_dir / f"{name}.parquet"
        frame.to_parquet(path, index=False)
        paths[name] = path
    return paths


def read_tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    """The tables of a run, written first when any is missing."""
    out_dir = Path(run_dir) / "tables"
    if not all((out_dir / f"{name}.parquet").exists() for name in TABLE_NAMES):
        write_tables(run_dir)
    return {name: pd.read_parquet(out_dir / f"{name}.parquet") for name in TABLE_NAMES}
