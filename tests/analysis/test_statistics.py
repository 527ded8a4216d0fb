"""analysis.statistics on known inputs, and the comparison page's verdicts built on it (docs/compare.md, "How sure")."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from analysis import metrics, statistics
from analysis.across_runs.runs import Run, label_runs
from analysis.across_runs.times import workload_times
from analysis.presentation.rows.compare_tables import pivot_rows
from analysis.presentation.rows.report_tables import placement_rows
from spillway.bench.plan import DEFAULT_WORKLOADS, new_plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RUNS = FIXTURES / "runs"


@pytest.mark.parametrize("df, expected", [(1, 12.706), (2, 4.303), (3, 3.182), (10, 2.228), (30, 2.042), (1e7, 1.960)])
def test_student_t_quantiles_match_the_tables(df, expected):
    assert statistics.student_t_quantile(0.975, df) == pytest.approx(expected, abs=1e-3)


def test_clearly_different_samples_are_significant_both_ways():
    slow, fast = [10.0, 12.0, 14.0], [5.5, 6.0, 6.6]
    faster = statistics.compare(slow, fast)
    assert faster.verdict == statistics.FASTER and faster.significant
    assert faster.ratio == pytest.approx(2.0) and 1 < faster.low < faster.ratio < faster.high
    assert (faster.baseline.n, faster.baseline.median, faster.baseline.low, faster.baseline.high) == (3, 12.0, 10.0, 14.0)
    slower = statistics.compare(fast, slow)
    assert slower.verdict == statistics.SLOWER and slower.high < 1


@pytest.mark.parametrize("other", [[10.0, 12.0, 14.0], [11.0, 13.0, 15.0], [9.0, 12.5, 16.0]])
def test_identical_or_overlapping_samples_are_not_significant(other):
    result = statistics.compare([10.0, 12.0, 14.0], other)
    assert result.verdict == statistics.SAME and not result.significant
    assert result.low < 1 < result.high and "includes 1" in result.reason


def test_two_runs_a_side_need_more_than_disjoint_ranges():
    # disjoint ranges happen 1 time in 3 by chance with 2 runs a side: the interval (t with ~2 degrees of freedom)
    # must stay wide enough to include 1 for a spread this large, and exclude it when the runs agree closely
    assert statistics.compare([10.0, 14.0], [5.5, 6.6]).verdict == statistics.SAME
    assert statistics.compare([10.0, 10.2], [5.0, 5.1]).verdict == statistics.FASTER


def test_one_run_a_side_cannot_tell_without_the_hosts_noise():
    # the case: the same GATK4 placement took 75 s in one bench and 97 s in the next
    result = statistics.compare([75.0], [97.0])
    assert result.verdict == statistics.CANNOT_TELL and math.isnan(result.low)
    assert "no noise level" in result.reason
    noise = statistics.Noise(29.3, "calibration")
    assert statistics.compare([75.0], [90.0], noise).verdict == statistics.SAME        # 20 % < 29.3 %
    above = statistics.compare([75.0], [100.0], noise)                                 # 33.3 % > 29.3 %
    assert above.verdict == statistics.SLOWER and above.difference_pct == pytest.approx(100 / 3)


def test_repeated_runs_must_also_exceed_a_known_noise():
    tight = ([10.0, 10.1, 10.2], [11.0, 11.1, 11.2])                   # ~10 % apart, every run agrees
    assert statistics.compare(*tight).verdict == statistics.SLOWER
    assert statistics.compare(*tight, statistics.Noise(15.0, "calibration")).verdict == statistics.SAME


def test_nothing_measured_on_a_side_cannot_tell():
    assert statistics.compare([], [5.0]).verdict == statistics.CANNOT_TELL
    assert statistics.compare([float("nan"), 0.0], [5.0, 6.0]).verdict == statistics.CANNOT_TELL


def test_noise_from_repetitions_is_the_largest_spread_of_a_repeated_configuration():
    spread = pd.DataFrame({"workload": ["a", "b", "c"], "samples": [[10.0, 12.0], [20.0, 21.0, 30.0], [5.0]]})
    noise = statistics.noise_from_repetitions(spread)
    assert noise.pct == pytest.approx(50.0) and "2 repeated configurations" in noise.source and "b 20.0-30.0 s" in noise.source
    assert statistics.noise_from_repetitions(spread.iloc[[2]]) is None


# ---------------------------------------------------------------- the pages' use of it

def _matrix_run(repeat: dict[str, list[float]] | None = None) -> Run:
    """The recorded placement matrix (one run of each of 4 placements); `repeat` gives placements (workload id)
    more repetitions, as a bench with REPEAT would have recorded them: the recorded row copied, its run time changed."""
    tables = {name: pd.read_parquet(RUNS / "terasort-matrix" / "tables" / f"{name}.parquet")
              for name in ("workloads", "devices", "stages")}
    if repeat:
        rows = []
        for row in tables["workloads"].to_dict("records"):
            for i, seconds in enumerate(repeat.get(row["workload_id"], [row["run_s"]])):
                rows.append({**row, "workload_id": f"{row['workload_id']}-r{i}", "repetition": i + 1, "run_s": seconds})
        tables["workloads"] = pd.DataFrame(rows)
    run = Run(RUNS / "terasort-matrix", "20261121-201144-local",
              {"cluster": "local", "storage": {"placement": {"hdfs": "hdd", "local": "hdd"}}}, tables)
    label_runs([run])
    return run


def test_one_run_per_placement_is_never_called_faster_or_slower():
    run = _matrix_run()
    table, order = workload_times([run])
    assert len(order) == 4 and set(table["runs"]) == {1}
    others = table[table["verdict"] != statistics.BASELINE]
    assert set(others["verdict"]) == {statistics.CANNOT_TELL}
    cells = [c["speedup"] for r in pivot_rows(table, ["workload", "sweep"], order) for c in r["cells"][1:]]
    assert cells and all(c.endswith("cannot tell") and c.startswith("(") for c in cells)
    ratios = [r["ratio"] for r in placement_rows(metrics.run_time_by_placement(run.tables["workloads"]))]
    assert "1.00 x" in ratios and not any(r.endswith(("slower", "faster")) for r in ratios)


def test_repeated_placements_are_ranked_when_significant_and_only_then():
    run = _matrix_run({"terasort-hdfs_hdd-local_hdd": [36.4, 35.9, 37.0],
                       "terasort-hdfs_ssd-local_ssd": [28.0, 27.6, 28.5],
                       "terasort-hdfs_hdd-local_ssd": [31.6, 29.0, 34.0]})
    table, order = workload_times([run])
    verdict = table.set_index("configuration")["verdict"].to_dict()
    assert verdict[order[0]] == statistics.BASELINE and order[0].startswith("HDFS hdd, local hdd")
    # the host's noise, as these repetitions showed it: the widest repeated configuration, 29.0-34.0 s
    assert table["noise_pct"].iloc[0] == pytest.approx((34.0 / 29.0 - 1) * 100)
    assert verdict["HDFS ssd, local ssd"] == statistics.FASTER         # 36.4 s against 28.0 s: 30 %, tight runs
    assert verdict["HDFS hdd, local ssd"] == statistics.SAME           # 15 %, less than the noise
    reasons = table.set_index("configuration")["verdict_reason"].to_dict()
    assert verdict["HDFS ssd, local hdd"] == statistics.FASTER         # 1 run, 39 % against a noise of 17 %
    assert "3 vs 1 runs" in reasons["HDFS ssd, local hdd"] and "exceeds the host's noise" in reasons["HDFS ssd, local hdd"]
    text = {c: cell["speedup"] for r in pivot_rows(table, ["workload", "sweep"], order) for c, cell in zip(order, r["cells"])}
    assert text["HDFS ssd, local ssd"] == "1.30 x faster"
    assert text["HDFS hdd, local ssd"] == "(1.15 x) not significant"


# ---------------------------------------------------------------- warm-ups and the noise (issue 42)

def _rows_of(runs_and_times: list[tuple[object, float]]) -> pd.DataFrame:
    """A real recorded workloads row of TeraSort on Spark under hdfs=hdd, local=ssd (the placement matrix) copied
    once per planned run, with the run's id, placement, repetition and warm-up flag and the given run time."""
    recorded = pd.read_parquet(RUNS / "terasort-matrix" / "tables" / "workloads.parquet")
    row = recorded.set_index("workload_id").loc["terasort-hdfs_hdd-local_ssd"].to_dict()
    return pd.DataFrame([{**row, "workload_id": run.id, "repetition": run.repetition, "warmup": run.warmup,
                          "placement_hdfs": run.placement["hdfs"], "placement_local": run.placement["local"],
                          "run_s": seconds, "start_time_s": row["start_time_s"] + 60.0 * order}
                         for order, (run, seconds) in enumerate(runs_and_times)])


def test_a_recorded_bench_whose_first_run_is_cold_keeps_the_warm_up_out_of_the_noise():
    recorded = json.loads((FIXTURES / "bench-times" / "recorded.json").read_text())
    cold, warm = (run["run_s"] for run in recorded["runs"])
    bench = new_plan("local", list(DEFAULT_WORKLOADS), "tiny", 1, storage_probe=True)
    first_spark = next(i for i in bench.instances if i.runs_spark)
    same = [i for i in bench.instances if i.params == first_spark.params and i.workload is first_spark.workload
            and i.placement == recorded["placement"]]
    workloads = _rows_of([(first_spark, cold), (same[-1], warm)])
    by_placement = metrics.run_time_by_placement(workloads)
    measured = [t for samples in by_placement["samples"] for t in samples]
    assert first_spark.warmup and cold not in measured and measured == [warm]
    noise = statistics.noise_from_repetitions(by_placement)
    assert noise is None or noise.pct < (cold / warm - 1) * 100


def test_a_placement_verdict_states_its_runs_in_order_their_spread_its_interval_and_whether_it_is_decided():
    bench = new_plan("local", list(DEFAULT_WORKLOADS), "tiny", 1, storage_probe=True)
    probe = [i for i in bench.instances if i.id.startswith("terasort-spark") and not i.warmup]
    # A B B A A B, the hdd side slower by a fifth, a drift of 0.1 s a run
    times = [21.5 + 0.1 * n + (4.3 if i.placement["hdfs"] == "hdd" else 0.0) for n, i in enumerate(probe)]
    rows = placement_rows(metrics.run_time_by_placement(_rows_of(list(zip(probe, times)))))
    by_side = {r["hdfs"]: r for r in rows}
    assert by_side["hdd"]["runs"] == "terasort-spark 25.8 s, terasort-spark-r2 26.1 s, terasort-spark-r3 26.2 s"
    assert by_side["ssd"]["runs"].startswith("terasort-spark-hdfs_ssd-local_hdd 21.6 s, ")
    assert by_side["hdd"]["spread"] == "1.6 % (steady: at most 5 %)"
    assert by_side["hdd"]["interval"].endswith(" x") and " to " in by_side["hdd"]["interval"]
    assert by_side["hdd"]["decided"] == "decided: slower" and by_side["ssd"]["decided"] == ""
