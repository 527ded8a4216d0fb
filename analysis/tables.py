"""Parse a run directory's raw/ and its steps' logs/ into the tidy tables of docs/tables.md (tables/<name>.parquet).

A source that fails to parse never stops the others: the failure is recorded in the `sources`
table (and shown in the report) with the file and the error. The run directory is untrusted input:
every read goes through analysis.safeio (regular files only, no symbolic link, size caps), what a
rule refuses is recorded as `refused`, and the tables are written without following a symlink.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pandas as pd
import pyarrow as pa

from . import safeio
from .parsers import (blocktrace, diskstats, eventlog, fio, gluster_profile, iostat, jhist, manifest as manifest_parser,
                      node_budget, pfs_client, prometheus, step_logs, storage, workload_results)
from .parsers.collector_notes import read_note
from .parsers.manifest import read_manifest
from run_layout import RawOutput, raw_outputs, real_subdirectories, symlinks

# Spark event log tables: EventLog attribute -> table name.
SPARK_TABLES = {"applications": "spark_applications", "jobs": "spark_jobs", "stages": "stages",
                "tasks": "spark_tasks", "executors": "spark_executors", "sql_executions": "spark_sql"}
TABLE_NAMES = ("fio", "fio_latency_bins", "iostat", "disk_totals", "block_requests", *SPARK_TABLES.values(), "mr_jobs",
               "mr_counters", "gluster_bricks", "gluster_fops", "gluster_block_sizes", "pfs_client",
               "node_budget", "prometheus_series", "host_cpu", "workload_checks", "workload_samples", "devices", "steps", "workloads",
               "workload_commands", "sources")
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
            for table, frame in frames.items():
                frame.insert(0, "workload_id", raw.workload_id)
                frame.insert(0, "host", raw.host)
                _as_stored(table, frame)
        except safeio.Refused as error:
            entry.update(status="refused", message=str(error)[:500])
        except Exception as error:  # noqa: BLE001 - one bad file must not hide the others
            entry.update(status="error", message=f"{type(error).__name__}: {error}"[:500])
        else:
            for table, frame in frames.items():
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
            said = (read_note(raw.path / name) or "").splitlines()
            if said:
                why = said[line]
                break
        self._without_rows(raw, what, "missing", f"no {what}" + (f": {why}" if why else ""))

    def none_or_missing_device(self, raw, what: str) -> None:
        """No file of a block-device collector: none when it said the host has no device to observe
        (nothing-here.txt: e.g. a worker whose only data path is a network file system), else missing."""
        reason = read_note(raw.path / "nothing-here.txt")
        if reason is not None:
            self._without_rows(raw, what, "none", reason)
        else:
            self.missing(raw, what)

    def none_or_missing(self, raw, what: str) -> None:
        """No file of an application-level collector: the workload ran no such application, unless
        the collector said it failed (collector-error.txt), in which case the data is missing."""
        error = read_note(raw.path / "collector-error.txt")
        if error is not None:
            self._without_rows(raw, what, "missing", error)
        else:
            self._without_rows(raw, what, "none", f"no {what}: the workload ran none")

    def refused_links(self, run_dir: Path) -> None:
        """A row for every symbolic link in raw/ that no row names yet (a link to a folder, or a file no
        parser looked for): none is followed."""
        named = [row["file"] for row in self.sources]
        raw = Path(run_dir) / "raw"
        for link in symlinks(run_dir):
            parts = link.relative_to(raw).parts if link != raw else ()
            if parts[:1] == ("prometheus",) and len(parts) > 1:        # named as the archives' rows are
                host, source, workload_id, file = "", "prometheus", Path(parts[1]).stem, str(link.relative_to(run_dir))
            else:
                host, source, workload_id = (list(parts) + ["", "", ""])[:3]
                file = os.sep.join(parts) or "."
            if any(name == file or name.startswith(file + os.sep) for name in named):
                continue
            self.sources.append({"host": host, "source": source, "workload_id": workload_id, "file": file,
                                 "status": "refused", "rows": 0,
                                 "message": f"a symbolic link (to {_link_target(link)}): not followed"[:500]})


def _link_target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError:
        return "?"


# The text columns of each table parsed from raw/ or logs/ (docs/tables.md); every other column holds numbers or
# booleans.
# None: every column but time_s and value (a Prometheus series' labels are text, whatever they are named).
TEXT_COLUMNS = {
    "fio": ("backend", "device", "file", "rw", "direction", "source_file"),
    "fio_latency_bins": ("backend", "device", "rw", "direction", "source_file"),
    "iostat": ("device",),
    "disk_totals": ("device",),
    "block_requests": ("device", "op", "rwbs", "comm"),
    "spark_applications": ("app_id", "app_attempt_id", "app_name", "user", "spark_version", "status",
                           "unknown_event_types", "codec", "log_path"),
    "spark_jobs": ("app_id", "job_group", "job_description", "status", "stage_ids"),
    "stages": ("app_id", "name", "status", "job_group", "job_description", "failure_reason"),
    "spark_tasks": ("app_id", "task_type", "status", "executor_id", "executor_host", "locality"),
    "spark_executors": ("app_id", "executor_id", "executor_host", "removed_reason"),
    "spark_sql": ("app_id", "description", "status", "error_message", "job_ids"),
    "mr_jobs": ("job_id", "job_name", "status"),
    "mr_counters": ("job_id", "scope", "counter_group", "name"),
    "gluster_bricks": ("volume", "brick_host", "brick_path"),
    "gluster_fops": ("volume", "brick_host", "brick_path", "fop"),
    "gluster_block_sizes": ("volume", "brick_host", "brick_path"),
    "pfs_client": ("backend", "fstype", "mount", "counter", "unit"),
    "node_budget": (),
    "prometheus_series": None,
    "host_cpu": (),
    "workload_checks": ("step", "file", "problems", "detail"),
    "workload_samples": ("metric", "unit", "metadata"),
    "workload_commands": ("step", "task"),
}
_NUMBER_KINDS = ("integer", "floating", "mixed-integer-float", "decimal", "boolean")


def _as_stored(table: str, frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as its table holds it, or ValueError: nested values (a list, an object) become text, and then
    every column must hold what the table has there, text or numbers. A file with a number for a name, or
    text for a count, is malformed: mixed into a column with the other files' values it would make the table
    unwritable, or the report's arithmetic fail."""
    text = TEXT_COLUMNS[table]
    for column in frame.columns.drop(["host", "workload_id"], errors="ignore"):
        values = frame[column]
        if values.dtype == object:
            nested = values.map(lambda value: isinstance(value, (dict, list)))
            if nested.any():
                values = frame[column] = values.where(~nested, values[nested].map(_as_text))
        if values.isna().all():
            continue
        kind = pd.api.types.infer_dtype(values.cat.categories if isinstance(values.dtype, pd.CategoricalDtype)
                                        else values, skipna=True)
        is_text = column not in ("time_s", "value") if text is None else column in text
        if is_text and kind != "string":
            raise ValueError(f"{table}.{column} holds {kind} values where the table holds text")
        if not is_text and kind not in _NUMBER_KINDS:
            raise ValueError(f"{table}.{column} holds {kind} values where the table holds numbers")
    return frame


def _as_text(value) -> str:
    try:
        return str(value)
    except RecursionError:
        return "(a value nested too deep to show)"


def _fio_tables(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    return {"fio": pd.DataFrame(fio.parse_fio_json(path)),
            "fio_latency_bins": pd.DataFrame(fio.parse_fio_latency_bins(path), columns=fio.LATENCY_BIN_COLUMNS)}, ""


def _iostat_tables(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    disks, cpu, info = iostat.parse_iostat_tables(path)
    return {"iostat": disks, "host_cpu": cpu}, "repaired: iostat was stopped mid-report" if info["truncated"] else ""


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
    with safeio.confined(run_dir):
        return _build_tables(run_dir)


def _build_tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    acc = _Collector()
    for raw in raw_outputs(run_dir, "workload"):
        for file in sorted(raw.path.glob("fio-*.json")):
            acc.parse_many(raw, file, _fio_tables, counted="fio")
        # a workload that wrote no check or result file (TeraSort, fio-sweep) has no row in `sources` for them
        checks, samples = workload_results.check_files(raw.path), workload_results.sample_files(raw.path)
        if checks:
            acc.parse("workload_checks", raw, checks[-1], lambda _path, raw=raw: workload_results.parse_checks(raw.path))
        if samples:
            acc.parse("workload_samples", raw, samples[-1],
                      lambda _path, raw=raw: workload_results.parse_samples(raw.path))
    for raw in raw_outputs(run_dir, "iostat"):
        file = raw.path / "iostat.json"
        if os.path.lexists(file):
            acc.parse_many(raw, file, _iostat_tables, counted="iostat")
        elif os.path.lexists(raw.path / "iostat.txt"):          # iostat -x text report (iostat without JSON output)
            acc.parse("iostat", raw, raw.path / "iostat.txt", lambda path: iostat.parse_iostat_text(path)[0])
        else:
            acc.none_or_missing_device(raw, "iostat.json")
        if os.path.lexists(raw.path / "diskstats.start") and os.path.lexists(raw.path / "diskstats.stop"):
            acc.parse("disk_totals", raw, raw.path / "diskstats.stop",
                      lambda stop: diskstats.window_totals(stop.with_name("diskstats.start"), stop))
    for raw in raw_outputs(run_dir, "blocktrace"):
        file = raw.path / "blocktrace.tsv"
        if os.path.lexists(file):
            acc.parse("block_requests", raw, file, blocktrace.parse_blocktrace)
        else:
            acc.none_or_missing_device(raw, "blocktrace.tsv")
    for raw in raw_outputs(run_dir, "eventlog"):
        folder = raw.path / "eventlogs"
        if folder.is_symlink():
            continue                                    # recorded as refused below, with every other link
        logs = [files for files in eventlog.event_log_files(folder if folder.is_dir() else raw.path) if files]
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
            if os.path.lexists(stop):
                acc.parse("pfs_client", raw, stop, lambda path, start=start: pfs_client.window_deltas(start, path))
            else:
                acc.missing(raw, stop.name)
    for raw in raw_outputs(run_dir, "node-budget"):
        start, stop = raw.path / "node-budget.start", raw.path / "node-budget.stop"
        if not os.path.lexists(start):
            acc.none_or_missing_device(raw, start.name)     # none: the node has no budget (nothing-here.txt)
        elif os.path.lexists(stop):
            acc.parse("node_budget", raw, stop, lambda path, start=start: pd.DataFrame(
                [node_budget.window_row(start, path)], columns=node_budget.COLUMNS))
        else:
            acc.missing(raw, stop.name)
    # The Prometheus archive is cluster-wide (the series carry their node): raw/prometheus/<workload-id>.json,
    # no host folder; its rows in `sources` have an empty host.
    archives = run_dir / "raw" / "prometheus"
    for file in (sorted(archives.glob("*.json")) if not archives.is_symlink() else []):
        acc.parse_many(RawOutput("", "prometheus", file.stem, file.with_suffix("")), file, _prometheus_tables,
                       counted="prometheus_series")
    storage_by_host = _storage_records(run_dir, acc)
    acc.refused_links(run_dir)

    reading = read_manifest(run_dir)
    manifest = reading.manifest
    tables = {name: _concat(frames) for name, frames in acc.frames.items() if name != "sources"}
    # within the run directory, so that a copy of it elsewhere builds the same tables
    logs = tables["spark_applications"]
    if "log_path" in logs:
        logs["log_path"] = logs["log_path"].map(lambda path: os.path.relpath(path, run_dir) if path else path)
    tables["prometheus_series"] = tables["prometheus_series"].drop(columns="host")
    tables["devices"] = storage.devices_table(storage_by_host, manifest)
    tables["steps"] = manifest_parser.steps_table(manifest)
    tables["workloads"] = manifest_parser.workloads_table(manifest)
    commands, command_sources = step_logs.workload_commands_table(run_dir, manifest)
    tables["workload_commands"] = _as_stored("workload_commands", commands)
    acc.sources += command_sources
    if reading.status not in ("ok", "missing"):
        # Listed only when something is wrong with it, so that a valid run's sources are those of raw/.
        acc.sources.insert(0, {"host": "", "source": "manifest", "workload_id": "", "file": "manifest.json",
                               "status": reading.status, "message": reading.message[:500],
                               "rows": len(tables["steps"]) + len(tables["workloads"])})
    tables["sources"] = pd.DataFrame(acc.sources, columns=SOURCE_COLUMNS)
    return tables


def _storage_records(run_dir: Path, acc: _Collector) -> dict[str, dict]:
    """host -> its raw/<host>/storage.json, for each host that has one; `sources` says how each read went."""
    records, raw = {}, Path(run_dir) / "raw"
    for host_dir in real_subdirectories(raw) if not raw.is_symlink() else []:
        file = host_dir / "storage.json"
        if not os.path.lexists(file):
            continue
        entry = {"host": host_dir.name, "source": "storage", "workload_id": "", "file": f"{host_dir.name}/storage.json",
                 "status": "ok", "rows": 0, "message": ""}
        try:
            records[host_dir.name] = storage.read_storage(file)
            entry["rows"] = len(records[host_dir.name].get("backends") or {})
        except safeio.Refused as error:
            entry.update(status="refused", message=str(error)[:500])
        except (OSError, ValueError) as error:
            entry.update(status="error", message=f"{type(error).__name__}: {error}"[:500])
        acc.sources.append(entry)
    return records


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame({"host": pd.Series(dtype="string"), "workload_id": pd.Series(dtype="string")})
    return pd.concat(frames, ignore_index=True)


def write_tables(run_dir: Path) -> dict[str, Path]:
    """Build every table and write tables/<name>.parquet; returns name -> path. A tables/ that is a
    symbolic link is refused (safeio.Refused) before anything is parsed; each file is written anew and
    renamed into place, so a link planted as a table file is replaced, not written through."""
    out_dir = safeio.directory(Path(run_dir) / "tables")
    paths = {}
    for name, frame in build_tables(run_dir).items():
        path = out_dir / f"{name}.parquet"
        with safeio.replacing(path) as handle:
            frame.to_parquet(handle, index=False)
        paths[name] = path
    return paths


def read_table(path: Path) -> pd.DataFrame:
    """One tables/<name>.parquet, read under the rules of analysis.safeio."""
    with safeio.open_source(path, "table") as handle:
        return pd.read_parquet(handle)


def load_tables(run_dir: Path, names: tuple[str, ...] = TABLE_NAMES) -> dict[str, pd.DataFrame] | None:
    """The named tables of a run as written; None when one is missing, refused or unreadable (build them again)."""
    out_dir = Path(run_dir) / "tables"
    if out_dir.is_symlink() or not all(os.path.lexists(out_dir / f"{name}.parquet") for name in names):
        return None
    try:
        with safeio.confined(run_dir):
            return {name: read_table(out_dir / f"{name}.parquet") for name in names}
    except (safeio.Refused, OSError, ValueError, pa.ArrowException):
        return None


def run_tables(run_dir: Path, names: tuple[str, ...] = TABLE_NAMES) -> dict[str, pd.DataFrame]:
    """The named tables as the run's tables/ holds them; when one is missing, refused or unreadable, every table
    parsed from raw/ in memory. Never writes: reading another run (compare, predict, a notebook) must not put
    tables into it while its own bench may still be running."""
    tables = load_tables(run_dir, names)
    return tables if tables is not None else build_tables(run_dir)


def read_tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    """The tables of a run, written first when any is missing, refused or unreadable."""
    tables = load_tables(run_dir)
    if tables is None:
        write_tables(run_dir)
        tables = load_tables(run_dir)
    if tables is None:
        raise safeio.Refused(f"{Path(run_dir) / 'tables'}: the tables just written cannot be read back")
    return tables
