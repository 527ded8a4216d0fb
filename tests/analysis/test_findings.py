"""The findings rule set (analysis/findings.py, docs/findings.md) on the recorded placement-matrix run
(tests/fixtures/runs/terasort-matrix: TeraSort on Spark, HDFS and local dirs on hdd or ssd, one run each).

Each rule fires on a recorded case where it should and stays quiet on one where it should not. Where no recorded
run triggers a rule (no spill, one host, no CPU-bound stage, shuffle served from the page cache), the test changes
one value of a recorded table and says so."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import findings, statistics
from analysis.report_page import write_report
from analysis.tables import TABLE_NAMES

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
MATRIX = RUNS / "terasort-matrix"
HDD_HDD, HDD_SSD = "terasort-hdfs_hdd-local_hdd", "terasort-hdfs_hdd-local_ssd"
SSD_HDD, SSD_SSD = "terasort-hdfs_ssd-local_hdd", "terasort-hdfs_ssd-local_ssd"


@pytest.fixture(scope="module")
def recorded() -> dict[str, pd.DataFrame]:
    return {name: pd.read_parquet(MATRIX / "tables" / f"{name}.parquet") if (MATRIX / "tables" / f"{name}.parquet").exists()
            else pd.DataFrame() for name in TABLE_NAMES}


def fired(tables, noise=None) -> pd.DataFrame:
    return findings.evaluate({k: v.copy() for k, v in tables.items()}, noise)[1]


def where(table: pd.DataFrame, rule: str) -> set[str]:
    return set(table.loc[table["rule"] == rule, "workload_id"])


def test_every_rule_is_documented_with_its_threshold():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "findings.md").read_text()
    assert len({r.id for r in findings.RULES}) == len(findings.RULES) >= 9
    for r in findings.RULES:
        assert f"### `{r.id}`" in doc, r.id
        for name in r.thresholds:
            assert f"`{name}`" in doc and f"`{name}`" in r.trigger, (r.id, name)


def test_page_cache_fires_where_the_devices_read_almost_nothing(recorded):
    table = fired(recorded)
    # recorded: with the local dirs on hdd the devices read 2.9 MiB / 6.0 MiB of 121 MiB; with them on ssd 34 MiB
    assert where(table, "page-cache") == {HDD_HDD, SSD_HDD}
    values = json.loads(table[(table["rule"] == "page-cache") & (table["workload_id"] == HDD_HDD)]["values"].iloc[0])
    assert values["device_share_pct"] == pytest.approx(100 * values["device_read_bytes"] / values["app_read_bytes"])
    assert values["device_share_pct"] < 10 and values["app_read_bytes"] == pytest.approx(121.3 * 2 ** 20, rel=1e-3)


def test_device_saturated_fires_on_the_hdd_that_served_hdfs_reads_at_its_iops_cap(recorded):
    table = fired(recorded)
    assert where(table, "device-saturated") == {HDD_SSD}
    row = table[table["rule"] == "device-saturated"].iloc[0]
    assert row["subject"] == "loop1 (hdd)" and "150 IOPS" in row["evidence"] and "4 s at ≥ 90 % busy" in row["evidence"]
    # the same samples with a short queue: busy, but nothing waited
    calm = dict(recorded, iostat=recorded["iostat"].assign(aqu_sz=0.5))
    assert where(fired(calm), "device-saturated") == set()


def test_device_underused_fires_on_the_ssd_and_not_on_the_saturated_hdd(recorded):
    table = fired(recorded)
    # the ssd moved at most 25.7 MB/s of its 500 MB/s cap; the hdd of HDD_SSD ran at its IOPS cap
    assert where(table, "device-underused") == {SSD_HDD, SSD_SSD}
    assert set(table.loc[table["rule"] == "device-underused", "subject"]) == {"loop3 (ssd)"}
    # the run's own fio sweep, where it has one, is what the device can do (the recorded sweep of the same host)
    with_fio = dict(recorded, fio=pd.read_parquet(RUNS / "fio-sweep" / "tables" / "fio.parquet"))
    evidence = fired(with_fio).query("rule == 'device-underused'")["evidence"]
    assert not evidence.empty and evidence.str.contains("the run's fio sweep").all()


def test_cpu_bound_needs_every_configuration(recorded):
    assert where(fired(recorded), "cpu-bound") == set()          # recorded: 34-46 % CPU in the long stages
    stages = recorded["stages"].copy()
    writer = stages["name"].str.startswith("runJob")
    # changed: the output stage's tasks made CPU-bound (90 % of their run time) in every placement
    stages.loc[writer, "executor_cpu_time_s"] = 0.9 * stages.loc[writer, "executor_run_time_s"]
    table = fired(dict(recorded, stages=stages))
    [row] = table[table["rule"] == "cpu-bound"].to_dict("records")
    assert set(row["workload_id"].split(", ")) == {HDD_HDD, HDD_SSD, SSD_HDD, SSD_SSD}
    assert "runJob at SparkHadoopWriter.scala:83" in row["subject"] and json.loads(row["values"])["configurations"] == 4
    # in one placement only it is not CPU-bound everywhere: storage may still matter there
    stages.loc[writer & (stages["workload_id"] == HDD_HDD), "executor_cpu_time_s"] = 1.0
    assert where(fired(dict(recorded, stages=stages)), "cpu-bound") == set()


def test_spill_fires_when_a_stage_spilled_a_large_share_of_the_shuffle(recorded):
    assert where(fired(recorded), "spill") == set()              # recorded: no spill
    stages = recorded["stages"].copy()
    reducer = stages["shuffle_read_bytes"] > 0
    # changed: the reduce stage of one placement spilled 20 MB (the shuffle was 27 MB), of another 1.5 MB
    stages.loc[reducer & (stages["workload_id"] == HDD_HDD), "disk_spilled_bytes"] = 20_000_000
    stages.loc[reducer & (stages["workload_id"] == SSD_SSD), "disk_spilled_bytes"] = 1_500_000
    table = fired(dict(recorded, stages=stages))
    assert where(table, "spill") == {HDD_HDD}
    assert "19.1 MiB to disk against 25.9 MiB shuffle written (74 %)" in table.query("rule == 'spill'")["evidence"].iloc[0]


def test_small_shuffle_reads_on_a_rotational_device_only(recorded):
    # recorded: the shuffle came from the page cache, no read reached the local dirs' device during the reduce stage
    assert where(fired(recorded), "small-shuffle-reads") == set()
    stages, requests = recorded["stages"], recorded["block_requests"].copy()
    reducer = stages[(stages["workload_id"] == HDD_HDD) & (stages["shuffle_read_bytes"] > 0)].iloc[0]
    reads = (requests["workload_id"] == HDD_HDD) & (requests["device"] == "loop1") & (requests["op"] == "read")
    # changed: the recorded reads of loop1 (226 requests, 13 KiB on average) moved into the reduce stage's window
    start = reducer["submission_time_ms"] / 1e3
    requests.loc[reads, "issue_time_s"] = start + 0.001 * np.arange(int(reads.sum()))
    requests.loc[reads, "complete_time_s"] = requests.loc[reads, "issue_time_s"] + 0.005
    table = fired(dict(recorded, block_requests=requests))
    assert where(table, "small-shuffle-reads") == {HDD_HDD}
    assert "226 requests of 13.0 KiB on average from loop1 (rotational)" in \
        table.query("rule == 'small-shuffle-reads'")["evidence"].iloc[0]
    solid = recorded["devices"].assign(rotational=False)
    assert where(fired(dict(recorded, block_requests=requests, devices=solid)), "small-shuffle-reads") == set()


def _second_host(recorded, share: float) -> dict:
    """The recorded run as if a second worker had the same devices and moved `share` of the first's bytes."""
    devices = pd.concat([recorded["devices"], recorded["devices"].assign(host="worker2")], ignore_index=True)
    other = recorded["disk_totals"].assign(host="worker2")
    other[["read_bytes", "write_bytes"]] = (other[["read_bytes", "write_bytes"]] * share).round()
    return dict(recorded, devices=devices, disk_totals=pd.concat([recorded["disk_totals"], other], ignore_index=True))


def test_imbalance_across_nodes(recorded):
    assert where(fired(recorded), "imbalance") == set()          # recorded: one host, one device per backend
    # changed: a second worker whose devices moved a fifth of the first's bytes
    table = fired(_second_host(recorded, 0.2))
    assert HDD_HDD in where(table, "imbalance")
    row = table[(table["rule"] == "imbalance") & (table["workload_id"] == HDD_HDD)].iloc[0]
    assert row["host"] == "localhost" and json.loads(row["values"])["max_over_mean"] == pytest.approx(1 / 0.6, rel=1e-3)
    assert where(fired(_second_host(recorded, 0.8)), "imbalance") == set()     # 1.11 x the mean: balanced enough


def test_time_rules_rest_on_the_statistics(recorded):
    table = fired(recorded)
    # recorded: one run per placement, 26.2-36.4 s, no noise level: the statistics cannot tell
    assert where(table, "cannot-tell") == {"terasort"} and where(table, "storage-sensitive") == set()
    # changed: each placement repeated 3 times (the recorded time and 1 % either side)
    workloads = pd.concat([recorded["workloads"].assign(workload_id=lambda f, i=i: f["workload_id"] + f"-r{i}",
                                                        run_s=lambda f, k=k: f["run_s"] * k)
                           for i, k in enumerate((0.99, 1.0, 1.01))], ignore_index=True)
    repeated = fired(dict(recorded, workloads=workloads))
    assert where(repeated, "cannot-tell") == set() and where(repeated, "storage-sensitive") == {"terasort"}
    assert any(e.startswith("HDFS ssd, local hdd 26.2 s vs HDFS hdd, local hdd 36.4 s: 1.39 x")
               for e in repeated.query("rule == 'storage-sensitive'")["evidence"])
    # a host whose runs differ by 50 % on their own: none of these differences counts
    noisy = fired(dict(recorded, workloads=workloads), statistics.Noise(50.0, "calibration"))
    assert where(noisy, "storage-sensitive") == set()


def test_a_rule_without_its_tables_says_no_data(recorded):
    statuses, _ = findings.evaluate(dict(recorded, iostat=pd.DataFrame(columns=["host", "workload_id"])))
    status = {s["rule"]: s for s in statuses}
    assert status["device-saturated"]["status"] == findings.NO_DATA and "iostat.util_pct" in status["device-saturated"]["why"]
    assert status["page-cache"]["status"] == findings.FIRED and status["spill"]["status"] == findings.QUIET


def test_report_opens_with_the_findings_and_writes_them_for_machines(tmp_path):
    run = tmp_path / "terasort-matrix"
    shutil.copytree(MATRIX, run)
    for name in TABLE_NAMES:   # tables newer than the recording: empty, as the analysis writes a source-less table
        if not (run / "tables" / f"{name}.parquet").exists():
            pd.DataFrame(columns=["host", "workload_id"]).to_parquet(run / "tables" / f"{name}.parquet")
    html = write_report(run).read_text()
    # the findings first: the next section is the overview
    assert html.index('id="findings"') < html.index("<h2", html.index('id="findings"') + 1) == html.index('<h2 id="overview"')
    section = html[html.index('id="findings"'):html.index('id="overview"')]
    assert "The page cache served most reads" in section and "What to do:" in section and "2.4 %" in section
    document = json.loads((run / "findings.json").read_text())
    assert [r["rule"] for r in document["rules"]] == [r.id for r in findings.RULES]
    table = pd.read_parquet(run / "tables" / "findings.parquet")
    assert list(table.columns) == findings.COLUMNS
    assert len(table) == len(document["findings"]) == sum(r["findings"] for r in document["rules"]) > 0
    assert {r["rule"] for r in document["rules"] if r["status"] == "fired"} == set(table["rule"])


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
    from analysis.compare_page import write_comparison
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
