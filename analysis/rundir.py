"""Locating a run directory and walking its raw collector/workload outputs."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

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


def load_manifest(run_dir: Path) -> dict:
    """The manifest, or {} when it is absent or unreadable (a partial run still gets a report)."""
    path = run_dir / "manifest.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


@dataclass(frozen=True)
class RawOutput:
    """One `raw/<host>/<source>/<workload-id>/` folder."""

    host: str
    source: str          # collector name or `workload`
    workload_id: str
    path: Path


def raw_outputs(run_dir: Path, source: str) -> Iterator[RawOutput]:
    """Every `raw/<host>/<source>/<workload-id>/` folder of the run, in a stable order."""
    for host_dir in sorted((run_dir / "raw").glob("*")):
        source_dir = host_dir / source
        if not source_dir.is_dir():
            continue
        for workload_dir in sorted(p for p in source_dir.iterdir() if p.is_dir()):
            yield RawOutput(host_dir.name, source, workload_dir.name, workload_dir)
