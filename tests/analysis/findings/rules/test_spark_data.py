"""Spark's data on disk (analysis/findings/rules/spark_data.py, docs/findings.md): `spill` and `small-shuffle-reads`
on the recorded placement-matrix run
(tests/fixtures/runs/terasort-matrix: TeraSort on Spark, HDFS and local dirs on hdd or ssd, one run each), and `spill`
on the recorded default bench (tests/fixtures/runs/default-bench-quiet, whose TeraSort on Spark spills) and the
emulated cluster's TeraSort (tests/fixtures/runs/emu-terasort, no spill).

The recorded matrix triggers neither (no spill; its shuffle came from the page cache): its tests change one value of
a recorded table and say so."""
from __future__ import annotations

import numpy as np

from conftest import findings_of, fired_on, recorded_tables

HDD_HDD, SSD_SSD = "terasort-hdfs_hdd-local_hdd", "terasort-hdfs_ssd-local_ssd"


def test_spill_fires_when_a_stage_spilled_a_large_share_of_the_shuffle(matrix_tables):
    assert fired_on(findings_of(matrix_tables), "spill") == set()              # recorded: no spill
    stages = matrix_tables["stages"].copy()
    reducer = stages["shuffle_read_bytes"] > 0
    # changed: the reduce stage of one placement spilled 20 MB (the shuffle was 27 MB), of another 1.5 MB
    stages.loc[reducer & (stages["workload_id"] == HDD_HDD), "disk_spilled_bytes"] = 20_000_000
    stages.loc[reducer & (stages["workload_id"] == SSD_SSD), "disk_spilled_bytes"] = 1_500_000
    table = findings_of(dict(matrix_tables, stages=stages))
    assert fired_on(table, "spill") == {HDD_HDD}
    # the stages' table alone (the matrix's tasks record no spill): graded by the share of what the stage read alone
    spill = table.query("rule == 'spill'").iloc[0]
    assert spill["evidence"] == ("app 1 runJob at SparkHadoopWriter.scala:83 #1 spilled 19.1 MiB to disk against "
                                 "25.9 MiB it read (input and shuffle; 74 %)")
    assert spill["level"] == "moderate"                                   # 74 % of the reads: 50 to 100


def test_spill_fires_on_every_terasort_on_spark_of_the_default_bench():
    found = findings_of(recorded_tables("default-bench-quiet")).query("rule == 'spill'")
    assert set(found["workload_id"]) == {"terasort-spark", "terasort-spark-r2", "terasort-spark-r3",
                                         "terasort-spark-hdfs_ssd-local_hdd", "terasort-spark-hdfs_ssd-local_hdd-r2",
                                         "terasort-spark-hdfs_ssd-local_hdd-r3"}     # the warm-ups are not measured
    first = found[found["workload_id"] == "terasort-spark"].iloc[0]
    assert first["evidence"] == ("app 1 runJob at SparkHadoopWriter.scala:83 #1 spilled 60.6 MiB to disk on 1 of 2 "
                                 "executors (50 %) against 103.8 MiB it read (input and shuffle; 58 %)")
    assert first["level"] == "low"                                        # 58 % x 50 % of the executors = 29
    # 640 MiB executors (204 MiB of unified memory) whose one task spilled 208.4 MiB from memory
    assert first["recommendation"].startswith("spark.executor.memory = 1024m (from about 640m)")
    assert "spark.default.parallelism = 5 (from 2)" in first["recommendation"]


def test_spill_is_quiet_on_the_emulated_clusters_terasort():
    assert fired_on(findings_of(recorded_tables("emu-terasort")), "spill") == set()   # no task spilled


def test_small_shuffle_reads_on_a_rotational_device_only(matrix_tables):
    # recorded: the shuffle came from the page cache, no read reached the local dirs' device during the reduce stage
    assert fired_on(findings_of(matrix_tables), "small-shuffle-reads") == set()
    stages, requests = matrix_tables["stages"], matrix_tables["block_requests"].copy()
    reducer = stages[(stages["workload_id"] == HDD_HDD) & (stages["shuffle_read_bytes"] > 0)].iloc[0]
    reads = (requests["workload_id"] == HDD_HDD) & (requests["device"] == "loop1") & (requests["op"] == "read")
    # changed: the recorded reads of loop1 (226 requests, 13 KiB on average) moved into the reduce stage's window
    start = reducer["submission_time_ms"] / 1e3
    requests.loc[reads, "issue_time_s"] = start + 0.001 * np.arange(int(reads.sum()))
    requests.loc[reads, "complete_time_s"] = requests.loc[reads, "issue_time_s"] + 0.005
    table = findings_of(dict(matrix_tables, block_requests=requests))
    assert fired_on(table, "small-shuffle-reads") == {HDD_HDD}
    assert "226 requests of 13.0 KiB on average from loop1 (rotational)" in \
        table.query("rule == 'small-shuffle-reads'")["evidence"].iloc[0]
    solid = matrix_tables["devices"].assign(rotational=False)
    assert fired_on(findings_of(dict(matrix_tables, block_requests=requests, devices=solid)),
                    "small-shuffle-reads") == set()
