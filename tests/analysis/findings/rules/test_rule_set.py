"""The rule set (analysis/findings/rules/__init__.py, docs/findings.md): every rule documented with its thresholds,
and the report opening with the rules' findings in the rule set's order and writing them for machines, on the
recorded placement-matrix run (tests/fixtures/runs/terasort-matrix)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

from analysis.findings.engine import COLUMNS
from analysis.findings.rules import RULES
from analysis.report_page import write_report
from analysis.tables import TABLE_NAMES
from conftest import findings_of, recorded_tables

MATRIX = Path(__file__).resolve().parents[3] / "fixtures" / "runs" / "terasort-matrix"


def test_every_rule_is_documented_with_its_threshold():
    doc = (Path(__file__).resolve().parents[4] / "docs" / "findings.md").read_text()
    assert len({r.id for r in RULES}) == len(RULES) >= 9
    for r in RULES:
        assert f"### `{r.id}`" in doc, r.id
        for name in r.thresholds:
            assert f"`{name}`" in doc and f"`{name}`" in r.trigger, (r.id, name)


def test_the_rules_judge_workloads_not_the_fio_sweeps_own_requests():
    tables = recorded_tables("default-bench-quiet")
    # the sweep's device samples and requests are recorded (its block trace left out of the fixture, not its iostat)
    assert (tables["iostat"]["workload_id"] == "fio-sweep").any()
    found = findings_of(tables)
    assert not found.empty and "fio-sweep" not in set(found["workload_id"])
    with_sweep = dict(tables, workloads=tables["workloads"].assign(
        workload=tables["workloads"]["workload"].replace({"fio-sweep": "sweep-as-a-workload"})))
    assert "fio-sweep" in set(findings_of(with_sweep)["workload_id"])     # the test can fail: judged as a workload


def test_the_levels_table_of_the_docs_is_the_catalogs():
    doc = (Path(__file__).resolve().parents[4] / "docs" / "findings.md").read_text()
    for r in RULES:
        cuts = ", ".join(f"{c:g}" for c in r.levels["cut_points"])
        assert f"| `{r.id}` | `{r.levels['measure']}` | {cuts} |" in doc, r.id


def test_report_opens_with_the_findings_and_writes_them_for_machines(tmp_path):
    run = tmp_path / "terasort-matrix"
    shutil.copytree(MATRIX, run)
    for name in TABLE_NAMES:   # tables newer than the recording: empty, as the analysis writes a source-less table
        if not (run / "tables" / f"{name}.parquet").exists():
            pd.DataFrame(columns=["host", "workload_id"]).to_parquet(run / "tables" / f"{name}.parquet")
    html = write_report(run).read_text()
    # the findings first: the next section is the overview
    assert html.index('id="findings"') < html.index("<h2", html.index('id="findings"') + 1) == html.index('<h2 id="overview"')
    section = html[html.index('id="findings"'):html.index('id="overview"')]
    assert "The page cache served most reads" in section and "What to do:" in section and "2.4 %" in section
    document = json.loads((run / "findings.json").read_text())
    assert [r["rule"] for r in document["rules"]] == [r.id for r in RULES]
    table = pd.read_parquet(run / "tables" / "findings.parquet")
    assert list(table.columns) == COLUMNS
    assert len(table) == len(document["findings"]) == sum(r["findings"] for r in document["rules"]) > 0
    assert all(f"<code>{key}</code>" in section for key in table["key"])        # each finding's key, on the page
    assert {r["rule"] for r in document["rules"] if r["status"] == "fired"} == set(table["rule"])
