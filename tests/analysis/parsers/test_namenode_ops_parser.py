"""The namenode-ops parser on the NameNode's JMX snapshots recorded in a real bench (tests/fixtures/collectors/
README.md, namenode-ops): the window's operations are stop minus start of the recorded beans, a mean time keeps
the stop's value, a counter that never moved has no row, and a NameNode restarted inside the window is refused."""
import json
import math

import pytest

from analysis.parsers.namenode_ops import COLUMNS, window_deltas
from conftest import FIXTURES

RECORDED = FIXTURES / "collectors" / "namenode-ops"


def snapshots(workload: str) -> tuple[dict, dict]:
    folder = RECORDED / workload
    if not (folder / "namenode.stop").exists():
        pytest.fail(f"missing recorded fixture {folder}", pytrace=False)
    return tuple(json.loads((folder / f"namenode.{which}").read_text()) for which in ("start", "stop"))


def by_hand(workload: str, bean: str, counter: str) -> float:
    """stop minus start of one counter, read from the recorded JSON here."""
    start, stop = snapshots(workload)
    value = {b["name"].rsplit("name=", 1)[-1]: b for b in stop["beans"]}[bean][counter]
    return value - {b["name"].rsplit("name=", 1)[-1]: b for b in start["beans"]}[bean][counter]


def test_the_windows_operations_are_stop_minus_start_of_the_recorded_counters():
    folder = RECORDED / "tpch"
    table = window_deltas(folder / "namenode.start", folder / "namenode.stop")
    assert list(table.columns) == COLUMNS
    activity = table[table.bean == "NameNodeActivity"].set_index("counter")
    for counter in ("FilesCreated", "FilesRenamed", "GetListingOps", "FileInfoOps", "GetBlockLocations"):
        assert activity.loc[counter, "delta"] == by_hand("tpch", "NameNodeActivity", counter), counter
    # TPC-H on Spark read its 8 tables' files: hundreds of lookups, a few dozen files written and renamed
    assert activity.loc["GetBlockLocations", "delta"] > 100 and activity.loc["FilesRenamed", "delta"] > 0
    start, stop = snapshots("tpch")
    assert table["window_s"].unique().tolist() == [pytest.approx(stop["epoch"] - start["epoch"])]
    rpc = table[table.bean == "RpcDetailedActivityForPort8020"].set_index("counter")
    assert rpc.loc["GetBlockLocationsNumOps", "unit"] == "operations"
    assert rpc.loc["GetBlockLocationsNumOps", "delta"] == by_hand("tpch", "RpcDetailedActivityForPort8020",
                                                                  "GetBlockLocationsNumOps")


def test_a_mean_time_keeps_the_stops_value_and_a_counter_that_never_moved_has_no_row():
    folder = RECORDED / "terasort-spark"
    table = window_deltas(folder / "namenode.start", folder / "namenode.stop")
    means = table[table.counter.str.endswith("AvgTime")]
    assert not means.empty and (means.unit == "ms").all() and means.delta.map(math.isnan).all()
    start, stop = snapshots("terasort-spark")
    never = [c for b in stop["beans"] for c, v in b.items() if c != "name" and v == 0
             and next(s for s in start["beans"] if s["name"] == b["name"]).get(c) == 0]
    assert never and not set(never) & set(table.counter)          # e.g. the snapshot and cache RPCs
    assert (table[table.unit == "operations"].delta >= 0).all()


def test_a_gauge_that_fell_in_the_window_is_kept_as_the_stop_took_it_not_taken_for_a_restart():
    # recorded in make test's default bench: the blocks queued for deletion went from 2 to 1 during the TeraSort
    folder = RECORDED / "terasort-spark-gauge-fell"
    start, stop = snapshots("terasort-spark-gauge-fell")
    activity = {b["name"].rsplit("name=", 1)[-1]: b for b in start["beans"]}["NameNodeActivity"]
    assert activity["DeleteBlocksQueued"] > {b["name"].rsplit("name=", 1)[-1]: b for b in stop["beans"]}[
        "NameNodeActivity"]["DeleteBlocksQueued"]
    table = window_deltas(folder / "namenode.start", folder / "namenode.stop").set_index(["bean", "counter"])
    queued = table.loc[("NameNodeActivity", "DeleteBlocksQueued")]
    assert queued["unit"] == "value" and math.isnan(queued["delta"]) and queued["stop"] < queued["start"]
    created = table.loc[("NameNodeActivity", "FilesCreated")]
    assert created["unit"] == "operations" and created["delta"] == by_hand("terasort-spark-gauge-fell",
                                                                            "NameNodeActivity", "FilesCreated") > 0


def test_a_counter_that_went_down_is_refused_as_a_restart(tmp_path):
    start, stop = snapshots("terasort-spark")
    (tmp_path / "namenode.start").write_text(json.dumps(stop))     # the later snapshot first: counters went down
    (tmp_path / "namenode.stop").write_text(json.dumps(start))
    with pytest.raises(ValueError, match="restarted inside the window"):
        window_deltas(tmp_path / "namenode.start", tmp_path / "namenode.stop")


def test_a_snapshot_without_beans_or_epoch_is_refused_naming_it(tmp_path):
    start, stop = snapshots("terasort-spark")
    (tmp_path / "namenode.start").write_text(json.dumps(start))
    (tmp_path / "namenode.stop").write_text(json.dumps({"epoch": stop["epoch"]}))
    with pytest.raises(ValueError, match="namenode.stop: not a namenode-ops snapshot"):
        window_deltas(tmp_path / "namenode.start", tmp_path / "namenode.stop")
    (tmp_path / "namenode.stop").write_text(json.dumps({**stop, "epoch": "soon"}))
    with pytest.raises(ValueError, match="`epoch` is no finite number"):
        window_deltas(tmp_path / "namenode.start", tmp_path / "namenode.stop")
