"""The run directory's layout, the one definition the harness (which writes it) and the analysis (which reads it)
share: where runs live, what each holds, how a reference to a run resolves, and walking its raw outputs.

    results/<run-id>/                RESULTS_DIR (SPILLWAY_RESULTS overrides it), `latest` links the newest
        manifest.json                MANIFEST: run-level facts, every step (docs/run-directory.md)
        logs/                        LOGS: one Ansible log per step
        raw/<host>/<source>/<workload-id>/   RAW: what the collectors and the workload steps wrote
        attempts/                    ATTEMPTS: a resumed workload run's earlier outputs
        tables/*.parquet             TABLES: what the parsers made of raw/ (docs/tables.md); findings.parquet
        findings.json                FINDINGS: what the findings rules said of the tables (docs/findings.md)
        report.html                  REPORT

A package of its own below both the harness and the analysis (docs/architecture.md, "Layers"), standard library
only, so that the harness reads the layout without importing the analysis or starting pandas.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


RESULTS_DIR = Path(os.environ.get("SPILLWAY_RESULTS", Path(__file__).resolve().parent.parent / "results"))
MANIFEST = "manifest.json"
LOGS = "logs"
RAW = "raw"
ATTEMPTS = "attempts"
TABLES = "tables"
REPORT = "report.html"
FINDINGS = "findings.json"
HIBENCH_REPORT = "hibench.report"
FINDINGS_TABLE = "findings.parquet"
LATEST = "latest"


class RunOutsideResults(FileNotFoundError):
    """A run named by id, or `latest`, that leads out of the results folder (a symbolic link planted there): what
    is written into a run directory (tables/, report.html, findings.json) must not land wherever a link points."""


def _inside_results(path: Path, results_dir: Path, ref: str) -> Path:
    resolved = path.resolve()
    if not resolved.is_relative_to(results_dir.resolve()):
        raise RunOutsideResults(
            f"{ref!r}: {path} leads out of {results_dir} (to {resolved}): a run named by id or `latest` must be a "
            f"folder under {results_dir}; remove the link, or name the run directory by its own path")
    return resolved


def resolve_run_dir(ref: str, results_dir: Path | None = None) -> Path:
    """A path to a run directory, a run id under results/, or `latest` (the newest run). A path that is itself a
    symbolic link, and an id or `latest` that resolves outside results/, are refused (RunOutsideResults)."""
    results_dir = RESULTS_DIR if results_dir is None else results_dir
    candidate = Path(ref)
    if candidate.is_dir() and ((candidate / MANIFEST).exists() or (candidate / RAW).is_dir()):
        if candidate.is_symlink():
            raise RunOutsideResults(f"{ref!r} is a symbolic link to {candidate.resolve()}: name the run directory "
                                    f"itself, so that what is written into it cannot land elsewhere")
        return candidate.resolve()
    if ref == "latest":
        link = results_dir / LATEST
        if link.exists():
            return _inside_results(link, results_dir, ref)
        runs = sorted(p for p in results_dir.glob("*") if p.is_dir() and (p / MANIFEST).exists())
        if not runs:
            raise FileNotFoundError(f"no run directory under {results_dir}: run `make bench` first")
        # Run ids start with YYYYmmdd-HHMMSS, so the name order is the time order.
        return _inside_results(runs[-1], results_dir, ref)
    by_id = results_dir / ref
    if by_id.is_dir():
        return _inside_results(by_id, results_dir, ref)
    raise FileNotFoundError(
        f"{ref!r} is neither a run directory (with manifest.json or raw/) nor a run id under {results_dir}; "
        f"existing runs: {', '.join(sorted(p.name for p in results_dir.glob('*') if p.is_dir())) or 'none'}"
    )


@dataclass(frozen=True)
class RawOutput:
    """One `raw/<host>/<source>/<workload-id>/` folder."""

    host: str
    source: str          # collector name or `workload`
    workload_id: str
    path: Path


def real_subdirectories(folder: Path) -> list[Path]:
    """The directories in `folder`, symbolic links left out (the analysis never follows them: see symlinks)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
    except (FileNotFoundError, NotADirectoryError):
        return []


def raw_outputs(run_dir: Path, source: str) -> Iterator[RawOutput]:
    """Every `raw/<host>/<source>/<workload-id>/` folder of the run, in a stable order."""
    raw = Path(run_dir) / RAW
    if raw.is_symlink():
        return
    for host_dir in real_subdirectories(raw):
        source_dir = host_dir / source
        if source_dir.is_symlink():
            continue
        for workload_dir in real_subdirectories(source_dir):
            yield RawOutput(host_dir.name, source, workload_dir.name, workload_dir)


def symlinks(run_dir: Path) -> list[Path]:
    """Every symbolic link in raw/ (raw/ itself included), none followed."""
    raw = Path(run_dir) / RAW
    if raw.is_symlink():
        return [raw]
    found = []
    for folder, dirs, files in os.walk(raw):
        found += [Path(folder, name) for name in sorted(dirs + files) if os.path.islink(os.path.join(folder, name))]
    return sorted(found)
