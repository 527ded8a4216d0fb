"""The storage playbooks for real: emulated hdd + ssd disks from inventories/local, the ssd throttled as profiled,
the hdd served by the disk model (spillway-hdd-model, a FUSE server under its lower loop).

Runs playbooks/storage.yml and playbooks/teardown.yml with real loop devices, blkio throttles, the model's
server, fio and iostat. The local inventory is used under another cluster name (spillway_cluster=storagetest), so the
test's disks live in /var/lib/spillway/storagetest and never disturb a provisioned `local` cluster.
Needs root, fio and sysstat (`make setup`). About 1-2 minutes.
"""

import grp
import json
import os
import pwd
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
        # The upper loop is backed by the lower loop, the lower one by the image or by the file its model serves.
        assert Path(f"/sys/block/{disk['device']}/loop/backing_file").read_text().strip() == \
            f"/dev/{disk['lower_device']}"
        lower_backing = Path(f"/sys/block/{disk['lower_device']}/loop/backing_file").read_text().strip()
        if "model" in profile:
            assert lower_backing == str(ROOT / "disks" / f"{name}.model" / "disk")
            assert_model_serves(disk, profile["model"], image)
        else:
            assert lower_backing == str(image) and disk["model"] is None
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


def assert_model_serves(disk, model, image):
    """The model's server runs unprivileged with the profile's parameters, on its own image, with no page cache."""
    record = disk["model"]
    assert record["name"] == model["name"] and record["options"] == model["options"]
    assert record["sources"] == model["sources"]
    pid = int(Path(ROOT / "run" / f"{record['server']}.pid").read_text().split()[0])
    assert Path(f"/proc/{pid}/cmdline").read_text().split("\0")[:-1] == record["command"]
    owner = subprocess.run(["stat", "-c", "%U", f"/proc/{pid}"], capture_output=True, text=True, check=True)
    assert owner.stdout.strip() == "spillway-disk" == subprocess.run(
        ["stat", "-c", "%U", str(image)], capture_output=True, text=True, check=True).stdout.strip()
    # its own group (the one named after it, no supplementary group: not the harness's spillway-hadoop), no way back
    # to root, and an image no other user can open (docs/safety.md, "Least privilege")
    user, group = pwd.getpwnam("spillway-disk"), grp.getgrnam("spillway-disk")
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    assert status["Uid"].split() == [str(user.pw_uid)] * 4 and user.pw_gid == group.gr_gid
    assert status["Gid"].split() == [str(group.gr_gid)] * 4 and status["Groups"].split() == [], status
    assert status["NoNewPrivs"].strip() == "1"
    assert (image.stat().st_uid, image.stat().st_gid, oct(image.stat().st_mode & 0o777)) == \
        (user.pw_uid, group.gr_gid, "0o600")
    for name, value in model["options"].items():
        assert record["command"][record["command"].index(f"--{name}") + 1] == str(value)
    with open("/proc/self/mounts") as mounts:
        fuse = [line.split() for line in mounts if line.split()[1] == str(Path(record["served_file"]).parent)]
    assert fuse and fuse[0][2] == "fuse.spillway-hdd-model" and "allow_other" in fuse[0][3], fuse


def fio_json(*args):
    done = subprocess.run(["fio", "--ioengine=libaio", "--direct=1", "--output-format=json", *args],
                          capture_output=True, text=True, check=True, timeout=120)
    return json.loads(done.stdout)["jobs"][0]


def test_hdd_model_streams_sequential_reads_and_stays_seek_bound_on_random_ones(storage):
    """The issue's goals on the harness's own hdd disk: 64 KiB sequential reads at 100 MB/s or more, 4 KiB random
    reads seek-bound (tens to a few hundred IOPS), the model's delay visible to iostat on the upper loop."""
    hdd = storage["json"]["backends"]["hdd"]
    probe = f"--filename={hdd['mount']}/fio/probe.dat"
    # 2 GiB, 8x the drive's 256 MB buffer (issue 42): over a region the size of the buffer, random reads of what was
    # just written measured the cache (19,654 IOPS in make test, 2026-11-29), not the seeks
    size = "--size=2G"
    fio_json("--name=fill", probe, size, "--rw=write", "--bs=1M", "--end_fsync=1")
    sequential = fio_json("--name=seqread", probe, size, "--rw=read", "--bs=64k", "--runtime=3",
                          "--time_based")["read"]
    assert sequential["bw_bytes"] >= 100e6, sequential["bw_bytes"]
    # iostat watches the upper loop while fio runs: 2 reports 1 s apart, the second covers fio's steady state.
    fio = subprocess.Popen(
        ["fio", "--name=randread", probe, size,
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
    # A 7200 rpm drive with 16 queued and reordered: each request a short seek plus part of a revolution.
    assert 30 <= read["iops"] <= 400, read["iops"]
    # 16 requests queued behind a few hundred IOPS wait tens of ms each; the model's delay shows on the upper loop.
    assert steady["r_await"] >= 20, steady
    assert steady["util"] >= 90, steady


def test_second_run_changes_nothing(storage):
    assert run_playbook("storage.yml")["changed"] == 0


def test_teardown_leaves_nothing_and_is_a_quiet_no_op_after(storage):
    now = json.loads((ROOT / "storage.json").read_text())  # a rebuilt disk may have other loops
    lowers = [now["backends"][name]["lower_device"] for name in INVENTORY["spillway_backends"]]
    majmins = [Path(f"/sys/block/{lower}/dev").read_text().strip() for lower in lowers]
    run_playbook("teardown.yml")
    assert harness_loops() == []
    assert mounts_under_root() == []
    rules = throttle_rules()
    assert all(majmin not in rules[knob] for knob in KNOBS for majmin in majmins)
    servers = subprocess.run(["pgrep", "-f", f"--image {ROOT}/disks/"], capture_output=True, text=True).stdout
    assert servers == "", servers
    assert not ROOT.exists()
    assert run_playbook("teardown.yml")["changed"] == 0
