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
"""
import json

from spillway import REPO, inputs, setuprecord

# Relative to the repository: every file below these is an input of provision.yml.
INPUT_FOLDERS = ("playbooks", "collectors", "workloads")
INPUT_FILES = ("inventories/storage-profiles.yml", "ansible.cfg", "requirements.txt")


def digest(inventory, extra_vars, repo=REPO, cache_dir=setuprecord.CACHE_DIR):
    """sha256 (hex) of everything a provisioning of `inventory` with `extra_vars` is made from."""
    paths = [p for folder in INPUT_FOLDERS for p in inputs.files_under(repo / folder)]
    paths += inputs.files_under(inventory.path) + [repo / name for name in INPUT_FILES if (repo / name).is_file()]
    setup = setuprecord.record_path(inventory.name, cache_dir)
    return inputs.digest(repo, paths, [("setup record", setup.read_bytes() if setup.is_file() else b""),
                                       ("extra vars", json.dumps(extra_vars, sort_keys=True, default=str).encode())])


def bench_vars(inventory, placement, overrides):
    """The extra variables a bench runs provision.yml with for `placement` (and `overrides`: the MONITORING
    override's variables), `provision_digest` among them: the bench checks health itself before each workload."""
    extra = {"provision_health_check": False, "spillway_placement": placement, **overrides}
    return {**extra, "provision_digest": digest(inventory, extra)}


def can_skip(inventory):
    """Whether an unchanged provisioning of `inventory` may be skipped at all (not with pfs servers)."""
    return not inventory.groups.get("pfs_servers")
