"""The TPC-H workload for real: tpchgen-cli data at SF 0.01, the Spark SQL job in Spark local mode over all
22 query files, and the DuckDB check (workloads/tpch/check_results.py) on what the job wrote; then results
that must fail the check (a changed value, a dropped row), each naming its query. Unit tests of the
comparison cover what the tiny data cannot show (ties under ORDER BY, tolerances, NULLs).
"""

import csv
import importlib.util
import json
import os
import shutil
import subprocess
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from spark_local import SPARK_HOME, build_job, spark_jars_present, submit, summary

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "workloads" / "tpch"
QUERIES = sorted(p.stem for p in (WORKLOAD / "queries").glob("q*.sql"))
WORKLOAD_PYTHON = Path("/opt/spillway/venv/bin/python")
TPCHGEN = WORKLOAD_PYTHON.parent / "tpchgen-cli"
SCALE_FACTOR = "0.01"

spec = importlib.util.spec_from_file_location("check_results", WORKLOAD / "check_results.py")
check_results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_results)

needs_spark = pytest.mark.skipif(
    not spark_jars_present("spark-sql") or not TPCHGEN.is_file(),
    reason=f"needs the Spark jars in {SPARK_HOME}/jars and the workload venv /opt/spillway/venv "
           "(tpchgen-cli, duckdb): run `make setup` first",
)


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def spark_run(tmp_path_factory):
    """SF 0.01 tables, and the job's results for all 22 queries: (work dir, tables dir, JSON summary)."""
    work = tmp_path_factory.mktemp("tpch")
    jar = build_job("tpch", work / "tpch.jar", "spillway.tpch.TpchSpark")
    generated = run([str(TPCHGEN), "parquet", "--scale-factor", SCALE_FACTOR, "--parts", "2",
                     "--output-dir", str(work / "tables"), "--quiet"])
    assert generated.returncode == 0, generated.stderr
    job = submit(work, jar, f"file://{work / 'tables'}", WORKLOAD / "queries", work / "results",
                 work / "query-times.csv", *QUERIES,
                 # Tiny tables: the default 200 shuffle partitions would mostly schedule empty tasks.
                 conf=["spark.sql.shuffle.partitions=2"])
    assert job.returncode == 0, f"the Spark job failed:\n{job.stdout[-2000:]}\n{job.stderr[-3000:]}"
    return work, work / "tables", summary(job)


def check(tables: Path, results: Path, out: Path, queries=QUERIES):
    """Runs the check as the validate step does; returns (exit code, stderr, validation.json)."""
    result = run([str(WORKLOAD_PYTHON), str(WORKLOAD / "check_results.py"), str(tables),
                  str(WORKLOAD / "queries"), str(results), str(out), *queries])
    return result.returncode, result.stderr, json.loads(out.read_text())


def rewrite_csv(path: Path, change):
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    change(rows)
    with open(path, "w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)


@needs_spark
def test_spark_runs_every_query_and_records_its_time(spark_run):
    work, _, summary = spark_run
    assert summary["ok"] and summary["queries"] == 22 and len(QUERIES) == 22
    assert list(summary["query_seconds"]) == QUERIES
    with open(work / "query-times.csv", newline="") as handle:
        times = list(csv.DictReader(handle))
    assert [t["query"] for t in times] == QUERIES
    assert all(float(t["seconds"]) > 0 for t in times)
    assert {t["query"]: int(t["rows"]) for t in times} == summary["query_rows"]
    for query in QUERIES:
        with open(work / "results" / f"{query}.csv", newline="") as handle:
            assert len(list(csv.reader(handle))) == 1 + summary["query_rows"][query]


@needs_spark
def test_duckdb_agrees_with_spark_on_all_22_queries(spark_run, tmp_path):
    work, tables, summary = spark_run
    code, stderr, validation = check(tables, work / "results", tmp_path / "validation.json")
    assert code == 0, stderr
    assert validation["ok"] and list(validation["queries"]) == QUERIES
    assert {q: r["rows"] for q, r in validation["queries"].items()} == summary["query_rows"]
    # Not a vacuous pass: the data makes most queries return rows (Q1's four groups, Q16's hundreds).
    assert sum(r["rows"] > 1 for r in validation["queries"].values()) >= 12


@needs_spark
def test_a_changed_value_and_a_dropped_row_fail_naming_their_queries(spark_run, tmp_path):
    work, tables, _ = spark_run
    results = tmp_path / "results"
    shutil.copytree(work / "results", results)

    def add_two_cents_to_q01_sum_charge(rows):
        column = rows[0].index("sum_charge")
        rows[2][column] = str(Decimal(rows[2][column]) + Decimal("0.02"))

    rewrite_csv(results / "q01.csv", add_two_cents_to_q01_sum_charge)
    rewrite_csv(results / "q16.csv", lambda rows: rows.pop(5))

    code, stderr, validation = check(tables, results, tmp_path / "validation.json")
    assert code == 1
    assert "q01, q16" in stderr
    failed = {q: r["difference"] for q, r in validation["queries"].items() if not r["ok"]}
    assert list(failed) == ["q01", "q16"]
    assert failed["q01"].startswith("row 2, column sum_charge:")
    assert failed["q16"].startswith("row count differs: spark")


@needs_spark
def test_step_script_rejects_unknown_query_numbers():
    result = run(["bash", str(WORKLOAD / "tpch"), "run"],
                 env={**os.environ, "P_QUERIES": "1,23", "P_SCALE_FACTOR": "0.01", "SPILLWAY_ROOT": "/nonexistent",
                      "SPILLWAY_OUT": "/nonexistent"})
    assert result.returncode == 2
    assert "'23' is not a TPC-H query number" in result.stderr


# The comparison itself, on hand-made results: DuckDB values on one side, Spark's CSV text on the other.

COLUMNS = ["name", "revenue", "day"]


def test_order_keys_are_read_from_the_outermost_order_by():
    sql = "-- order by nothing\nselect a from (select x order by y) order by\n  t.revenue desc,\n  name limit 10"
    assert check_results.order_keys(sql) == ["revenue", "name"]
    assert check_results.order_keys("select sum(x) as revenue from t") == []
    assert check_results.order_keys("select a from (select a from t order by a) as s") == []
    assert check_results.order_keys((WORKLOAD / "queries" / "q13.sql").read_text()) == ["custdist", "c_count"]


def test_numbers_match_within_a_cent_and_exact_sums_stay_exact():
    equal = check_results.values_equal
    assert equal(Decimal("526165934.000839"), "526165934.000839")
    assert equal(25.575154611454693, "25.575155")  # Spark rounds AVG of a DECIMAL to 6 places
    assert equal(Decimal("12.34"), "12.344")
    assert not equal(Decimal("12.34"), "12.36")
    # A relative 1e-6 would accept this lost row of Q6's revenue at SF 50; a cent does not.
    assert not equal(Decimal("6000000000.00"), "6000001900.00")
    assert equal(1.0e15, "1000000000000000.5")  # DOUBLE rounding of large values
    assert not equal(7, "seven")
    assert equal(14876, "14876") and not equal(14876, "14877")


def test_strings_dates_and_nulls():
    equal = check_results.values_equal
    assert equal("Supplier#000000077", "Supplier#000000077")
    assert not equal("Supplier#000000077", "Supplier#000000077 ")
    assert equal(date(1995, 3, 11), "1995-03-11")
    assert not equal(date(1995, 3, 11), "1995-3-11")
    assert equal(None, "")
    assert not equal(None, "0") and not equal(Decimal(0), "")


def test_rows_must_keep_their_order_except_among_tied_order_by_keys():
    expected = [("a", Decimal("30.00"), date(1995, 1, 1)),
                ("b", Decimal("20.00"), date(1995, 1, 2)),
                ("c", Decimal("20.00"), date(1995, 1, 2)),
                ("d", Decimal("10.00"), date(1995, 1, 3))]
    as_csv = [[r[0], str(r[1]), r[2].isoformat()] for r in expected]
    keys = ["revenue", "day"]
    diff = check_results.first_difference

    assert diff(COLUMNS, expected, COLUMNS, as_csv, keys) is None
    tie_swapped = [as_csv[0], as_csv[2], as_csv[1], as_csv[3]]
    assert diff(COLUMNS, expected, COLUMNS, tie_swapped, keys) is None
    # b and c tie on (revenue, day) only: under ORDER BY revenue, name the swap is an error.
    assert diff(COLUMNS, expected, COLUMNS, tie_swapped, ["revenue", "name"]) == \
        "row 2, column name: spark 'c', duckdb 'b'"
    misordered = [as_csv[1], as_csv[0], as_csv[2], as_csv[3]]
    assert diff(COLUMNS, expected, COLUMNS, misordered, keys).startswith("row 1, column name")
    # Without ORDER BY (single-row TPC-H queries) every row must match where it stands.
    assert diff(COLUMNS, expected, COLUMNS, tie_swapped, []).startswith("row 2")
    # A tie group must match as a whole: same keys, but one member changed.
    changed_in_tie = [as_csv[0], as_csv[2], ["x", "20.00", "1995-01-02"], as_csv[3]]
    assert diff(COLUMNS, expected, COLUMNS, changed_in_tie, keys).startswith("row 2, column name")


def test_columns_and_row_counts_must_match():
    diff = check_results.first_difference
    expected = [("a", Decimal("1.00"), None)]
    assert diff(COLUMNS, expected, ["name", "revenue"], [["a", "1.00"]], []).startswith("columns differ")
    assert diff(COLUMNS, expected, COLUMNS, [], []) == "row count differs: spark 0, duckdb 1"
    assert diff(COLUMNS, expected, COLUMNS, [["a", "1.00", ""]], []) is None
    assert "not output columns" in diff(COLUMNS, expected, COLUMNS, [["a", "1.00", ""]], ["o_year"])


def test_a_one_column_null_row_reads_back_as_null(tmp_path):
    path = tmp_path / "q17.csv"
    path.write_text("avg_yearly\n\n")
    assert check_results.read_spark_csv(path) == (["avg_yearly"], [[""]])
