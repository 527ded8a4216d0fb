"""What a provisioning is made from, so that a bench skips one that would change nothing (issue 19).

A provisioning whose inputs are unchanged reports changed=0 but still costs 45 to 90 s of Ansible on this 2-core
machine, before every bench. Its inputs are the project's files that playbooks/provision.yml reads or ships (the
playbooks and roles, the collectors, the workloads' job code, the inventory and the storage profiles, Ansible's
configuration and the pinned Python packages), what `make setup` recorded for the cluster, and the extra variables
the bench passes (placement, monitoring override). `digest()` hashes them all.

provision.yml forgets a host's record first and, when the bench passes `provision_digest`, writes it last
(`<spillway_root>/provisioned.json`), so a record exists only on a host whose last provisioning ended well with
these inputs. playbooks/provision-check.yml passes when every host holds the same digest and the cluster serves
(every Hadoop daemon running, HDFS writable and readable, every node registered, every supervised process running);
the bench then skips provision.yml, and otherwise runs it. Inventories with parallel-file-system servers always
provision: their servers' glusterd and bricks are outside that check.

A placement switch (issue 19): the record also holds `base_digest`, the digest of the same inputs without the
placement. When every host's record has the bench's base digest but another placement, and the cluster serves, the
check says so (`SWITCH_POSSIBLE` in its message) and the bench runs playbooks/placement.yml, which does only what a
placement changes (data directories, the placement's Hadoop and Spark settings and the daemons that read them,
storage.json) and writes the record of the full digest; anything else, or a failed switch, provisions in full.
"""
import json

from spillway import REPO, inputs, setuprecord

# Relative to the repository: every file below these is an input of provision.yml.
INPUT_FOLDERS = ("playbooks", "collectors", "workloads")
INPUT_FILES = ("inventories/storage-profiles.yml", "ansible.cfg", "requirements.txt")
# The extra variable a placement switch changes, alone.
PLACEMENT_VAR = "spillway_placement"
# What provision-check.yml's message says on a host whose record differs from the bench's inputs in the placement
# alone, in a serving cluster.
SWITCH_POSSIBLE = "placement switch possible"


def digest(inventory, extra_vars, repo=REPO, cache_dir=setuprecord.CACHE_DIR):
    """sha256 (hex) of everything a provisioning of `inventory` with `extra_vars` is made from."""
    paths = [p for folder in INPUT_FOLDERS for p in inputs.files_under(repo / folder)]
    paths += inputs.files_under(inventory.path) + [repo / name for name in INPUT_FILES if (repo / name).is_file()]
    setup = setuprecord.record_path(inventory.name, cache_dir)
    return inputs.digest(repo, paths, [("setup record", setup.read_bytes() if setup.is_file() else b""),
                                       ("extra vars", json.dumps(extra_vars, sort_keys=True, default=str).encode())])


def base_vars(extra_vars):
    """`extra_vars` without the placement: what `base_digest` is made of."""
    return {name: value for name, value in extra_vars.items() if name != PLACEMENT_VAR}


def bench_vars(inventory, placement, overrides, repo=REPO, cache_dir=setuprecord.CACHE_DIR):
    """The extra variables a bench runs provision.yml with for `placement` (and `overrides`: the MONITORING
    override's variables), `provision_digest` and `provision_base_digest` (the same inputs but the placement) among
    them: the bench checks health itself before each workload."""
    extra = {"provision_health_check": False, PLACEMENT_VAR: placement, **overrides}
    return {**extra, "provision_digest": digest(inventory, extra, repo, cache_dir),
            "provision_base_digest": digest(inventory, base_vars(extra), repo, cache_dir)}


def can_switch(inventory, check_failures):
    """Whether a failed provision-check.yml allows the placement switch instead of provision.yml: every host that
    failed it holds a record of the same inputs but the placement, in a serving cluster (its message says
    SWITCH_POSSIBLE), and the inventory has no pfs servers."""
    return (can_skip(inventory) and bool(check_failures)
            and all(SWITCH_POSSIBLE in " ".join(failure.split()) for failure in check_failures))


def can_skip(inventory):
    """Whether an unchanged provisioning of `inventory` may be skipped at all (not with pfs servers)."""
    return not inventory.groups.get("pfs_servers")
