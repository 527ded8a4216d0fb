"""The digest of what a provisioning is made from (spillway/provisioning.py): the same inputs give the same digest,
and each kind of input, changed alone, gives another, so the bench never skips a provisioning that would change
something. A scratch copy of the inputs: nothing of the checkout is changed."""
import shutil
from pathlib import Path

import pytest

from spillway import REPO, provisioning
from spillway.inventory import load

EXTRA = {"provision_health_check": False, "spillway_placement": {"hdfs": "hdd", "local": "ssd"}}


@pytest.fixture
def scratch(tmp_path):
    """A copy of the provisioning's inputs (and the local inventory) with a setup record of its own."""
    repo = tmp_path / "repo"
    for folder in (*provisioning.INPUT_FOLDERS, "inventories/local"):
        shutil.copytree(REPO / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in provisioning.INPUT_FILES:
        shutil.copy(REPO / name, repo / name)
    cache = tmp_path / "cache"
    (cache / "setup").mkdir(parents=True)
    (cache / "setup/local.json").write_text('{"packages": ["fio"]}\n')
    inventory = load("local", check_overlaps=False)
    inventory.path = repo / "inventories/local"
    return repo, cache, inventory


def digest(scratch, extra=EXTRA):
    repo, cache, inventory = scratch
    return provisioning.digest(inventory, extra, repo=repo, cache_dir=cache)


def test_the_same_inputs_give_the_same_digest(scratch):
    first = digest(scratch)
    assert len(first) == 64 and first == digest(scratch)
    # Python's bytecode caches are no input: the interpreter writes them as it likes
    repo = scratch[0]
    (repo / "collectors/__pycache__").mkdir(exist_ok=True)
    (repo / "collectors/__pycache__/x.cpython-311.pyc").write_bytes(b"\0")
    assert digest(scratch) == first


@pytest.mark.parametrize("change", ["role task", "collector", "workload job code", "inventory", "storage profiles",
                                    "setup record", "placement", "monitoring override", "new file"])
def test_each_input_changed_alone_changes_the_digest(scratch, change):
    repo, cache, inventory = scratch
    before = digest(scratch)
    extra = EXTRA

    def append(path: Path):
        path.write_text(path.read_text() + "\n# changed\n")

    if change == "role task":
        append(repo / "playbooks/roles/hadoop/tasks/ready.yml")
    elif change == "collector":
        append(repo / "collectors/iostat/collector.yml")
    elif change == "workload job code":
        append(repo / "workloads/terasort/workload.yml")
    elif change == "inventory":
        append(repo / "inventories/local/group_vars/all.yml")
    elif change == "storage profiles":
        (repo / "inventories").mkdir(exist_ok=True)
        append(repo / "inventories/storage-profiles.yml")
    elif change == "setup record":
        (cache / "setup/local.json").write_text('{"packages": ["fio", "sysstat"]}\n')
    elif change == "placement":
        extra = {**EXTRA, "spillway_placement": {"hdfs": "ssd", "local": "ssd"}}
    elif change == "monitoring override":
        extra = {**EXTRA, "spillway_monitoring": {"enabled": False}}
    elif change == "new file":
        (repo / "playbooks/roles/spark/templates/extra.conf.j2").write_text("x\n")
    assert digest(scratch, extra) != before


def test_a_missing_setup_record_is_an_input_too(scratch):
    before = digest(scratch)
    (scratch[1] / "setup/local.json").unlink()
    assert digest(scratch) != before


def test_clusters_with_storage_servers_always_provision(scratch):
    inventory = scratch[2]
    assert provisioning.can_skip(inventory)
    inventory.groups = {**inventory.groups, "pfs_servers": ["st1"]}
    assert not provisioning.can_skip(inventory)
