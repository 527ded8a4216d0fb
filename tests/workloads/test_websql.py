"""The websql workload (HiBench's SQL scan, aggregation, join) for real: its Spark job in Spark local mode generates a
few thousand rows twice with the same seed (identical data whatever the partitions) and once with another, runs the
three queries, and the DuckDB check (workloads/websql/check_results.py) accepts what the job wrote; then results
that must fail the check: a lost row, a changed value, a sum a cent off, a duplicated group, rows out of order.
"""

import csv
import json
import os
import re
import shutil
import subprocess
from datetime import date
from pathlib import Path

import pytest

from spark_local import REPO, SPARK_HOME, build_job, spark_jars_present, submit, summary

WORKLOAD = REPO / "workloads" / "websql"
QUERIES = ("scan", "aggregation", "join")
WORKLOAD_PYTHON = Path("/opt/spillway/venv/bin/python")
USERVISITS, RANKINGS, SEED, PARTITIONS = 6000, 700, 7, 3

pytestmark = pytest.mark.skipif(
    not spark_jars_present("spark-sql") or not WORKLOAD_PYTHON.is_file(),
    reason=f"needs the Spark jars in {SPARK_HOME}/jars and the workload venv /opt/spillway/venv (duckdb): "
           "run `make setup` first",
)


def spark_job(work: Path, jar: Path, *args, conf=()):
    result = submit(work, jar, *args, conf=conf, timeout=300)
    assert result.returncode == 0, f"{args[0]} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return summary(result)


def generate(work: Path, jar: Path, name: str, seed=SEED, partitions=PARTITIONS):
    spark_job(work, jar, "generate", f"file://{work / name}", USERVISITS, RANKINGS, seed, partitions)
    return work / name


def lines(table_dir: Path):
    """The table's lines, files in order: row 0 first whatever the number of partitions."""
    return [line for part in sorted(table_dir.glob("part-*")) for line in part.read_text().splitlines()]


def check(data: Path, query: str, output: Path, out: Path):
    """Runs the check as the validate step does; returns (exit code, stderr, validation.json)."""
    result = subprocess.run([str(WORKLOAD_PYTHON), str(WORKLOAD / "check_results.py"), str(data),
                             str(WORKLOAD / "queries"), query, str(output), str(out)],
                            capture_output=True, text=True, timeout=300)
    return result.returncode, result.stderr, json.loads(out.read_text())


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Generated data and each query's result: (work, jar, data, {query: (summary, output dir)})."""
    work = tmp_path_factory.mktemp("websql")
    jar = build_job("websql", work / "build" / "job.jar", "spillway.websql.WebSqlSpark")
    data = generate(work, jar, "data")
    results = {}
    for query in QUERIES:
        output = work / "out" / query
        results[query] = (spark_job(work, jar, "query", f"file://{data}", WORKLOAD / "queries" / f"{query}.sql", query,
                                    f"file://{output}", work / f"{query}-times.csv",
                                    conf=["spark.sql.shuffle.partitions=2"]), output)
    return work, jar, data, results


def test_same_seed_generates_identical_data_whatever_the_partitions(ran):
    work, jar, data, _ = ran
    again = generate(work, jar, "data-again", partitions=2)
    for table in ("rankings", "uservisits"):
        assert len(list((again / table).glob("part-*"))) == 2
        assert lines(again / table) == lines(data / table)
    other = generate(work, jar, "data-other-seed", seed=SEED + 1)
    assert lines(other / "uservisits") != lines(data / "uservisits")
    assert len(lines(other / "uservisits")) == USERVISITS


def test_generated_tables_are_what_the_queries_need(ran):
    _, _, data, _ = ran
    pages = [line.split(",") for line in lines(data / "rankings")]
    visits = [line.split(",") for line in lines(data / "uservisits")]
    assert len(pages) == RANKINGS and all(len(p) == 3 for p in pages)
    assert len(visits) == USERVISITS and all(len(v) == 9 for v in visits)
    urls = {p[0] for p in pages}
    assert len(urls) == RANKINGS  # pageURL is a key
    assert all(v[1] in urls for v in visits)  # every visit's destURL is a page: the join loses none
    days = [date.fromisoformat(v[2]) for v in visits]
    assert min(days) >= date(1995, 1, 1) and max(days) <= date(2004, 12, 31)
    in_window = sum(date(1999, 1, 1) <= d <= date(2000, 1, 1) for d in days) / USERVISITS
    assert 0.07 < in_window < 0.13  # one year of ten: the join's filter keeps a part
    assert all(re.fullmatch(r"[0-9]+\.[0-9]{2}", v[3]) and float(v[3]) >= 0.01 for v in visits)
    assert len({v[0] for v in visits}) <= USERVISITS // 50  # groups of about 50 visits per source IP


def test_each_query_gives_duckdbs_answer(ran, tmp_path):
    work, _, data, results = ran
    for query, (job, output) in results.items():
        assert job["ok"] and job["query"] == query and job["rows"] > 1
        times = list(csv.DictReader((work / f"{query}-times.csv").open()))
        assert [(t["query"], int(t["rows"])) for t in times] == [(query, job["rows"])]
        code, stderr, validation = check(data, query, output, tmp_path / f"{query}.json")
        assert code == 0, stderr
        assert validation["ok"] and validation["problems"] == []
        assert validation["rows"] == validation["spark_rows"] == job["rows"]
        assert validation["queries"][query]["ok"]
    assert results["scan"][0]["rows"] == USERVISITS
    assert results["aggregation"][0]["rows"] <= USERVISITS // 50
    assert 0 < results["join"][0]["rows"] <= results["aggregation"][0]["rows"]


def rewrite(output: Path, change):
    """Applies change(rows) to the rows of Spark's result (all part files, in order) and writes them as one file."""
    parts = sorted(output.glob("part-*"))
    rows = [row for part in parts for row in csv.reader(part.open(newline=""))]
    change(rows)
    for part in parts:
        part.unlink()
    with open(output / "part-00000-altered.csv", "w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)


@pytest.mark.parametrize("query, change, message", [
    ("scan", lambda rows: rows.pop(17), r"row count differs: spark 5999, duckdb 6000"),
    ("scan", lambda rows: rows[5].__setitem__(8, str(int(rows[5][8]) + 1)), r"a row missing from spark's result"),
    ("aggregation", lambda rows: rows[3].__setitem__(1, repr(float(rows[3][1]) + 0.01)),
     r"group \['[0-9.]+'\], column sumAdRevenue: spark"),
    ("aggregation", lambda rows: rows.__setitem__(4, [rows[3][0], rows[4][1]]),
     r"spark's result holds group \['[0-9.]+'\] 2 times"),
    ("join", lambda rows: rows.__setitem__(slice(0, 2), [rows[1], rows[0]]), r"row 2 .*not in descending order"),
    ("join", lambda rows: rows[-1].__setitem__(0, "10.0.0.1"), r"missing from spark's result|in spark's result only"),
])
def test_a_wrong_result_fails_the_check(ran, tmp_path, query, change, message):
    _, _, data, results = ran
    output = tmp_path / "output"
    shutil.copytree(results[query][1], output)
    rewrite(output, change)
    code, stderr, validation = check(data, query, output, tmp_path / "validation.json")
    assert code == 1 and not validation["ok"]
    assert re.search(message, validation["queries"][query]["difference"]), validation
    assert validation["problems"] == [f"{query}: {validation['queries'][query]['difference']}"]
    assert "differs from DuckDB's" in stderr


def test_sums_added_in_another_order_still_match(ran, tmp_path):
    _, _, data, results = ran
    output = tmp_path / "output"
    shutil.copytree(results["aggregation"][1], output)
    # A relative 1e-12: the rounding of a sum of doubles added in another order, far below a cent.
    rewrite(output, lambda rows: [row.__setitem__(1, repr(float(row[1]) * (1 + 1e-12))) for row in rows])
    code, stderr, validation = check(data, "aggregation", output, tmp_path / "validation.json")
    assert code == 0 and validation["ok"], stderr


def test_step_script_rejects_an_unknown_query_and_shares_the_generators_version():
    result = subprocess.run(["bash", str(WORKLOAD / "websql"), "run"], capture_output=True, text=True,
                            env={**os.environ, "P_QUERY": "select", "P_USERVISITS": "1000", "P_RANKINGS": "10",
                                 "P_SEED": "1", "P_PARTITIONS": "1", "SPILLWAY_ROOT": "/nonexistent",
                                 "SPILLWAY_OUT": "/nonexistent"})
    assert result.returncode == 2 and "'select' is not a websql query" in result.stderr
    script = re.search(r"^data_version=(\S+)$", (WORKLOAD / "websql").read_text(), re.M).group(1)
    java = (WORKLOAD / "spark" / "src" / "spillway" / "websql" / "WebData.java").read_text()
    assert f'VERSION = "{script}";' in java
