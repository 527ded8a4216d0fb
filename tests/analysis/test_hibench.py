"""hibench.report: HiBench's own report lines from a recorded bench (tests/fixtures/runs/hibench: the manifest, the
steps' logs and the workloads' prepare.json of the default `make bench` of 2026-11-26, run 20261126-190655-local,
recorded before TeraSort's prepare wrote its input size), in the columns and printf format HiBench's gen_report
writes (bin/functions/workload_functions.sh). TeraSort's lines with a recorded input are checked by the default
bench's live test (tests/integration/test_bench.py)."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from analysis.hibench import hibench_report, hibench_type
from analysis.parsers.manifest import load_manifest
from analysis.report_page import write_report
from analysis.tables import build_tables
from conftest import FIXTURES

RECORDED = FIXTURES / "runs" / "hibench"
# HiBench's conf/hibench.conf `hibench.report.formats`, and the header gen_report prints with it
HIBENCH_FORMAT = "%-12s %-10s %-8s %-20s %-20s %-20s %-20s"
HIBENCH_HEADER = HIBENCH_FORMAT % ("Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)",
                                   "Throughput/node")
LINE = re.compile(r"^(?P<type>\S+) +(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d) +(?P<size>\d+) +"
                  r"(?P<duration>\d+\.\d{3}) +(?P<throughput>\d+) +(?P<per_node>\d+) *$")


@pytest.fixture
def recorded(tmp_path):
    run = tmp_path / RECORDED.name
    shutil.copytree(RECORDED, run)
    return run


def run_command_seconds(run, workload_id):
    """The run command's timing line in the recorded log, read here without the parser."""
    text = (run / "logs" / f"{workload_id}.run.log").read_text()
    return sum(float(m) for m in re.findall(r"^timing:\s+([\d.]+) s\s+Workload command", text, re.M))


def test_every_validated_run_with_an_input_gets_hibench_s_line(recorded):
    written = hibench_report(build_tables(recorded), load_manifest(recorded))
    lines = written.text.splitlines()
    assert lines[0] == HIBENCH_HEADER
    rows = {m["type"]: m for m in map(LINE.match, lines[1:])}
    assert None not in rows and len(rows) == written.lines == 2, lines
    manifest = json.loads((recorded / "manifest.json").read_text())
    for type_, workload_id in (("ScalaSparkKmeans", "kmeans"), ("SpillwayTpch", "tpch")):
        row = rows[type_]
        prepare = json.loads((recorded / "raw" / "localhost" / "workload" / workload_id / "prepare.json").read_text())
        seconds = run_command_seconds(recorded, workload_id)
        assert int(row["size"]) == prepare["bytes"]
        assert float(row["duration"]) == pytest.approx(seconds, abs=0.0005)
        assert int(row["throughput"]) == int(prepare["bytes"] // round(seconds, 3))
        assert int(row["per_node"]) == int(row["throughput"])          # one worker node
        run_step = next(s for w in manifest["workloads"] if w["id"] == workload_id for s in w["steps"]
                        if s["name"] == f"{workload_id}: run")
        assert f"{row['date']}T{row['time']}" == run_step["ended_at"][:19]   # recorded in UTC
    # the numbers of this recording, read off its files: K-means' 42408430 bytes in its 35.88 s run command
    assert (rows["ScalaSparkKmeans"]["size"], rows["ScalaSparkKmeans"]["duration"]) == ("42408430", "35.880")
    assert dict(written.left_out) == {workload_id: "no input size (its prepare records none)" for workload_id in
                                      ("fio-sweep", "terasort-mapreduce", "terasort-spark", "gatk4")}


def test_throughput_per_node_divides_by_the_inventory_s_workers(recorded):
    manifest = load_manifest(recorded)
    manifest["inventory"]["groups"]["workers"] = ["node1", "node2", "node3"]
    row = LINE.match(hibench_report(build_tables(recorded), manifest).text.splitlines()[1])
    assert int(row["per_node"]) == int(row["throughput"]) // 3


@pytest.mark.parametrize("workload_id, change, remaining", [
    ("tpch", {"status": "failed"}, ["ScalaSparkKmeans"]),
    ("tpch", {"status": "invalid"}, ["ScalaSparkKmeans"]),
    ("kmeans", {"warmup": True}, ["SpillwayTpch"]),
])
def test_a_failed_invalid_or_warm_up_run_has_no_line(recorded, workload_id, change, remaining):
    manifest = json.loads((recorded / "manifest.json").read_text())
    next(w for w in manifest["workloads"] if w["id"] == workload_id).update(change)
    (recorded / "manifest.json").write_text(json.dumps(manifest))
    written = hibench_report(build_tables(recorded), load_manifest(recorded))
    assert [LINE.match(line)["type"] for line in written.text.splitlines()[1:]] == remaining


def test_a_run_without_its_timed_command_is_left_out_and_says_why(recorded):
    log = recorded / "logs" / "kmeans.run.log"
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                           if "Workload command" not in line))
    written = hibench_report(build_tables(recorded), load_manifest(recorded))
    assert ("kmeans", "no timed run command in its run step's log") in written.left_out
    assert "ScalaSparkKmeans" not in written.text


def test_the_report_step_writes_hibench_report_beside_the_page(recorded):
    html = write_report(recorded).read_text()
    text = (recorded / "hibench.report").read_text()
    assert text == hibench_report(build_tables(recorded), load_manifest(recorded)).text
    assert 'href="hibench.report"' in html and "2 workload runs" in html
    assert "fio-sweep (no input size" in html


@pytest.mark.parametrize("workload, parameters, expected", [
    ("terasort", '{"engine":"mapreduce","rows":2000000}', "HadoopTerasort"),
    ("terasort", '{"engine":"spark"}', "ScalaSparkTerasort"),
    ("kmeans", '{"k":10}', "ScalaSparkKmeans"),
    ("websql", '{"query":"join","seed":1}', "ScalaSparkJoin"),
    ("websql", '{"query":"scan"}', "ScalaSparkScan"),
    ("websql", '{"query":"aggregation"}', "ScalaSparkAggregation"),
    ("websql", "{}", "SpillwayWebsql"),
    ("dfsio", '{"mode":"write","nr_files":4,"file_size":"16MB"}', "HadoopDfsioe-write"),
    ("dfsio", '{"mode":"read"}', "HadoopDfsioe-read"),
    ("dfsio", '{"mode":"append"}', "SpillwayDfsio"),
    ("wordcount", '{"bytes":32000000,"seed":42}', "ScalaSparkWordcount"),
    ("sort", '{"bytes":32000000,"reducers":2}', "ScalaSparkSort"),
    ("tpch", "{}", "SpillwayTpch"),
    ("fio-sweep", "{}", "SpillwayFioSweep"),
    ("terasort", "not json", "SpillwayTerasort"),
])
def test_types_are_hibench_s_names_only_for_hibench_s_workloads(workload, parameters, expected):
    assert hibench_type(workload, parameters) == expected
