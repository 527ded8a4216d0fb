"""The storage role's `kind: pfs` rules for real, without a parallel file system: a plain directory and a local
file system are refused as `mount`; on a file system accepted as shared (a tmpfs, by overriding
storage_pfs_fstypes in the inventory), the role makes only this host's per-node directory with its ownership record,
takes over no unrecorded one, and teardown deletes only the recorded one. Same throwaway inventories as test_storage_safety.py
(spillway_root below tmp_path); the tmpfs is mounted below tmp_path and unmounted at the end. Needs root."""
import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

_spec = importlib.util.spec_from_file_location("storage_safety", REPO / "tests/playbooks/test_storage_safety.py")
storage_safety = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(storage_safety)
CLUSTER = storage_safety.CLUSTER

pytestmark = [
    pytest.mark.integration,
    pytest.mark.throwaway,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
]


@pytest.fixture
def cluster(tmp_path):
    return storage_safety.Cluster(tmp_path)


@pytest.fixture
def tmpfs(tmp_path):
    target = tmp_path / "shared"
    target.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "spillway-pfs-test", str(target)], check=True)
    yield target
    subprocess.run(["umount", str(target)], check=False)


def refusal(cluster, playbook):
    """The failed play's output as one line: Ansible's YAML output folds long messages and doubles quotes."""
    _, output = cluster.play(playbook, ok=False)
    return " ".join(output.replace("''", "'").split())


@pytest.fixture
def on_shared_tmpfs(cluster, tmpfs):
    """The cluster with backend `scratch` on the tmpfs, taken for a shared file system (storage_pfs_fstypes
    overridden in the inventory); returns this host's per-node directory there."""
    cluster.backends({"scratch": {"kind": "pfs", "mount": str(tmpfs)}})
    path = cluster.inventory / "group_vars/all.yml"
    variables = yaml.safe_load(path.read_text())
    variables["storage_pfs_fstypes"] = ["tmpfs"]
    path.write_text(yaml.safe_dump(variables))
    return tmpfs / "spillway" / CLUSTER / "localhost"


def test_plain_directory_is_refused(cluster, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    cluster.backends({"scratch": {"kind": "pfs", "mount": str(plain)}})
    output = refusal(cluster, "apply.yml")
    assert f"spillway_backends.scratch.mount = {plain} on localhost is not a mount point" in output
    assert "Fix: mount the shared file system" in output
    assert list(plain.iterdir()) == []


def test_local_file_system_is_refused(cluster, tmpfs):
    cluster.backends({"scratch": {"kind": "pfs", "mount": str(tmpfs)}})
    output = refusal(cluster, "apply.yml")
    assert "is a tmpfs mount, not a parallel or network file system" in output
    assert "storage_pfs_fstypes" in output
    assert list(tmpfs.iterdir()) == []


def test_per_node_directory_is_marked_reused_and_the_only_thing_deleted(cluster, on_shared_tmpfs):
    node_dir = on_shared_tmpfs
    neighbour = node_dir.parent / "otherhost"
    neighbour.mkdir(parents=True)
    (neighbour / "data").write_text("not ours")

    cluster.play("apply.yml")
    record = json.loads((node_dir / ".spillway-owner.json").read_text())
    root_record = json.loads((cluster.root / ".spillway-owner.json").read_text())
    assert (record["cluster"], record["cluster_id"]) == (CLUSTER, root_record["cluster_id"])
    assert (cluster.root / "mnt/scratch").resolve() == node_dir
    assert (node_dir / "hdfs/data").is_dir() and (node_dir / "local/spark").is_dir()
    backend = cluster.storage_json()["backends"]["scratch"]
    assert (backend["kind"], backend["fstype"], backend["data_root"]) == ("pfs", "tmpfs", str(node_dir))
    assert cluster.storage_json()["devices"] == []

    recap, _ = cluster.play("apply.yml")
    assert recap["changed"] == 0

    cluster.play("teardown.yml")
    assert not node_dir.exists() and not cluster.root.exists()
    assert (neighbour / "data").read_text() == "not ours"


def test_unmarked_per_node_directory_is_neither_taken_nor_deleted(cluster, on_shared_tmpfs):
    node_dir = on_shared_tmpfs
    node_dir.mkdir(parents=True)
    (node_dir / "results.csv").write_text("someone's")

    output = refusal(cluster, "apply.yml")
    assert f"refusing to use {node_dir}: it exists, is not empty and has no ownership record" in output
    assert sorted(p.name for p in node_dir.iterdir()) == ["results.csv"]

    output = refusal(cluster, "teardown.yml")
    assert f"refusing to delete {node_dir}: it has no ownership record" in output
    assert (node_dir / "results.csv").read_text() == "someone's"
