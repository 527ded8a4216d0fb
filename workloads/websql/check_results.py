"""Checks Spark's result of one websql query against DuckDB running the same SQL file on the same CSV input.

    python check_results.py <data-dir> <queries-dir> <query> <spark-output-dir> <validation-json>

data-dir holds rankings/part-* and uservisits/part-* as the generator wrote them (CSV, no header);
spark-output-dir holds the part-* CSV files the Spark job wrote (no header). Writes validation-json
({"ok", "problems", "query", "rows", "spark_rows", "queries": {query: {"ok", "rows", "difference", "duckdb_s"}}})
and exits 1 when the results differ.

What "equal" means:
- the same number of rows;
- scan (a copy of uservisits): the same rows as a multiset, every column equal exactly (the copy computes nothing:
  a double read and written back is the same double);
- aggregation and join: one row per group key (the text columns, sourceIP) on each side, the same keys, and the
  numbers of each group within an absolute 1e-6 or a relative 1e-9. The engines add the doubles of a group in
  different orders, which changes a sum by a few units of its last place (relative 1e-16 per row added), far
  inside 1e-9; every adRevenue is whole cents, so a visit lost, duplicated or changed moves a sum by at least
  0.01, far outside it while a group's total stays below 1e7 (groups hold about 50 visits of at most 999.99);
- join: Spark's rows in the order of the query's ORDER BY (totalRevenue descending, read in file order); rows
  with equal totals may come in any order, as the SQL fixes none among them.
"""
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

TABLES = {
    "rankings": {"pageURL": "VARCHAR", "pageRank": "INTEGER", "avgDuration": "INTEGER"},
    "uservisits": {"sourceIP": "VARCHAR", "destURL": "VARCHAR", "visitDate": "DATE", "adRevenue": "DOUBLE",
                   "userAgent": "VARCHAR", "countryCode": "VARCHAR", "languageCode": "VARCHAR",
                   "searchWord": "VARCHAR", "duration": "INTEGER"},
}
# query -> how its result is compared: exact multiset, or per group key with tolerances; and its ORDER BY
QUERIES = {
    "scan": {"exact": True, "order": None},
    "aggregation": {"exact": False, "order": None},
    "join": {"exact": False, "order": ("totalRevenue", "desc")},
}
ABSOLUTE_TOLERANCE = 1e-6
RELATIVE_TOLERANCE = 1e-9
# DuckDB's own cap on its memory, beyond which it spills to its temporary folder. Its default, 80 % of the host's
# memory, ignores the node budget's cgroup (5 GiB on the local default): at SCALE=small the scan's two 10-million-row
# tables in memory had the budget's OOM killer end the check (run 20261127-065717-local).
DUCKDB_MEMORY_LIMIT = "1GB"


def quote(name):
    return '"' + name.replace('"', '""') + '"'


def csv_source(files, columns):
    """A DuckDB table expression reading the CSV files with the given {column: type}, nothing guessed."""
    listed = ", ".join("'" + str(f).replace("'", "''") + "'" for f in files)
    types = ", ".join(f"'{name}': '{kind}'" for name, kind in columns.items())
    return (f"read_csv([{listed}], header=false, delim=',', quote='\"', escape='\"', auto_detect=false, "
            f"columns={{{types}}}, dateformat='%Y-%m-%d')")


def part_files(folder):
    """Spark's and Hadoop's data files of a folder, in their order (part-00000 ...); not _SUCCESS or .crc."""
    return sorted(p for p in Path(folder).glob("part-*") if p.is_file())


def connect(data_dir, spill_dir):
    """DuckDB over the generator's CSV, within DUCKDB_MEMORY_LIMIT, spilling into `spill_dir` (the caller's)."""
    import duckdb  # only in the workload venv (/opt/spillway/venv), not needed for the order check

    # a database file, not memory: the two result tables stay on disk beside DuckDB's spill files
    con = duckdb.connect(str(Path(spill_dir) / "check.duckdb"),
                         config={"memory_limit": DUCKDB_MEMORY_LIMIT, "temp_directory": str(Path(spill_dir) / "spill"),
                                 "preserve_insertion_order": False})
    for table, columns in TABLES.items():
        files = part_files(Path(data_dir) / table)
        if not files:
            raise SystemExit(f"no part-* files in {Path(data_dir) / table}: not the generator's output")
        con.execute(f"create view {table} as select * from {csv_source(files, columns)}")
    return con


def order_difference(files, columns, order):
    """None when the rows of Spark's files, read in order, follow the ORDER BY, else where they do not."""
    column, direction = order
    index = list(columns).index(column)
    previous, row = None, 0
    for path in files:
        with open(path, newline="", encoding="utf-8") as handle:
            for fields in csv.reader(handle):
                row += 1
                value = float(fields[index])
                if previous is not None and (value > previous if direction == "desc" else value < previous):
                    return (f"row {row} ({path.name}): {column} {fields[index]} after {previous!r}: not in "
                            f"{'descending' if direction == 'desc' else 'ascending'} order")
                previous = value
    return None


def first_difference(con, query, columns):
    """None when the tables `expected` (DuckDB) and `actual` (Spark) hold the same result, else what differs."""
    expected_rows = con.execute("select count(*) from expected").fetchone()[0]
    actual_rows = con.execute("select count(*) from actual").fetchone()[0]
    if expected_rows != actual_rows:
        return f"row count differs: spark {actual_rows}, duckdb {expected_rows}"
    if QUERIES[query]["exact"]:
        for first, second, side in (("expected", "actual", "missing from spark's"), ("actual", "expected", "extra in spark's")):
            row = con.execute(f"select * from (select * from {first} except all select * from {second}) limit 1").fetchone()
            if row is not None:
                return f"a row {side} result: {list(map(str, row))}"
        return None
    keys = [c for c, kind in columns.items() if kind == "VARCHAR"]
    numbers = [c for c in columns if c not in keys]
    key_list = ", ".join(map(quote, keys))
    duplicate = con.execute(f"select {key_list}, count(*) from actual group by all having count(*) > 1 limit 1").fetchone()
    if duplicate is not None:
        return f"spark's result holds group {list(duplicate[:-1])} {duplicate[-1]} times"
    on = " and ".join(f"e.{quote(k)} = a.{quote(k)}" for k in keys)
    differs = " or ".join(
        f"abs(e.{quote(n)} - a.{quote(n)}) > {ABSOLUTE_TOLERANCE} + {RELATIVE_TOLERANCE} * abs(e.{quote(n)})"
        for n in numbers)
    row = con.execute(
        f"select {', '.join(f'e.{quote(c)}' for c in columns)}, {', '.join(f'a.{quote(c)}' for c in columns)} "
        f"from expected e full outer join actual a on {on} "
        f"where a.{quote(keys[0])} is null or e.{quote(keys[0])} is null or {differs} "
        f"order by e.{quote(keys[0])} nulls last, a.{quote(keys[0])} limit 1").fetchone()
    if row is None:
        return None
    count = len(columns)
    expected, actual = row[:count], row[count:]
    if expected[0] is None:
        return f"group {list(actual[:len(keys)])} is in spark's result only"
    if actual[0] is None:
        return f"group {list(expected[:len(keys)])} is missing from spark's result"
    for name, wanted, got in zip(columns, expected, actual):
        if wanted != got:
            return f"group {list(expected[:len(keys)])}, column {name}: spark {got!r}, duckdb {wanted!r}"
    return f"group {list(expected[:len(keys)])}: spark {list(actual)}, duckdb {list(expected)}"


def check(data_dir, queries_dir, query, output_dir):
    """{"ok", "rows", "spark_rows", "difference", "duckdb_s"} for the query; DuckDB spills under TMPDIR (the step's
    private temporary folder)."""
    with tempfile.TemporaryDirectory(prefix="websql-duckdb-") as spill_dir:
        con = connect(data_dir, spill_dir)
        try:
            return _check(con, queries_dir, query, output_dir)
        finally:
            con.close()


def _check(con, queries_dir, query, output_dir):
    sql = (Path(queries_dir) / f"{query}.sql").read_text()
    started = time.monotonic()
    con.execute(f"create table expected as {sql}")
    seconds = time.monotonic() - started
    columns = dict(con.execute("select column_name, column_type from (describe expected)").fetchall())
    files = part_files(output_dir)
    if files:
        con.execute(f"create table actual as select * from {csv_source(files, columns)}")
    else:  # Spark writes no part file for an empty result of zero partitions
        con.execute("create table actual as select * from expected limit 0")
    difference = first_difference(con, query, columns)
    order = QUERIES[query]["order"]
    if difference is None and order is not None:
        difference = order_difference(files, columns, order)
    rows = con.execute("select count(*) from expected").fetchone()[0]
    spark_rows = con.execute("select count(*) from actual").fetchone()[0]
    return {"ok": difference is None, "rows": rows, "spark_rows": spark_rows, "difference": difference,
            "duckdb_s": round(seconds, 3)}


def main(argv):
    if len(argv) != 5:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    data_dir, queries_dir, query, output_dir, validation_json = argv
    if query not in QUERIES:
        print(f"unknown query '{query}' ({', '.join(QUERIES)})", file=sys.stderr)
        return 2
    result = check(data_dir, queries_dir, query, output_dir)
    problems = [] if result["ok"] else [f"{query}: {result['difference']}"]
    Path(validation_json).write_text(json.dumps(
        {"ok": result["ok"], "problems": problems, "query": query, "rows": result["rows"],
         "spark_rows": result["spark_rows"],
         "queries": {query: {k: result[k] for k in ("ok", "rows", "difference", "duckdb_s")}}}, indent=2) + "\n")
    if not result["ok"]:
        print(f"{query}: Spark's result differs from DuckDB's: {result['difference']}", file=sys.stderr)
        return 1
    print(f"{query}: {result['rows']} rows, Spark's result equals DuckDB's")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
