"""The time rules (analysis/findings/rules/run_time.py, docs/findings.md): `storage-sensitive` and `cannot-tell`
on the recorded placement-matrix run
(tests/fixtures/runs/terasort-matrix: TeraSort on Spark, HDFS and local dirs on hdd or ssd, one run each).

Over a run's own configurations, they rest on the statistics (the recorded runs, then each repeated three times);
over a comparison, on its own verdicts."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

from analysis import statistics
from analysis.compare_page import write_comparison
from analysis.tables import TABLE_NAMES
from conftest import findings_of, fired_on

MATRIX = Path(__file__).resolve().parents[3] / "fixtures" / "runs" / "terasort-matrix"


def test_time_rules_rest_on_the_statistics(matrix_tables):
    table = findings_of(matrix_tables)
    # recorded: one run per placement, 26.2-36.4 s, no noise level: the statistics cannot tell
    assert fired_on(table, "cannot-tell") == {"terasort"} and fired_on(table, "storage-sensitive") == set()
    # changed: each placement repeated 3 times (the recorded time and 1 % either side)
    workloads = pd.concat([matrix_tables["workloads"].assign(workload_id=lambda f, i=i: f["workload_id"] + f"-r{i}",
                                                        run_s=lambda f, k=k: f["run_s"] * k)
                           for i, k in enumerate((0.99, 1.0, 1.01))], ignore_index=True)
    repeated = findings_of(dict(matrix_tables, workloads=workloads))
    assert fired_on(repeated, "cannot-tell") == set() and fired_on(repeated, "storage-sensitive") == {"terasort"}
    assert any(e.startswith("HDFS ssd, local hdd 26.2 s vs HDFS hdd, local hdd 36.4 s: 1.39 x")
               for e in repeated.query("rule == 'storage-sensitive'")["evidence"])
    # a host whose runs differ by 50 % on their own: none of these differences counts
    noisy = findings_of(dict(matrix_tables, workloads=workloads), statistics.Noise(50.0, "calibration"))
    assert fired_on(noisy, "storage-sensitive") == set()


def test_comparison_opens_with_the_findings_of_each_run_and_its_own_verdicts(tmp_path):
    runs = []
    for name in ("20261121-201144-local", "20261122-201144-local"):   # the recorded matrix, and the same again
        run = tmp_path / name
        shutil.copytree(MATRIX, run)
        for table in TABLE_NAMES:
            if not (run / "tables" / f"{table}.parquet").exists():
                pd.DataFrame(columns=["host", "workload_id"]).to_parquet(run / "tables" / f"{table}.parquet")
        manifest = json.loads((run / "manifest.json").read_text())
        (run / "manifest.json").write_text(json.dumps({**manifest, "run_id": name}))
        runs.append(run)
    html = write_comparison([str(r) for r in runs], tmp_path / "cmp").read_text()
    assert html.index('id="findings"') < html.index('id="differences"') < html.index('id="workloads"')
    found = pd.read_parquet(tmp_path / "cmp" / "tables" / "compare_findings.parquet")
    # each run's own findings, named by its run; the time rules once, from the comparison (8 configurations, 1 run each)
    assert set(found.loc[found["rule"] == "page-cache", "run"]) == {r.name for r in runs}
    [cannot] = found[found["rule"] == "cannot-tell"].to_dict("records")
    assert cannot["run"] == "" and json.loads(cannot["values"])["configurations"] == 7
    assert "storage-sensitive" not in set(found["rule"]) and "faster" not in html.split('id="workloads"')[1].split("</table>")[0]
    document = json.loads((tmp_path / "cmp" / "findings.json").read_text())
    assert {r["rule"]: r["status"] for r in document["rules"]}["device-saturated"] == "fired"
