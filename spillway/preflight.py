"""First check of `make bench/setup/teardown`, before anything is installed or touched.

Runs on the system python3 with the standard library only, so it answers within a second on a
fresh machine: an unknown cluster and a missing root privilege are reported before the venv,
packages or disks are set up. The full schema validation comes later (spillway.inventory).
"""
import argparse
import os
import sys

from spillway import INVENTORIES, WORKLOADS

SCALES = ("tiny", "small", "large", "huge")


def available_clusters():
    return sorted(p.name for p in INVENTORIES.iterdir() if (p / "hosts.yml").is_file())


def check(cluster, workloads="", scale=None):
    """Return a list of problems, each naming the fix."""
    problems = []
    known = sorted(p.parent.name for p in WORKLOADS.glob("*/workload.yml"))
    for name in filter(None, (w.strip() for w in workloads.split(","))):
        if name not in known:
            problems.append(f"unknown workload '{name}'. Workloads: {', '.join(known)} (WORKLOADS=a,b)")
    if scale is not None and scale not in SCALES:
        problems.append(f"unknown scale '{scale}'. Scales: {', '.join(SCALES)} (SCALE=tiny)")
    return problems + check_cluster(cluster)


def check_cluster(cluster):
    clusters = available_clusters()
    if cluster not in clusters:
        return [f"unknown cluster '{cluster}': there is no inventories/{cluster}/hosts.yml. "
                f"Clusters: {', '.join(clusters)}. Use CLUSTER=<one of them>, or add "
                f"inventories/{cluster}/ (see README, 'Add a cluster')."]
    text = "".join(p.read_text() for p in (INVENTORIES / cluster).rglob("*.yml"))
    if "kind: emulated" in text and os.geteuid() != 0:
        return [f"cluster '{cluster}' uses emulated storage (loop devices, blkio throttles, mounts), "
                "which needs root. Run as root (sudo make ...), or point its backends at real mounts "
                f"(kind: mount) in inventories/{cluster}/group_vars/all.yml."]
    return []


def main(argv=None):
    parser = argparse.ArgumentParser(prog="spillway.preflight")
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--workloads", default="")
    parser.add_argument("--scale")
    args = parser.parse_args(argv)
    problems = check(args.cluster, args.workloads, args.scale)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 2 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
