"""findings.json for machines (analysis/presentation/findings_export.py; docs/findings.md, "findings.json"): the
report's and the comparison's overview and storage sensitivity, on the recorded placement matrix
(tests/fixtures/runs/terasort-matrix: TeraSort on Spark, HDFS and local dirs on hdd or ssd, one run each; its first two
placements also ran TeraGen on MapReduce) and the recorded hdd-only run (terasort-hdd). Each figure is checked against
the recorded tables, computed here without the analysis' own functions, and against what the HTML page shows."""
from __future__ import annotations

import json
import math
import re
from html import unescape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import metrics
from analysis.compare_page import write_comparison
from analysis.findings.engine import COLUMNS
from analysis.presentation import findings_export
from analysis.report_page import write_report
from analysis.tables import TABLE_NAMES
from conftest import copy_recorded_run

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"
HDD_HDD, HDD_SSD = "terasort-hdfs_hdd-local_hdd", "terasort-hdfs_hdd-local_ssd"
SSD_HDD, SSD_SSD = "terasort-hdfs_ssd-local_hdd", "terasort-hdfs_ssd-local_ssd"


def _text(html: str, start: str, end: str) -> str:
    """A section of the page as its reader sees it: tags out, entities decoded, blanks collapsed."""
    section = html[html.index(start):html.index(end, html.index(start))]
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", section)))


def _recorded(run: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(RUNS / run.name / "tables" / f"{name}.parquet")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, str, dict]:
    """The matrix's report, written once: (run directory, page, findings.json)."""
    run = copy_recorded_run("terasort-matrix", tmp_path_factory.mktemp("findings-json"))
    html = write_report(run).read_text()
    return run, html, json.loads((run / "findings.json").read_text())


def _expected_bytes(run: Path) -> pd.DataFrame:
    """Per workload run, from the recorded tables: what its applications moved by path (Spark stage sums plus the
    MapReduce jobs' total counters) and what the backends' devices (the devices table's, not their lower devices)
    read and wrote."""
    stages = _recorded(run, "stages")
    spark = stages[stages["status"] == "succeeded"].groupby("workload_id")[
        ["input_bytes", "output_bytes", "shuffle_read_bytes", "shuffle_write_bytes", "disk_spilled_bytes"]].sum()
    counters = _recorded(run, "mr_counters")
    mr = counters[counters["scope"] == "total"].pivot_table(index="workload_id", columns="name", values="value",
                                                            aggfunc="sum")
    devices = _recorded(run, "devices")
    totals = _recorded(run, "disk_totals").merge(devices[["host", "device", "backend"]], on=["host", "device"])
    frame = pd.DataFrame(index=spark.index)
    frame["hdfs_read_bytes"] = spark["input_bytes"] + mr["HDFS_BYTES_READ"].reindex(spark.index).fillna(0)
    frame["hdfs_write_bytes"] = spark["output_bytes"] + mr["HDFS_BYTES_WRITTEN"].reindex(spark.index).fillna(0)
    frame["shuffle_read_bytes"] = spark["shuffle_read_bytes"]
    frame["spill_bytes"] = spark["disk_spilled_bytes"]
    frame["app_read_bytes"] = frame["hdfs_read_bytes"] + frame["shuffle_read_bytes"]
    for backend in devices["backend"]:
        mine = totals[totals["backend"] == backend].groupby("workload_id")
        frame[f"{backend}_read_bytes"] = mine["read_bytes"].sum().reindex(spark.index).fillna(0)
        frame[f"{backend}_write_bytes"] = mine["write_bytes"].sum().reindex(spark.index).fillna(0)
    frame["device_read_bytes"] = totals.groupby("workload_id")["read_bytes"].sum()
    frame["stages_seconds"] = stages.groupby("workload_id")["duration_s"].sum()
    frame["stage_count"] = stages.groupby("workload_id").size()
    return frame


def test_the_reports_overview_carries_the_recorded_bytes_times_and_reads(report):
    run, html, document = report
    assert document["overview"]["error"] is None and document["units"]["_share"] == "a fraction of a whole, 0..1"
    items = {item["workload_id"]: item for item in document["overview"]["items"]}
    assert list(items) == [HDD_HDD, HDD_SSD, SSD_HDD, SSD_SSD]
    expected = _expected_bytes(run)
    workloads = _recorded(run, "workloads").set_index("workload_id")
    for workload_id, item in items.items():
        want = expected.loc[workload_id]
        assert item["run_id"] == document["run_id"] == "20261121-201144-local"
        assert item["run_seconds"] == workloads.loc[workload_id, "run_s"]
        assert item["placement"] == {"hdfs": workloads.loc[workload_id, "placement_hdfs"],
                                     "local": workloads.loc[workload_id, "placement_local"]}
        for path in ("hdfs_read_bytes", "hdfs_write_bytes", "shuffle_read_bytes", "spill_bytes"):
            assert item["bytes_by_path"][path] == want[path], (workload_id, path)
        assert {d["backend"]: (d["read_bytes"], d["write_bytes"]) for d in item["device_bytes_by_backend"]} == \
            {b: (want[f"{b}_read_bytes"], want[f"{b}_write_bytes"]) for b in ("hdd", "ssd")}
        reads = item["reads"]
        assert reads["app_read_bytes"] == want["app_read_bytes"]
        assert reads["device_read_bytes"] == want["device_read_bytes"]
        assert reads["device_share"] == pytest.approx(want["device_read_bytes"] / want["app_read_bytes"])
        assert reads["page_cache_share"] == pytest.approx(1 - reads["device_share"])
        time = item["stage_time"]
        assert time["stages_seconds"] == pytest.approx(want["stages_seconds"])
        assert time["stage_count"] == want["stage_count"] == 3
        assert sum(b["share"] for b in time["bottlenecks"]) == pytest.approx(1)
        assert sum(b["stages_seconds"] for b in time["bottlenecks"]) == pytest.approx(want["stages_seconds"])
        for b in time["bottlenecks"]:
            assert b["share"] == pytest.approx(b["stages_seconds"] / want["stages_seconds"])
            assert (b["backend"] is None) == (b["resource"] != "disk")
    # recorded: with both paths on the hdd its devices served 2.4 % of the 121.3 MiB read; with HDFS on the hdd and the
    # shuffle on the ssd, the hdd bounded 72 % of the stages' 11.8 s; everything on the ssd, the CPU all of it
    assert round(100 * items[HDD_HDD]["reads"]["device_share"], 1) == 2.4
    assert [(b["resource"], b["backend"], round(100 * b["share"])) for b in items[HDD_SSD]["stage_time"]["bottlenecks"]] \
        == [("disk", "hdd", 72), ("cpu", None, 28)]
    assert [b["resource"] for b in items[SSD_SSD]["stage_time"]["bottlenecks"]] == ["cpu"]

    # the same numbers as the page's overview shows them, one row per workload run
    text = _text(html, 'id="overview"', 'id="sensitivity"')
    for item in items.values():
        time, reads = item["stage_time"], item["reads"]
        parts = [f"{'CPU' if b['resource'] == 'cpu' else 'disk ' + b['backend']} {100 * b['share']:.0f} %"
                 for b in time["bottlenecks"]]
        assert f"{', '.join(parts)} of {time['stages_seconds']:.1f} s in {time['stage_count']} stages" in text
        assert f"devices {100 * reads['device_share']:.1f} %, page cache {100 * reads['page_cache_share']:.1f} % of " \
               f"the {reads['app_read_bytes'] / 2 ** 20:.1f} MiB the applications read" in text
        assert f"{item['run_seconds']:.1f} s" in text


def test_the_reports_sensitivity_carries_every_placement_and_the_models_error(report):
    run, html, document = report
    assert document["sensitivity"]["error"] is None
    [group] = document["sensitivity"]["items"]
    assert (group["workload"], group["sweep"], group["cores_per_node"], group["nodes"]) == ("terasort", "", 2, 1)
    workloads = _recorded(run, "workloads")
    measured = workloads.groupby(["placement_hdfs", "placement_local"])["run_s"].agg(["median", "min", "max", "count"])
    placements = {(p["hdfs"], p["local"]): p for p in group["placements"]}
    assert set(placements) == set(measured.index) and len(placements) == 4
    for key, p in placements.items():
        assert p["how"] == "measured"
        assert (p["run_seconds"], p["min_seconds"], p["max_seconds"], p["run_count"]) == tuple(measured.loc[key])
        # the leave-one-out check: this placement predicted from the three others, against its measured time
        assert p["error_pct"] == pytest.approx(100 * (p["predicted_seconds"] - p["run_seconds"]) / p["run_seconds"])
    errors = [abs(p["error_pct"]) for p in group["placements"]]
    assert group["model_error"]["median_abs_pct"] == pytest.approx(float(np.median(errors)))
    assert group["model_error"]["worst_abs_pct"] == pytest.approx(max(errors))
    assert "each of its 4 measured placements predicted from the others" in group["model_error"]["basis"]

    # the same numbers as the page's sensitivity table: the cells in its column order, the checks in their tooltips
    section = html[html.index('id="sensitivity"'):html.index('id="emulation"')]
    text = _text(html, 'id="sensitivity"', 'id="emulation"')
    assert " ".join(f"HDFS {p['hdfs']}, local {p['local']}" for p in group["placements"]) in text
    assert " ".join(f"{p['run_seconds']:.1f} s measured" for p in group["placements"]) in text
    for p in group["placements"]:
        assert f"the model, from the other placements: {p['predicted_seconds']:.1f} s ({p['error_pct']:+.1f} %)" \
            in unescape(section)
    assert f"median {group['model_error']['median_abs_pct']:.1f} %, worst {group['model_error']['worst_abs_pct']:.1f} %" \
        in text
    # recorded: -12.4, -10.2, +5.8 and -3.6 % (docs/models.md)
    assert [round(p["error_pct"], 1) for p in group["placements"]] == [-12.4, -10.2, 5.8, -3.6]


def test_the_comparisons_findings_json_carries_each_runs_overview_and_the_shared_sensitivity(tmp_path):
    """The matrix with its hdd-only placement left out of its manifest, against terasort-hdd (the same workload and
    parameters on a cluster whose one backend is an hdd): every placement measured by one of the two runs."""
    three = copy_recorded_run("terasort-matrix", tmp_path)
    manifest = json.loads((three / "manifest.json").read_text())
    manifest["workloads"] = [w for w in manifest["workloads"] if w["id"] != HDD_HDD]
    (three / "manifest.json").write_text(json.dumps(manifest))
    hdd = copy_recorded_run("terasort-hdd", tmp_path)
    html = write_comparison([str(three), str(hdd)], tmp_path / "cmp").read_text()
    document = json.loads((tmp_path / "cmp" / "findings.json").read_text())
    hdd_manifest = json.loads((hdd / "manifest.json").read_text())
    hdd_run = hdd_manifest["run_id"]
    # terasort-hdd recorded its stages but no disk counters and no workloads table: its run step from the manifest
    [hdd_run_s] = [step["duration_s"] for step in hdd_manifest["workloads"][0]["steps"] if step["name"] == "terasort: run"]

    overview = document["overview"]
    assert overview["error"] is None
    by_run = {}
    for item in overview["items"]:
        by_run.setdefault(item["run_id"], []).append(item["workload_id"])
    assert by_run == {"20261121-201144-local": [HDD_SSD, SSD_HDD, SSD_SSD], hdd_run: ["terasort"]}
    [alone] = [item for item in overview["items"] if item["run_id"] == hdd_run]
    assert alone["run_seconds"] == hdd_run_s == 29.097
    assert alone["placement"] == {"hdfs": "hdd", "local": "hdd"}
    stages = _recorded(hdd, "stages")
    assert alone["reads"]["app_read_bytes"] == stages["input_bytes"].sum() + stages["shuffle_read_bytes"].sum()
    assert alone["reads"]["device_read_bytes"] is None and alone["reads"]["device_share"] is None
    assert alone["device_bytes_by_backend"] == []
    assert alone["stage_time"]["stage_count"] == len(stages)
    assert alone["stage_time"]["stages_seconds"] == pytest.approx(stages["duration_s"].sum())

    [group] = document["sensitivity"]["items"]
    placements = {(p["hdfs"], p["local"]): p for p in group["placements"]}
    assert all(p["how"] == "measured" and p["run_count"] == 1 for p in placements.values())
    # the hdd-only placement is measured by the other run, the rest by the matrix
    assert placements[("hdd", "hdd")]["run_seconds"] == hdd_run_s
    matrix = _recorded(three, "workloads").set_index(["placement_hdfs", "placement_local"])["run_s"]
    for key in [("hdd", "ssd"), ("ssd", "hdd"), ("ssd", "ssd")]:
        assert placements[key]["run_seconds"] == matrix.loc[key]
    text = _text(html, 'id="sensitivity"', 'id="differences"')
    assert " ".join(f"{p['run_seconds']:.1f} s measured" for p in group["placements"]) in text
    assert f"median {group['model_error']['median_abs_pct']:.1f} %" in text
    assert "runs 20261121-201144-local, 20261121-210201-hdd" in group["model_error"]["basis"]


def test_a_mapreduce_only_run_says_null_where_the_page_says_dash(tmp_path):
    """The matrix's tables with HDD_HDD's Spark stages taken out: what is left of it is TeraGen on MapReduce, which
    counts spilled records, not bytes, and has no Spark stage to model; findings.json is strict JSON (no NaN)."""
    tables = {name: pd.read_parquet(RUNS / "terasort-matrix" / "tables" / f"{name}.parquet")
              if (RUNS / "terasort-matrix" / "tables" / f"{name}.parquet").exists()
              else pd.DataFrame(columns=["host", "workload_id"]) for name in TABLE_NAMES}
    tables["stages"] = tables["stages"][tables["stages"]["workload_id"] != HDD_HDD]
    overview, per_backend = metrics.workload_overview(tables)
    records = findings_export.overview_records("run", overview, per_backend, pd.DataFrame(columns=["workload_id"]))
    [teragen] = [r for r in records if r["workload_id"] == HDD_HDD]
    assert teragen["bytes_by_path"]["spill_bytes"] is None and teragen["stage_time"] is None
    assert teragen["bytes_by_path"]["hdfs_write_bytes"] == 50_000_000     # 500 k rows of 100 bytes
    unevaluated = findings_export.section(error="the storage sensitivity could not be evaluated: ...")
    document = findings_export.as_json("run", [], pd.DataFrame(columns=COLUMNS), None, findings_export.section(records),
                                       unevaluated)
    parsed = json.loads(document, parse_constant=lambda name: pytest.fail(f"findings.json holds {name}"))
    assert parsed["sensitivity"] == {"error": "the storage sensitivity could not be evaluated: ...", "items": []}
    assert not any(isinstance(v, float) and not math.isfinite(v) for v in parsed["overview"]["items"][0]["reads"].values())


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_every_key_of_findings_json_is_documented(report):
    """Every key the report writes at the top and in the overview and sensitivity (the rules' own keys and their
    findings' `values` are documented with each rule), and every unit suffix, in the "findings.json" section."""
    _, _, document = report
    doc = (Path(__file__).resolve().parents[3] / "docs" / "findings.md").read_text()
    start = doc.index("## findings.json")
    section = doc[start:doc.index("\n## ", start + 1)]
    keys = set(document) | _keys(document["overview"]) | _keys(document["sensitivity"]) | set(document["units"])
    # documented as `key` or as the last part of a dotted `parent.key`
    assert len(keys) > 40 and not [key for key in sorted(keys) if not re.search(rf"[`.]{re.escape(key)}`", section)]
