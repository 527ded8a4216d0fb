"""HiBench's batch workloads (issue 25) at their tiny profile on the local default, for real: each runs through the
harness and validates against its independent check, and hibench.report has HiBench's line for each. TeraSort and
K-means run in the default bench (test_bench.py); websql runs its heaviest query here (its scan and aggregation, with
the same generator and DuckDB check, run in Spark local mode in tests/workloads/test_websql.py)."""
import json
import subprocess
from pathlib import Path

import pytest

from spillway import REPO

pytestmark = pytest.mark.integration
WORKLOADS = "sort,wordcount,dfsio,websql"


@pytest.fixture(scope="module")
def hibench_bench():
    # WARMUP=0: each workload's run and validation is the test, not a measurement (the default bench's warm-ups are
    # tests/integration/test_bench.py's)
    proc = subprocess.run(["make", "-s", "bench", f"WORKLOADS={WORKLOADS}", "PARAMS=websql.query=join", "WARMUP=0"],
                          cwd=REPO,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=2400)
    print(proc.stdout[-6000:], proc.stderr[-3000:])
    run_dir = Path(proc.stdout.strip().splitlines()[-1]).parent
    return proc, run_dir, json.loads((run_dir / "manifest.json").read_text())


def test_each_hibench_workload_runs_and_validates_at_its_tiny_profile(hibench_bench):
    proc, run_dir, manifest = hibench_bench
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert manifest["parameters"]["scale"] == "tiny" and manifest["parameters"]["storage_probe"] is False
    assert {w["id"]: w["status"] for w in manifest["workloads"]} == {
        "sort": "ok", "wordcount": "ok", "dfsio-write": "ok", "dfsio-read": "ok", "websql": "ok"}
    for run in manifest["workloads"]:
        assert [s["name"].split(": ")[-1] for s in run["steps"]][1:4] == ["prepare", "run", "validate"], run["steps"]
        verdict = run_dir / "raw/localhost/workload" / run["id"] / "validation.json"
        assert json.loads(verdict.read_text())["ok"] is True, (run["id"], verdict.read_text()[:2000])


def test_hibench_report_has_hibench_s_line_for_each_run(hibench_bench):
    _, run_dir, _ = hibench_bench
    lines = (run_dir / "hibench.report").read_text().splitlines()
    assert lines[0].split() == ["Type", "Date", "Time", "Input_data_size", "Duration(s)", "Throughput(bytes/s)",
                                "Throughput/node"]
    rows = {fields[0]: fields for fields in map(str.split, lines[1:])}
    assert set(rows) == {"ScalaSparkSort", "ScalaSparkWordcount", "HadoopDfsioe-write", "HadoopDfsioe-read",
                         "ScalaSparkJoin"}, lines
    for fields in rows.values():
        size, duration, throughput = int(fields[3]), float(fields[4]), float(fields[5])
        assert size > 0 and duration > 0 and throughput == pytest.approx(size / duration, rel=0.01), fields
