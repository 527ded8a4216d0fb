"""While the local cluster benches for real, inventories that share its resources are refused by bench and
teardown, and the local cluster's daemons keep running (docs/safety.md, "One cluster cannot touch another's
resources"). The other inventories live in a scratch checkout, so the real inventories/ never holds them."""
import os
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "safety"))
from scratch_inventories import copy_cluster, run, scratch_repo  # noqa: E402

pytestmark = pytest.mark.integration
LOCAL_RUN = Path("/var/lib/spillway/local/run")
ROLE_HADOOP_VARS = Path(__file__).resolve().parents[2] / "playbooks" / "roles" / "hadoop" / "vars" / "main.yml"
# the page cache dropper lives only while a run step does (role hadoop, tasks/block_cache.yml): whether the first
# look at the pid files comes before or after it started is a race, not a sign of another inventory's reach
STEP_SCOPED_DAEMONS = {yaml.safe_load(ROLE_HADOOP_VARS.read_text())["hadoop_block_cache_daemon"]}


def daemon_pids():
    pids = {}
    for pid_file in LOCAL_RUN.glob("*.pid"):
        first = pid_file.read_text().split("\n", 1)[0]
        if first.isdigit() and pid_file.stem not in STEP_SCOPED_DAEMONS:
            pids[pid_file.stem] = int(first)
    return pids


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_while_local_benches_an_overlapping_inventory_is_refused(bench_process, tmp_path):
    bench = bench_process("--workloads", "terasort")
    bench.wait_for_step("terasort-mapreduce", ": run")
    before = daemon_pids()
    assert before and all(alive(pid) for pid in before.values()), before

    repo = scratch_repo(tmp_path)
    # shares this host (its ports, its daemons): valid on its own, held off by the bench's lock
    copy_cluster(repo / "inventories", "hdd", "t17-live-host")
    # shares local's root: refused by validation whatever runs
    copy_cluster(repo / "inventories", "hdd", "t17-live-root", spillway_root="/var/lib/spillway/local")
    try:
        for cluster, says in (("t17-live-host", "host this machine (its Spillway daemons and ports), a resource of "
                                                "inventories/t17-live-host, is in use by a bench on local"),
                              ("t17-live-root", "spillway_root: path /var/lib/spillway/local on this machine of "
                                                "inventory 't17-live-root' is the same folder as inventory 'local'")):
            for target in ("bench", "teardown"):
                result = run(repo, "make", "--no-print-directory", target, f"CLUSTER={cluster}", "WORKLOADS=terasort")
                assert result.returncode != 0, (target, cluster, result.stdout[-2000:])
                assert says in result.stderr, (target, cluster, result.stderr)
                assert "PLAY [" not in result.stdout and "Traceback" not in result.stderr
    finally:
        for cluster in ("t17-live-host", "t17-live-root"):
            Path(f"/run/lock/spillway-{cluster}.lock").unlink(missing_ok=True)

    after = daemon_pids()
    assert after == before and all(alive(pid) for pid in after.values()), (before, after)
    assert bench.proc.poll() is None, "the bench ended while the other inventories were refused"
    bench.interrupt()
    code, output = bench.finish()
    assert "interrupted" in output, output[-3000:]
