"""The eventlog collector's folder as a source (parsers/registry.py): the Spark event logs in it, and each one's
tables with a note of what was skipped or not understood."""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from .eventlog import event_log_files, parse_event_log
from .spark_properties import MAX_VALUE_CHARS
from .source import Absent, Found, absent_rows, none_unless_error

# EventLog attribute -> table name
SPARK_TABLES = {"applications": "spark_applications", "jobs": "spark_jobs", "stages": "stages",
                "tasks": "spark_tasks", "executors": "spark_executors", "sql_executions": "spark_sql",
                "properties": "spark_properties"}


def event_logs(folder: Path) -> list[Found | Absent]:
    """Each log in the folder's eventlogs/ (the folder itself where there is none), named by its file or, for a
    log in parts, their folder; its parser is given the parts and the run directory. An eventlogs/ that is a
    symbolic link gives nothing: the `refused` row of every link in raw/ names it."""
    logs_folder = folder / "eventlogs"
    if logs_folder.is_symlink():
        return []
    logs = [files for files in event_log_files(logs_folder if logs_folder.is_dir() else folder) if files]
    run_dir = folder.parents[3]         # raw/<host>/eventlog/<workload-id>/
    return [Found(files[0] if len(files) == 1 else files[0].parent, (files, run_dir)) for files in logs] \
        or absent_rows(folder, "Spark event log", none_unless_error)


def spark_tables(files: list[Path], run_dir: Path) -> tuple[dict[str, pd.DataFrame], str]:
    """The Spark tables of one log, its path within the run directory (so that a copy of the run elsewhere
    builds the same tables), and a note of what was skipped or not understood."""
    log = parse_event_log(files)
    app = log.applications.iloc[0]
    notes = []
    if app["skipped_lines"]:
        notes.append(f"repaired: {app['skipped_lines']} cut or malformed line(s) skipped")
    if app["unknown_events"]:
        notes.append(f"{app['unknown_events']} event(s) of unknown type counted, not parsed: {app['unknown_event_types']}")
    if log.properties_left_out:
        notes.append(f"{log.properties_left_out} allowed Spark or Hadoop property value(s) left out: not text or "
                     f"longer than {MAX_VALUE_CHARS} characters")
    tables = {table: getattr(log, attribute) for attribute, table in SPARK_TABLES.items()}
    applications = tables["spark_applications"]
    if "log_path" in applications:
        applications["log_path"] = applications["log_path"].map(
            lambda path: os.path.relpath(path, run_dir) if path else path)
    return tables, "; ".join(notes)
