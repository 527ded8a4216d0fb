"""The report's overview, per measured workload run (metrics.workload_overview, models.bottleneck.time_shares,
presentation.rows.overview_rows), on the recorded placement matrix (tests/fixtures/runs/terasort-matrix: TeraSort on
Spark, HDFS and local dirs on hdd or ssd, one run each; its first two placements also ran TeraGen on MapReduce)."""
from __future__ import annotations

import re
import shutil
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from analysis import devices, metrics
from analysis.models import bottleneck
from analysis.predict import bandwidths_in, configurations_in
from analysis.presentation.rows.overview import overview_rows
from analysis.report_page import write_report
from analysis.tables import TABLE_NAMES

MATRIX = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "terasort-matrix"
HDD_HDD, HDD_SSD = "terasort-hdfs_hdd-local_hdd", "terasort-hdfs_hdd-local_ssd"
SSD_HDD, SSD_SSD = "terasort-hdfs_ssd-local_hdd", "terasort-hdfs_ssd-local_ssd"


@pytest.fixture(scope="module")
def recorded() -> dict[str, pd.DataFrame]:
    if not (MATRIX / "tables" / "stages.parquet").exists():
        pytest.fail(f"missing recorded fixture {MATRIX}/tables", pytrace=False)
    return {name: pd.read_parquet(MATRIX / "tables" / f"{name}.parquet") if (MATRIX / "tables" / f"{name}.parquet").exists()
            else pd.DataFrame(columns=["host", "workload_id"]) for name in TABLE_NAMES}


@pytest.fixture
def matrix_run(tmp_path) -> Path:
    run = tmp_path / "terasort-matrix"
    shutil.copytree(MATRIX, run)
    for name in TABLE_NAMES:   # tables newer than the recording: empty, as the analysis writes a source-less table
        if not (run / "tables" / f"{name}.parquet").exists():
            pd.DataFrame(columns=["host", "workload_id"]).to_parquet(run / "tables" / f"{name}.parquet")
    return run


def test_bytes_by_path_and_device_add_up_to_the_recorded_tables(recorded):
    overview, per_backend = metrics.workload_overview(recorded)
    assert list(overview["workload_id"]) == [HDD_HDD, HDD_SSD, SSD_HDD, SSD_SSD]
    stages = recorded["stages"].groupby("workload_id")[["input_bytes", "shuffle_read_bytes", "shuffle_write_bytes",
                                                        "disk_spilled_bytes", "output_bytes"]].sum()
    mr_written = metrics.mr_job_summary(recorded["mr_jobs"], recorded["mr_counters"]).groupby("workload_id")[
        "hdfs_written_bytes"].sum()
    row = overview.set_index("workload_id")
    for workload_id in overview["workload_id"]:
        spark = stages.loc[workload_id]
        assert row.loc[workload_id, "shuffle_read_bytes"] == spark["shuffle_read_bytes"] > 0
        assert row.loc[workload_id, "spill_bytes"] == spark["disk_spilled_bytes"] == 0
        # TeraGen (MapReduce, in the prepare step) wrote the input where the run generated it: both count
        assert row.loc[workload_id, "hdfs_write_bytes"] == pytest.approx(
            spark["output_bytes"] + mr_written.get(workload_id, 0.0))
    assert row.loc[HDD_HDD, "hdfs_write_bytes"] > row.loc[HDD_SSD, "hdfs_write_bytes"]   # HDD_HDD generated, HDD_SSD reused
    on_backends = metrics.on_backend_devices(recorded["disk_totals"], devices.device_backends(recorded["devices"]))
    assert per_backend["read_bytes"].sum() == on_backends["read_bytes"].sum() > 0
    assert set(per_backend["backend"]) == {"hdd", "ssd"}
    # recorded: with the local dirs on hdd the devices read 2.9 MiB of 121 MiB (the page-cache finding's 2.4 %)
    assert row.loc[HDD_HDD, "device_read_share_pct"] == pytest.approx(
        100 * row.loc[HDD_HDD, "device_read_bytes"] / row.loc[HDD_HDD, "app_read_bytes"])
    assert round(row.loc[HDD_HDD, "device_read_share_pct"], 1) == 2.4
    assert 20 < row.loc[HDD_SSD, "device_read_share_pct"] < 100


def test_a_mapreduce_only_run_has_no_spill_figure_rather_than_zero(recorded):
    """HDD_HDD's Spark stages taken out of the recorded tables: what is left of it is TeraGen on MapReduce."""
    without_spark = dict(recorded, stages=recorded["stages"][recorded["stages"]["workload_id"] != HDD_HDD])
    row = metrics.workload_overview(without_spark)[0].set_index("workload_id").loc[HDD_HDD]
    assert pd.isna(row["spill_bytes"]) and row["hdfs_write_bytes"] == 50_000_000   # 500 k rows of 100 bytes
    assert row["shuffle_write_bytes"] == 0                  # TeraGen is map-only: its counters say so


def test_stage_time_shares_name_the_bottleneck_of_each_placement(matrix_run):
    configs = configurations_in(matrix_run)
    shares = bottleneck.time_shares(configs, bandwidths_in([matrix_run]))
    assert set(shares["workload_id"]) == {HDD_HDD, HDD_SSD, SSD_HDD, SSD_SSD}
    assert shares.groupby("workload_id")["share_pct"].sum().round(6).eq(100).all()
    for config in configs:
        mine = shares[shares["workload_id"] == config.workload_id]
        assert mine["stage_s"].sum() == pytest.approx(config.stages["duration_s"].sum())
    top = shares.groupby("workload_id").first()
    # HDFS on the hdd and the shuffle on the ssd: the hdd's reads of the input bound most of the stage time
    assert (top.loc[HDD_SSD, "resource"], top.loc[HDD_SSD, "backend"]) == ("disk", "hdd")
    assert top.loc[HDD_SSD, "share_pct"] > 50
    # everything on the ssd: no stage waited for a device
    assert shares.loc[shares["workload_id"] == SSD_SSD, "resource"].tolist() == ["cpu"]
    assert set(shares.loc[shares["resource"] != "disk", "backend"]) == {""}


def test_the_report_opens_with_the_overview_in_words_and_numbers(matrix_run):
    html = write_report(matrix_run).read_text()
    assert html.index('id="findings"') < html.index('id="overview"') < html.index('id="emulation"')
    section = unescape(re.sub(r"<[^>]+>", " ", html[html.index('id="overview"'):html.index('id="sensitivity"')]))
    assert section.count("HDFS read 95.4 MiB") == 4
    assert "disk hdd 72 %, CPU 28 % of 11.8 s in 3 stages" in section
    assert "devices 2.4 %, page cache 97.6 % of the 121.3 MiB the applications read" in section
    assert "HDFS hdd, local ssd" in section and "31.6 s" in section


def test_overview_rows_say_what_they_lack():
    overview = pd.DataFrame([{"workload_id": "terasort-mr", "workload": "terasort", "sweep": "engine=mapreduce",
                              "placement_hdfs": "hdd", "placement_local": "ssd", "executor_cores": pd.NA, "run_s": 30.0,
                              **{path: float("nan") for path in metrics.PATH_COLUMNS},
                              "app_read_bytes": 2 ** 20, "device_read_bytes": float("nan"),
                              "device_write_bytes": float("nan"), "device_read_share_pct": float("nan")}])
    [row] = overview_rows(overview, pd.DataFrame(columns=["workload_id"]), pd.DataFrame(columns=["workload_id"]))
    assert row["workload"] == "terasort (engine=mapreduce)" and row["run"] == "30.0 s"
    assert row["time"].startswith("no Spark stages") and "spill -" in row["paths"]
    assert row["devices"].startswith("not recorded") and "were not recorded" in row["reads"]
