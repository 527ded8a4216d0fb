"""Scratch inventories and a scratch checkout for the safety tests of inventories: nothing of the real
inventories/ is changed, and commands run in the scratch checkout read only its copy."""
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from spillway import REPO, inventory
from spillway.inventory import InventoryError


def edit_yaml(path, change):
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))


def scratch_repo(tmp_path):
    """A checkout whose inventories/ is a scratch copy: the Makefile, the harness's Python (copied, so that it finds
    this inventories/), the rest linked. Commands run there touch nothing of the real checkout's inventories."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("Makefile", "ansible.cfg"):
        shutil.copy(REPO / name, repo / name)
    for name in ("spillway", "emulation"):
        shutil.copytree(REPO / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "inventories", repo / "inventories")
    for name in ("playbooks", "workloads", "collectors", "analysis", "run_layout", "run_protocol", "scale_model",
                 "experiments", ".venv",
                 "requirements.txt"):
        (repo / name).symlink_to(REPO / name)
    return repo


def run(repo, *argv):
    return subprocess.run(list(argv), cwd=repo, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=300)


@pytest.fixture
def decoy(tmp_path):
    """Stands for what a command would touch: it must survive byte-identical."""
    path = tmp_path / "decoy" / "state"
    path.parent.mkdir()
    path.write_bytes(b"another cluster's state\n")
    return path


@pytest.fixture
def cluster_name(tmp_path):
    """A cluster name of this test alone: the locks in /run/lock are the machine's, and a real cluster's name
    could be held by a bench of it. Derived from the whole tmp_path, which no other test of this session, of another
    xdist worker or of another pytest session on this machine has."""
    name = f"t17-{hashlib.sha256(str(tmp_path).encode()).hexdigest()[:12]}"
    yield name
    Path(f"/run/lock/spillway-{name}.lock").unlink(missing_ok=True)


def copy_cluster(inventories, source, name, **group_vars):
    """inventories/<name>: a copy of inventories/<source> (the README's own recipe), spillway_cluster set."""
    shutil.copytree(inventories / source, inventories / name)
    edit_yaml(inventories / name / "group_vars" / "all.yml", lambda d: d.update(spillway_cluster=name, **group_vars))
    return inventories / name


@pytest.fixture
def inventories(tmp_path, monkeypatch):
    """A copy of the shipped inventories that the code under test reads instead of the real ones."""
    root = tmp_path / "inventories"
    shutil.copytree(REPO / "inventories", root)
    monkeypatch.setattr(inventory, "INVENTORIES", root)
    monkeypatch.setattr("spillway.cluster_check.INVENTORIES", root)
    return root


def problems_of(cluster):
    """Every problem validation finds in inventories/<cluster> (it must find one)."""
    with pytest.raises(InventoryError) as err:
        inventory.load(cluster)
    return err.value.problems
