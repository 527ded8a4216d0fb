"""Checks Spark's TPC-H results against DuckDB running the same SQL files on the same Parquet files.

    python check_results.py <tables-dir> <queries-dir> <spark-results-dir> <validation-json> <query>...

tables-dir holds one folder of Parquet files per table; spark-results-dir holds <query>.csv as the Spark
job writes them. Writes validation-json ({"ok", "problems", "queries": {query: {"ok", "rows", "difference"}}}) and exits
1 naming the queries whose results differ.

What "equal" means:
- the same column names in the same order, and the same number of rows;
- strings exactly; dates as ISO strings; NULL is an empty CSV field (TPC-H results hold no empty strings);
- numbers within an absolute 0.01 or a relative 1e-9. Both engines sum DECIMAL(15,2) columns exactly, so
  sums agree to the digit; what differs is averages and ratios (Spark: DECIMAL rounded to 6 places, DuckDB:
  DOUBLE), by less than 1e-6. A cent is far below what a lost or altered row changes (every price and
  quantity is at least 1), and, unlike a relative 1e-6, stays so at SF 50 where Q6's revenue is ~6e9.
  The relative 1e-9 only covers DOUBLE rounding of large values;
- rows in the same order, except where the ORDER BY keys tie: the SQL fixes no order among rows with
  equal keys, so there the rows must match as a set (each Spark row matched to one DuckDB row). The
  ORDER BY keys are read from the query text (every TPC-H ORDER BY names output columns). Where a LIMIT
  cuts through such a tie, the two engines could legitimately keep different rows; the validation
  parameters do not produce such a tie at the scales here.
"""
import csv
import datetime
import json
import re
import sys
import time
from decimal import Decimal, InvalidOperation
from pathlib import Path

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
ABSOLUTE_TOLERANCE = Decimal("0.01")
RELATIVE_TOLERANCE = Decimal("1e-9")


def order_keys(sql):
    """Output column names of the query's outermost ORDER BY ([] without one)."""
    text = re.sub(r"--[^\n]*", "", sql).lower()
    clauses = re.split(r"\border\s+by\b", text)
    last = re.split(r"\blimit\b", clauses[-1])[0]
    if len(clauses) == 1 or last.count(")") > last.count("("):
        return []  # none, or the last one closes a subquery: the outer query has none
    return [item.split()[0].split(".")[-1] for item in last.split(",")]


def values_equal(expected, actual):
    """expected: a DuckDB value; actual: Spark's CSV text of the same cell."""
    if expected is None:
        return actual == ""
    if isinstance(expected, str):
        return actual == expected
    if isinstance(expected, (datetime.date, datetime.datetime)):
        return actual == expected.isoformat()
    if isinstance(expected, bool):
        return actual.lower() == str(expected).lower()
    if isinstance(expected, (int, float, Decimal)):
        try:
            number = Decimal(actual)
        except InvalidOperation:
            return False
        # repr keeps a float's shortest exact-enough form; Decimal(float) would drag in binary noise.
        wanted = Decimal(repr(expected)) if isinstance(expected, float) else Decimal(expected)
        difference = abs(number - wanted)
        return difference <= ABSOLUTE_TOLERANCE or difference <= RELATIVE_TOLERANCE * abs(wanted)
    return actual == str(expected)


def rows_equal(expected_row, actual_row):
    return len(expected_row) == len(actual_row) and all(map(values_equal, expected_row, actual_row))


def tie_end(rows, start, key_indexes):
    """End (exclusive) of the run of rows from start whose ORDER BY keys equal those of rows[start]."""
    key = [rows[start][i] for i in key_indexes]
    end = start + 1
    while end < len(rows) and [rows[end][i] for i in key_indexes] == key:
        end += 1
    return end


def matches_as_set(expected_rows, actual_rows):
    unmatched = list(actual_rows)
    for expected_row in expected_rows:
        found = next((i for i, row in enumerate(unmatched) if rows_equal(expected_row, row)), None)
        if found is None:
            return False
        del unmatched[found]
    return not unmatched


def first_difference(expected_columns, expected_rows, actual_columns, actual_rows, keys):
    """None when Spark's result (CSV text) equals DuckDB's (typed values), else what differs first."""
    if [c.lower() for c in actual_columns] != [c.lower() for c in expected_columns]:
        return f"columns differ: spark {actual_columns}, duckdb {expected_columns}"
    if len(actual_rows) != len(expected_rows):
        return f"row count differs: spark {len(actual_rows)}, duckdb {len(expected_rows)}"
    columns = [c.lower() for c in expected_columns]
    missing = [k for k in keys if k not in columns]
    if missing:
        return f"ORDER BY keys {missing} are not output columns {columns}: cannot check the order"
    key_indexes = [columns.index(k) for k in keys]
    row = 0
    while row < len(expected_rows):
        if rows_equal(expected_rows[row], actual_rows[row]):
            row += 1
            continue
        end = tie_end(expected_rows, row, key_indexes) if key_indexes else row + 1
        if end - row > 1 and matches_as_set(expected_rows[row:end], actual_rows[row:end]):
            row = end
            continue
        for column, (wanted, got) in enumerate(zip(expected_rows[row], actual_rows[row])):
            if not values_equal(wanted, got):
                return (f"row {row + 1}, column {expected_columns[column]}: spark {got!r}, "
                        f"duckdb {'' if wanted is None else str(wanted)!r}")
        return f"row {row + 1}: spark {actual_rows[row]}, duckdb {expected_rows[row]}"
    return None


def read_spark_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        columns = next(reader)
        # A one-column row holding NULL is an empty line, which the csv module reads as no fields at all.
        rows = [row if row or len(columns) != 1 else [""] for row in reader]
    return columns, rows


def connect(tables_dir):
    import duckdb  # only in the workload venv (/opt/spillway/venv), not needed for the comparison itself

    con = duckdb.connect()
    for table in TABLES:
        con.execute(f"create view {table} as select * from read_parquet('{Path(tables_dir) / table}/*.parquet')")
    return con


def check(tables_dir, queries_dir, results_dir, queries):
    """{query: {"ok", "rows", "difference", "duckdb_s"}} for each query."""
    con = connect(tables_dir)
    report = {}
    for query in queries:
        sql = (Path(queries_dir) / f"{query}.sql").read_text()
        started = time.monotonic()
        cursor = con.execute(sql)
        expected_rows = cursor.fetchall()
        seconds = time.monotonic() - started
        expected_columns = [d[0] for d in cursor.description]
        spark_csv = Path(results_dir) / f"{query}.csv"
        if spark_csv.is_file():
            actual_columns, actual_rows = read_spark_csv(spark_csv)
            difference = first_difference(expected_columns, expected_rows, actual_columns, actual_rows,
                                          order_keys(sql))
        else:
            difference = f"no Spark result {spark_csv}"
        report[query] = {"ok": difference is None, "rows": len(expected_rows), "difference": difference,
                         "duckdb_s": round(seconds, 3)}
    return report


def main(argv):
    if len(argv) < 5:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    tables_dir, queries_dir, results_dir, validation_json, *queries = argv
    report = check(tables_dir, queries_dir, results_dir, queries)
    failed = [q for q, r in report.items() if not r["ok"]]
    problems = [f"{q}: {report[q]['difference']}" for q in failed]
    Path(validation_json).write_text(json.dumps({"ok": not failed, "problems": problems, "queries": report},
                                                indent=2) + "\n")
    for query, result in report.items():
        status = "ok" if result["ok"] else f"DIFFERS: {result['difference']}"
        print(f"{query}: {result['rows']} rows, {status}")
    if failed:
        print(f"Spark's results differ from DuckDB's for {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"all {len(report)} queries: Spark's results equal DuckDB's")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
