"""Where the time went (analysis/findings/rules/where_time_goes.py, docs/findings.md): `page-cache`, `cpu-bound`,
`device-saturated` and `device-underused` on the recorded placement-matrix run
(tests/fixtures/runs/terasort-matrix: TeraSort on Spark, HDFS and local dirs on hdd or ssd, one run each).

Each rule fires on a recorded case where it should and stays quiet on one where it should not; where no recorded
run triggers it (no CPU-bound stage), the test changes one value of a recorded table and says so."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import findings_of, fired_on

RUNS = Path(__file__).resolve().parents[3] / "fixtures" / "runs"
HDD_HDD, HDD_SSD = "terasort-hdfs_hdd-local_hdd", "terasort-hdfs_hdd-local_ssd"
SSD_HDD, SSD_SSD = "terasort-hdfs_ssd-local_hdd", "terasort-hdfs_ssd-local_ssd"


def test_page_cache_fires_where_the_devices_read_almost_nothing(matrix_tables):
    table = findings_of(matrix_tables)
    # recorded: with the local dirs on hdd the devices read 2.9 MiB / 6.0 MiB of 121 MiB; with them on ssd 34 MiB
    assert fired_on(table, "page-cache") == {HDD_HDD, SSD_HDD}
    values = json.loads(table[(table["rule"] == "page-cache") & (table["workload_id"] == HDD_HDD)]["values"].iloc[0])
    assert values["device_share_pct"] == pytest.approx(100 * values["device_read_bytes"] / values["app_read_bytes"])
    assert values["device_share_pct"] < 10 and values["app_read_bytes"] == pytest.approx(121.3 * 2 ** 20, rel=1e-3)


def test_device_saturated_fires_on_the_hdd_that_served_hdfs_reads_at_its_iops_cap(matrix_tables):
    table = findings_of(matrix_tables)
    assert fired_on(table, "device-saturated") == {HDD_SSD}
    row = table[table["rule"] == "device-saturated"].iloc[0]
    assert row["subject"] == "loop1 (hdd)" and "150 IOPS" in row["evidence"] and "4 s at ≥ 90 % busy" in row["evidence"]
    # the same samples with a short queue: busy, but nothing waited
    calm = dict(matrix_tables, iostat=matrix_tables["iostat"].assign(aqu_sz=0.5))
    assert fired_on(findings_of(calm), "device-saturated") == set()


def test_device_underused_fires_on_the_ssd_and_not_on_the_saturated_hdd(matrix_tables):
    table = findings_of(matrix_tables)
    # the ssd moved at most 25.7 MB/s of its 500 MB/s cap; the hdd of HDD_SSD ran at its IOPS cap
    assert fired_on(table, "device-underused") == {SSD_HDD, SSD_SSD}
    assert set(table.loc[table["rule"] == "device-underused", "subject"]) == {"loop3 (ssd)"}
    # the run's own fio sweep, where it has one, is what the device can do (the recorded sweep of the same host)
    with_fio = dict(matrix_tables, fio=pd.read_parquet(RUNS / "fio-sweep" / "tables" / "fio.parquet"))
    evidence = findings_of(with_fio).query("rule == 'device-underused'")["evidence"]
    assert not evidence.empty and evidence.str.contains("the run's fio sweep").all()


def test_cpu_bound_needs_every_configuration(matrix_tables):
    assert fired_on(findings_of(matrix_tables), "cpu-bound") == set()   # recorded: 34-46 % CPU in the long stages
    stages = matrix_tables["stages"].copy()
    writer = stages["name"].str.startswith("runJob")
    # changed: the output stage's tasks made CPU-bound (90 % of their run time) in every placement
    stages.loc[writer, "executor_cpu_time_s"] = 0.9 * stages.loc[writer, "executor_run_time_s"]
    table = findings_of(dict(matrix_tables, stages=stages))
    [row] = table[table["rule"] == "cpu-bound"].to_dict("records")
    assert set(row["workload_id"].split(", ")) == {HDD_HDD, HDD_SSD, SSD_HDD, SSD_SSD}
    assert "runJob at SparkHadoopWriter.scala:83" in row["subject"] and json.loads(row["values"])["configurations"] == 4
    # in one placement only it is not CPU-bound everywhere: storage may still matter there
    stages.loc[writer & (stages["workload_id"] == HDD_HDD), "executor_cpu_time_s"] = 1.0
    assert fired_on(findings_of(dict(matrix_tables, stages=stages)), "cpu-bound") == set()
