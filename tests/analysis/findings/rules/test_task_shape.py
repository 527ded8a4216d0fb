"""The shape of a stage's tasks (analysis/findings/rules/task_shape.py, docs/findings.md): `skew`, `partition-sizing`
and `failed-tasks` on the recorded default bench (tests/fixtures/runs/default-bench-quiet: one host, two executors of
one core, tiny scale) and the recorded emulated cluster's TeraSort (tests/fixtures/runs/emu-terasort: 12 of its 13
task attempts on worker3, the 13th lost with worker1's executor).

`skew` fires on no recorded run: its tests change one value of a recorded table and say which."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import findings_of, fired_on

PROBE = "terasort-spark"          # the default bench's first measured TeraSort on Spark
SORT_STAGE = "app 1 runJob at SparkHadoopWriter.scala:83 #1"


def of(findings: pd.DataFrame, rule: str) -> list[dict]:
    return [dict(r, values=json.loads(r["values"])) for r in findings[findings["rule"] == rule].to_dict("records")]


# ---------------------------------------------------------------- skew

def test_skew_is_quiet_on_the_recordings(bench, emu):
    # the bench's sort stage: 13.4 s against 8.1 s (1.7x); emu's sortByKey: 6.1 s against 0.62 s (9.8x), but 12 % of
    # its 51.7 s stage, which waited for the lost executor's attempt (failed-tasks); its last stage 4.5 s against 2.3 s
    assert fired_on(findings_of(bench), "skew") == set()
    assert fired_on(findings_of(emu), "skew") == set()


def test_skew_names_the_spill_when_the_short_task_of_the_sort_stage_is_shorter(bench):
    tasks = bench["spark_tasks"].copy()
    sort = (tasks["workload_id"] == PROBE) & (tasks["stage_id"] == 2)
    # changed: the sort stage's task that did not spill took 3.0 s (recorded 8.1 s); the other took 13.4 s
    tasks.loc[sort & (tasks["disk_spilled_bytes"] == 0), "duration_s"] = 3.0
    found = of(findings_of(dict(bench, spark_tasks=tasks)), "skew")
    assert [f["workload_id"] for f in found] == [PROBE]
    skew = found[0]
    assert skew["key"] == f"skew | terasort engine=spark @ hdfs=hdd local=ssd | stage={SORT_STAGE}"
    assert skew["level"] == "moderate"                                    # 13.4 / 3.0 = 4.5x: 4 to 8
    assert skew["values"]["task_max_over_median"] == pytest.approx(13.429 / 3.0)
    assert "skewed bytes: spill 60.6 MiB against 0 B (only the largest task had any)" in skew["evidence"]
    assert "shuffle read" not in skew["evidence"]                         # 63.8 MB against 45.0 MB: 1.4x
    assert skew["recommendation"].startswith("spark.default.parallelism = 4 (from 2)")


def test_skew_between_nodes_names_the_busier_host(emu):
    tasks = emu["spark_tasks"].copy()
    # changed: the last stage's task that ran on executor 3 (4.3 s) ran on worker1 instead of worker3
    tasks.loc[tasks["task_id"] == 10, "executor_host"] = "worker1"
    found = of(findings_of(dict(emu, spark_tasks=tasks)), "skew")
    assert len(found) == 1
    skew = found[0]
    assert "worker3 ran 9.0 s of its tasks against 4.3 s on worker1 (35 % of the stage's task time apart)" in \
        skew["evidence"]
    assert skew["values"]["skew_ratio"] == pytest.approx((4.462 + 2.338 + 2.198) / 4.290)
    assert skew["recommendation"].startswith("spread the stage over the nodes: worker3")


# ---------------------------------------------------------------- partition sizing

def test_partition_sizing_fires_on_gatk4s_single_task_stages_of_the_bench(bench):
    found = of(findings_of(bench), "partition-sizing")
    assert {(f["workload_id"], f["subject"]) for f in found} == {
        ("gatk4", "app 2 treeAggregate at BaseRecalibratorSparkFn.java:38 #1"),
        ("gatk4", "app 3 mapToPair at SparkUtils.java:161 #1")}
    tree = next(f for f in found if "treeAggregate" in f["subject"])
    assert "1 task on 2 executor cores in 7.6 s" in tree["evidence"] and tree["level"] == "moderate"
    assert tree["recommendation"].startswith("mapreduce.input.fileinputformat.split.maxsize = 3663765 (3.5 MiB): "
                                             "2 partitions (from 1)")
    # quiet on the bench's TeraSort (2 tasks of 100 MB for 2 cores) and its TPC-H (stages of 1 or 2 tasks under 6 s)
    assert not any(f["workload_id"] in (PROBE, "tpch", "kmeans") for f in found)


def test_partition_sizing_finds_the_emulated_clusters_splits_small_against_the_block(emu):
    found = of(findings_of(emu), "partition-sizing")
    assert sorted(f["subject"] for f in found) == ["app 1 newAPIHadoopFile at TeraSortSpark.java:92 #1",
                                                   "app 1 sortByKey at TeraSortSpark.java:115 #1"]
    assert all("input splits of 23.8 MiB (19 % of a 128.0 MiB HDFS block)" in f["evidence"] for f in found)
    assert all(f["values"]["suggested_partitions"] == 3 and f["level"] == "low" for f in found)
    assert found[0]["key"].endswith("| sizing=small-splits")


def test_partition_sizing_is_quiet_on_the_matrix(matrix_tables):
    # one host, 2 executor cores, every stage 2 tasks of 100 MB input or 27 MB of shuffle
    assert fired_on(findings_of(matrix_tables), "partition-sizing") == set()


def test_too_many_short_tasks_suggest_fewer_partitions(bench):
    tasks = bench["spark_tasks"].copy()
    stages = bench["stages"].copy()
    sort = (tasks["workload_id"] == PROBE) & (tasks["stage_id"] == 2)
    # changed: the sort stage's two recorded tasks copied to 10 tasks of 0.1 s (1 s of task time in all)
    many = pd.concat([tasks[sort]] * 5, ignore_index=True).assign(duration_s=0.1, disk_spilled_bytes=0)
    tasks = pd.concat([tasks[~sort], many], ignore_index=True)
    found = [f for f in of(findings_of(dict(bench, spark_tasks=tasks, stages=stages)), "partition-sizing")
             if f["workload_id"] == PROBE]
    assert len(found) == 1 and found[0]["key"].endswith("sizing=too-many-short")
    assert found[0]["recommendation"] == "spark.default.parallelism = 2 (from 10): tasks of about 1.0 s"
    assert found[0]["level"] == "severe"                                   # 10 / 2 = 5x: 4 to 8


# ---------------------------------------------------------------- failed tasks

def test_failed_tasks_fire_on_the_lost_executor_of_the_emulated_cluster(emu):
    found = of(findings_of(emu), "failed-tasks")
    assert len(found) == 1
    failed = found[0]
    assert failed["evidence"] == ("1 task attempt of 13 did not succeed (7.7 %: 1 ExecutorLostFailure on worker1), "
                                  "50.3 s of task time lost")
    assert failed["level"] == "low" and failed["key"] == "failed-tasks | terasort @ hdfs=hdd local=ssd"
    assert "an executor was lost on worker1" in failed["recommendation"]


def test_failed_tasks_are_quiet_on_the_bench(bench):
    assert fired_on(findings_of(bench), "failed-tasks") == set()           # 319 task attempts, all Success


def test_a_fetch_failure_and_its_resubmitted_stage_count(emu):
    tasks, stages = emu["spark_tasks"].copy(), emu["stages"].copy()
    # changed: the lost attempt recorded as a fetch failure, and the sort stage's second attempt added (a copy)
    tasks.loc[tasks["status"] == "ExecutorLostFailure", "status"] = "FetchFailed"
    stages = pd.concat([stages, stages[stages["stage_id"] == 2].assign(attempt=1)], ignore_index=True)
    failed = of(findings_of(dict(emu, spark_tasks=tasks, stages=stages)), "failed-tasks")[0]
    assert failed["values"]["fetch_failures"] == 1 and failed["values"]["resubmitted_stages"] == 1
    assert "1 stage attempt resubmitted after a fetch failure" in failed["evidence"]
    assert "spark.shuffle.io.maxRetries = 10" in failed["recommendation"]
