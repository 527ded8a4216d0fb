"""The pfs-client collector on this machine, which has no parallel file system: on a host without a pfs backend
(every disk cluster, the local default) it must only say so (nothing-here.txt) and cost nothing; on a pfs backend whose client
counters cannot be read it notes why and never fails. Its GlusterFS snapshots were recorded on the emulated `pfs`
cluster (tests/fixtures/pfs-client/README.md)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COLLECTOR = REPO / "collectors" / "pfs-client"
sys.path.insert(0, str(COLLECTOR))

import client_counters  # noqa: E402
from analysis.parsers.pfs_client import lustre_llite_counters  # noqa: E402


def storage(root: Path, backends: dict) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "storage.json").write_text(json.dumps({"backends": backends}))


def run(step: str, root: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPILLWAY_ROOT": str(root), "SPILLWAY_OUT": str(out), "SPILLWAY_RUN_ID": "r",
           "SPILLWAY_WORKLOAD_ID": "w", "SPILLWAY_DEVICES": "loop5"}
    return subprocess.run([sys.executable, str(COLLECTOR / step)], env=env, capture_output=True, text=True, timeout=60)


DISK_BACKENDS = {"hdd": {"kind": "emulated", "device": "loop5", "mount": "/var/lib/spillway/local/mnt/hdd"},
                 "ssd": {"kind": "mount", "device": "nvme0n1", "mount": "/mnt/nvme"}}


@pytest.mark.parametrize("backends", [DISK_BACKENDS, None], ids=["disk-backends", "no-storage-json"])
def test_a_host_without_pfs_says_there_is_nothing_here(tmp_path, backends):
    if backends is not None:
        storage(tmp_path / "root", backends)
    out = tmp_path / "out"
    for step in ("start", "stop", "stop"):
        began = time.monotonic()
        result = run(step, tmp_path / "root", out)
        took = time.monotonic() - began
        assert result.returncode == 0 and result.stderr == "" and result.stdout == ""
        assert took < 5, f"{step} took {took:.2f} s on a host with nothing to record"
    assert [p.name for p in out.iterdir()] == ["nothing-here.txt"]          # the analysis counts it as "none"
    assert "no pfs backend" in (out / "nothing-here.txt").read_text()


def test_lustre_without_a_client_is_noted_not_failed(tmp_path):
    storage(tmp_path / "root", {**DISK_BACKENDS, "scratch": {"kind": "pfs", "fstype": "lustre", "path": "/lustre/scratch",
                                                             "mount": str(tmp_path / "root/mnt/scratch")}})
    out = tmp_path / "out"
    for step in ("start", "stop"):
        assert run(step, tmp_path / "root", out).returncode == 0
    notes = (out / "collector-notes.txt").read_text().splitlines()
    assert len(notes) == 2
    assert all("backend scratch (lustre at /lustre/scratch)" in note and "no Lustre client here" in note for note in notes)
    assert "start: nothing recorded" in notes[0] and "stop: nothing recorded" in notes[1]
    assert sorted(p.name for p in out.iterdir()) == ["collector-notes.txt"]


def test_an_unmounted_glusterfs_and_an_unknown_type_are_noted(tmp_path):
    storage(tmp_path / "root", {"pfs": {"kind": "pfs", "fstype": "fuse.glusterfs", "path": str(tmp_path / "gone")},
                                "gpfs": {"kind": "pfs", "fstype": "gpfs", "path": "/gpfs/fs1"}})
    out = tmp_path / "out"
    assert run("start", tmp_path / "root", out).returncode == 0
    notes = (out / "collector-notes.txt").read_text()
    assert f"{tmp_path / 'gone'} is not mounted" in notes
    assert "no client counter source known for file system type 'gpfs'" in notes
    assert not (out / "collector-error.txt").exists()


def test_lustre_stats_files_are_laid_out_as_lctl_prints_them(tmp_path, monkeypatch):
    """No lctl here: the collector falls back to the llite stats files (a directory in their layout, filled with
    the hand-written sample of tests/fixtures/pfs-client, not a recording)."""
    sample = (REPO / "tests/fixtures/pfs-client/lustre-sample-client-scratch.stop").read_text().split("\n", 2)[2]
    stats = tmp_path / "proc/fs/lustre/llite/scratch-ffff8f0a1b2c3000/stats"
    stats.parent.mkdir(parents=True)
    stats.write_text(sample)
    monkeypatch.setattr(client_counters, "LUSTRE_STATS_GLOBS", (str(tmp_path / "proc/fs/lustre/llite/*/stats"),))
    monkeypatch.setenv("PATH", str(tmp_path))          # neither lctl nor lfs
    text, source = client_counters.lustre_llite_stats("/lustre/scratch")
    assert source == str(stats)
    assert text.startswith("llite.scratch-ffff8f0a1b2c3000.stats=\n")
    assert lustre_llite_counters(text)["read_bytes.sum"] == (320864256, "bytes")


def test_a_broken_storage_json_is_the_collectors_error_not_the_benchs(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "storage.json").write_text("{not json")
    out = tmp_path / "out"
    result = run("start", tmp_path / "root", out)
    assert result.returncode == 0
    assert "collector start failed" in result.stderr
    assert "Traceback" in (out / "collector-error.txt").read_text()
