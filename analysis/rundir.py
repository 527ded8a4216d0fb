"""Locating a run directory and walking its raw collector/workload outputs."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from . import safeio
from .parsers.manifest import conform

RESULTS_DIR = Path(os.environ.get("SPILLWAY_RESULTS", Path(__file__).resolve().parent.parent / "results"))


def resolve_run_dir(ref: str, results_dir: Path = RESULTS_DIR) -> Path:
    """A path to a run directory, a run id under results/, or `latest` (the newest run)."""
    candidate = Path(ref)
    if candidate.is_dir() and ((candidate / "manifest.json").exists() or (candidate / "raw").is_dir()):
        return candidate.resolve()
    if ref == "latest":
        link = results_dir / "latest"
        if link.exists():
            return link.resolve()
        runs = sorted(p for p in results_dir.glob("*") if p.is_dir() and (p / "manifest.json").exists())
        if not runs:
            raise FileNotFoundError(f"no run directory under {results_dir}: run `make bench` first")
        # Run ids start with YYYYmmdd-HHMMSS, so the name order is the time order.
        return runs[-1].resolve()
    by_id = results_dir / ref
    if by_id.is_dir():
        return by_id.resolve()
    raise FileNotFoundError(
        f"{ref!r} is neither a run directory (with manifest.json or raw/) nor a run id under {results_dir}; "
        f"existing runs: {', '.join(sorted(p.name for p in results_dir.glob('*') if p.is_dir())) or 'none'}"
    )


@dataclass(frozen=True)
class ManifestReading:
    """The run's manifest as the analysis uses it, and how reading it went: status `ok`, `missing`, `refused`
    (a rule of analysis.safeio stopped the read), `error` (no JSON object) or `malformed` (parts without the
    documented shape were left out: `message` names them)."""

    manifest: dict
    status: str
    message: str = ""


def read_manifest(run_dir: Path) -> ManifestReading:
    path = Path(run_dir) / "manifest.json"
    if not os.path.lexists(path):
        return ManifestReading({}, "missing", "no manifest.json")
    try:
        doc = safeio.read_json(path, "manifest")
    except safeio.Refused as error:
        return ManifestReading({}, "refused", str(error))
    except (OSError, ValueError) as error:
        return ManifestReading({}, "error", f"{type(error).__name__}: {error}")
    manifest, problems = conform(doc)
    if not problems:
        return ManifestReading(manifest, "ok")
    shown = "; ".join(problems[:5]) + (f"; ... ({len(problems)} in all)" if len(problems) > 5 else "")
    return ManifestReading(manifest, "error" if not isinstance(doc, dict) else "malformed", shown)


def load_manifest(run_dir: Path) -> dict:
    """The manifest, with only the documented types where it documents them (read_manifest); {} when it is
    absent or unreadable (a partial run still gets a report)."""
    return read_manifest(run_dir).manifest


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
    raw = Path(run_dir) / "raw"
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
    raw = Path(run_dir) / "raw"
    if raw.is_symlink():
        return [raw]
    found = []
    for folder, dirs, files in os.walk(raw):
        found += [Path(folder, name) for name in sorted(dirs + files) if os.path.islink(os.path.join(folder, name))]
    return sorted(found)
