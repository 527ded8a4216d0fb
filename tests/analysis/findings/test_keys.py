"""Findings' keys (analysis/findings/engine.py finding_key): what a script or a CI gate follows a finding by. The
same for the same rule, workload configuration, stage and device in another run, whatever the loop device's number,
the application's id or the repetition; on the recorded placement matrix (tests/fixtures/runs/terasort-matrix),
changed as tests/analysis/findings/rules/test_spark_data.py changes it so that `spill` and `small-shuffle-reads`
fire."""
from __future__ import annotations

import numpy as np

from conftest import findings_of

HDD_HDD = "terasort-hdfs_hdd-local_hdd"


def _fired(tables: dict, workload_id: str = HDD_HDD) -> dict:
    """The recorded matrix changed so that one placement spilled and read its shuffle in small requests from its
    rotational local dirs: {rule: key} of what fired."""
    stages, requests = tables["stages"].copy(), tables["block_requests"].copy()
    reducer = (stages["shuffle_read_bytes"] > 0) & (stages["workload_id"] == workload_id)
    stages.loc[reducer, "disk_spilled_bytes"] = 20_000_000
    first = stages[reducer].iloc[0]
    device = tables["devices"].query("backend == 'hdd'")["device"].iloc[0]
    reads = (requests["workload_id"] == workload_id) & (requests["device"] == device) & (requests["op"] == "read")
    requests.loc[reads, "issue_time_s"] = first["submission_time_ms"] / 1e3 + 0.001 * np.arange(int(reads.sum()))
    requests.loc[reads, "complete_time_s"] = requests.loc[reads, "issue_time_s"] + 0.005
    found = findings_of(dict(tables, stages=stages, block_requests=requests))
    return dict(zip(found["rule"], found["key"]))


def test_a_key_names_the_rule_the_configuration_the_stage_and_the_backend_never_ids(matrix_tables):
    keys = _fired(matrix_tables)
    assert keys["spill"] == "spill | terasort @ hdfs=hdd local=hdd | stage=app 1 runJob at SparkHadoopWriter.scala:83 #1"
    assert keys["small-shuffle-reads"].startswith("small-shuffle-reads | terasort @ hdfs=hdd local=hdd | stage=")
    assert keys["small-shuffle-reads"].endswith(" #1 | device=localhost:hdd")
    assert not any(word in key for key in keys.values() for word in ("loop", "app-", "application_", HDD_HDD))


def test_another_run_of_the_same_configuration_gives_the_same_keys(matrix_tables):
    # the same recording as another run would show it: other loop devices, another workload run id (a repetition)
    other = {name: frame.copy() for name, frame in matrix_tables.items()}
    for name, frame in other.items():
        if "device" in frame:   # every loop device ten numbers on
            other[name] = frame.assign(device=frame["device"].astype(str).str.replace(
                r"^loop(\d+)$", lambda m: f"loop{int(m.group(1)) + 10}", regex=True))
        if "workload_id" in other[name]:
            other[name] = other[name].assign(workload_id=other[name]["workload_id"].replace({HDD_HDD: HDD_HDD + "-r2"}))
    for name, frame in other.items():   # other application ids, in every table that names them
        if "app_id" in frame:
            other[name] = frame.assign(app_id=frame["app_id"].astype(str) + "-other")
    assert _fired(other, HDD_HDD + "-r2") == _fired(matrix_tables)
