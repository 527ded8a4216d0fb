"""How the workloads used their devices (analysis/findings/rules/device_access.py, docs/findings.md):
`task-throughput`, `small-requests`, `random-access` and `read-write-mix` on unedited recordings: the quiet default
bench (tests/fixtures/runs/default-bench-quiet: a real block trace and fio sweep), the placement matrix and the
emulated cluster's TeraSort. Expected counts are computed here by hand from the recorded tables."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import block_counts_by_hand, findings_of, fired_on, recorded_tables

BENCH = "default-bench-quiet"


@pytest.fixture(scope="module")
def bench_findings():
    return findings_of(recorded_tables(BENCH))


@pytest.fixture(scope="module")
def matrix_findings(matrix_tables):
    return findings_of(matrix_tables)


def of(findings, rule: str) -> pd.DataFrame:
    rows = findings[findings["rule"] == rule]
    return rows.assign(values=rows["values"].map(json.loads))


def test_task_throughput_against_the_hdfs_devices_fio_read(bench_findings, matrix_findings):
    found = of(bench_findings, "task-throughput")
    # quiet: TPC-H's and GATK4's input stages read less than 32 MiB each
    assert {"tpch", "gatk4", "terasort-mapreduce"}.isdisjoint(fired_on(bench_findings, "task-throughput"))
    tables = recorded_tables(BENCH)
    fio = tables["fio"]
    hdd_read = float(fio.query("backend == 'hdd' and rw == 'read' and block_size_bytes == 1048576")
                     ["bandwidth_bytes_per_s"].iloc[0])
    tasks = tables["spark_tasks"].query("workload_id == 'terasort-spark' and input_bytes > 0")
    speeds = (tasks["input_bytes"] / tasks["executor_run_time_s"]).groupby(tasks["stage_id"]).median()
    mine = found[found["workload_id"] == "terasort-spark"]
    assert sorted(v["median_share_pct"] for v in mine["values"]) == pytest.approx(sorted(100 * speeds / hdd_read))
    assert [v["device_bytes_per_s"] for v in mine["values"]] == pytest.approx([hdd_read] * len(mine))
    # CPU 67-79 % of the tasks' run time: not storage-bound, more concurrent tasks up to what the hdd feeds
    assert all(r.startswith("not storage-bound") and "spark.executor.cores x executors = " in r
               for r in mine["recommendation"])
    # Dr. Elephant's fractions of the device: 14 % of the hdd is moderate (at or below 1/4)
    assert set(mine["level"]) == {"moderate"}
    # the matrix: HDFS on the hdd, the tasks off the CPU (12 %) at 2.5 % of the hdd: critical, HDFS to the ssd
    slow = of(matrix_findings, "task-throughput").query("workload_id == 'terasort-hdfs_hdd-local_ssd'").iloc[0]
    assert slow["level"] == "critical" and slow["recommendation"].startswith("placement hdfs=ssd (from hdd)")


def test_small_requests_share_and_count_together(bench_findings):
    found = of(bench_findings, "small-requests")
    by_hand = block_counts_by_hand(BENCH)
    tpch = by_hand[("tpch", "loop1", "read")]
    small = sum(n for size, n in tpch["sizes"] if size < 1 << 20)
    row = found.query("workload_id == 'tpch' and subject == 'loop1 (hdd) reads'").iloc[0]
    assert row["values"]["small_requests"] == small > 1000 and row["values"]["requests"] == tpch["requests"]
    assert row["level"] == "severe"                         # past Drishti's small_requests_absolute
    assert row["recommendation"].startswith("placement hdfs=ssd (from hdd): fio randread at ")
    # quiet: TeraSort's HDFS reads on the hdd are mostly 1.25 MiB, the small ones under Drishti's 10 % share
    spark = by_hand[("terasort-spark", "loop1", "read")]
    few = sum(n for size, n in spark["sizes"] if size < 1 << 20)
    assert 100 * few / spark["requests"] < 10
    assert found.query("workload_id == 'terasort-spark'").empty


def test_random_access_weighs_the_rotational_device(bench_findings):
    found = of(bench_findings, "random-access")
    by_hand = block_counts_by_hand(BENCH)
    tpch = by_hand[("tpch", "loop1", "read")]
    random = tpch["requests"] - 1 - tpch["sequential"]       # the first read has no previous one
    hdd = found.query("workload_id == 'tpch' and subject == 'loop1 (hdd) reads'").iloc[0]
    assert hdd["values"]["random_requests"] == hdd["values"]["rotational_random_requests"] == random
    assert hdd["level"] == "moderate" and hdd["recommendation"].startswith("placement hdfs=ssd (from hdd)")
    # the ssd's random writes fire as information: low, no seek to pay
    ssd = found.query("workload_id == 'tpch' and subject == 'loop3 (ssd) writes'").iloc[0]
    assert ssd["level"] == "low" and ssd["values"]["rotational_random_requests"] == 0
    # quiet: TeraSort's HDFS reads, 73 random of 326 (under the 100-request gate)
    assert found.query("workload_id == 'terasort-spark'").empty
    assert fired_on(findings_of(recorded_tables("emu-terasort")), "random-access") == set()


def test_read_write_mix_is_information_and_never_more_than_low(bench_findings):
    found = of(bench_findings, "read-write-mix")
    tables = recorded_tables(BENCH)
    totals = tables["disk_totals"][tables["disk_totals"]["device"].isin(tables["devices"]["device"])]
    sums = totals.groupby("workload_id")[["read_bytes", "write_bytes"]].sum()
    imbalance = 100 * (sums["read_bytes"] - sums["write_bytes"]).abs() / sums.sum(axis=1)
    tpch = found.query("workload_id == 'tpch'").iloc[0]
    assert tpch["values"]["imbalance_pct"] == pytest.approx(imbalance["tpch"]) and imbalance["tpch"] > 80
    assert tpch["evidence"].startswith("read-intensive") and set(found["level"]) == {"low"}
    # quiet: the runs that read and wrote about as much (under 10 % apart)
    quiet = {"gatk4", "kmeans", "terasort-mapreduce"}
    assert all(imbalance[w] < 10 for w in quiet) and quiet.isdisjoint(fired_on(bench_findings, "read-write-mix"))


def test_the_keys_name_the_backend_and_direction_never_the_loop_device(bench_findings):
    rows = bench_findings[bench_findings["rule"].isin(["small-requests", "random-access"])]
    assert "small-requests | tpch @ hdfs=hdd local=ssd | device=localhost:hdd | direction=read" in set(rows["key"])
    assert not rows["key"].str.contains("loop").any()
