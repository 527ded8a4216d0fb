"""Inventory validation: every shipped inventory passes; each kind of mistake is named precisely."""
import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml

from spillway import device_ties, inventory, inventory_files
from spillway.inventory import InventoryError


@pytest.fixture
def scratch_inventory(tmp_path, monkeypatch):
    """A copy of the shipped inventories in tmp_path, so a test can break one."""
    root = tmp_path / "inventories"
    shutil.copytree(inventory.INVENTORIES, root)
    monkeypatch.setattr(inventory, "INVENTORIES", root)
    monkeypatch.setattr("spillway.cluster_check.INVENTORIES", root)

    def edit(cluster, filename, change):
        path = root / cluster / filename
        data = yaml.safe_load(path.read_text())
        change(data)
        path.write_text(yaml.safe_dump(data))
        return path
    return edit


def problems_of(cluster):
    with pytest.raises(InventoryError) as err:
        inventory.load(cluster)
    return err.value.problems


@pytest.mark.parametrize("cluster", ["local", "hdd", "ssd", "nvme", "tiers", "emu", "pfs"])
def test_shipped_inventories_are_valid(cluster):
    inv = inventory.load(cluster)
    assert inv.name == cluster
    single_host = cluster not in ("emu", "pfs")
    assert (inv.groups["workers"] == ["localhost"]) == single_host and inv.all_local == single_host
    assert inv.placement["hdfs"] in inv.backends and inv.placement["local"] in inv.backends
    assert len(inv.digest) == 64


def test_local_default_places_hdfs_and_local_dirs_on_emulated_disks():
    inv = inventory.load("local")
    assert inv.emulated_profiles() == ["hdd", "ssd"]


def test_unknown_cluster_lists_the_existing_ones():
    (problem,) = problems_of("nope")
    assert "unknown cluster 'nope'" in problem and "local" in problem and "hdd" in problem


def test_unknown_profile_names_the_field_and_the_allowed_values(scratch_inventory):
    scratch_inventory("local", "group_vars/all.yml",
                      lambda d: d["spillway_backends"]["hdd"].update(profile="floppy"))
    (problem,) = problems_of("local")
    assert "group_vars/all.yml: spillway_backends.hdd.profile" in problem
    assert "'floppy'" in problem and "'nvme'" in problem


def test_unknown_backend_kind_is_refused(scratch_inventory):
    scratch_inventory("local", "group_vars/all.yml",
                      lambda d: d["spillway_backends"]["ssd"].update(kind="tape"))
    problems = problems_of("local")
    assert any("spillway_backends.ssd.kind" in p and "'tape'" in p for p in problems)


def test_missing_mount_path_names_the_field(scratch_inventory, tmp_path):
    missing = tmp_path / "no-such-mount"
    scratch_inventory("local", "group_vars/all.yml",
                      lambda d: d["spillway_backends"].update(real={"kind": "mount", "path": str(missing)}))
    (problem,) = problems_of("local")
    assert "spillway_backends.real.path" in problem and "does not exist" in problem


def test_plain_directory_is_refused_as_a_mount_unless_destructive_ok(scratch_inventory, tmp_path):
    scratch_inventory("local", "group_vars/all.yml",
                      lambda d: d["spillway_backends"].update(real={"kind": "mount", "path": str(tmp_path)}))
    (problem,) = problems_of("local")
    assert "not a mount point" in problem and "destructive_ok" in problem
    scratch_inventory("local", "group_vars/all.yml",
                      lambda d: d["spillway_backends"]["real"].update(destructive_ok=True))
    assert inventory.load("local").backends["real"]["destructive_ok"] is True


def test_placement_must_name_a_backend(scratch_inventory):
    scratch_inventory("local", "group_vars/all.yml", lambda d: d["spillway_placement"].update(local="nvme"))
    (problem,) = problems_of("local")
    assert "spillway_placement.local" in problem and "'nvme' is not a backend" in problem


def test_host_without_a_role_is_named(scratch_inventory):
    scratch_inventory("local", "hosts.yml",
                      lambda d: d["all"].setdefault("hosts", {}).update({"stray.example": None}))
    (problem,) = problems_of("local")
    assert "host 'stray.example' has no role" in problem


def test_role_without_a_host_is_named(scratch_inventory):
    scratch_inventory("local", "hosts.yml", lambda d: d["all"]["children"].pop("resourcemanager"))
    (problem,) = problems_of("local")
    assert "all.children.resourcemanager" in problem


def test_cluster_name_must_match_the_folder(scratch_inventory):
    scratch_inventory("hdd", "group_vars/all.yml", lambda d: d.update(spillway_cluster="ssd"))
    (problem,) = problems_of("hdd")
    assert "spillway_cluster" in problem and "must match" in problem


def a_block_device():
    """A block device node of this host that nothing uses (only stat()ed and read in sysfs), for inventories that
    must name a real one: validation refuses one that is mounted, held, or a loop device of an emulated disk."""
    for name in sorted(os.listdir("/sys/class/block")):
        node = Path("/dev") / name
        if node.exists() and stat.S_ISBLK(node.stat().st_mode) and not device_ties.ties(str(node)):
            return str(node)
    pytest.skip("no free block device node on this host")


def test_device_backend_with_its_safety_keys_is_valid(scratch_inventory):
    device = a_block_device()
    scratch_inventory("local", "group_vars/all.yml", lambda d: d["spillway_backends"].update(
        disk={"kind": "device", "device": device, "fstype": "xfs", "destructive_ok": True, "wipe": False}))
    assert inventory.load("local").backends["disk"]["device"] == device


@pytest.mark.parametrize("fields, field, message", [
    ({"device": "/dev/sdz"}, "spillway_backends.disk", "'fstype' is a required property"),
    ({"device": "/dev/sdz", "fstype": "btrfs"}, "spillway_backends.disk.fstype", "'btrfs' is not one of"),
    ({"device": "sdz", "fstype": "ext4"}, "spillway_backends.disk.device", "does not match"),
    ({"device": "/dev/sdz", "fstype": "ext4", "destructive_ok": "yes"}, "spillway_backends.disk.destructive_ok",
     "is not of type 'boolean'"),
    ({"device": "/dev/sdz", "fstype": "ext4", "size_gib": 8}, "spillway_backends.disk",
     "Additional properties are not allowed ('size_gib'"),
])
def test_device_backend_fields_are_validated(scratch_inventory, fields, field, message):
    scratch_inventory("local", "group_vars/all.yml",
                      lambda d: d["spillway_backends"].update(disk={"kind": "device", **fields}))
    assert any(f"group_vars/all.yml: {field}: " in p and message in p for p in problems_of("local"))


def test_device_wipe_without_destructive_ok_and_a_shared_device_are_refused(scratch_inventory):
    device = a_block_device()
    scratch_inventory("local", "group_vars/all.yml", lambda d: d["spillway_backends"].update(
        one={"kind": "device", "device": device, "fstype": "ext4", "wipe": True},
        two={"kind": "device", "device": device, "fstype": "ext4", "destructive_ok": True}))
    problems = problems_of("local")
    assert any("spillway_backends.one.wipe: true has no effect without destructive_ok" in p for p in problems)
    assert any("spillway_backends.two.device" in p and "also the device of backend 'one'" in p for p in problems)


def test_device_that_is_not_a_block_device_is_refused(scratch_inventory, tmp_path):
    scratch_inventory("local", "group_vars/all.yml", lambda d: d["spillway_backends"].update(
        disk={"kind": "device", "device": "/dev/null", "fstype": "ext4", "destructive_ok": True}))
    (problem,) = problems_of("local")
    assert "spillway_backends.disk.device: /dev/null is not a block device" in problem


def test_ssh_command_reaches_a_host_as_ansible_does():
    emu = inventory.load("emu")
    argv = emu.ssh_command("worker2")
    assert argv[0] == "ssh" and argv[-1] == "10.77.0.12"
    assert ["-l", "root"] == argv[argv.index("-l"):argv.index("-l") + 2]
    assert ["-i", "/var/lib/spillway-emulation/emu/ssh/id_ed25519"] == argv[argv.index("-i"):argv.index("-i") + 2]
    # the common args are split as a shell splits them: the proxy command stays one argument
    assert "ProxyCommand=ip netns exec spw-emu-net nc %h %p" in argv
    assert "BatchMode=yes" in argv  # never a password prompt from a progress display


def test_ssh_command_is_none_for_a_local_connection_and_templated_values(scratch_inventory):
    assert inventory.load("local").ssh_command("localhost") is None
    scratch_inventory("emu", "hosts.yml", lambda d: d["all"]["hosts"]["worker1"].update(
        ansible_host="{{ lookup('env', 'WORKER1') }}"))
    assert inventory.load("emu").ssh_command("worker1") is None


def test_spillway_root_is_the_hosts_own():
    assert inventory.load("emu").spillway_root("worker3") == "/var/lib/spillway/emu-worker3"
    assert inventory.load("local").spillway_root("localhost") == "/var/lib/spillway/local"


def test_a_glusterfs_volume_needs_storage_servers(scratch_inventory):
    def drop_servers(data):
        servers = data["all"]["children"].pop("pfs_servers")["hosts"]
        data["all"]["children"]["workers"]["hosts"].update(servers)  # the hosts stay, as workers
    scratch_inventory("pfs", "hosts.yml", drop_servers)
    (problem,) = problems_of("pfs")
    assert "spillway_backends.pfs.glusterfs" in problem and "group pfs_servers" in problem


def test_a_storage_server_needs_no_cluster_role():
    pfs = inventory.load("pfs")
    assert pfs.groups["pfs_servers"] == ["st1", "st2"]
    assert not {"st1", "st2"} & {h for g in inventory_files.ROLE_GROUPS for h in pfs.groups[g]}


@pytest.mark.parametrize("budget, field, message", [
    ({"memory_gib": 0}, "spillway_node.memory_gib", "less than or equal to the minimum of 0"),
    ({"cores": "two"}, "spillway_node.cores", "is not of type 'number'"),
    ({"memory": 4}, "spillway_node", "Additional properties are not allowed ('memory'"),
    ({}, "spillway_node", "should be non-empty"),
])
def test_node_budget_fields_are_validated(scratch_inventory, budget, field, message):
    scratch_inventory("local", "group_vars/all.yml", lambda d: d.update(spillway_node=budget))
    assert any(f"group_vars/all.yml: {field}: " in p and message in p for p in problems_of("local")), \
        problems_of("local")


def test_a_node_budget_is_the_inventorys():
    assert inventory.load("local").node_budget == {"memory_gib": 5}
    assert inventory.load("emu").node_budget == {"memory_gib": 4}
    assert inventory.load("pfs").node_budget == {}


GATK4_NODE = {"name": "a 36-core node with one HDD and two SSDs", "source": "a datasheet", "cores": 36,
              "disks": {"hdd": 1, "ssd": 2}}


def test_a_scale_model_node_names_its_reference_and_its_own_cores(scratch_inventory):
    scratch_inventory("local", "group_vars/all.yml",
                      lambda d: d.update(spillway_node={"memory_gib": 5, "cores": 2, "reference": GATK4_NODE}))
    assert inventory.load("local").node_budget["reference"]["cores"] == 36


@pytest.mark.parametrize("node, field, message", [
    ({"memory_gib": 5, "reference": GATK4_NODE}, "spillway_node", "'cores' is a dependency of 'reference'"),
    ({"cores": 2, "reference": {**GATK4_NODE, "disks": {"floppy": 1}}}, "spillway_node.reference.disks",
     "'floppy' is not one of"),
    ({"cores": 2, "reference": {**GATK4_NODE, "disks": {"hdd": 0}}}, "spillway_node.reference.disks.hdd",
     "less than the minimum of 1"),
    ({"cores": 2, "reference": {k: v for k, v in GATK4_NODE.items() if k != "source"}}, "spillway_node.reference",
     "'source' is a required property"),
    ({"cores": 2, "reference": {**GATK4_NODE, "cores": 1}}, "spillway_node",
     "k = 0.5, outside 1-1024. Fix: a scale model shrinks a node"),
    ({"cores": 2, "reference": {**GATK4_NODE, "disks": {"hdd": 1}}}, "spillway_node.reference.disks",
     "names no ssd disk, and an emulated backend of this inventory is one. Fix: add how many"),
])
def test_a_scale_model_node_that_cannot_be_built_is_refused_naming_the_field(scratch_inventory, node, field, message):
    scratch_inventory("local", "group_vars/all.yml", lambda d: d.update(spillway_node=node))
    problems = problems_of("local")
    assert any(f"{field}" in p and message in p for p in problems), problems
