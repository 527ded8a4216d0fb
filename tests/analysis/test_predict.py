"""`python -m analysis predict` on recorded runs, as a user runs it (a subprocess, results/ pointed at a copy)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "tests" / "fixtures" / "runs"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    for name, run_id in (("terasort-hdd", "20261121-210201-hdd"), ("terasort-nvme", "20261121-210452-nvme"),
                         ("fio-sweep", "20261121-195701-local"), ("terasort-matrix", "20261121-201144-local")):
        shutil.copytree(RUNS / name, tmp_path / run_id)
    return tmp_path


def _predict(results: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", "predict", *args], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "SPILLWAY_RESULTS": str(results)})


def test_json_has_per_stage_predictions_with_units(results):
    done = _predict(results, "20261121-210201-hdd", "--to", "nvme", "--measured", "20261121-210452-nvme",
                    "--fio", "20261121-195701-local", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["target"] == {"hdfs": "nvme", "local": "nvme", "executor_cores_per_node": 2, "nodes": 1}
    assert out["units"]["_s"] == "seconds" and out["units"]["_bytes_per_s"] == "bytes per second"
    assert [s["stage_id"] for s in out["stages"]] == [0, 1, 2]
    for stage in out["stages"]:
        assert {"t_scale_s", "t_read_limit_s", "t_write_limit_s", "predicted_s", "measured_s", "error_pct"} <= set(stage)
        assert stage["predicted_s"] == max(stage["t_scale_s"], stage["t_read_limit_s"], stage["t_write_limit_s"])
        for path in stage["io_paths"]:
            assert set(path) == {"path", "backend", "data_bytes", "request_bytes", "bandwidth_bytes_per_s", "time_s",
                                 "bandwidth_source"}
    # nvme (never swept) from its caps; the sweep of the run given with --fio would serve hdd and ssd
    sources = {p["backend"]: p["bandwidth_source"] for s in out["stages"] for p in s["io_paths"]}
    assert sources.get("nvme", "").startswith("storage profile caps")
    assert out["errors"]["stages_compared"] == 3 and out["errors"]["median_abs_error_pct"] < 10
    assert out["application"]["predicted_s"] == pytest.approx(sum(s["predicted_s"] for s in out["stages"]))
    assert {"t_avg_s", "delta_scale_s", "delta_read_s", "request_bytes"} <= set(out["fitted"][0])


def test_table_names_units_and_the_placement_left_out(results):
    done = _predict(results, "20261121-201144-local", "--to", "hdfs=ssd,local=hdd")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("I/O-aware model prediction for hdfs=ssd local=hdd P=2 N=1")
    # the measured placement itself is not in the fit: a real prediction
    assert "terasort-hdfs_ssd-local_hdd" not in lines[1] and lines[1].count("terasort-hdfs_") == 3
    stage_lines = [line for line in lines if line.startswith("terasort  app 1 s")]
    assert len(stage_lines) == 3 and all(line.count(" s ") >= 5 and line.rstrip().endswith("%") for line in stage_lines)
    assert "median |error|" in lines[-1]


def test_other_cores_and_nodes_and_bad_targets(results):
    done = _predict(results, "20261121-210201-hdd", "--to", "ssd", "--cores", "1", "--nodes", "4", "--json")
    out = json.loads(done.stdout)
    assert out["target"]["executor_cores_per_node"] == 1 and out["target"]["nodes"] == 4
    assert "measured_s" in out["stages"][0] and out["errors"] == {"stages_compared": 0, "min_stage_s": 1.0}
    text = _predict(results, "20261121-210201-hdd", "--to", "ssd", "--cores", "1").stdout
    # columns t_scale, read limit, write limit, predicted: the fourth number in seconds
    total = sum(float(re.findall(r"(\d+\.\d+) s\b", line)[3]) for line in text.splitlines()
                if line.startswith("terasort  app 1 s"))
    assert f"terasort: predicted sum of stage times {total:.2f} s" in text
    bad = _predict(results, "20261121-210201-hdd", "--to", "floppy")
    assert bad.returncode == 2 and "floppy" in bad.stderr
    wrong = _predict(results, "20261121-210201-hdd", "--to", "hdfs=hdd")
    assert wrong.returncode == 2 and "hdfs=<backend>,local=<backend>" in wrong.stderr


def test_a_fio_sweep_counts_only_from_a_run_named(results):
    """The prediction is a function of its inputs: the sweep lying in results/ is used only when --fio names it."""
    def hdd_sources(*extra):
        done = _predict(results, "20261121-201144-local", "--to", "hdfs=hdd,local=hdd", "--json", *extra)
        assert done.returncode == 0, done.stderr
        return {p["bandwidth_source"] for s in json.loads(done.stdout)["stages"] for p in s["io_paths"]
                if p["backend"] == "hdd"}
    assert hdd_sources() == {"storage profile caps (inventories/storage-profiles.yml)"}
    assert hdd_sources("--fio", "20261121-195701-local") == {"fio sweep of run 20261121-195701-local"}


def test_a_workload_measured_on_the_target_only_is_fitted_in_sample(tmp_path):
    """The default bench measures TPC-H on the inventory's placement only and TeraSort on both: predicting that
    placement predicts TeraSort from the other one and still gives TPC-H's rows (it printed none before), marked
    in-sample and kept out of the error figures (an in-sample fit reproduces its own runs)."""
    shutil.copytree(RUNS / "default-bench-tpch-probe", tmp_path / "20261129-010505-local")
    done = _predict(tmp_path, "20261129-010505-local", "--to", "hdfs=hdd,local=ssd", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert {s["workload"] for s in out["stages"]} == {"terasort", "tpch"}
    assert all(s["in_sample"] == (s["workload"] == "tpch") for s in out["stages"])
    assert [w["workload"] for w in out["errors"]["workloads"]] == ["terasort"]
    assert out["errors"]["stages_compared"] == sum(s["workload"] == "terasort" for s in out["stages"])
    text = _predict(tmp_path, "20261129-010505-local", "--to", "hdfs=hdd,local=ssd").stdout
    assert "fitted on it (in-sample): tpch" in text
    assert re.search(r"^tpch: predicted sum of stage times \d+\.\d\d s; in-sample", text, re.M)
