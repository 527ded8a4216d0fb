"""`kind: pfs` backends in the inventory schema (docs/pfs.md): the valid forms pass, each mistake is refused with
the field named. Uses a scratch copy of inventories/local, with a group pfs_servers for the GlusterFS forms."""
import importlib.util
from pathlib import Path

import jsonschema
import pytest
import yaml

from spillway import inventory
from spillway.inventory import InventoryError

_spec = importlib.util.spec_from_file_location(
    "inventory_tests", Path(__file__).resolve().parents[1] / "spillway/test_inventory.py")
_inventory_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_inventory_tests)
scratch_inventory = _inventory_tests.scratch_inventory


@pytest.fixture
def with_backend(scratch_inventory):
    """Load inventories/local (a scratch copy) with one more backend `shared` placed as `local`."""
    def load(backend):
        def add(variables):
            variables["spillway_backends"]["shared"] = backend
            variables["spillway_placement"]["local"] = "shared"
        scratch_inventory("local", "group_vars/all.yml", add)
        if "glusterfs" in backend:  # a volume the harness builds needs its servers (test_inventory: refused without)
            scratch_inventory("local", "hosts.yml", add_storage_server)
        return inventory.load("local")
    return load


def add_storage_server(hosts, name="st1"):
    hosts["all"].setdefault("hosts", {})[name] = {"ansible_connection": "local"}
    hosts["all"]["children"]["pfs_servers"] = {"hosts": {name: None}}


def test_a_storage_server_that_is_also_a_worker_is_refused(scratch_inventory):
    # its brick disk would be the worker's storage role's to remove as stale
    scratch_inventory("local", "group_vars/all.yml", lambda variables: variables["spillway_backends"].update(
        shared={"kind": "pfs", "glusterfs": {}}))
    scratch_inventory("local", "hosts.yml", lambda hosts: add_storage_server(hosts, name="localhost"))
    with pytest.raises(InventoryError) as err:
        inventory.load("local")
    assert any("localhost is in both pfs_servers and workers" in problem for problem in err.value.problems), \
        err.value.problems


def problem_of(load, backend):
    with pytest.raises(InventoryError) as err:
        load(backend)
    (problem,) = err.value.problems
    assert "group_vars/all.yml: spillway_backends.shared" in problem
    return problem


@pytest.mark.parametrize("backend", [
    {"kind": "pfs", "mount": "/lustre/scratch"},
    {"kind": "pfs", "glusterfs": {}},
    {"kind": "pfs", "glusterfs": {"shard_block_size": "64MB"}},
    {"kind": "pfs", "glusterfs": {"brick": {"profile": "hdd", "size_gib": 4}}},
    {"kind": "pfs", "glusterfs": {"brick": {"size_gib": 4}}},
])
def test_pfs_backend_forms_are_valid(with_backend, backend):
    assert with_backend(backend).backends["shared"] == backend


@pytest.mark.parametrize("backend, message", [
    ({"kind": "pfs"}, "'mount' is a required property"),
    ({"kind": "pfs", "mount": "/lustre", "glusterfs": {}}, "should not be valid under {'required': ['mount']}"),
    ({"kind": "pfs", "mount": "lustre/scratch"}, "'lustre/scratch' does not match '^/'"),
    ({"kind": "pfs", "glusterfs": {"shard_block_size": "4M"}}, "'4M' does not match"),
    ({"kind": "pfs", "glusterfs": {"stripe_count": 2}}, "'stripe_count' was unexpected"),
    ({"kind": "pfs", "mount": "/lustre", "path": "/lustre"}, "'path' was unexpected"),
    ({"kind": "pfs", "glusterfs": {"brick": {"profile": "tape"}}}, "'tape' is not one of ['hdd', 'nvme', 'ssd']"),
    ({"kind": "pfs", "glusterfs": {"brick": {"size_gib": 0}}}, "0 is less than the minimum of 1"),
    ({"kind": "pfs", "glusterfs": {"brick": {"device": "/dev/sdb"}}}, "'device' was unexpected"),
])
def test_pfs_backend_mistakes_are_refused_naming_the_field(with_backend, backend, message):
    assert message in problem_of(with_backend, backend)


def test_shipped_pfs_inventory_places_everything_on_the_glusterfs_backend():
    variables = yaml.safe_load((inventory.INVENTORIES / "pfs/group_vars/all.yml").read_text())
    assert list(jsonschema.Draft202012Validator(inventory._schema()).iter_errors(variables)) == []
    hosts = yaml.safe_load((inventory.INVENTORIES / "pfs/hosts.yml").read_text())["all"]
    assert variables["spillway_backends"]["pfs"] == {
        "kind": "pfs", "glusterfs": {"shard_block_size": "4MB", "brick": {"profile": "ssd", "size_gib": 16}}}
    assert variables["spillway_placement"] == {"hdfs": "pfs", "local": "pfs"}
    assert sorted(hosts["children"]["pfs_servers"]["hosts"]) == ["st1", "st2"]
    assert sorted(hosts["children"]["workers"]["hosts"]) == ["worker1", "worker2"]
