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


# -- the placement switch (issue 19) ----------------------------------------------------------------------------------
def bench_vars(scratch, placement, overrides=None):
    repo, cache, inventory = scratch
    return provisioning.bench_vars(inventory, placement, overrides or {}, repo=repo, cache_dir=cache)


def test_the_base_digest_is_the_same_for_every_placement_and_the_full_digest_is_not(scratch):
    hdd = bench_vars(scratch, {"hdfs": "hdd", "local": "ssd"})
    ssd = bench_vars(scratch, {"hdfs": "ssd", "local": "hdd"})
    assert hdd["provision_base_digest"] == ssd["provision_base_digest"]
    assert hdd["provision_digest"] != ssd["provision_digest"]
    assert hdd["provision_base_digest"] not in (hdd["provision_digest"], ssd["provision_digest"])
    # the full digest is the one a bench always computed: the placement among the extra variables
    assert hdd["provision_digest"] == digest(scratch, EXTRA)
    assert hdd["provision_base_digest"] == digest(scratch, {"provision_health_check": False})


@pytest.mark.parametrize("change", ["role task", "inventory", "setup record", "monitoring override"])
def test_any_other_input_changed_changes_the_base_digest_too(scratch, change):
    repo, cache, _ = scratch
    before = bench_vars(scratch, {"hdfs": "hdd", "local": "ssd"})
    overrides = {}
    if change == "role task":
        (repo / "playbooks/roles/storage/tasks/data_dirs.yml").write_text("---\n")
    elif change == "inventory":
        path = repo / "inventories/local/group_vars/all.yml"
        path.write_text(path.read_text() + "\n# changed\n")
    elif change == "setup record":
        (cache / "setup/local.json").write_text('{"packages": []}\n')
    elif change == "monitoring override":
        overrides = {"spillway_monitoring": {"enabled": False}}
    after = bench_vars(scratch, {"hdfs": "ssd", "local": "ssd"}, overrides)
    assert after["provision_base_digest"] != before["provision_base_digest"]


CHECK_FAILURE = ("TASK [Require the same inputs and a serving cluster]\nfatal: [localhost]: FAILED! => "
                 '{"msg": "provisioning needed: %s"}')
SWITCHABLE = CHECK_FAILURE % ("only the placement changed since the last provisioning; cluster serves; every "
                              "supervised process runs; placement switch possible")


def test_a_failed_check_that_found_only_the_placement_changed_on_every_host_allows_the_switch(scratch):
    inventory = scratch[2]
    assert provisioning.can_switch(inventory, [SWITCHABLE])
    assert provisioning.can_switch(inventory, [SWITCHABLE, SWITCHABLE.replace("localhost", "w2")])


@pytest.mark.parametrize("failures", [
    [],  # the check passed: nothing to switch
    [CHECK_FAILURE % "inputs changed since the last provisioning; cluster serves; every supervised process runs"],
    [CHECK_FAILURE % "no record of a provisioning that ended well; cluster serves; every supervised process runs"],
    [CHECK_FAILURE % "only the placement changed since the last provisioning; not serving: namenode down; every "
                     "supervised process runs"],
    # one host can switch, another cannot (or another task failed, or the host was unreachable)
    [SWITCHABLE, CHECK_FAILURE.replace("localhost", "w2") % "inputs changed since the last provisioning"],
    [SWITCHABLE, "TASK [Read the provisioning record]\nfatal: [w2]: UNREACHABLE! => {}"],
], ids=["passed", "inputs changed", "no record", "not serving", "one host differs", "unreachable"])
def test_anything_else_provisions_in_full(scratch, failures):
    assert not provisioning.can_switch(scratch[2], failures)


def test_clusters_with_storage_servers_never_switch(scratch):
    inventory = scratch[2]
    inventory.groups = {**inventory.groups, "pfs_servers": ["st1"]}
    assert not provisioning.can_switch(inventory, [SWITCHABLE])
