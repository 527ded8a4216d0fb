"""While the local cluster benches for real, inventories that share its resources are refused by bench and
teardown, and the local cluster's daemons keep running (docs/safety.md, "One cluster cannot touch another's
resources"). The other inventories live in a scratch checkout, so the real inventories/ never holds them.

Run by the default bench's fixture (tests/integration/test_bench.py) while that bench's GATK4 run runs: a bench of its
own for this alone cost `make test` one to two minutes."""
import os
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "safety"))
from scratch_inventories import copy_cluster, run, scratch_repo  # noqa: E402

LOCAL_RUN = Path("/var/lib/spillway/local/run")
ROLE_HADOOP_VARS = Path(__file__).resolve().parents[2] / "playbooks" / "roles" / "hadoop" / "vars" / "main.yml"
# the page cache dropper lives only while a run step does (role hadoop, tasks/block_cache.yml): whether the first
# look at the pid files comes before or after it started is a race, not a sign of another inventory's reach
STEP_SCOPED_DAEMONS = {yaml.safe_load(ROLE_HADOOP_VARS.read_text())["hadoop_block_cache_daemon"]}
# each: the scratch cluster, what it shares with local, and what its refusal must say
OVERLAPPING = (
    ("t17-live-host", {}, "host this machine (its Spillway daemons and ports), a resource of "
                          "inventories/t17-live-host, is in use by a bench on local"),
    ("t17-live-root", {"spillway_root": "/var/lib/spillway/local"},
     "spillway_root: path /var/lib/spillway/local on this machine of inventory 't17-live-root' is the same folder as "
     "inventory 'local'"),
)


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


def try_overlapping_inventories(tmp_path):
    """`make bench` and `make teardown` of each overlapping inventory, tried while local benches. Returns what was
    seen for the test to judge: the local daemons' pids before and after, those of them not running when looked at
    (the bench goes on after this and restarts daemons at its placement switches: liveness is judged here), and
    each command's outcome."""
    before = daemon_pids()
    dead_before = sorted(name for name, pid in before.items() if not alive(pid))
    repo = scratch_repo(tmp_path)
    for cluster, group_vars, _ in OVERLAPPING:
        copy_cluster(repo / "inventories", "hdd", cluster, **group_vars)
    outcomes = []
    try:
        for cluster, _, says in OVERLAPPING:
            for target in ("bench", "teardown"):
                result = run(repo, "make", "--no-print-directory", target, f"CLUSTER={cluster}", "WORKLOADS=terasort")
                outcomes.append({"cluster": cluster, "target": target, "says": says, "returncode": result.returncode,
                                 "stdout": result.stdout[-2000:], "stderr": result.stderr[-2000:]})
    finally:
        for cluster, _, _ in OVERLAPPING:
            Path(f"/run/lock/spillway-{cluster}.lock").unlink(missing_ok=True)
    after = daemon_pids()
    return {"before": before, "dead_before": dead_before, "after": after,
            "dead_after": sorted(name for name, pid in after.items() if not alive(pid)), "outcomes": outcomes}
