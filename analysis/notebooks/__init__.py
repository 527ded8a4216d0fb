"""What the notebooks of this folder share: opening runs as `analysis compare` does (a run whose tables/ is
incomplete, e.g. a bench still running, is parsed in memory, never written into) and showing the package's
figures, which it renders as base64 PNG for its HTML pages, inline."""
from __future__ import annotations

import base64
from pathlib import Path

from IPython.display import Image, Markdown, display

from ..across_runs.runs import Run
from ..parsers.manifest import workloads_table
from ..parsers.manifest import load_manifest
from run_layout import RESULTS_DIR, resolve_run_dir
from ..tables import run_tables


REPOSITORY = Path(__file__).resolve().parents[2]


def rooted(ref: str) -> str:
    """A relative path such as `results/<id>` read from the repository root, as on the command line, not
    from the notebook's folder where the kernel runs; run ids and `latest` pass through."""
    path = Path(ref)
    return str(REPOSITORY / path) if not path.is_absolute() and not path.exists() and (REPOSITORY / path).exists() \
        else ref


def open_run(ref: str) -> Run:
    """A run directory, a run id under results/, or `latest`, with its manifest and tables."""
    run_dir = resolve_run_dir(rooted(ref))
    manifest = load_manifest(run_dir)
    tables = run_tables(run_dir)
    # from the manifest: tables written by an older analysis may lack newer columns (prepare_s, warmup...)
    tables["workloads"] = workloads_table(manifest)
    return Run(run_dir, manifest.get("run_id") or run_dir.name, manifest, tables)


def newest_runs(count: int = 2) -> list[str]:
    """The newest `count` run directories under results/ (run ids sort by time), oldest first."""
    runs = sorted(p for p in RESULTS_DIR.glob("*") if p.is_dir() and (p / "manifest.json").exists()
                  and not p.is_symlink())
    return [str(p) for p in runs[-count:]]


def show(figure) -> None:
    """One figure of the package: a base64 PNG, or a dict with `png` and an optional `caption`;
    None (nothing to plot in this run) says so instead."""
    if figure is None:
        display(Markdown("*no data for this figure in this run*"))
        return
    png = figure["png"] if isinstance(figure, dict) else figure
    display(Image(data=base64.b64decode(png), format="png"))
    if isinstance(figure, dict) and figure.get("caption"):
        print(figure["caption"])
