"""The node-budget collector on this machine's cgroups: on a node without a budget it only says so; on a budget
made by role node_budget's module it snapshots the groups at start and stop (a second stop keeps the first), which
the parser reads; a listing that names anything but a node budget's group is refused, with nothing read."""
import importlib.util
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.parsers.node_budget import window_row

REPO = Path(__file__).resolve().parents[2]
COLLECTOR = REPO / "collectors" / "node-budget"
MODULE = REPO / "playbooks" / "roles" / "node_budget" / "library" / "spillway_node_budget.py"


def run(step, root, out):
    env = {**os.environ, "SPILLWAY_ROOT": str(root), "SPILLWAY_OUT": str(out), "SPILLWAY_RUN_ID": "r",
           "SPILLWAY_WORKLOAD_ID": "w"}
    return subprocess.run([sys.executable, str(COLLECTOR / step)], env=env, capture_output=True, text=True, timeout=60)


def test_a_node_without_a_budget_says_there_is_nothing_here(tmp_path):
    for step in ("start", "stop", "stop"):
        result = run(step, tmp_path / "root", tmp_path / "out")
        assert result.returncode == 0 and result.stderr == "", result.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["nothing-here.txt"]
    assert "this node has no budget" in (tmp_path / "out" / "nothing-here.txt").read_text()


def test_a_listing_of_other_groups_is_an_error_not_a_reading(tmp_path):
    (tmp_path / "root" / "run").mkdir(parents=True)
    (tmp_path / "root" / "run" / "node-cgroups").write_text("/sys/fs/cgroup/memory\n")
    assert run("start", tmp_path / "root", tmp_path / "out").returncode == 0     # a collector never fails the bench
    assert not (tmp_path / "out" / "node-budget.start").exists()
    assert "not a node budget's group" in (tmp_path / "out" / "collector-error.txt").read_text()


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/sys/fs/cgroup/memory").is_dir(),
                    reason="making a budget's groups needs root and the cgroup v1 memory hierarchy")
def test_a_budget_is_snapshotted_at_start_and_stop(tmp_path):
    spec = importlib.util.spec_from_file_location("spillway_node_budget", MODULE)
    budget = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(budget)
    (tmp_path / "root" / "run").mkdir(parents=True)
    params = {"cgroup_root": "/sys/fs/cgroup", "cluster": "collectortest", "host": "localhost",
              "cluster_id": secrets.token_hex(8), "memory_bytes": 1 << 30, "cpu_quota_us": 0, "cpu_period_us": 100000,
              "list_file": str(tmp_path / "root" / "run" / "node-cgroups"), "state": "present"}
    budget.apply(params, check_mode=False)
    try:
        out = tmp_path / "out"
        assert run("start", tmp_path / "root", out).returncode == 0
        assert run("stop", tmp_path / "root", out).returncode == 0
        first = (out / "node-budget.stop").read_text()
        assert run("stop", tmp_path / "root", out).returncode == 0
        assert (out / "node-budget.stop").read_text() == first
        snapshot = json.loads(first)
        assert set(snapshot["groups"]) == {"memory"} and snapshot["memory"]["limit_in_bytes"] == 1 << 30
        row = window_row(out / "node-budget.start", out / "node-budget.stop")
        assert row["memory_limit_bytes"] == 1 << 30 and row["oom_kills"] == 0 and row["cpu_quota_cores"] is None
    finally:
        budget.apply({**params, "state": "absent"}, check_mode=False)
