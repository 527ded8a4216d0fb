"""Placement and parallelism views: which runs count (measured, validated), how they are grouped."""
import pandas as pd

from analysis import metrics
from analysis.parsers.manifest import workloads_table
from analysis.presentation.figures.configurations import cores_figures
from analysis.presentation.rows.report_tables import cores_rows, placement_rows


def run(wid, hdfs, local, cores, rep, run_s, status="ok", engine="spark"):
    return {"id": wid, "workload": "terasort", "repetition": rep, "warmup": rep == 0, "scale": "tiny",
            "status": status, "parameters": {"engine": engine, "rows": 1000},
            "placement": {"hdfs": hdfs, "local": local}, "executor_cores": cores,
            "started_at": "2026-11-21T10:00:00Z", "ended_at": "2026-11-21T10:01:00Z",
            "steps": [{"name": f"{wid}: prepare", "status": "ok", "duration_s": 5.0},
                      {"name": f"{wid}: run", "status": "ok" if status != "failed" else "failed", "duration_s": run_s},
                      {"name": f"{wid}: validate", "status": "ok" if status == "ok" else "failed", "duration_s": 2.0}]}


def manifest(*runs):
    return {"storage": {"placement": {"hdfs": "hdd", "local": "ssd"}}, "workloads": list(runs)}


def test_workloads_table_carries_placement_cores_steps_and_the_swept_parameters():
    table = workloads_table(manifest(run("a", "hdd", "ssd", 2, 1, 30.0),
                                     run("b", "ssd", "ssd", None, 1, 20.0, engine="mapreduce")))
    first = table.iloc[0]
    assert (first.placement_hdfs, first.placement_local, first.executor_cores) == ("hdd", "ssd", 2)
    assert (first.prepare_s, first.run_s, first.validate_s) == (5.0, 30.0, 2.0)
    assert first.sweep == "engine=spark"  # rows is the same in every run: not a sweep
    assert pd.isna(table.iloc[1].executor_cores)


def test_warmups_failed_and_invalid_runs_never_enter_the_placement_medians():
    table = workloads_table(manifest(
        run("w", "hdd", "hdd", None, 0, 500.0),  # warm-up
        run("r1", "hdd", "hdd", None, 1, 40.0), run("r2", "hdd", "hdd", None, 2, 44.0),
        run("bad", "hdd", "hdd", None, 3, 1.0, status="invalid"),
        run("s1", "ssd", "hdd", None, 1, 20.0), run("s2", "ssd", "hdd", None, 2, 22.0)))
    by_placement = metrics.run_time_by_placement(table)
    hdd = by_placement[by_placement.placement_hdfs == "hdd"].iloc[0]
    assert (hdd["median"], hdd["min"], hdd["max"], hdd["runs"]) == (42.0, 40.0, 44.0, 2)
    placed = placement_rows(by_placement)
    # 40-44 s against 20-22 s: the statistics call it (docs/compare.md, "How sure"), so the ratio reads "slower"
    assert [(r["hdfs"], r["ratio"]) for r in placed] == [("hdd", "2.00 x slower"), ("ssd", "1.00 x")]
    assert "2 runs" in placed[0]["time"]


def test_stage_time_by_cores_matches_stages_across_runs_by_app_order_stage_id_and_name():
    table = workloads_table(manifest(run("p1", "hdd", "ssd", 1, 1, 40.0), run("p2", "hdd", "ssd", 2, 1, 25.0),
                                     run("p2bad", "hdd", "ssd", 2, 2, 1.0, status="invalid")))
    stages = pd.DataFrame([
        # workload run p1: two applications, the second one's stage 0 is another stage than the first's
        {"workload_id": "p1", "app_id": "app-1", "stage_id": 0, "attempt": 0, "name": "map", "submission_time_ms": 1000, "duration_s": 10.0},
        {"workload_id": "p1", "app_id": "app-2", "stage_id": 0, "attempt": 0, "name": "map", "submission_time_ms": 5000, "duration_s": 4.0},
        {"workload_id": "p1", "app_id": "app-2", "stage_id": 0, "attempt": 1, "name": "map", "submission_time_ms": 6000, "duration_s": 1.0},
        {"workload_id": "p2", "app_id": "app-3", "stage_id": 0, "attempt": 0, "name": "map", "submission_time_ms": 9000, "duration_s": 6.0},
        {"workload_id": "p2", "app_id": "app-4", "stage_id": 0, "attempt": 0, "name": "map", "submission_time_ms": 9500, "duration_s": 3.0},
        {"workload_id": "p2bad", "app_id": "app-5", "stage_id": 0, "attempt": 0, "name": "map", "submission_time_ms": 9900, "duration_s": 99.0},
    ])
    by_cores = metrics.stage_time_by_cores(stages, table)
    got = {(r.app, int(r.executor_cores)): r.median for r in by_cores.itertuples()}
    assert got == {(1, 1): 10.0, (2, 1): 5.0, (1, 2): 6.0, (2, 2): 3.0}  # retried attempt summed, invalid run left out
    cores, per_stage = cores_rows(by_cores)
    assert cores == [1, 2] and per_stage[0]["times"] == ["10.0 s", "6.0 s"]
    assert len(cores_figures(by_cores, "run-x")) == 1
