"""Experiment variables for real on the local default: a run whose output fails validation (kept, flagged invalid)
with one executor per node (CORES=1), a cold page cache (DROP_CACHES=1) and a placement of its own, which moves the
local dirs alone. Lists of placements and the matrix are planned in unit tests (tests/spillway/bench/test_plan.py); the
default bench's storage probe runs two placements and a switch between them live (tests/integration/test_bench.py)."""
import json
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from spillway import REPO, workloads
from cluster_users import HADOOP, as_workload_user

pytestmark = pytest.mark.integration
SUPERVISOR = "/var/lib/spillway/local/bin/spillway-daemon"
# The tiny profile's TeraSort input, which the default bench (test_bench.py) left in HDFS on the hdd
ROWS = workloads.load("terasort").scales["tiny"]["rows"]


def bench(*make_vars, timeout=2400):
    # WARMUP=0: the experiment variables' wiring is the test, not a measurement (the default bench's warm-ups are
    # tests/integration/test_bench.py's)
    proc = subprocess.run(["make", "-s", "bench", "WORKLOADS=" + make_vars[0], *make_vars[1:], "WARMUP=0"], cwd=REPO,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    print(proc.stdout[-6000:], proc.stderr[-3000:])
    run_dir = Path(proc.stdout.strip().splitlines()[-1]).parent
    return proc, run_dir, json.loads((run_dir / "manifest.json").read_text())


def table(run_dir, name):
    return pd.read_parquet(run_dir / "tables" / f"{name}.parquet")


def daemon_started_at(name):
    """Epoch seconds (to the second) when the local cluster's daemon `name` started, from its supervisor's pid."""
    status = subprocess.run([SUPERVISOR, "status", name], capture_output=True, text=True).stdout.split()
    assert status[:2] == ["running", name], status
    pid = status[status.index("pid") + 1]
    elapsed = subprocess.run(["ps", "-o", "etimes=", "-p", pid], capture_output=True, text=True, check=True)
    return time.time() - int(elapsed.stdout)


@pytest.fixture(scope="module")
def single_core_invalid_bench():
    # The benches before it (the default bench first; this one runs last, tests/integration/conftest.py) left the
    # cluster on the inventory's placement (HDFS on the hdd, the local dirs on the ssd) with TeraSort's tiny input
    # cached there; a wrong recorded checksum makes the (correct) sort fail its check exactly as
    # lost rows would. CORES=1: one one-core executor per node, where the cluster's sizing gives two (the sweep's
    # wiring to spark-submit; its planning and report have unit tests on the recorded sweep
    # tests/fixtures/runs/kmeans-cores). Its placement moves the local dirs alone (hdd, ssd) -> (hdd, hdd): a switch
    # that restarts the NodeManager alone. DROP_CACHES=1: the run starts from a cold page cache.
    checksum = f"/spillway/terasort/input-{ROWS}.checksum"
    subprocess.run(as_workload_user([HADOOP, "fs", "-put", "-f", "-", checksum]), input="1234abcd\n", text=True,
                   check=True)
    try:
        return bench("terasort", "PARAMS=engine=spark", "PLACEMENT=hdfs=hdd,local=hdd", "CORES=1", "DROP_CACHES=1")
    finally:
        subprocess.run(as_workload_user([HADOOP, "fs", "-rm", "-r", "-f", "-skipTrash", checksum,
                                         f"/spillway/terasort/input-{ROWS}"]), check=True)


def test_validation_failure_marks_the_run_invalid_and_keeps_it_out_of_the_medians(single_core_invalid_bench):
    proc, run_dir, manifest = single_core_invalid_bench
    assert proc.returncode != 0
    (run,) = manifest["workloads"]
    assert run["status"] == "invalid"
    assert [s["status"] for s in run["steps"] if s["name"].endswith((": run", ": validate"))] == ["ok", "failed"]
    assert "INVALID" in proc.stdout
    assert "INVALID: its output failed validation" in (run_dir / "report.html").read_text()
    assert run["executor_cores"] == 1
    executors = table(run_dir, "spark_executors")
    per_app = executors[executors.executor_id != "driver"].groupby("app_id").size()
    assert len(per_app) == 1 and set(per_app) == {1}, per_app   # the sort's application: one executor, one worker


def test_a_switch_of_the_local_placement_restarts_the_nodemanager_alone(single_core_invalid_bench):
    # That bench's switch, (hdd, ssd) -> (hdd, hdd), changed only the local dirs (yarn-placement.xml).
    _, run_dir, manifest = single_core_invalid_bench
    (last,) = [s for s in manifest["steps"] if s["name"] == "provision"]
    # a placement switch (playbooks/placement.yml), not a full provisioning
    assert last["unchanged"] is False and last["switch"] is True, (run_dir / last["check_log"]).read_text()[-3000:]
    switched_at = datetime.fromisoformat(last["started_at"]).timestamp()
    started = {name: daemon_started_at(name) for name in
               ("namenode", "datanode", "resourcemanager", "nodemanager", "historyserver")}
    assert started["nodemanager"] > switched_at, started
    assert all(at < switched_at - 1 for name, at in started.items() if name != "nodemanager"), (switched_at, started)


def test_drop_caches_runs_before_every_workload_run(single_core_invalid_bench):
    _, run_dir, manifest = single_core_invalid_bench
    assert manifest["parameters"]["drop_caches"] is True
    for run in manifest["workloads"]:
        begin = run["steps"][0]
        assert "drop caches" in begin["name"]
        log = (run_dir / begin["log"]).read_text()
        assert "changed: [localhost]" in log.split("Write back dirty pages, then drop the page cache")[1][:400]
