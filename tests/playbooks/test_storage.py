"""The storage playbooks for real: emulated hdd + ssd disks from inventories/local, throttled as profiled.

Runs playbooks/storage.yml and playbooks/teardown.yml with real loop devices, blkio throttles, fio and
iostat. The local inventory is used under another cluster name (spillway_cluster=storagetest), so the
test's disks live in /var/lib/spillway/storagetest and never disturb a provisioned `local` cluster.
Needs root, fio and sysstat (`make setup`). About 1-2 minutes.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "storagetest"
ROOT = Path("/var/lib/spillway") / CLUSTER
BLKIO = Path("/sys/fs/cgroup/blkio")
KNOBS = ("read_iops", "write_iops", "read_bps", "write_bps")
PROFILES = yaml.safe_load((REPO / "inventories/storage-profiles.yml").read_text())["profiles"]
INVENTORY = yaml.safe_load((REPO / "inventories/local/group_vars/all.yml").read_text())

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="loop devices and blkio throttles need root"),
    pytest.mark.skipif(not (shutil.which("fio") and shutil.which("iostat")), reason="needs fio and sysstat"),
]


def run_playbook(name):
    """Run playbooks/<name> on inventories/local as cluster CLUSTER; return the host's recap counters."""
    result = subprocess.run(
        [str(REPO / ".venv/bin/ansible-playbook"), "-i", "inventories/local", f"playbooks/{name}",
         "-e", f"spillway_cluster={CLUSTER}"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{name} failed:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}"
    recap = re.search(r"^localhost\s+:\s+(.*)$", result.stdout, re.MULTILINE)
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", recap.group(1))}


def harness_loops():
    """Attached loop devices whose backing file is under the test cluster's root (lower loops)."""
    listing = subprocess.run(["losetup", "--list", "--json", "--output", "NAME,BACK-FILE"],
                             capture_output=True, text=True, check=True).stdout
    devices = json.loads(listing)["loopdevices"] if listing.strip() else []
    return [d["name"] for d in devices if (d["back-file"] or "").startswith(str(ROOT) + "/")]


def mounts_under_root():
    with open("/proc/self/mounts") as mounts:
        return [line.split()[1] for line in mounts if line.split()[1].startswith(str(ROOT) + "/")]


def throttle_rules():
    """{knob: {majmin: value}} of the root blkio cgroup."""
    rules = {}
    for knob in KNOBS:
        lines = (BLKIO / f"blkio.throttle.{knob}_device").read_text().split("\n")
        rules[knob] = {line.split()[0]: int(line.split()[1]) for line in lines if line.strip()}
    return rules


def leftovers():
    return bool(harness_loops() or mounts_under_root() or ROOT.exists())


@pytest.fixture(scope="module")
def storage():
    """Storage applied from a clean slate; torn down afterwards unless the teardown test already did."""
    if leftovers():
        run_playbook("teardown.yml")
    try:
        recap = run_playbook("storage.yml")
        yield {"first_recap": recap, "json": json.loads((ROOT / "storage.json").read_text())}
    finally:
        if leftovers():
            run_playbook("teardown.yml")


def test_disks_are_built_per_inventory_and_profile(storage):
    assert storage["first_recap"]["changed"] > 0
    report = storage["json"]
    assert report["placement"] == INVENTORY["spillway_placement"]
    rules = throttle_rules()
    with open("/proc/self/mounts") as mounts:
        mount_options = {line.split()[1]: line.split()[3] for line in mounts}
    for name, backend in INVENTORY["spillway_backends"].items():
        disk = report["backends"][name]
        profile = PROFILES[backend["profile"]]
        assert disk["kind"] == "emulated" and disk["profile"] == backend["profile"]
        image = Path(disk["image"])
        assert image == ROOT / "disks" / f"{name}.img"
        assert image.stat().st_size == backend["size_gib"] * 2**30
        assert image.stat().st_blocks * 512 < image.stat().st_size / 2, "image should be sparse"
        # The upper loop is backed by the lower loop, the lower one by the image.
        assert Path(f"/sys/block/{disk['device']}/loop/backing_file").read_text().strip() == \
            f"/dev/{disk['lower_device']}"
        assert Path(f"/sys/block/{disk['lower_device']}/loop/backing_file").read_text().strip() == str(image)
        for device in (disk["device"], disk["lower_device"]):
            assert Path(f"/sys/block/{device}/loop/dio").read_text().strip() == "1"
        rotational = Path(f"/sys/block/{disk['device']}/queue/rotational").read_text().strip()
        assert rotational == ("1" if profile["rotational"] else "0")
        majmin = Path(f"/sys/block/{disk['lower_device']}/dev").read_text().strip()
        for knob in KNOBS:
            assert disk["throttle"][knob] == profile[knob]
            assert rules[knob].get(majmin, 0) == profile[knob], (name, knob)
        assert "noatime" in mount_options[disk["mount"]].split(",")
        assert (Path(disk["mount"]) / "fio").is_dir()
    assert sorted(report["devices"]) == sorted(d["device"] for d in report["backends"].values())
    for purpose in ("hdfs_data", "spark_local", "yarn_local"):
        assert Path(report["data_dirs"][purpose]).is_dir()


def test_hdd_profile_gives_hdd_iops_and_visible_latency(storage):
    hdd = storage["json"]["backends"]["hdd"]
    # iostat watches the upper loop while fio runs: 2 reports 1 s apart, the second covers fio's steady state.
    fio = subprocess.Popen(
        ["fio", "--name=randread", f"--filename={hdd['mount']}/fio/probe.dat", "--size=64M",
         "--rw=randread", "--bs=4k", "--iodepth=16", "--ioengine=libaio", "--direct=1",
         "--runtime=5", "--time_based", "--output-format=json"],
        stdout=subprocess.PIPE, text=True)
    try:
        subprocess.run(["sleep", "2.5"], check=True)
        iostat = subprocess.run(["iostat", "-x", "-d", "-o", "JSON", hdd["device"], "1", "2"],
                                capture_output=True, text=True, check=True).stdout
        fio_out, _ = fio.communicate(timeout=60)
    finally:
        fio.kill()
    read = json.loads(fio_out)["jobs"][0]["read"]
    steady = json.loads(iostat)["sysstat"]["hosts"][0]["statistics"][-1]["disk"][0]
    assert steady["disk_device"] == hdd["device"]
    assert 120 <= read["iops"] <= 165, read["iops"]
    # 16 requests queued behind 150 IOPS wait ~100 ms each; the throttle's delay must show on the upper loop.
    assert steady["r_await"] >= 30, steady
    assert steady["util"] >= 90, steady


def test_second_run_changes_nothing(storage):
    assert run_playbook("storage.yml")["changed"] == 0


def test_teardown_leaves_nothing_and_is_a_quiet_no_op_after(storage):
    lowers = [storage["json"]["backends"][name]["lower_device"] for name in INVENTORY["spillway_backends"]]
    majmins = [Path(f"/sys/block/{lower}/dev").read_text().strip() for lower in lowers]
    run_playbook("teardown.yml")
    assert harness_loops() == []
    assert mounts_under_root() == []
    rules = throttle_rules()
    assert all(majmin not in rules[knob] for knob in KNOBS for majmin in majmins)
    assert not ROOT.exists()
    assert run_playbook("teardown.yml")["changed"] == 0
