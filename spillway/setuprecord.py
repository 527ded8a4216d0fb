"""What `make setup CLUSTER=<name>` installed here, and whether it is all still installed.

playbooks/setup.yml ends by writing a setup record, `<spillway_cache_dir>/setup/<cluster>.json`, with the Debian
packages it ensured on that host (for an emulated cluster: on this machine, which its nodes share). Tests that
provision an inventory check its record first, so that a package that only an earlier manual step installed, or
that was removed since, fails up front with its fix named instead of deep inside a provisioning (docs/setup.md).

The record also holds the digest of the setup's inputs (`inputs_digest`, passed by the Makefile): `make bench`
runs the setup again only when that digest changed or a package is missing (`unchanged`); `make setup` always runs
it.

    python3 -m spillway.setuprecord check CLUSTER [CLUSTER ...]
    python3 -m spillway.setuprecord digest CLUSTER        the digest of the setup's inputs now
    python3 -m spillway.setuprecord unchanged CLUSTER     exit 0 when a setup now would change nothing, else 1
"""
import json
import subprocess
import sys
from pathlib import Path

from spillway import REPO, input_digests
from spillway.inventory_values import FileRefused

# The role common's spillway_cache_dir; no inventory of this repository changes it.
CACHE_DIR = Path("/var/cache/spillway")
# Relative to the repository: what playbooks/setup.yml reads, with the cluster's inventory folder (its roles, the
# pinned poms and package lists among them, are all under playbooks/).
INPUT_FOLDERS = ("playbooks",)
INPUT_FILES = ("workloads/requirements.txt", "ansible.cfg", "requirements.txt")


def record_path(cluster, cache_dir=CACHE_DIR):
    return Path(cache_dir) / "setup" / f"{cluster}.json"


def installed(packages):
    """The subset of Debian `packages` that dpkg reports installed."""
    if not packages:
        return set()
    result = subprocess.run(["dpkg-query", "--show", "--showformat=${Package}=${db:Status-Status}\\n", *packages],
                            capture_output=True, text=True)
    # dpkg-query exits 1 when it has never heard of one of them: that one is simply missing.
    if result.returncode not in (0, 1):
        raise RuntimeError(f"dpkg-query failed: {result.stderr.strip()}")
    return {line.split("=", 1)[0].split(":", 1)[0] for line in result.stdout.splitlines()
            if line.endswith("=installed")}


def problems(cluster, cache_dir=CACHE_DIR):
    """What is missing for `cluster`'s setup on this machine, each with its fix; empty when all is there."""
    path = record_path(cluster, cache_dir)
    fix = f"make setup CLUSTER={cluster}"
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return [f"cluster '{cluster}' was never set up on this machine ({path} is missing). Fix: {fix}"]
    except (OSError, ValueError) as error:
        return [f"the setup record {path} is unreadable ({error}). Fix: {fix} (it writes the record anew)"]
    packages = record.get("debian_packages") if isinstance(record, dict) else None
    if not isinstance(packages, list) or not all(isinstance(p, str) for p in packages):
        return [f"the setup record {path} has no list 'debian_packages'. Fix: {fix} (it writes the record anew)"]
    missing = sorted(set(packages) - installed(packages))
    if missing:
        return [f"Debian packages that cluster '{cluster}' needs are not installed on this machine: "
                f"{', '.join(missing)} (listed by {path}). Fix: {fix}"]
    return []


def inputs_digest(cluster, repo=REPO):
    """sha256 (hex) of what a setup of `cluster` is made from: the playbooks, the inventory, the pinned packages."""
    paths = [p for folder in INPUT_FOLDERS for p in input_digests.files_under(repo / folder)]
    paths += input_digests.files_under(repo / "inventories" / cluster)
    paths += [repo / name for name in INPUT_FILES if (repo / name).is_file()]
    return input_digests.digest(repo, paths)


def unchanged(cluster, cache_dir=CACHE_DIR, repo=REPO):
    """(True, why) when a setup of `cluster` now would change nothing: its record holds the digest of the same inputs
    and every package it ensured is installed; else (False, what makes it run)."""
    if not (repo / "inventories" / cluster).is_dir():
        return False, f"setup of cluster '{cluster}': no inventories/{cluster}/ (make setup names the problem)"
    found = problems(cluster, cache_dir)
    if found:
        return False, f"setup of cluster '{cluster}' runs: {found[0]}"
    record = json.loads(record_path(cluster, cache_dir).read_text())
    if record.get("inputs_digest") != inputs_digest(cluster, repo):
        return False, (f"setup of cluster '{cluster}' runs: its playbooks, inventory or pinned packages changed "
                       "since it last ran")
    return True, (f"setup of cluster '{cluster}': unchanged since its last run (same playbooks, inventory and pinned "
                  f"packages; its {len(record['debian_packages'])} Debian packages installed), not run again "
                  f"(make setup CLUSTER={cluster} runs it anyway)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] in ("digest", "unchanged"):
        try:
            if argv[0] == "digest":
                print(inputs_digest(argv[1]))
                return 0
            same, why = unchanged(argv[1])
        except FileRefused as refused:
            print(f"error: setup inputs of cluster '{argv[1]}': {refused}", file=sys.stderr)
            return 2
        print(why)
        return 0 if same else 1
    if len(argv) < 2 or argv[0] != "check":
        print("usage: python3 -m spillway.setuprecord check CLUSTER [CLUSTER ...] | digest CLUSTER | unchanged CLUSTER",
              file=sys.stderr)
        return 2
    failed = False
    for cluster in argv[1:]:
        found = problems(cluster)
        for problem in found:
            print(f"error: {problem}", file=sys.stderr)
        if not found:
            print(f"setup of cluster '{cluster}' is complete on this machine ({record_path(cluster)})")
        failed = failed or bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
