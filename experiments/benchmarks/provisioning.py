"""How long provisioning over SSH takes, per role: a cluster from scratch, then again with nothing to change.

    python -m experiments.benchmarks.provisioning [--cluster emu] [--keep]

From scratch: `make teardown CLUSTER=<cluster>` first (for an emulated cluster that removes its nodes too, then
`make cluster-up` makes new ones), so every cluster root is empty and no daemon, disk or mount is left. Packages
and the Hadoop/Spark trees are not part of it: `make setup` installed them on the machine, whose /usr and /opt
the emulated nodes share (on real hosts the first provisioning would include them). The second run is the same
playbook again; its goal is under 60 s with changed=0. Each role's figure is the wall time of its tasks, from the
per-task timing lines the spillway_timing callback writes into the logs (results/benchmarks/provisioning-*.log).
The cluster is left provisioned; --keep skips the teardown (a run "from where it is").
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import defaultdict

from analysis.parsers.step_logs import timing_lines
from spillway import REPO
from spillway.ansible import run_playbook
from spillway.inventory import load as load_inventory

GOAL_NO_CHANGE_S = 60.0


def seconds_per_role(log_text):
    """{role: seconds} from the timing lines; tasks of a playbook itself count as '(playbook)'."""
    per_role = defaultdict(float)
    for task, seconds in timing_lines(log_text):
        per_role[task.split(" : ", 1)[0] if " : " in task else "(playbook)"] += seconds
    return dict(per_role)


def make(target, cluster):
    started = time.monotonic()
    subprocess.run(["make", "--no-print-directory", target, f"CLUSTER={cluster}"], cwd=REPO, check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return time.monotonic() - started


def provision(cluster, log_path):
    started = time.monotonic()
    result = run_playbook(cluster, "provision.yml", {"provision_health_check": False}, log_path)
    took = time.monotonic() - started
    if not result.ok:
        raise SystemExit(f"error: provisioning failed: {result.failures[:1]} (log: {log_path})")
    return took, result.changed, seconds_per_role(log_path.read_text())


def main(argv=None):
    parser = argparse.ArgumentParser(prog="experiments.benchmarks.provisioning", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", default="emu")
    parser.add_argument("--keep", action="store_true", help="no teardown first: provision the cluster as it is")
    args = parser.parse_args(argv)
    emulated = load_inventory(args.cluster).emulation is not None
    logs = REPO / "results" / "benchmarks"
    logs.mkdir(parents=True, exist_ok=True)
    for old in logs.glob(f"provisioning-{args.cluster}-*.log"):
        old.unlink()
    if not args.keep:
        print(f"teardown of {args.cluster}: {make('teardown', args.cluster):.1f} s", flush=True)
    if emulated:
        print(f"cluster-up of {args.cluster}: {make('cluster-up', args.cluster):.1f} s", flush=True)
    runs = {}
    for name in ("first", "again"):
        print(f"provisioning ({name}) ...", flush=True)
        runs[name] = provision(args.cluster, logs / f"provisioning-{args.cluster}-{name}.log")
    (first_s, first_changed, first_roles), (again_s, again_changed, again_roles) = runs["first"], runs["again"]
    print(f"\nprovisioning of '{args.cluster}' over SSH, wall time per role (s)")
    print(f"{'role':<22} {'from scratch':>12} {'no change':>10}")
    for role in sorted(set(first_roles) | set(again_roles), key=lambda r: -first_roles.get(r, 0.0)):
        print(f"{role:<22} {first_roles.get(role, 0.0):>12.1f} {again_roles.get(role, 0.0):>10.1f}")
    print(f"{'total (wall)':<22} {first_s:>12.1f} {again_s:>10.1f}")
    print(f"{'tasks changed':<22} {first_changed:>12d} {again_changed:>10d}")
    verdict = "meets" if again_s < GOAL_NO_CHANGE_S and again_changed == 0 else "misses"
    print(f"no-change provisioning: {again_s:.1f} s, changed={again_changed}; goal under {GOAL_NO_CHANGE_S:.0f} s "
          f"with changed=0: {verdict} it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
