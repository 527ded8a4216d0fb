"""The gluster-profile collector's parts that need no GlusterFS, on recorded outputs of the emulated `pfs` cluster
(tests/fixtures/gluster-profile/README.md); the collector itself was run on that cluster to record them."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COLLECTOR = REPO / "collectors" / "gluster-profile"
FIXTURES = REPO / "tests" / "fixtures" / "gluster-profile"
sys.path.insert(0, str(COLLECTOR))

from gluster_cli import PROFILING_FILE, brick_volumes, first_brick  # noqa: E402


def test_the_server_of_the_first_brick_records_the_volume():
    brick, server = first_brick((FIXTURES / "volume-info-pfs.xml").read_text())
    assert brick == "st1:/var/lib/spillway/pfs-st1/mnt/pfs/brick"
    assert server == "29af9f18-09cd-4a8f-ad10-79bd2c1237a6"
    assert "recorded by the server of its first brick, " + brick in (FIXTURES / "st2-collector-notes.txt").read_text()


def test_volumes_are_the_brick_disks_of_storage_json(tmp_path):
    shutil.copy(FIXTURES / "st1-storage.json", tmp_path / "storage.json")
    assert brick_volumes(tmp_path) == ["pfs"]
    shutil.copy(FIXTURES / "worker1-storage.json", tmp_path / "storage.json")
    assert brick_volumes(tmp_path) == []


def run(step, root, out):
    env = {**os.environ, "SPILLWAY_ROOT": str(root), "SPILLWAY_OUT": str(out), "SPILLWAY_RUN_ID": "r",
           "SPILLWAY_WORKLOAD_ID": "w"}
    return subprocess.run([str(COLLECTOR / step)], env=env, capture_output=True, text=True, timeout=60)


def test_a_host_without_bricks_notes_it_and_stop_has_nothing_to_do(tmp_path):
    shutil.copy(FIXTURES / "worker1-storage.json", tmp_path / "storage.json")
    out = tmp_path / "out"
    assert run("start", tmp_path, out).returncode == 0
    assert "no GlusterFS brick on this host" in (out / "collector-notes.txt").read_text()
    assert not (out / PROFILING_FILE).exists() and not (out / "collector-error.txt").exists()
    assert run("stop", tmp_path, out).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == [".started_at", "collector-notes.txt"]


def test_a_missing_storage_json_is_recorded_as_the_collectors_failure_not_the_benchs(tmp_path):
    out = tmp_path / "out"
    result = run("start", tmp_path, out)
    assert result.returncode == 0
    assert "storage.json" in (out / "collector-error.txt").read_text()
