"""access_patterns: the Darshan-style views of the block trace (heat map grid, common access sizes, sequential
share) on the recorded runs' block_requests tables (tests/fixtures/runs/*/tables)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import access_patterns, metrics
from analysis.tables import read_table

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
TRACED = ("terasort-matrix", "terasort-hdd", "terasort-nvme", "kmeans-cores")   # the recorded runs with block traces
KEYS = ["host", "workload_id", "device", "op"]


def requests_of(run: str) -> pd.DataFrame:
    path = RUNS / run / "tables" / "block_requests.parquet"
    if not path.exists():
        pytest.fail(f"missing recorded fixture {path}", pytrace=False)
    table = read_table(path)
    assert not table.empty, f"{path} holds no request"
    return table


def moved(requests: pd.DataFrame) -> pd.DataFrame:
    """The request table's own totals per device and direction, counted here without the module under test."""
    data = requests[requests["op"].astype(str).isin(["read", "write"]) & (requests["bytes"] > 0)]
    return data.astype({key: str for key in KEYS}).groupby(KEYS).agg(
        requests=("bytes", "size"), bytes=("bytes", "sum"), sizes=("bytes", "nunique"))


@pytest.mark.parametrize("run", TRACED)
def test_access_sizes_add_up_to_the_request_tables_totals(run):
    requests = requests_of(run)
    totals = moved(requests)
    every = access_patterns.access_sizes(requests)
    summed = every.groupby(KEYS).agg(requests=("requests", "sum"), bytes=("bytes", "sum"), sizes=("size_bytes", "size"))
    pd.testing.assert_frame_equal(summed, totals, check_dtype=False)
    assert np.allclose(every.groupby(KEYS)["share_pct"].sum(), 100.0)
    assert (every.groupby(KEYS)["requests"].diff().dropna() <= 0).all()          # ranked most common first
    common = access_patterns.common_access_sizes(requests, top=4)
    folded = common.groupby(KEYS).agg(requests=("requests", "sum"), bytes=("bytes", "sum"), sizes=("sizes", "sum"))
    pd.testing.assert_frame_equal(folded, totals, check_dtype=False)
    assert common.groupby(KEYS).size().max() <= 5
    assert np.allclose(common.groupby(KEYS)["share_pct"].sum(), 100.0)
    rest = common[common["size_bytes"].isna()]
    assert (rest["rank"] == 5).all() and (rest["sizes"] >= 1).all()
    # the listed sizes are the most common ones: none folded into the rest is more common than the fourth
    fourth = common[common["rank"] == 4].set_index(KEYS)["requests"]
    most_folded = every[every["rank"] > 4].groupby(KEYS)["requests"].max()
    assert (most_folded <= fourth.reindex(most_folded.index)).all()


def test_the_heat_map_grid_holds_every_byte_once_in_aligned_bins():
    requests = requests_of("terasort-matrix")
    grid = access_patterns.bytes_heatmap(requests)
    summed = grid.groupby(KEYS)[["requests", "bytes"]].sum()
    pd.testing.assert_frame_equal(summed, moved(requests)[["requests", "bytes"]], check_dtype=False)
    for workload_id, per_workload in grid.groupby("workload_id"):
        width = per_workload["bin_s"].iloc[0]
        assert (per_workload["bin_s"] == width).all()
        ratio = per_workload["bin_start_s"] / width
        assert np.allclose(ratio, np.round(ratio)), workload_id
        span = per_workload["bin_start_s"].max() - per_workload["bin_start_s"].min()
        assert span / width < access_patterns.MAX_BINS
    # a request lies in the bin that starts at or before its dispatch and ends after it
    data = metrics.data_requests(requests)
    first = data.nsmallest(1, "issue_time_s").iloc[0]
    mine = grid[(grid["workload_id"] == first["workload_id"]) & (grid["device"] == first["device"])
                & (grid["op"] == first["op"])]
    cell = mine.nsmallest(1, "bin_start_s").iloc[0]
    assert cell["bin_start_s"] <= first["issue_time_s"] < cell["bin_start_s"] + cell["bin_s"]


def test_the_bin_width_keeps_a_trace_under_the_bin_limit():
    assert access_patterns.heatmap_bin_s(11.9) == 0.1        # 119 bins of 0.1 s
    assert access_patterns.heatmap_bin_s(12.0) == 0.2        # 120 bins of 0.1 s would be one too many
    assert access_patterns.heatmap_bin_s(53.0) == 0.5
    assert access_patterns.heatmap_bin_s(10 * 3600) == 600.0
    assert 100 * 3600 / access_patterns.heatmap_bin_s(100 * 3600) <= access_patterns.MAX_BINS


# The first ten reads and writes that moved data on loop1 during terasort-hdfs_hdd-local_hdd, in dispatch order
# (the recording's rows, checked below): (op, start sector, bytes; end = start + bytes / 512).
SLICE = [("write", 8655832, 40960),    # end 8655912; the first write: no predecessor
         ("write", 8655912, 4096),     # starts at 8655912, where the write before ended: sequential
         ("read", 8388736, 4096),      # end 8388744; the first read: no predecessor
         ("write", 8655920, 147456),   # 8655920 = the previous WRITE's end: sequential, the read between is another
                                       # direction (a rule over both directions would call it random: 8388744)
         ("write", 8656208, 4096),     # 8655920 + 288 sectors: sequential
         ("write", 8656216, 126976),   # 8656208 + 8: sequential
         ("write", 8656464, 4096),     # 8656216 + 248: sequential
         ("read", 8240, 4096),         # the previous read ended at 8388744: random, and backward
         ("write", 1319424, 196608),   # the previous write ended at 8656472: random, backward (a DataXceiver write)
         ("write", 8656472, 77824)]    # the previous write (1319424 + 384) ended at 1319808: random; forward, as it
                                       # is past that end (the journal went on where it stopped two writes before)
SEQUENTIAL = [None, True, None, True, True, True, True, False, False, False]
FORWARD = [None, True, None, True, True, True, True, False, False, True]


def recorded_slice() -> pd.DataFrame:
    data = metrics.data_requests(requests_of("terasort-matrix"))
    device = data[(data["workload_id"] == "terasort-hdfs_hdd-local_hdd") & (data["device"] == "loop1")]
    first = device.sort_values("issue_time_s", kind="stable").head(len(SLICE))
    assert list(zip(first["op"], first["sector"], first["bytes"])) == SLICE
    return first


def test_sequential_on_a_hand_checked_slice_of_a_recorded_trace():
    flags = access_patterns.sequential_flags(recorded_slice())
    assert [None if pd.isna(v) else bool(v) for v in flags["sequential"]] == SEQUENTIAL
    assert [None if pd.isna(v) else bool(v) for v in flags["forward"]] == FORWARD
    share = access_patterns.sequential_share(recorded_slice()).set_index("op")
    # writes: 8, the first without predecessor, 5 of the other 7 sequential, 6 of 7 forward
    assert share.loc["write", ["requests", "first", "sequential", "random", "forward"]].tolist() == [8, 1, 5, 2, 6]
    assert share.loc["write", "sequential_pct"] == pytest.approx(100 * 5 / 7)
    # reads: 2, the second is random: 0 of 1
    assert share.loc["read", ["requests", "first", "sequential", "random"]].tolist() == [2, 1, 0, 1]
    assert share.loc["read", "sequential_pct"] == 0.0
    # both: the two first requests count in neither share: 5 of 8
    assert share.loc["all", ["requests", "first", "sequential", "random"]].tolist() == [10, 2, 5, 3]
    assert share.loc["all", "sequential_pct"] == pytest.approx(62.5)


def test_a_direction_with_only_its_first_request_has_no_share():
    requests = requests_of("terasort-matrix")
    share = access_patterns.sequential_share(requests).set_index(["workload_id", "device", "op"])
    # on the hdd/ssd placement, loop3 (ssd) served a single read: it has no predecessor
    lone = share.loc[("terasort-hdfs_hdd-local_ssd", "loop3", "read")]
    assert moved(requests).loc[("localhost", "terasort-hdfs_hdd-local_ssd", "loop3", "read"), "requests"] == 1
    assert (lone["requests"], lone["first"], lone["sequential"], lone["random"]) == (1, 1, 0, 0)
    assert np.isnan(lone["sequential_pct"]) and np.isnan(lone["forward_pct"])
    # every direction of every device has exactly one first request; the rest are sequential or random
    per_op = share.drop(index="all", level="op")
    assert (per_op["first"] == 1).all()
    assert (per_op["first"] + per_op["sequential"] + per_op["random"] == per_op["requests"]).all()
    assert (per_op["forward"] >= per_op["sequential"]).all()
