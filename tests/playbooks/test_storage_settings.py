"""Role storage checks the storage settings it is given against inventories/schema.yml itself (tasks/plan.yml,
filter_plugins/storage_settings.py) and its argument spec, wherever the values were set: spillway.inventory sees only
group_vars/all.yml, so extra vars (-e) and other group_vars files meet the same rules here, before any disk is
touched. Each refusal names the field."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spillway import INVENTORIES, PLAYBOOKS, REPO

_spec = importlib.util.spec_from_file_location(
    "storage_settings", PLAYBOOKS / "roles/storage/filter_plugins/storage_settings.py")
storage_settings = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(storage_settings)

SCHEMA = INVENTORIES / "schema.yml"
PROFILES = sorted(yaml.safe_load((INVENTORIES / "storage-profiles.yml").read_text())["profiles"])
LOCAL = yaml.safe_load((INVENTORIES / "local/group_vars/all.yml").read_text())


def problems(backends=None, placement=None, pfs_servers=()):
    variables = {"spillway_cluster": "settingstest",
                 "spillway_backends": LOCAL["spillway_backends"] if backends is None else backends,
                 "spillway_placement": placement or LOCAL["spillway_placement"]}
    return storage_settings.spillway_storage_problems(variables, str(SCHEMA), PROFILES, list(pfs_servers))


def test_the_shipped_settings_pass():
    assert problems() == []
    assert problems({"pfs": {"kind": "pfs", "glusterfs": {}}}, {"hdfs": "pfs", "local": "pfs"}, ["st1"]) == []


@pytest.mark.parametrize("backends, placement, pfs_servers, expected", [
    ({"hdd": {"kind": "emulated", "profile": "tape", "size_gib": 8}}, {"hdfs": "hdd", "local": "hdd"}, (),
     "spillway_backends.hdd.profile: 'tape' is not one of ['hdd', 'nvme', 'ssd']"),
    ({"hdd": {"kind": "emulated", "profile": "hdd", "size_gib": 0}}, {"hdfs": "hdd", "local": "hdd"}, (),
     "spillway_backends.hdd.size_gib: 0 is less than the minimum of 1"),
    ({"Hdd/..": {"kind": "mount", "path": "/mnt"}}, {"hdfs": "Hdd/..", "local": "Hdd/.."}, (),
     "spillway_backends: 'Hdd/..' does not match"),
    ({"x": {"kind": "tape"}}, {"hdfs": "x", "local": "x"}, (), "spillway_backends.x.kind: 'tape' is not one of"),
    ({"x": {"kind": "mount", "path": "mnt"}}, {"hdfs": "x", "local": "x"}, (),
     "spillway_backends.x.path: 'mnt' does not match '^/'"),
    ({"x": {"kind": "device", "device": "/dev/sdb", "fstype": "btrfs"}}, {"hdfs": "x", "local": "x"}, (),
     "spillway_backends.x.fstype: 'btrfs' is not one of ['ext4', 'xfs']"),
    ({"x": {"kind": "pfs"}}, {"hdfs": "x", "local": "x"}, (), "spillway_backends.x: 'mount' is a required property"),
    (None, {"hdfs": "hdd", "local": "nvme"}, (), "spillway_placement.local: 'nvme' is not a backend; the backends are hdd, ssd"),
    ({"x": {"kind": "pfs", "glusterfs": {}}}, {"hdfs": "x", "local": "x"}, (),
     "spillway_backends.x.glusterfs: the volume is built over the hosts of group pfs_servers, which has none"),
    ({"a": {"kind": "device", "device": "/dev/sdb", "fstype": "xfs"},
      "b": {"kind": "device", "device": "/dev/sdb", "fstype": "xfs"}}, {"hdfs": "a", "local": "b"}, (),
     "spillway_backends.b.device: /dev/sdb is also the device of backend 'a'"),
])
def test_each_mistake_is_refused_naming_the_field(backends, placement, pfs_servers, expected):
    found = problems(backends, placement, pfs_servers)
    assert any(problem.startswith(expected) for problem in found), found


def apply_storage(tmp_path, *extra):
    """Roles common + storage on a throwaway copy of inventories/local (cluster settingstest, its root in tmp_path)."""
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text((INVENTORIES / "local/hosts.yml").read_text())
    (inventory / "group_vars/all.yml").write_text(yaml.safe_dump({**LOCAL, "spillway_cluster": "settingstest"}))
    playbook = tmp_path / "apply.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "workers", "gather_facts": False, "strategy": "mitogen_linear",
                                         "roles": ["common", "storage"]}]))  # as playbooks/storage.yml
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook),
                           "-e", f"spillway_root={tmp_path / 'root'}", "-e", f"storage_owned_root={tmp_path}", *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert not (tmp_path / "root").exists(), "a refused run touched the cluster root"
    return proc.stdout + proc.stderr


def test_extra_vars_the_inventory_validation_never_sees_are_refused_before_any_disk(tmp_path):
    output = apply_storage(tmp_path, "-e", '{"spillway_backends": {"hdd": {"kind": "emulated", "profile": "tape", '
                                           '"size_gib": 8}, "ssd": {"kind": "mount", "path": "/"}}}')
    assert "spillway_backends.hdd.profile: 'tape' is not one of" in output
    assert "Fix them where they are set: inventories/settingstest/group_vars/all.yml" in output


def test_a_placement_without_local_is_refused_by_the_argument_spec(tmp_path):
    output = apply_storage(tmp_path, "-e", '{"spillway_placement": {"hdfs": "hdd"}}')
    assert "Validating arguments against arg spec 'main'" in output
    assert "missing required arguments: local found in spillway_placement" in output
