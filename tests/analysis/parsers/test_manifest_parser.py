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


def _run(wid, release):
    return {"id": wid, "workload": "terasort", "repetition": 1, "warmup": False, "scale": "tiny", "status": "ok",
            "parameters": {"engine": "spark", "rows": 1000}, "placement": {"hdfs": "hdd", "local": "ssd"},
            "versions": {"spark": release, "scala": "2.13", "hadoop": "3.4.2", "java": "openjdk 17"}}


def test_a_versions_sweep_makes_each_spark_release_its_own_sweep_point():
    """docs/versions.md: the runs of a VERSIONS bench; a run on one release alone keeps its plain sweep."""
    swept = workloads_table({"workloads": [_run("terasort-spark3.5.6", "3.5.6"), _run("terasort-spark4.2.0", "4.2.0")]})
    assert list(swept["sweep"]) == ["spark=3.5.6", "spark=4.2.0"]
    alone = workloads_table({"workloads": [_run("terasort-r1", "4.2.0"), _run("terasort-r2", "4.2.0")]})
    assert list(alone["sweep"]) == ["", ""]
    # runs recorded before `versions` existed: one (unknown) release
    old = [{k: v for k, v in _run(f"terasort-r{n}", "3.5.6").items() if k != "versions"} for n in (1, 2)]
    assert list(workloads_table({"workloads": old})["sweep"]) == ["", ""]


def test_a_run_of_no_spark_in_a_versions_sweep_keeps_its_own_sweep_point():
    """TeraSort on MapReduce beside its Spark point's releases: recorded with Spark null (spillway/versions.py), it is
    no release of the sweep and gets no `spark=` part."""
    mapreduce = {**_run("terasort-mapreduce", None), "parameters": {"engine": "mapreduce", "rows": 1000}}
    mapreduce["versions"] = {**mapreduce["versions"], "scala": None}
    table = workloads_table({"workloads": [mapreduce, _run("terasort-spark-spark3.5.6", "3.5.6"),
                                           _run("terasort-spark-spark4.2.0", "4.2.0")]}).set_index("workload_id")
    assert table.loc["terasort-mapreduce", "sweep"] == "engine=mapreduce"
    assert table.loc["terasort-spark-spark4.2.0", "sweep"] == "engine=spark spark=4.2.0"
