"""Findings against the baseline (analysis/findings/diff.py) in `make compare` and the regression gate: a planted
regression (the candidate, a copy of the recorded placement matrix whose hdd/hdd reduce stage spilled) shows as a
new finding by its key, a spill that grew as a changed level; the same run against itself shows nothing new,
resolved or changed."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from analysis.findings.diff import findings_diff, summary_lines
from analysis.tables import TABLE_NAMES
from conftest import FIXTURES

REPO = Path(__file__).resolve().parents[3]
BASELINE, CANDIDATE = "20261121-201144-local", "20261122-201144-local"


def _compare(results: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", "compare", *args], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "SPILLWAY_RESULTS": str(results)}, timeout=600)


def test_a_planted_spill_is_new_against_the_baseline_in_the_page_the_json_and_the_gate(tmp_path):
    for run_id in (BASELINE, CANDIDATE):
        shutil.copytree(FIXTURES / "runs" / "terasort-matrix", tmp_path / run_id)
        # the recording predates some tables: empty ones, so that its tables are read as recorded (not re-parsed
        # from a raw/ it does not have)
        for name in TABLE_NAMES:
            if not (tmp_path / run_id / "tables" / f"{name}.parquet").exists():
                pd.DataFrame().to_parquet(tmp_path / run_id / "tables" / f"{name}.parquet")
    manifest = tmp_path / CANDIDATE / "manifest.json"
    manifest.write_text(manifest.read_text().replace(BASELINE, CANDIDATE))
    # planted: the hdd/hdd placement's reduce stage spilled 20 MB of its 27 MB shuffle in the candidate only; the
    # ssd/ssd one's spilled 8 MB in the baseline and 30 MB in the candidate
    for run_id, spills in ((BASELINE, {"terasort-hdfs_ssd-local_ssd": 8_000_000}),
                           (CANDIDATE, {"terasort-hdfs_hdd-local_hdd": 20_000_000,
                                        "terasort-hdfs_ssd-local_ssd": 30_000_000})):
        stages_file = tmp_path / run_id / "tables" / "stages.parquet"
        stages = pd.read_parquet(stages_file)
        for workload_id, spilled in spills.items():
            stages.loc[(stages["shuffle_read_bytes"] > 0) & (stages["workload_id"] == workload_id),
                       "disk_spilled_bytes"] = spilled
        stages.to_parquet(stages_file, index=False)
    out = tmp_path / "cmp"
    done = _compare(tmp_path, BASELINE, CANDIDATE, "--out", str(out), "--baseline", BASELINE, "--max-slowdown", "50%")
    assert done.returncode in (0, 1), done.stderr
    stage = " | stage=app 1 runJob at SparkHadoopWriter.scala:83 #1"
    key, grown = "spill | terasort @ hdfs=hdd local=hdd" + stage, "spill | terasort @ hdfs=ssd local=ssd" + stage
    assert f"findings of {CANDIDATE} against the baseline {BASELINE}: 1 new, 0 resolved, 1 changed level" in done.stdout
    assert f"  new: {key}" in done.stdout
    assert f"  changed: {grown} (low -> severe)" in done.stdout
    recorded = json.loads((out / "findings.json").read_text())["against_baseline"]
    assert [(r["change"], r["key"], r["baseline_level"], r["level"]) for r in recorded] == [
        ("new", key, "", "moderate"), ("changed", grown, "low", "severe")]
    page = (out / "compare.html").read_text()
    assert key in page and "low &rarr; severe" in page
    same = "20261123-201144-local"   # the baseline again, as another run
    shutil.copytree(tmp_path / BASELINE, tmp_path / same)
    (tmp_path / same / "manifest.json").write_text((tmp_path / BASELINE / "manifest.json").read_text().replace(
        BASELINE, same))
    again = _compare(tmp_path, BASELINE, same, "--out", str(tmp_path / "same"), "--baseline", BASELINE)
    assert f"findings of {same} against the baseline {BASELINE}: 0 new, 0 resolved, 0 changed level" in again.stdout \
        or f"findings against the baseline {BASELINE}: none new, none resolved, none changed level" in again.stdout, \
        again.stderr


def test_resolved_is_the_baseline_finding_a_run_has_not():
    found = pd.DataFrame({"run": ["a", "a", "b", ""], "key": ["spill | x", "imbalance | x", "spill | x", "cannot-tell | x"],
                          "rule": ["spill", "imbalance", "spill", "cannot-tell"], "evidence": ["e1", "e2", "e3", "e4"]})
    diff = findings_diff(found, "a", ["b"])
    assert diff[["change", "key"]].values.tolist() == [["resolved", "imbalance | x"]]
    assert summary_lines(diff, "a") == ["findings of b against the baseline a: 0 new, 1 resolved, 0 changed level",
                                        "  resolved: imbalance | x"]


def test_changed_is_a_key_both_have_at_another_level_the_most_severe_of_its_repetitions():
    found = pd.DataFrame({"run": ["a", "a", "b", "b", "b"],
                          "key": ["spill | x", "spill | x", "spill | x", "imbalance | y", "imbalance | y"],
                          "rule": ["spill", "spill", "spill", "imbalance", "imbalance"],
                          "level": ["low", "moderate", "moderate", "low", "severe"],
                          "evidence": ["e1", "e2", "e3", "e4", "e5"]})
    # a's spill: moderate (its most severe repetition), b's moderate too: not changed; b's imbalance is new
    assert findings_diff(found, "a", ["b"])[["change", "key", "level"]].values.tolist() == [
        ["new", "imbalance | y", "severe"]]
    found.loc[2, "level"] = "critical"
    diff = findings_diff(found, "a", ["b"])
    assert diff[["change", "key", "baseline_level", "level"]].values.tolist() == [
        ["new", "imbalance | y", "", "severe"], ["changed", "spill | x", "moderate", "critical"]]
    assert summary_lines(diff, "a")[-1] == "  changed: spill | x (moderate -> critical)"
