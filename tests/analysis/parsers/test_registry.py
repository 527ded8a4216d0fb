"""The sources' registry: every collector of the repository has its entry, and a new collector's output becomes a
table, with its outcome in `sources`, by what README.md's "Add a collector" asks and nothing else: the collector's
folder, its parser and one entry in analysis/parsers/registry.py."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import yaml

from analysis.parsers.registry import SOURCES

REPO = Path(__file__).resolve().parents[3]
# Sources that are no collector's: the workload steps' own outputs and the bench's Prometheus archive.
NOT_COLLECTORS = {"workload", "prometheus"}


def test_every_collector_has_an_entry_and_every_entry_a_writer():
    collectors = {yaml.safe_load(path.read_text())["name"] for path in (REPO / "collectors").glob("*/collector.yml")}
    sources = {source.name for source in SOURCES}
    assert sources - NOT_COLLECTORS == collectors


def test_every_table_has_one_source_and_counts_its_rows_in_a_table_it_yields():
    tables = [table for source in SOURCES for table in source.tables]
    assert len(tables) == len(set(tables))
    assert all(set(source.counted) <= set(source.tables) for source in SOURCES)


TOY_COLLECTOR = {
    "collector.yml": """\
        name: toy-clock
        description: The controller's clock at the workload's start and stop (a test's collector).
        hosts: workers
        outputs:
          clock.start: epoch seconds, taken by start
          clock.stop: the same, taken by stop
        """,
    "start": """\
        #!/usr/bin/env python3
        import sys, time
        from pathlib import Path
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
        from spillway_collector import guarded
        guarded(lambda ctx: (ctx.out / "clock.start").write_text(f"{time.time():.6f}\\n"))
        """,
    "stop": """\
        #!/usr/bin/env python3
        import sys, time
        from pathlib import Path
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
        from spillway_collector import guarded
        guarded(lambda ctx: (ctx.out / "clock.stop").write_text(f"{time.time():.6f}\\n"))
        """,
}
TOY_PARSER = '''\
    """The toy-clock collector's snapshots: the window's length."""
    from pathlib import Path

    import pandas as pd

    from .. import safeio


    def window_table(start: Path, stop: Path) -> pd.DataFrame:
        first, last = (float(safeio.read_text(path, "note")) for path in (start, stop))
        return pd.DataFrame({"window_s": [last - first]})
    '''
TOY_ENTRY = ('    Source("toy-clock", Window("clock.start", none_if_nothing_here, missing), toy_clock.window_table,'
             ' {"toy_clock": ()}),\n')


def add_toy_collector(tree: Path) -> None:
    """What the guide asks: the collector's folder, its parser, and its entry in the registry (with its import)."""
    folder = tree / "collectors" / "toy-clock"
    folder.mkdir(parents=True)
    for name, text in TOY_COLLECTOR.items():
        (folder / name).write_text(textwrap.dedent(text))
        if name != "collector.yml":
            (folder / name).chmod(0o755)
    (tree / "analysis" / "parsers" / "toy_clock.py").write_text(textwrap.dedent(TOY_PARSER))
    registry = tree / "analysis" / "parsers" / "registry.py"
    text = registry.read_text()
    assert text.endswith("\n)\n"), "the registry ends with its list of entries"
    text = text.replace("\nfrom .source import", "\nfrom . import toy_clock\nfrom .source import", 1)
    registry.write_text(text[:-2] + TOY_ENTRY + ")\n")


def collect(tree: Path, out: Path, *steps: str) -> None:
    """Run the collector's steps as the bench does, the folder fetched to `out` (raw/<host>/<name>/<id>/)."""
    env = {**os.environ, "SPILLWAY_ROOT": str(out.parents[3]), "SPILLWAY_OUT": str(out), "SPILLWAY_WORKLOAD_ID": out.name}
    for step in steps:
        subprocess.run([str(tree / "collectors" / "toy-clock" / step)], env=env, check=True)


def test_a_new_collector_needs_its_folder_its_parser_and_one_registry_entry(tmp_path):
    tree = tmp_path / "tree"
    for package in ("analysis", "run_layout", "collectors/lib"):
        shutil.copytree(REPO / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    add_toy_collector(tree)
    run = tmp_path / "results" / "20261128-000000-local"
    collect(tree, run / "raw" / "w1" / "toy-clock" / "wl-1", "start", "stop")
    collect(tree, run / "raw" / "w2" / "toy-clock" / "wl-1", "start")          # stopped before its stop ran
    (run / "raw" / "w3" / "toy-clock" / "wl-1").mkdir(parents=True)
    (run / "raw" / "w3" / "toy-clock" / "wl-1" / "nothing-here.txt").write_text("no clock here\n")

    subprocess.run([sys.executable, "-m", "analysis", "tables", str(run)], cwd=tree, check=True,
                   env={**os.environ, "PYTHONPATH": str(tree)}, stdout=subprocess.DEVNULL)

    clock = pd.read_parquet(run / "tables" / "toy_clock.parquet")
    assert list(clock.columns) == ["host", "workload_id", "window_s"]
    assert list(clock["host"]) == ["w1"] and list(clock["workload_id"]) == ["wl-1"] and clock["window_s"].ge(0).all()
    sources = pd.read_parquet(run / "tables" / "sources.parquet").query("source == 'toy-clock'")
    assert sources[["host", "file", "status", "rows"]].values.tolist() == [
        ["w1", "w1/toy-clock/wl-1/clock.stop", "ok", 1],
        ["w2", "clock.stop", "missing", 0],
        ["w3", "clock.start", "none", 0],
    ]
