"""The tables are a function of the run directory alone: the recorded run builds the tables it built before the
analysis was redesigned on layers (issue 15), and a copy of a run elsewhere builds the same bytes and report."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from analysis.report_page import write_report
from analysis.tables import build_tables, write_tables
from conftest import FIXTURES, add_pfs_recordings, assemble_run
from table_digest import digests

BEFORE = FIXTURES / "tables" / "recorded-run.json"
# columns added to a table since the digests were recorded: the rest of the table must be what it was
ADDED_COLUMNS = {"workloads": ["parameters"], "fio": ["class_limit_bytes_per_s", "over_class_limit", "issue_s"]}


def test_the_recorded_run_builds_the_tables_it_built_before_the_redesign(tmp_path):
    run = assemble_run(tmp_path)
    add_pfs_recordings(run)
    before = json.loads(BEFORE.read_text())
    tables = build_tables(run)
    for name, added in ADDED_COLUMNS.items():
        assert set(added) <= set(tables[name].columns), (name, added)
        tables[name] = tables[name].drop(columns=added)
    now = digests(tables, str(run))
    assert {name: now.get(name) for name in before} == before
    assert {"devices", "host_cpu"} <= set(now) - set(before), "the tables the redesign added"


def test_a_copy_in_another_results_folder_builds_byte_identical_tables_and_the_same_report(tmp_path):
    here = assemble_run(tmp_path / "results")
    add_pfs_recordings(here)
    elsewhere = tmp_path / "elsewhere" / "empty-results" / here.name
    shutil.copytree(here, elsewhere)
    for run in (here, elsewhere):
        write_tables(run)
        write_report(run)
    names = sorted(p.name for p in (here / "tables").iterdir())
    assert names == sorted(p.name for p in (elsewhere / "tables").iterdir())
    differ = [name for name in names if (here / "tables" / name).read_bytes() != (elsewhere / "tables" / name).read_bytes()]
    assert differ == []
    assert page(here) == page(elsewhere)


def page(run: Path) -> str:
    """report.html without what names where it lies and when it was written (its header says both)."""
    text = (run / "report.html").read_text().replace(str(run), "<run directory>")
    return re.sub(r"report generated [0-9-]+ [0-9:]+ UTC", "report generated <time>", text)
