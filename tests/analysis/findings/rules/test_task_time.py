"""Time within and around Spark's tasks (analysis/findings/rules/task_time.py, docs/findings.md): `shuffle-wait`,
`unattributed-time`, `idle-cores` and `driver-time` on the recorded default bench (tests/fixtures/runs/
default-bench-quiet: TeraSort on Spark on two placements, TPC-H, K-means, GATK4, tiny, on a 2-core host), the
emu cluster's TeraSort (emu-terasort: 12 of 13 tasks on worker3, an executor lost) and the placement matrix
(terasort-matrix: no CPU samples of the host).

No recording makes `shuffle-wait` fire (at most 9.9 % of a stage's task time on the shuffle): its test changes one
column of a recorded table and says so; so do the tests of the unattributed time's I/O-wait reading."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import findings_of, fired_on, recorded_tables

PROBE_A, PROBE_B = "terasort-spark", "terasort-spark-hdfs_ssd-local_hdd"
PROBE_RUNS = {PROBE_A, "terasort-spark-r2", "terasort-spark-r3", PROBE_B, PROBE_B + "-r2", PROBE_B + "-r3"}
WRITE_STAGE = "runJob at SparkHadoopWriter.scala:83"


def of(findings: pd.DataFrame, rule: str) -> pd.DataFrame:
    found = findings[findings["rule"] == rule]
    return found.assign(numbers=[json.loads(v) for v in found["values"]])


def write_stage_tasks(tables: dict, workload_id: str) -> pd.Series:
    """The task rows of `workload_id`'s write stage (the shuffle reader) in spark_tasks."""
    stages = tables["stages"]
    stage = stages[(stages["workload_id"] == workload_id) & (stages["name"] == WRITE_STAGE)].iloc[0]
    tasks = tables["spark_tasks"]
    return (tasks["workload_id"] == workload_id) & (tasks["stage_id"] == stage["stage_id"])


def test_shuffle_wait_fires_where_the_tasks_waited_on_the_shuffle_and_names_the_faster_local_dirs(bench):
    assert fired_on(findings_of(bench), "shuffle-wait") == set()        # recorded: at most 9.9 % on the shuffle
    tasks = bench["spark_tasks"].copy()
    # changed: each task of the write stage of both probe placements' first runs waited 3 s for shuffle blocks
    for workload_id in (PROBE_A, PROBE_B):
        tasks.loc[write_stage_tasks(bench, workload_id), "shuffle_fetch_wait_s"] = 3.0
    found = of(findings_of(dict(bench, spark_tasks=tasks)), "shuffle-wait").set_index("workload_id")
    assert set(found.index) == {PROBE_A, PROBE_B}
    for workload_id in (PROBE_A, PROBE_B):
        run_s = tasks.loc[write_stage_tasks(bench, workload_id), "executor_run_time_s"].sum()
        assert found.loc[workload_id, "numbers"]["shuffle_wait_pct"] == pytest.approx(100 * 6.0 / run_s)
    # the local dirs on the hdd: the ssd named; already on the ssd: larger fetches
    assert found.loc[PROBE_B, "recommendation"].startswith("placement local = ssd (from hdd)")
    assert found.loc[PROBE_A, "recommendation"].startswith("spark.reducer.maxSizeInFlight = 96m")
    assert found.loc[PROBE_A, "key"] == f"shuffle-wait | terasort engine=spark @ hdfs=hdd local=ssd | " \
                                        f"stage=app 1 {WRITE_STAGE} #1"


def test_unattributed_time_on_a_busy_host_is_cpu_contention_graded_low(bench):
    found = of(findings_of(bench), "unattributed-time")
    probe = found[found["workload_id"] == PROBE_A].set_index("subject")
    write = probe.loc[f"app 1 {WRITE_STAGE} #1 on localhost"]
    tasks = bench["spark_tasks"][write_stage_tasks(bench, PROBE_A)]
    by_hand = (tasks["executor_run_time_s"] - tasks["executor_cpu_time_s"] - tasks["jvm_gc_time_s"]
               - tasks["shuffle_fetch_wait_s"] - tasks["shuffle_write_time_s"]).sum()
    assert write["numbers"]["unattributed_s"] == pytest.approx(by_hand)          # 6.8 s of 21.2 s
    assert write["numbers"]["host_busy_pct"] >= 80 and write["numbers"]["storage_wait_pct"] == 0
    assert write["level"] == "low" and "most likely CPU contention, not storage" in write["evidence"]
    assert write["recommendation"].startswith("spark.executor.instances = 1 (from 2)")
    # every probe run fires; of GATK4, the write stages of MarkDuplicates and ApplyBQSR (25 %, 30 % unattributed),
    # not BaseRecalibrator's one stage (8 %)
    assert PROBE_RUNS <= set(found["workload_id"])
    assert set(found.loc[found["workload_id"] == "gatk4", "subject"]) == {
        f"app 1 {WRITE_STAGE} #1 on localhost", f"app 3 {WRITE_STAGE} #1 on localhost"}


def test_unattributed_time_with_cpu_to_spare_and_iowait_is_io_wait(bench):
    cpu = bench["host_cpu"].copy()
    tasks = bench["spark_tasks"][write_stage_tasks(bench, PROBE_B)]
    window = (cpu["time"] >= tasks["launch_time_ms"].min() / 1e3) & (cpu["time"] <= tasks["finish_time_ms"].max() / 1e3)
    # changed: over PROBE_B's write stage, the host 30 % busy (user) and 40 % in iowait
    cpu.loc[window, ["user_pct", "system_pct", "nice_pct", "steal_pct", "iowait_pct"]] = [30.0, 0.0, 0.0, 0.0, 40.0]
    found = of(findings_of(dict(bench, host_cpu=cpu)), "unattributed-time")
    write = found[(found["workload_id"] == PROBE_B) & found["subject"].str.startswith(f"app 1 {WRITE_STAGE}")].iloc[0]
    assert "I/O wait: localhost's CPU had room (30 % busy) and iowait was 40.0 %" in write["evidence"]
    assert write["numbers"]["storage_wait_pct"] == pytest.approx(write["numbers"]["unattributed_pct"])
    assert write["recommendation"].startswith("placement local = ssd (from hdd)")


def test_unattributed_time_on_the_emulated_cluster_names_the_worker_that_ran_the_tasks(emu):
    found = of(findings_of(emu), "unattributed-time")
    assert set(found["host"]) == {"worker3"}
    write = found[found["subject"].str.startswith(f"app 1 {WRITE_STAGE}")].iloc[0]
    assert "worker3's CPU was 91 % busy" in write["evidence"] and write["key"].endswith("host=worker3")


def test_unattributed_time_quiet_where_the_cpu_explains_the_tasks(bench):
    tasks = bench["spark_tasks"].copy()
    # changed: every task's CPU time set to its run time less GC and the shuffle: nothing left unexplained
    tasks["executor_cpu_time_s"] = (tasks["executor_run_time_s"] - tasks["jvm_gc_time_s"]
                                    - tasks["shuffle_fetch_wait_s"] - tasks["shuffle_write_time_s"])
    assert fired_on(findings_of(dict(bench, spark_tasks=tasks)), "unattributed-time") == set()


def test_idle_cores_fires_on_gatk4_and_the_lost_executor_not_on_the_probe(bench, emu):
    found = of(findings_of(bench), "idle-cores")
    assert set(found["workload_id"]) == {"gatk4"} and len(found) == 3          # TeraSort: 76-80 % of its cores used
    mark = found[found["subject"] == "app 1 MarkDuplicatesSpark"].iloc[0]
    apps, tasks = bench["spark_applications"], bench["spark_tasks"]
    app_id = apps.loc[apps["app_name"] == "MarkDuplicatesSpark", "app_id"].iloc[0]
    assert mark["numbers"]["task_s"] == pytest.approx(tasks.loc[tasks["app_id"] == app_id, "executor_run_time_s"].sum())
    assert mark["numbers"]["cores"] == 2
    assert mark["numbers"]["wasted_core_s"] == pytest.approx(2 * mark["numbers"]["in_stages_s"] - mark["numbers"]["task_s"])
    # its stages ran one task each: the critical path is all of the task time, twice perfect parallelism
    assert mark["numbers"]["critical_path_s"] == pytest.approx(mark["numbers"]["task_s"])
    assert mark["recommendation"].startswith("spark.sql.shuffle.partitions = spark.default.parallelism = 4")
    lost = of(findings_of(emu), "idle-cores").iloc[0]
    assert lost["level"] == "severe" and 10 < lost["numbers"]["core_use_pct"] <= 20
    assert lost["recommendation"].startswith("spark.executor.instances = 1")


def test_driver_time_fires_on_tpch_between_its_queries_not_on_terasort(bench):
    found = of(findings_of(bench), "driver-time")
    assert set(found["workload_id"]) == {"tpch"}
    tpch = found.iloc[0]["numbers"]
    parts = tpch["before_first_stage_s"] + tpch["between_stages_s"] + tpch["after_last_stage_s"]
    assert tpch["driver_s"] == pytest.approx(parts) and tpch["between_stages_s"] > 20
    # what the stages cover, by hand: the application's wall time less start-up, the driver's time and the stages'
    stages = bench["stages"][bench["stages"]["workload_id"] == "tpch"]
    windows = sorted(zip(stages["submission_time_ms"], stages["completion_time_ms"]))
    covered, reach = 0.0, -1.0
    for start, end in windows:
        covered += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    assert tpch["wall_s"] - tpch["startup_s"] - tpch["driver_s"] == pytest.approx(covered / 1e3)
    assert found.iloc[0]["recommendation"].startswith("spark.scheduler.mode = FAIR")
    assert not fired_on(found, "driver-time") & PROBE_RUNS


def test_driver_time_quotes_what_the_namenode_did_in_the_workloads_window_where_it_was_collected(bench):
    recorded = recorded_tables("tpch-namenode")      # the first bench with the namenode-ops collector
    tpch = of(findings_of(recorded), "driver-time")
    assert set(tpch["workload_id"]) == {"tpch"}
    numbers, evidence = tpch.iloc[0]["numbers"], tpch.iloc[0]["evidence"]
    ops = recorded["namenode_ops"]
    counted = ops[(ops.workload_id == "tpch") & (ops.bean == "NameNodeActivity")].set_index("counter")["delta"]
    for counter in ("FilesCreated", "FilesRenamed", "GetListingOps", "FileInfoOps", "GetBlockLocations"):
        assert numbers[f"namenode_{counter}"] == counted[counter], counter
    assert f"{counted['FilesRenamed']:,.0f} renamed" in evidence and "block-location lookups" in evidence
    # a run without the collector (the quiet default bench) says nothing of the NameNode
    assert "NameNode" not in of(findings_of(bench), "driver-time").iloc[0]["evidence"]


def test_unattributed_time_without_cpu_samples_is_sparklens_reading_unconfirmed(matrix_tables):
    found = of(findings_of(matrix_tables), "unattributed-time")          # the matrix recorded no host_cpu
    assert len(found) == 8 and found["evidence"].str.contains("Sparklens' reading (I/O wait), unconfirmed", regex=False).all()
    assert all(v["storage_wait_pct"] == v["unattributed_pct"] for v in found["numbers"])
    hdd_input = found[(found["workload_id"] == "terasort-hdfs_hdd-local_ssd")
                      & found["subject"].str.startswith("app 1 sortByKey")].iloc[0]
    assert hdd_input["level"] == "critical" and hdd_input["recommendation"].startswith("placement hdfs = ssd (from hdd)")
