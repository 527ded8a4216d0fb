"""Parse a run directory's raw/ and its steps' logs/ into the tidy tables of docs/tables.md (tables/<name>.parquet).

What is parsed from raw/, and how, is the sources' registry (parsers/registry.py): this module walks raw/ by it,
adds each table's `host` and `workload_id`, and records how each file went in the `sources` table. A source that
fails to parse never stops the others: the failure is recorded in `sources` (and shown in the report) with the
file and the error. The run directory is untrusted input: every read goes through analysis.safeio (regular files
only, no symbolic link, size caps), what a rule refuses is recorded as `refused`, and the tables are written
without following a symlink.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pandas as pd
import pyarrow as pa

from . import fio_limits, safeio
from .parsers import manifest as manifest_parser, step_logs, storage
from .parsers.manifest import read_manifest
from .parsers.registry import SOURCES
from .parsers.source import Absent, Found, Source
from run_layout import RAW, RawOutput, raw_outputs, real_subdirectories, symlinks

# Tables not parsed from raw/: the hosts' storage records and the manifest give devices, steps and workloads, the
# steps' logs workload_commands.
_RUN_TABLES = ("devices", "steps", "workloads", "workload_commands")
TABLE_NAMES = (*dict.fromkeys(table for source in SOURCES for table in source.tables), *_RUN_TABLES, "sources")
SOURCE_COLUMNS = ["host", "source", "workload_id", "file", "status", "rows", "message"]
# The text columns of each table parsed from raw/ or logs/ (docs/tables.md); every other column holds numbers or
# booleans. None: every column but time_s and value.
TEXT_COLUMNS = {**{table: text for source in SOURCES for table, text in source.tables.items()},
                "workload_commands": ("step", "task")}
# raw/<name>/<workload-id>.<ext>, no host folder
_CLUSTER_WIDE = {source.name for source in SOURCES if source.cluster_wide}


class _Parsed:
    """The frames parsed from raw/ so far, by table, and the rows of the `sources` table: how each file went."""

    def __init__(self) -> None:
        self.frames: dict[str, list[pd.DataFrame]] = {name: [] for name in TABLE_NAMES}
        self.sources: list[dict] = []

    def row(self, raw: RawOutput, file: str, status: str, message: str, rows: int = 0) -> None:
        self.sources.append({"host": raw.host, "source": raw.source, "workload_id": raw.workload_id, "file": file,
                             "status": status, "rows": rows, "message": message})

    def add(self, raw: RawOutput, source: Source, found: Found | Absent) -> None:
        """A found file's frames to their tables, with its row(s) in `sources`; an absent one's row."""
        if isinstance(found, Absent):
            self.row(raw, found.what, found.status, found.message)
            return
        file = str(found.named.relative_to(raw.path.parents[2]))
        try:
            frames, note = source.frames(found)
        except Exception as error:  # noqa: BLE001 - one bad file must not hide the others
            for _ in source.counted:
                self.row(raw, file, *_failure(error))
            return
        for counted in source.counted:
            try:
                tables = {counted: frames[counted]} if source.row_per_table else frames
                for table, frame in tables.items():
                    frame.insert(0, "workload_id", raw.workload_id)
                    frame.insert(0, "host", raw.host)
                    _as_stored(table, frame)
            except Exception as error:  # noqa: BLE001 - one bad file must not hide the others
                self.row(raw, file, *_failure(error))
                continue
            for table, frame in tables.items():
                self.frames[table].append(frame)
            self.row(raw, file, "ok", note, rows=len(frames[counted]))

    def refused_links(self, run_dir: Path) -> None:
        """A row for every symbolic link in raw/ that no row names yet (a link to a folder, or a file no
        parser looked for): none is followed."""
        named = [row["file"] for row in self.sources]
        raw = Path(run_dir) / RAW
        for link in symlinks(run_dir):
            parts = link.relative_to(raw).parts if link != raw else ()
            if len(parts) > 1 and parts[0] in _CLUSTER_WIDE:      # named as its files' rows are
                host, source, workload_id, file = "", parts[0], Path(parts[1]).stem, str(link.relative_to(run_dir))
            else:
                host, source, workload_id = (list(parts) + ["", "", ""])[:3]
                file = os.sep.join(parts) or "."
            if any(name == file or name.startswith(file + os.sep) for name in named):
                continue
            self.row(RawOutput(host, source, workload_id, link), file, "refused",
                     f"a symbolic link (to {_link_target(link)}): not followed"[:500])


def _failure(error: Exception) -> tuple[str, str]:
    """The status and message of a file whose reading failed: refused by a rule of safeio, else malformed."""
    if isinstance(error, safeio.Refused):
        return "refused", str(error)[:500]
    return "error", f"{type(error).__name__}: {error}"[:500]


def _link_target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError:
        return "?"


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


def build_tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    """Every table of the run, in memory."""
    run_dir = Path(run_dir)
    with safeio.confined(run_dir):
        return _build_tables(run_dir)


def _build_tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    parsed = _Parsed()
    for entries in _by_source().values():
        for raw, source, found in _found(run_dir, entries):
            parsed.add(raw, source, found)
    storage_by_host = _storage_records(run_dir, parsed)
    parsed.refused_links(run_dir)

    reading = read_manifest(run_dir)
    manifest = reading.manifest
    tables = {name: _concat(frames) for name, frames in parsed.frames.items() if name != "sources"}
    for source in SOURCES:
        for table in source.tables if source.cluster_wide else ():
            tables[table] = tables[table].drop(columns="host")
    tables["devices"] = storage.devices_table(storage_by_host, manifest)
    # Each fio point against what its device class can deliver (fio_limits): a faster one measured a cache.
    tables["fio"] = fio_limits.with_class_limits(
        tables["fio"], dict(zip(tables["devices"]["backend"], tables["devices"]["profile"])),
        fio_limits.recorded_profiles(manifest))
    tables["steps"] = manifest_parser.steps_table(manifest)
    tables["workloads"] = manifest_parser.workloads_table(manifest)
    commands, command_sources = step_logs.workload_commands_table(run_dir, manifest)
    tables["workload_commands"] = _as_stored("workload_commands", commands)
    parsed.sources += command_sources
    if reading.status not in ("ok", "missing"):
        # Listed only when something is wrong with it, so that a valid run's sources are those of raw/.
        parsed.sources.insert(0, {"host": "", "source": "manifest", "workload_id": "", "file": "manifest.json",
                                  "status": reading.status, "message": reading.message[:500],
                                  "rows": len(tables["steps"]) + len(tables["workloads"])})
    tables["sources"] = pd.DataFrame(parsed.sources, columns=SOURCE_COLUMNS)
    return tables


def _by_source() -> dict[str, list[Source]]:
    """The registry's entries by source, in the order of each source's first entry."""
    entries: dict[str, list[Source]] = {}
    for source in SOURCES:
        entries.setdefault(source.name, []).append(source)
    return entries


def _found(run_dir: Path, entries: list[Source]) -> Iterator[tuple[RawOutput, Source, Found | Absent]]:
    """What the entries of one source find, folder by folder and entry by entry; a cluster-wide source's files
    are each a workload run's."""
    name = entries[0].name
    if entries[0].cluster_wide:
        folder = Path(run_dir) / RAW / name
        for source in entries:
            for found in [] if folder.is_symlink() else source.files(folder):
                yield RawOutput("", name, found.named.stem, found.named.with_suffix("")), source, found
        return
    for raw in raw_outputs(run_dir, name):
        for source in entries:
            for found in source.files(raw.path):
                yield raw, source, found


def _storage_records(run_dir: Path, parsed: _Parsed) -> dict[str, dict]:
    """host -> its raw/<host>/storage.json, for each host that has one; `sources` says how each read went."""
    records, raw = {}, Path(run_dir) / RAW
    for host_dir in real_subdirectories(raw) if not raw.is_symlink() else []:
        file = host_dir / "storage.json"
        if not os.path.lexists(file):
            continue
        where = RawOutput(host_dir.name, "storage", "", host_dir)
        try:
            records[host_dir.name] = storage.read_storage(file)
        except (safeio.Refused, OSError, ValueError) as error:
            parsed.row(where, f"{host_dir.name}/storage.json", *_failure(error))
        else:
            parsed.row(where, f"{host_dir.name}/storage.json", "ok", "",
                       rows=len(records[host_dir.name].get("backends") or {}))
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
