"""Faults during a bench: the run ends cleanly, the failure is marked, collected data is kept."""
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spillway import REPO, inventory

pytestmark = pytest.mark.integration
# A short sweep (4 points of 1 s on each backend): Ctrl-C comes after its first point, SIGTERM 5 s into the run step,
# and the resumed run measures it all again.
LOCAL_ROOT = Path(inventory.load("local").spillway_root("localhost"))
SHORT_SWEEP = "fio-sweep.patterns=read,write fio-sweep.block_sizes=64k,1m fio-sweep.file_size=64m"


def collector_processes():
    out = subprocess.run(["pgrep", "-af", "iostat -x -o JSON|spillway-blocktrace"], capture_output=True, text=True)
    return out.stdout.strip()


def block_cache_droppers():
    # role hadoop's spillway-drop-block-cache runs during every measured run step on the local inventory
    out = subprocess.run(["pgrep", "-af", "spillway-drop-block-cache"], capture_output=True, text=True)
    return out.stdout.strip()


def wait_for_a_measured_point(bench, timeout=300):
    """Until the first fio point of the running sweep is written on the host: the run step's playbook does more
    before its command than a fixed sleep can assume (a 5 s sleep interrupted one CI run before the first point)."""
    out = LOCAL_ROOT / "runs" / bench.run_dir.name / "workload" / "fio-sweep"
    deadline = time.monotonic() + timeout
    while not any(point.stat().st_size > 0 for point in out.glob("fio-*.json")):
        assert bench.proc.poll() is None, "the bench ended before its first fio point"
        assert time.monotonic() < deadline, f"no fio point in {out} within {timeout} s"
        time.sleep(0.5)


def test_ctrl_c_stops_collectors_and_leaves_a_partial_run_that_resumes(bench_process):
    bench = bench_process("--workloads", "fio-sweep", "--params", SHORT_SWEEP)
    bench.wait_for_step("fio-sweep", ": run")
    wait_for_a_measured_point(bench)
    bench.interrupt()
    returncode, output = bench.finish()
    assert returncode != 0
    manifest = bench.manifest()
    assert manifest["status"] == "interrupted"
    (fio,) = manifest["workloads"]
    assert fio["status"] == "interrupted"
    assert any(s["status"] == "interrupted" for s in fio["steps"])
    raw = bench.run_dir / "raw/localhost"
    assert (raw / "iostat/fio-sweep/iostat.json").stat().st_size > 0
    assert list((raw / "workload/fio-sweep").glob("fio-*.json")), "points measured before Ctrl-C are kept"
    assert not collector_processes()
    assert not block_cache_droppers(), "an interrupted run step's page cache dropper is stopped with it"
    assert "interrupted" in output

    # RESUME: the same run finished later; only the interrupted workload runs again, its first attempt kept aside
    resumed = subprocess.run([sys.executable, "-m", "spillway", "bench", "--resume", str(bench.run_dir)], cwd=REPO,
                             capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=1200)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-2000:]
    manifest = bench.manifest()
    assert manifest["status"] == "completed"
    assert manifest["resumed"][0]["from_status"] == "interrupted"
    (fio,) = manifest["workloads"]
    assert fio["status"] == "ok" and fio["attempts"][0]["status"] == "interrupted"
    assert (bench.run_dir / "attempts" / "fio-sweep.attempt-1").is_dir()
    # the interrupt changed nothing the provisioning made (the run step's dropper, killed with the step, left no record
    # of a stopped daemon behind): the resume's check skips the provisioning
    resume_provisioning = [s for s in manifest["steps"] if s["name"].startswith("provision")][-1]
    assert resume_provisioning.get("unchanged") is True, resume_provisioning
    assert list((raw / "workload/fio-sweep").glob("fio-*.json")), "the resumed attempt measured again"
    assert "fio-sweep" in (bench.run_dir / "report.html").read_text()


def test_sigterm_to_the_bench_alone_stops_it_as_ctrl_c_does(bench_process):
    """A CI job's limit or a scheduler sends SIGTERM to the bench's process only: Ansible, in a process group of its
    own, is interrupted by the bench; collectors stop, the run is marked interrupted with the signal, the report is
    written, and nothing the bench started is left running."""
    bench = bench_process("--workloads", "fio-sweep", "--params", SHORT_SWEEP)
    bench.wait_for_step("fio-sweep", ": run")
    time.sleep(5)
    bench.proc.send_signal(signal.SIGTERM)
    returncode, output = bench.finish()
    assert returncode != 0
    manifest = bench.manifest()
    assert (manifest["status"], manifest["stopped_by"]) == ("interrupted", "SIGTERM"), output[-3000:]
    (fio,) = manifest["workloads"]
    assert fio["status"] == "interrupted"
    assert any(s["status"] == "interrupted" for s in fio["steps"])
    assert (bench.run_dir / "raw/localhost/iostat/fio-sweep/iostat.json").stat().st_size > 0
    assert (bench.run_dir / "report.html").stat().st_size > 0
    assert "interrupted (SIGTERM)" in output and "RESUME=" in output
    assert not collector_processes()
    assert not block_cache_droppers()
    left = subprocess.run(["pgrep", "-af", f"ansible-playbook.*{bench.run_dir.name}"], capture_output=True, text=True)
    assert left.stdout.strip() == "", left.stdout
    # the sweep's fio ran under timeout(1) in a process group of its own: stopped too, not left to its time limit
    deadline = time.monotonic() + 15
    while subprocess.run(["pgrep", "-x", "fio"], capture_output=True).returncode == 0 and time.monotonic() < deadline:
        time.sleep(1)
    assert subprocess.run(["pgrep", "-ax", "fio"], capture_output=True, text=True).stdout == ""


def test_namenode_killed_mid_run_marks_the_step_failed_and_keeps_data(bench_process, provision_as_a_bench,
                                                                    start_what_stopped, tmp_path):
    # WARMUP=0: the fault is the test, not a measurement; a warm-up would be a TeraSort more before it
    bench = bench_process("--workloads", "terasort", "--warmup", "0")
    bench.wait_for_step("terasort-mapreduce", ": run")
    time.sleep(3)
    subprocess.run(["pkill", "-KILL", "-f", "org.apache.hadoop.hdfs.server.namenode.NameNode"], check=True)
    returncode, output = bench.finish()
    assert returncode != 0
    manifest = bench.manifest()
    assert manifest["status"] == "failed"
    runs = {w["id"]: w for w in manifest["workloads"]}
    failed = [s for s in runs["terasort-mapreduce"]["steps"] if s["status"] == "failed"]
    assert failed and failed[0]["name"].endswith(": run") and failed[0]["error"]
    # the next workload does not start on a broken cluster: its health check names the NameNode
    assert runs["terasort-spark"]["status"] == "failed"
    health = runs["terasort-spark"]["steps"][0]
    assert "health check" in health["name"] and health["status"] == "failed"
    assert "namenode" in (health.get("error") or "").lower()
    assert (bench.run_dir / "raw/localhost/iostat/terasort-mapreduce/iostat.json").stat().st_size > 0
    report = (bench.run_dir / "report.html").read_text()
    assert "failed" in report

    # The NameNode started again as an operator would: the cluster serves as it was provisioned, so the next bench's
    # check passes and skips the provisioning (a full one costs the tests that follow minutes).
    started = start_what_stopped("local", tmp_path)
    assert started.ok, started.failures
    assert provision_as_a_bench("local", tmp_path).skipped, (tmp_path / "provision-check.log").read_text()[-3000:]
