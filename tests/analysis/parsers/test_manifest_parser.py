"""Steps and workloads from the runner's manifest (docs/run-directory.md), partial runs included."""
import json

from analysis.parsers.manifest import missing_keys, steps_table, workloads_table
from conftest import MANIFEST


def test_steps_of_run_and_workloads():
    steps = steps_table(json.loads(MANIFEST))
    assert list(steps["scope"]) == ["run", "run", "workload", "workload", "workload"]
    failed = steps[steps["status"] == "failed"].iloc[0]
    assert failed["name"] == "report" and "logs/report.log" in failed["error"]
    assert steps.loc[steps["name"] == "validate", "status"].item() == "running"
    assert steps["duration_s"].dtype == "float64"


def test_workloads_window():
    workloads = workloads_table(json.loads(MANIFEST)).set_index("workload_id")
    assert workloads.loc["fio-sweep", "duration_s"] == 20.0
    assert workloads.loc["spark-tiny", "status"] == "failed"


def test_partial_manifest():
    partial = {"run_id": "x", "status": "running"}
    assert "steps" in missing_keys(partial) and "emulation" in missing_keys(partial)
    assert steps_table(partial).empty and workloads_table(partial).empty
