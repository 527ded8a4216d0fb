"""`python -m experiments.validate_model --dry-run`: the benches it would run, checked against the bench's own
parsers and the tiers inventory; nothing is run. The comparison itself on recorded runs."""
from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import validate_model
from spillway import inventory as inventory_mod
from spillway.bench import plan as bench_plan
from spillway.workloads import WorkloadError

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "tests" / "fixtures" / "runs"


def _bench_lines(text: str) -> list[list[str]]:
    return [shlex.split(line.strip())[1:] for line in text.splitlines() if line.strip().startswith("python -m spillway bench")]


def test_dry_run_prints_the_papers_four_sample_runs_and_three_targets():
    done = subprocess.run([sys.executable, "-m", "experiments.validate_model", "--dry-run"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    benches = _bench_lines(done.stdout)
    assert len(benches) == 7
    options = [dict(zip(b[3::2], b[4::2])) for b in benches]
    assert all(o["--cluster"] == "tiers" for o in options)
    assert options[0]["--workloads"] == "fio-sweep"
    runs = [(o.get("--placement"), o.get("--cores")) for o in options[1:]]
    assert runs == [("hdfs=ssd,local=ssd", "1,2"), ("hdfs=ssd,local=hdd", "2"), ("hdfs=hdd,local=ssd", "2"),
                    ("hdfs=hdd,local=hdd", "2"), ("hdfs=ssd,local=ssd", "2"), ("hdfs=nvme,local=nvme", "2")]
    assert all(o["--workloads"] == "terasort,tpch" and o["--params"] == "terasort.engine=spark" for o in options[1:])
    # what the bench itself makes of each: one placement of the tiers inventory, the cores it sweeps
    inventory = inventory_mod.load("tiers")
    for o in options[1:]:
        assert len(bench_plan.placements(inventory, o["--placement"], "")) == 1
        assert bench_plan.parse_cores(o["--cores"])


def test_plan_refuses_what_the_cluster_or_bench_cannot_do():
    with pytest.raises(WorkloadError, match="nvme"):
        validate_model.build_plan(cluster="local", targets="hdd,ssd,nvme")
    with pytest.raises(WorkloadError, match="two or more"):
        validate_model.build_plan(profile_cores="2")
    with pytest.raises(WorkloadError):
        validate_model.build_plan(params="terasort.no_such_parameter=1")
    plan = validate_model.build_plan(fast="nvme", slow="hdd", targets="ssd")
    assert [s.placement for s in plan.steps if s.role != "fio"] == [
        "hdfs=nvme,local=nvme", "hdfs=nvme,local=hdd", "hdfs=hdd,local=nvme", "hdfs=ssd,local=ssd"]


def test_comparison_on_recorded_runs():
    """The table validate-model prints, with the matrix run as profile and the hdd and nvme clusters as targets."""
    text, rows = validate_model.compare([RUNS / "terasort-matrix"], [RUNS / "terasort-hdd", RUNS / "terasort-nvme"],
                                        [RUNS / "fio-sweep"])
    targets = {(r["profile"], r["target"]) for r in rows}
    assert ("paper's 4 sample runs", "hdfs=nvme local=nvme P=2 N=1") in targets
    assert ("hdd only", "hdfs=nvme local=nvme P=2 N=1") in targets and ("nvme only", "hdfs=hdd local=hdd P=2 N=1") in targets
    hdd_to_nvme = next(r for r in rows if r["profile"] == "hdd only")
    assert hdd_to_nvme["median_abs_stage_error_pct"] < 10 and hdd_to_nvme["worst_stage_error_pct"] < 20
    assert "== summary" in text and "goal <= 10 %" in text
    # `all` covers every stage; `long` only the stages measured >= 1 s, and says how many
    for r in rows:
        assert r["all"]["stages"] == 3 and 0 <= r["long"]["stages"] <= 3
    assert "stages measured >= 1 s" in text and "over all, stages >= 1 s (" in text
    short, short_rows = validate_model.compare([RUNS / "terasort-matrix"], [RUNS / "terasort-hdd"],
                                               [RUNS / "fio-sweep"], min_stage_s=1e6)
    assert all(r["long"]["stages"] == 0 for r in short_rows) and all(r["all"]["stages"] == 3 for r in short_rows)
    assert "stages measured >= 1e+06 s" in short and "over all, stages >= 1e+06 s: no stage" in short
