"""compare: several run directories built from the recorded run fixture, as other clusters would have left
them (another backend profile, other parameters), compared into one page and its tables."""
import json
import re
import shutil

import pandas as pd
import pytest

from analysis.__main__ import main
from analysis.compare_page import write_comparison
from analysis.parsers import eventlog
from conftest import MANIFEST, TOOLS, assemble_run


def _workload(wid, seconds, status="ok", warmup=False, repetition=1, rows=1000, scale="tiny"):
    return {"id": wid, "workload": "spark-tiny", "repetition": repetition, "warmup": warmup, "scale": scale,
            "parameters": {"rows": rows}, "status": status, "executor_cores": None,
            "started_at": "2026-11-21T17:02:00+00:00", "ended_at": "2026-11-21T17:03:00+00:00",
            "steps": [{"name": f"{wid}: run", "status": "ok", "duration_s": seconds}]}


def make_run(recorded_run, parent, name, cluster, profile, times, rows=1000, scale="tiny"):
    """A copy of the recorded run under `parent/name` whose one backend `disk` has `profile` and whose
    spark-tiny repetitions took `times` = [(id suffix, seconds, status, warmup)]. Every repetition gets the
    recorded event log, so a warm-up or invalid run that leaked into a median would double its count."""
    run = parent / name
    shutil.copytree(recorded_run, run)
    events = run / "raw" / "vm" / "eventlog"
    manifest = json.loads(MANIFEST)
    manifest.update(run_id=name, cluster=cluster, status="completed",
                    inventory={"name": cluster, "sha256": f"sha-{cluster}", "groups": {"workers": ["vm"]}},
                    parameters={"scale": scale, "repeat": 3})
    manifest["storage"] = {"backends": {"disk": {"kind": "emulated", "profile": profile}},
                           "placement": {"hdfs": "disk", "local": "disk"}}
    manifest["workloads"] = [manifest["workloads"][0]]          # fio-sweep
    manifest["workloads"][0]["steps"] = [{"name": "fio-sweep: run", "status": "ok", "duration_s": 20.0}]
    for suffix, seconds, status, warmup in times:
        wid = f"spark-tiny-{suffix}"
        manifest["workloads"].append(_workload(wid, seconds, status, warmup, rows=rows, scale=scale))
        shutil.copytree(events / "spark-tiny", events / wid)
    shutil.rmtree(events / "spark-tiny")
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


HDD_TIMES = [("warmup", 1.0, "ok", True), ("r1", 10.0, "ok", False), ("r2", 14.0, "ok", False),
             ("r3", 12.0, "ok", False), ("r4", 100.0, "invalid", False)]
NVME_TIMES = [("warmup", 50.0, "ok", True), ("r1", 5.5, "ok", False), ("r2", 6.0, "ok", False),
              ("r3", 6.6, "ok", False), ("r4", 0.5, "failed", False)]


@pytest.fixture
def two_runs(run_dir, tmp_path):
    return (make_run(run_dir, tmp_path, "20261121-170000-hdd", "hdd", "hdd", HDD_TIMES),
            make_run(run_dir, tmp_path, "20261121-180000-nvme", "nvme", "nvme", NVME_TIMES))


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """One comparison of the two runs, read by the tests that only look at its page and tables (a comparison
    takes seconds): (the runs, the output folder, the page)."""
    folder = tmp_path_factory.mktemp("compared")
    recorded = assemble_run(folder / "recorded")
    runs = (make_run(recorded, folder, "20261121-170000-hdd", "hdd", "hdd", HDD_TIMES),
            make_run(recorded, folder, "20261121-180000-nvme", "nvme", "nvme", NVME_TIMES))
    out = folder / "cmp"
    return runs, out, write_comparison([str(p) for p in runs], out).read_text()


def test_speedups_and_medians_of_measured_runs_only(compared):
    _, out, html = compared
    workloads = pd.read_parquet(out / "tables" / "compare_workloads.parquet")
    spark = workloads[workloads["workload"] == "spark-tiny"].set_index("configuration")
    # columns read as what differs (the clusters' names), the first run is the baseline
    assert list(spark.index) == ["hdd", "nvme"]
    assert spark.loc["hdd", ["median_s", "min_s", "max_s", "runs"]].tolist() == [12.0, 10.0, 14.0, 3]
    assert spark.loc["nvme", ["median_s", "min_s", "max_s", "runs"]].tolist() == [6.0, 5.5, 6.6, 3]
    assert spark.loc["nvme", "speedup_vs_baseline"] == pytest.approx(2.0)
    assert spark.loc["hdd", "speedup_vs_baseline"] == pytest.approx(1.0)
    assert bool(spark.loc["hdd", "spread_flag"]) and not bool(spark.loc["nvme", "spread_flag"])   # 4/12 vs 1.1/6
    assert "12.0 s (10.0–14.0 s, 3 runs) ⚠ spread &gt; 20 %" in html and "2.00 x" in html
    assert "spark-tiny-r4 (invalid)" in html and "spark-tiny-warmup (warm-up)" in html

    stages = pd.read_csv(out / "tables" / "compare_stages.csv")
    assert set(stages["runs"]) == {3}           # warm-up and invalid/failed event logs left out
    assert set(stages["configuration"]) == {"hdd", "nvme"}
    assert stages["speedup_vs_baseline"].dropna().round(6).eq(1.0).all()   # the same recorded log in both
    assert "mapToPair at TinyShuffle.java:14" in html

    fio = pd.read_csv(out / "tables" / "compare_fio_ratio.csv")
    assert not fio.empty and (fio["bandwidth_ratio"] == fio["bandwidth_bytes_per_s"]
                              / fio["bandwidth_bytes_per_s_baseline"]).all()
    shuffle = pd.read_csv(out / "tables" / "compare_shuffle.csv")
    recorded = eventlog.parse_event_logs(TOOLS / "spark-eventlog" / "local-1795280525362").stages
    assert set(shuffle.loc[shuffle["application"] == "Spark app 1", "shuffle_write_bytes"]) == {
        recorded["shuffle_write_bytes"].sum()}
    for name in ("workloads", "stages", "fio", "fio_ratio", "throughput", "shuffle", "differences"):
        assert (out / "tables" / f"compare_{name}.csv").exists() and (out / "tables" / f"compare_{name}.parquet").exists()


def test_figures_name_their_runs(compared):
    two_runs, _, html = compared
    alts = re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,', html)
    assert any(a.startswith("fio bandwidth, IOPS and ratio") for a in alts)
    assert any(a.startswith("throughput during spark-tiny, runs") for a in alts)
    assert any(a.startswith("request sizes during fio-sweep") for a in alts)
    assert any(a.startswith("request offsets during fio-sweep") for a in alts)
    assert all(all(p.name in a for p in two_runs) for a in alts)


def test_what_differed_without_apples_and_oranges(compared):
    _, out, html = compared
    differed = pd.read_csv(out / "tables" / "compare_differences.csv").set_index("field")
    assert differed.loc["cluster"].tolist() == ["hdd", "nvme"]
    assert differed.loc["backends.disk.profile"].tolist() == ["hdd", "nvme"]
    assert "inventory sha256" in differed.index and "hosts kernel" not in differed.index
    assert not any(field.startswith("parameters") or field.startswith("workload ") for field in differed.index)
    assert 'id="apples-and-oranges"' not in html


def test_other_parameters_or_scale_are_flagged(run_dir, tmp_path, two_runs):
    bigger = make_run(run_dir, tmp_path, "20261121-190000-hdd", "hdd", "hdd", HDD_TIMES, rows=5000, scale="small")
    out = tmp_path / "cmp"
    html = write_comparison([str(two_runs[0]), str(bigger)], out).read_text()
    warning = html[html.index('id="apples-and-oranges"'):html.index("What differed")]
    assert "different scale profiles" in warning and "parameter rows differs" in warning
    assert "20261121-170000-hdd: 1000" in warning and "20261121-190000-hdd: 5000" in warning
    differed = pd.read_csv(out / "tables" / "compare_differences.csv").set_index("field")
    assert differed.loc["workload spark-tiny.rows"].astype(str).tolist() == ["1000", "5000"]
    # same cluster and placement: the runs are told apart by their ids
    workloads = pd.read_csv(out / "tables" / "compare_workloads.csv")
    assert set(workloads["configuration"]) == {"20261121-170000-hdd", "20261121-190000-hdd"}


def test_bad_input_exits_2(two_runs, tmp_path, capsys):
    assert main(["compare", str(two_runs[0])]) == 2
    assert "at least 2 runs" in capsys.readouterr().err
    assert main(["compare", str(two_runs[0]), str(tmp_path / "nowhere")]) == 2
    assert "nowhere" in capsys.readouterr().err
    bare = tmp_path / "bare"
    (bare / "raw").mkdir(parents=True)
    assert main(["compare", str(two_runs[0]), str(bare)]) == 2
    assert "no manifest.json" in capsys.readouterr().err
    assert not (tmp_path / "cmp").exists()


def test_two_runs_with_the_same_run_id_are_refused_naming_both(two_runs, tmp_path, capsys):
    """A copy of a run (its manifest's run_id unchanged) ended in an AttributeError: every table of a comparison is
    keyed by run id."""
    copy = tmp_path / "copy-of-hdd"
    shutil.copytree(two_runs[0], copy)
    assert main(["compare", str(two_runs[0]), str(copy), "--out", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert f"{two_runs[0]} and {copy} both have run_id '20261121-170000-hdd'" in err and "Traceback" not in err
    assert not (tmp_path / "cmp").exists()


def test_command_prints_the_page_last(two_runs, tmp_path, capsys):
    assert main(["compare", *map(str, two_runs), "--out", str(tmp_path / "cmp")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path / "cmp" / "compare.html")
    assert not (two_runs[0] / "tables").exists()       # comparing writes nothing into the runs


def test_the_spark_release_each_run_ran_on_is_listed_under_what_differed():
    """docs/versions.md: two benches on one cluster, one on Spark 3.5.6, one on 4.2.0."""
    from analysis.across_runs.differences import manifest_facts

    def manifest(release):
        return {"workloads": [{"id": "terasort", "workload": "terasort", "scale": "tiny", "parameters": {},
                               "versions": {"spark": release, "scala": "2.13", "hadoop": "3.4.2"}}]}

    facts = manifest_facts(manifest("3.5.6")), manifest_facts(manifest("4.2.0"))
    assert [f["workload runs versions.spark"] for f in facts] == ["3.5.6", "4.2.0"]
    assert [f["workload runs versions.hadoop"] for f in facts] == ["3.4.2", "3.4.2"]


def test_a_versions_run_keeps_its_releases_apart_and_two_one_release_runs_side_by_side():
    """docs/versions.md, "On the pages": the rows of the compare page (the `sweep` key of every workload run)."""
    from pathlib import Path

    from analysis.across_runs.runs import Run, key_by_effective_parameters
    from analysis.parsers.manifest import workloads_table

    def run(run_id, *releases):
        manifest = {"workloads": [{"id": f"terasort-{n}", "workload": "terasort", "scale": "tiny", "status": "ok",
                                   "parameters": {"engine": "spark"}, "versions": {"spark": release}}
                                  for n, release in enumerate(releases)]}
        return Run(Path(run_id), run_id, manifest, {"workloads": workloads_table(manifest)})

    def sweeps(*runs):
        key_by_effective_parameters(list(runs))
        return [list(r.tables["workloads"]["sweep"]) for r in runs]

    assert sweeps(run("sweep", "3.5.6", "4.2.0", "3.5.6"), run("old", "3.5.6")) == [
        ["spark=3.5.6", "spark=4.2.0", "spark=3.5.6"], ["spark=3.5.6"]]
    assert sweeps(run("on-3.5", "3.5.6", "3.5.6"), run("on-4.2", "4.2.0")) == [["", ""], [""]]
