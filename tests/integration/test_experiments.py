"""Experiment variables for real on the local default: a list of storage placements (HDFS and local dirs on the
emulated hdd or ssd, each backend holding each in one of them; the matrix's planning has unit tests in
tests/spillway/test_runner.py) with cold caches, and a run whose output fails validation (kept, flagged invalid) with one
executor per node (CORES=1)."""
import json
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from spillway import REPO
from cluster_users import HADOOP, as_workload_user

pytestmark = pytest.mark.integration
SUPERVISOR = "/var/lib/spillway/local/bin/spillway-daemon"
ROWS = 500_000  # 50 MB: big enough that its HDFS writes reach the device within the run's window
SPARK_SORT = f"engine=spark rows={ROWS}"


def bench(*make_vars, timeout=2400):
    proc = subprocess.run(["make", "-s", "bench", "WORKLOADS=" + make_vars[0], *make_vars[1:]], cwd=REPO,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    print(proc.stdout[-6000:], proc.stderr[-3000:])
    run_dir = Path(proc.stdout.strip().splitlines()[-1]).parent
    return proc, run_dir, json.loads((run_dir / "manifest.json").read_text())


def table(run_dir, name):
    return pd.read_parquet(run_dir / "tables" / f"{name}.parquet")


# The tiny bench (test_bench.py) left the cluster on the inventory's placement, where the list starts; then both
# HDFS and the local dirs move. The validation-failure bench below then moves the local dirs alone: the three kinds
# of placement step (none, both, local alone) in three TeraSorts. Every run of the list from a cold page cache
# (DROP_CACHES=1), as storage placements should be measured.
PLACEMENTS = "hdfs=hdd,local=ssd;hdfs=ssd,local=hdd"


@pytest.fixture(scope="module")
def placement_list():
    return bench("terasort", f"PARAMS={SPARK_SORT}", f"PLACEMENT={PLACEMENTS}", "DROP_CACHES=1")


def test_a_placement_list_runs_each_placement_in_order_and_the_report_groups_them(placement_list):
    proc, run_dir, manifest = placement_list
    assert proc.returncode == 0, proc.stdout[-3000:]
    runs = {(w["placement"]["hdfs"], w["placement"]["local"]): w for w in manifest["workloads"]}
    assert list(runs) == [("hdd", "ssd"), ("ssd", "hdd")]
    assert all(w["status"] == "ok" for w in runs.values())
    provisions = [s for s in manifest["steps"] if s["name"].startswith("provision")]
    assert [s["name"] for s in provisions] == ["provision (hdfs=hdd, local=ssd)", "provision (hdfs=ssd, local=hdd)"]
    # the inventory's placement first: the cluster stood on it (the benches before), no switch was needed
    assert provisions[0]["unchanged"] is True, (run_dir / provisions[0]["check_log"]).read_text()[-3000:]
    assert not any(s.get("unchanged") for s in provisions[1:])
    # both moved: the placement switch (playbooks/placement.yml) did it, not a full provisioning
    assert provisions[1]["switch"] is True, (run_dir / provisions[1]["check_log"]).read_text()[-3000:]
    html = (run_dir / "report.html").read_text()
    assert 'id="placement"' in html and "vs fastest placement" in html


def test_drop_caches_runs_before_every_workload_run(placement_list):
    _, run_dir, manifest = placement_list
    assert manifest["parameters"]["drop_caches"] is True
    for run in manifest["workloads"]:
        begin = run["steps"][0]
        assert "drop caches" in begin["name"]
        log = (run_dir / begin["log"]).read_text()
        assert "changed: [localhost]" in log.split("Write back dirty pages, then drop the page cache")[1][:400]


def daemon_started_at(name):
    """Epoch seconds (to the second) when the local cluster's daemon `name` started, from its supervisor's pid."""
    status = subprocess.run([SUPERVISOR, "status", name], capture_output=True, text=True).stdout.split()
    assert status[:2] == ["running", name], status
    pid = status[status.index("pid") + 1]
    elapsed = subprocess.run(["ps", "-o", "etimes=", "-p", pid], capture_output=True, text=True, check=True)
    return time.time() - int(elapsed.stdout)


def test_each_run_wrote_its_hdfs_output_to_the_backend_it_placed_hdfs_on(placement_list):
    _, run_dir, manifest = placement_list
    storage = json.loads((run_dir / "raw/localhost/storage.json").read_text())
    device = {name: b["device"] for name, b in storage["backends"].items()}
    totals = table(run_dir, "disk_totals")
    for run in manifest["workloads"]:
        written = totals[totals.workload_id == run["id"]].groupby("device")["write_bytes"].sum()
        hdfs_device = device[run["placement"]["hdfs"]]
        # the sorted output (ROWS x 100 bytes, replication 1) goes to the HDFS backend's device
        assert written.get(hdfs_device, 0) >= 0.8 * ROWS * 100, (run["id"], written.to_dict())


def test_each_hdfs_backend_keeps_its_own_namespace_and_blocks(placement_list):
    # the input was generated once per HDFS backend and its blocks stay there for the next bench to reuse
    for backend in ("hdd", "ssd"):
        blocks = Path(f"/var/lib/spillway/local/mnt/{backend}/hdfs/data")
        size = sum(p.stat().st_size for p in blocks.rglob("blk_*") if p.is_file())
        assert size >= ROWS * 100, f"{backend}: {size} bytes of HDFS blocks"
    assert {p.name for p in Path("/var/lib/spillway/local/namenode").iterdir()} >= {"hdd", "ssd"}


@pytest.fixture(scope="module")
def single_core_invalid_bench(placement_list):
    # The placement list left HDFS on the ssd with the input cached; a wrong recorded checksum makes the (correct)
    # sort fail its check exactly as lost rows would. CORES=1: one one-core executor per node, where the cluster's
    # sizing gives two (the sweep's wiring to spark-submit; its planning and report have unit tests on the recorded
    # sweep tests/fixtures/runs/kmeans-cores). Its placement moves the local dirs alone (ssd, hdd) -> (ssd, ssd).
    checksum = f"/spillway/terasort/input-{ROWS}.checksum"
    subprocess.run(as_workload_user([HADOOP, "fs", "-put", "-f", "-", checksum]), input="1234abcd\n", text=True,
                   check=True)
    try:
        return bench("terasort", f"PARAMS={SPARK_SORT}", "PLACEMENT=hdfs=ssd,local=ssd", "CORES=1")
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
    # That bench's switch, (ssd, hdd) -> (ssd, ssd), changed only the local dirs (yarn-placement.xml).
    _, run_dir, manifest = single_core_invalid_bench
    (last,) = [s for s in manifest["steps"] if s["name"] == "provision"]
    # a placement switch (playbooks/placement.yml), not a full provisioning
    assert last["unchanged"] is False and last["switch"] is True, (run_dir / last["check_log"]).read_text()[-3000:]
    switched_at = datetime.fromisoformat(last["started_at"]).timestamp()
    started = {name: daemon_started_at(name) for name in
               ("namenode", "datanode", "resourcemanager", "nodemanager", "historyserver")}
    assert started["nodemanager"] > switched_at, started
    assert all(at < switched_at - 1 for name, at in started.items() if name != "nodemanager"), (switched_at, started)
