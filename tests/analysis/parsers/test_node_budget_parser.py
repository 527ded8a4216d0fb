"""The node-budget parser on snapshots recorded on this machine's cgroups (tests/fixtures/node-budget/README.md): a
budget whose OOM killer killed a process, and a node's budget over a real TeraSort on Spark."""
import json
from pathlib import Path

import pytest

from analysis.parsers.node_budget import COLUMNS, window_row

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "node-budget"
MIB = 2**20


def row(name):
    return window_row(FIXTURES / name / "node-budget.start", FIXTURES / name / "node-budget.stop")


def test_an_oom_kill_is_counted_with_the_budget_and_the_throttling():
    oom = row("oom-worker1")
    assert list(oom) == COLUMNS
    assert oom["oom_kills"] == 1 and oom["memory_limit_bytes"] == 256 * MIB
    assert oom["limit_hits"] > 0                      # the limit was reached before the kill
    assert oom["cpu_quota_cores"] == 0.5
    assert 0 < oom["cpu_throttled_s"] < oom["window_s"] and 0 < oom["throttled_period_share"] <= 1
    assert 2 < oom["window_s"] < 4


def test_a_counter_that_went_down_is_refused(tmp_path):
    start = json.loads((FIXTURES / "oom-worker1" / "node-budget.stop").read_text())
    stop = json.loads((FIXTURES / "oom-worker1" / "node-budget.start").read_text())
    (tmp_path / "start").write_text(json.dumps(start))
    (tmp_path / "stop").write_text(json.dumps(stop))
    with pytest.raises(ValueError, match="went down between start and stop"):
        window_row(tmp_path / "start", tmp_path / "stop")


@pytest.mark.parametrize("text, message", [("[1, 2]", "not a node-budget snapshot"),
                                           ('{"epoch": 1, "memory": {"oom_kill": "one"}}', "not a number")])
def test_a_snapshot_that_is_not_one_is_refused(tmp_path, text, message):
    (tmp_path / "start").write_text(text)
    (tmp_path / "stop").write_text(text)
    with pytest.raises(ValueError, match=message):
        window_row(tmp_path / "start", tmp_path / "stop")


def test_a_budget_over_a_real_terasort_holds_its_page_cache_and_processes():
    sort = row("terasort-localhost")
    assert sort["memory_limit_bytes"] == 6 * 2**30 and sort["cpu_quota_cores"] == 2
    assert sort["oom_kills"] == 0 and sort["limit_hits"] == 0 and sort["cpu_throttled_s"] == 0
    assert 400 * MIB < sort["page_cache_bytes"] < 500 * MIB
    assert sort["page_cache_bytes"] + sort["process_memory_bytes"] <= sort["memory_usage_bytes"]
    assert 120 < sort["window_s"] < 140
