"""comparison: runs matched like with like, by workload and the parameters they effectively ran with, on recorded
manifests of real benches (tests/fixtures/runs)."""
import json
import shutil

import pandas as pd
import pytest

from analysis import statistics
from analysis.compare_page import load_runs, write_comparison
from analysis.across_runs.differences import apples_and_oranges, differences
from analysis.across_runs.runs import effective_parameters
from analysis.across_runs.times import workload_times
from conftest import FIXTURES

RUNS = FIXTURES / "runs"
BENCH = RUNS / "bench-tiny"          # the default bench: TeraSort swept over engine=[mapreduce, spark], 2 M rows
MATRIX = RUNS / "terasort-matrix"    # a placement matrix run with PARAMS='engine=spark rows=500000'


def _fixture(path):
    if not (path / "manifest.json").exists():
        pytest.fail(f"missing recorded fixture {path}/manifest.json", pytrace=False)
    return path


@pytest.fixture
def matrix_at_the_benchs_rows(tmp_path):
    """The recorded placement matrix as `PARAMS='terasort.engine=spark'` would have run it: the one field changed is
    each workload run's `parameters.rows`, 500000 -> 2000000 (the tiny scale's value, what the default bench's
    TeraSort sorted), and `parameters.overrides` to say so. The recorded matrix was run with fewer rows to be quick;
    its times stay the recorded ones: this is about which rows of the page its runs land in, not about their times."""
    run = tmp_path / "terasort-matrix-2m-rows"
    shutil.copytree(_fixture(MATRIX), run)
    manifest = json.loads((run / "manifest.json").read_text())
    for record in manifest["workloads"]:
        assert record["parameters"]["rows"] == 500000
        record["parameters"]["rows"] = 2000000
    manifest["parameters"]["overrides"]["command_line"] = {"terasort": {"engine": "spark"}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_a_sweeps_point_and_the_same_parameters_set_by_params_share_a_row(matrix_at_the_benchs_rows, tmp_path):
    runs = load_runs([str(_fixture(BENCH)), str(matrix_at_the_benchs_rows)])
    table, order = workload_times(runs)
    terasort = table[table["workload"] == "terasort"]
    # keyed by what differs between the compared TeraSort runs: the engine; rows agree (2 M in both)
    assert set(terasort["sweep"]) == {"engine=mapreduce", "engine=spark"}
    spark = terasort[terasort["sweep"] == "engine=spark"]
    assert set(spark["run_id"]) == {runs[0].run_id, runs[1].run_id} and len(spark) == 5   # the bench's + 4 placements
    against_bench = spark[spark["run_id"] == runs[1].run_id]
    # compared with the bench's TeraSort on Spark (one run a side, no noise known: the statistics cannot tell)
    assert set(against_bench["verdict"]) == {statistics.CANNOT_TELL}
    assert not against_bench["verdict_reason"].str.contains("not run in the baseline").any()
    assert set(terasort.loc[terasort["sweep"] == "engine=mapreduce", "run_id"]) == {runs[0].run_id}
    assert apples_and_oranges(runs) == []

    html = write_comparison([str(BENCH), str(matrix_at_the_benchs_rows)], tmp_path / "cmp").read_text()
    assert 'id="apples-and-oranges"' not in html
    page = pd.read_parquet(tmp_path / "cmp" / "tables" / "compare_workloads.parquet")
    assert page.loc[page["sweep"] == "engine=spark", "run_id"].nunique() == 2


def test_other_effective_parameters_stay_apart_and_are_named():
    runs = load_runs([str(_fixture(BENCH)), str(_fixture(MATRIX))])
    table, _ = workload_times(runs)
    terasort = table[table["workload"] == "terasort"]
    by_run = terasort.groupby("sweep")["run_id"].nunique()
    assert set(by_run.index) == {"engine=mapreduce rows=2000000", "engine=spark rows=2000000",
                                 "engine=spark rows=500000"}
    assert (by_run == 1).all()                                  # 2 M rows and 500 k rows: never one row
    warnings = apples_and_oranges(runs)
    # rows keeps them apart; the engine does not (the bench's Spark point has the matrix's engine)
    assert [w for w in warnings if "terasort" in w] == [
        f"workload terasort: parameter rows differs: {runs[0].run_id}: 2000000; {runs[1].run_id}: 500000. "
        "Runs with other parameters are not compared."]


def test_a_parameter_recorded_before_it_existed_takes_the_value_the_bench_gives_it():
    """fio-sweep's `target` came after the fio-sweep fixture was recorded; the default bench's record has it."""
    old = json.loads((_fixture(RUNS / "fio-sweep") / "manifest.json").read_text())
    new = json.loads((BENCH / "manifest.json").read_text())
    old_record = next(w for w in old["workloads"] if w["workload"] == "fio-sweep")
    new_record = next(w for w in new["workloads"] if w["workload"] == "fio-sweep")
    assert "target" not in old_record["parameters"] and new_record["parameters"]["target"] == "file"
    assert effective_parameters(old_record) == effective_parameters(new_record)
    # the recorded values win over the defaults: the tiny scale's runtime_s, whatever the default says
    assert effective_parameters({**old_record, "parameters": {**old_record["parameters"], "runtime_s": 7}})[
        "runtime_s"] == "7"
    # a workload without a manifest in workloads/ keeps what was recorded
    assert effective_parameters({"workload": "spark-tiny", "scale": "tiny", "parameters": {"rows": 1000}}) == {
        "rows": "1000"}

    runs = load_runs([str(BENCH), str(RUNS / "fio-sweep")])
    table, _ = workload_times(runs)
    assert table.loc[table["workload"] == "fio-sweep", "run_id"].nunique() == 2
    assert table.groupby(["workload", "sweep"])["run_id"].nunique().eq(2).all()
    differed, _ = differences(runs)
    assert not differed["field"].str.startswith("workload fio-sweep.").any()
