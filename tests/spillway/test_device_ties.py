"""spillway/device_ties.py read on this machine: the root file system's disk and the loop devices of a
throwaway emulated-disk chain are tied; a loop device over a plain file of nobody's is free. The storage role's
refusals with real Ansible: tests/playbooks/test_storage_safety.py; validation's: tests/safety/test_resource_exclusivity.py."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from spillway import device_ties


def root_disk():
    """The device of / (its whole disk when / is on a partition)."""
    number = next(line.split()[2] for line in Path("/proc/self/mountinfo").read_text().splitlines()
                  if line.split()[4] == "/")
    kname = os.path.basename(os.path.realpath(f"/sys/dev/block/{number}"))
    if Path(f"/sys/class/block/{kname}/partition").exists():
        kname = Path(os.path.realpath(f"/sys/class/block/{kname}")).parent.name
    return f"/dev/{kname}"


def test_the_root_file_systems_disk_is_tied():
    disk = root_disk()
    if not Path(disk).exists():
        pytest.skip(f"/ is on no block device of this machine ({disk})")
    assert any("holds the root file system" in tie for tie in device_ties.ties(disk))


def test_no_block_device_has_no_ties(tmp_path):
    assert device_ties.ties(str(tmp_path)) == [] and device_ties.ties("/dev/no-such-disk") == []


@pytest.fixture
def loops(tmp_path):
    attached = []

    def attach(backing):
        device = subprocess.run(["losetup", "--find", "--show", str(backing)], capture_output=True, text=True,
                                check=True).stdout.strip()
        attached.append((device, str(backing)))
        return device

    yield attach
    for device, backing in reversed(attached):
        if Path(f"/sys/block/{Path(device).name}/loop/backing_file").read_text().strip() == backing:
            subprocess.run(["losetup", "--detach", device], check=False)


@pytest.mark.throwaway
@pytest.mark.skipif(os.geteuid() != 0, reason="loop devices need root")
def test_an_emulated_disk_chain_is_tied_and_a_plain_loop_is_free(tmp_path, loops):
    owned = tmp_path / "owned"
    owned.mkdir()
    (owned / ".spillway-owner.json").write_text(json.dumps({"format": "spillway-owner/1"}))
    for image in (owned / "disk.img", tmp_path / "free.img"):
        subprocess.run(["truncate", "--size", "8M", str(image)], check=True)
    lower = loops(owned / "disk.img")
    upper = loops(lower)
    free = loops(tmp_path / "free.img")
    assert f"backs loop device {upper}" in device_ties.ties(lower)
    assert any(f"inside {owned}, which a Spillway cluster owns" in tie for tie in device_ties.ties(lower))
    assert device_ties.ties(upper) == [f"is a loop device over loop device {lower} (an emulated disk is such a chain)"]
    assert device_ties.ties(free) == []
    assert any(f"inside {tmp_path}, which a Spillway inventory uses" in tie
               for tie in device_ties.ties(free, harness_paths=[str(tmp_path)]))
