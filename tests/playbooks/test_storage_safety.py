"""Safety guards of the storage roles and the fio sweep, each with a refused case, for real.

The real storage role runs against throwaway inventories in tmp_path: spillway_root and the harness-owned root
(storage_owned_root) are below tmp_path, devices are loop devices this test attaches to small sparse files in
tmp_path (losetup --find --show) and detaches in a finalizer; no other loop device or mount is touched.
The role's teardown tasks run from a test playbook (never playbooks/teardown.yml). Needs root, e2fsprogs, fio.
"""

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "safetytest"
SWEEP = REPO / "workloads/fio-sweep/run-sweep"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.throwaway,
    pytest.mark.skipif(os.geteuid() != 0, reason="loop devices, mkfs and mount need root"),
    pytest.mark.skipif(not (shutil.which("fio") and shutil.which("mkfs.ext4")), reason="needs fio and e2fsprogs"),
]

_spec = importlib.util.spec_from_file_location(
    "device_storage", REPO / "playbooks/roles/storage/filter_plugins/device_storage.py")
device_storage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(device_storage)


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, check=True, **kwargs).stdout


def mounts():
    """[(source, target)] of this mount namespace."""
    with open("/proc/self/mounts") as table:
        return [tuple(line.split()[:2]) for line in table]


def probe(device):
    """blkid's low-level answer: {} for a blank device, else {TYPE, LABEL, ...}."""
    result = subprocess.run(["blkid", "--probe", "--output", "export", device], capture_output=True, text=True)
    return dict(line.split("=", 1) for line in result.stdout.split()) if result.returncode == 0 else {}


@pytest.fixture
def loop_device(tmp_path):
    """Factory: a loop device over a new sparse file in tmp_path; unmounted (where this test mounted it below
    tmp_path) and detached at the end."""
    attached = []

    def attach(name, size="64M", backing=None):
        """backing: a file or device of the caller's to attach instead of a new sparse file."""
        image = backing or tmp_path / f"{name}.img"
        if backing is None:
            run(["truncate", "--size", size, str(image)])
        device = run(["losetup", "--find", "--show", str(image)]).strip()
        attached.append((device, image))
        return device

    yield attach
    for device, image in attached:
        for source, target in reversed(mounts()):
            if source == device and target.startswith(str(tmp_path) + "/"):
                subprocess.run(["umount", target], check=False)
        # Detach only if this very loop still carries our image (never another user's reuse of the number).
        backing = Path(f"/sys/block/{Path(device).name}/loop/backing_file")
        if backing.exists() and backing.read_text().strip() == str(image):
            subprocess.run(["losetup", "--detach", device], check=False)


class Cluster:
    """A throwaway inventory (this host, local connection) and the storage role applied or torn down on it."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.root = tmp_path / "root"
        self.inventory = tmp_path / "inventory"
        (self.inventory / "group_vars").mkdir(parents=True)
        (self.inventory / "hosts.yml").write_text(yaml.safe_dump({"all": {
            "children": {g: {"hosts": {"localhost": None}}
                         for g in ("namenode", "resourcemanager", "controller", "workers")},
            "vars": {"ansible_connection": "local",
                     "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}))
        # Mitogen's linear strategy, as playbooks/storage.yml and teardown.yml name it: the role runs here as it does
        # there, in about half the wall time of Ansible's own strategy (docs/performance.md, 2026-11-29).
        (tmp_path / "apply.yml").write_text(yaml.safe_dump([
            {"hosts": "workers", "gather_facts": False, "strategy": "mitogen_linear", "roles": ["common", "storage"]}]))
        (tmp_path / "teardown.yml").write_text(yaml.safe_dump([
            {"hosts": "workers", "gather_facts": False, "strategy": "mitogen_linear", "roles": ["common"], "tasks": [
                {"ansible.builtin.include_role": {"name": "storage", "tasks_from": "teardown"}}]}]))

    def backends(self, backends):
        first = next(iter(backends))
        (self.inventory / "group_vars/all.yml").write_text(yaml.safe_dump({
            "spillway_cluster": CLUSTER, "spillway_backends": backends,
            "spillway_placement": {"hdfs": first, "local": first}}))

    def play(self, playbook, ok=True, owned_root=None):
        """Run apply.yml or teardown.yml; return (recap counters, output)."""
        result = subprocess.run(
            [str(REPO / ".venv/bin/ansible-playbook"), "-i", str(self.inventory), str(self.tmp / playbook),
             "-e", f"spillway_root={self.root}", "-e", f"storage_owned_root={owned_root or self.tmp}"],
            cwd=REPO, capture_output=True, text=True, timeout=120)
        output = result.stdout + result.stderr
        assert (result.returncode == 0) == ok, f"{playbook} {'failed' if ok else 'passed'}:\n{output[-5000:]}"
        recap = re.search(r"^localhost\s+:\s+(.*)$", result.stdout, re.MULTILINE)
        return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", recap.group(1))}, output

    def storage_json(self):
        return json.loads((self.root / "storage.json").read_text())


@pytest.fixture
def cluster(tmp_path):
    return Cluster(tmp_path)


def test_blank_device_is_refused_without_destructive_ok(cluster, loop_device):
    device = loop_device("blank")
    cluster.backends({"disk": {"kind": "device", "device": device, "fstype": "ext4"}})
    _, output = cluster.play("apply.yml", ok=False)
    assert f"refusing to format or mount {device}" in output
    assert "no filesystem signature or partition table" in output
    assert "spillway_backends.disk.destructive_ok: true" in output
    assert probe(device) == {}
    assert not any(source == device for source, _ in mounts())


def test_existing_filesystem_needs_wipe_then_is_the_harness_own(cluster, loop_device, tmp_path):
    """Device and mount-kind backends side by side: refusals, the first run, a no-change rerun, teardown."""
    device = loop_device("used")
    run(["mkfs.ext4", "-q", "-L", "userdata", device])
    backend = {"kind": "device", "device": device, "fstype": "ext4", "destructive_ok": True}
    path = tmp_path / "plain"
    path.mkdir()
    sentinel = path / "sentinel.txt"
    sentinel.write_text("the operator's")
    cluster.backends({"disk": backend, "fast": {"kind": "mount", "path": str(path)}})

    _, output = cluster.play("apply.yml", ok=False)
    assert f"{device} is not blank" in output and "ext4 signature" in output and "label 'userdata'" in output
    assert "spillway_backends.disk.wipe: true" in output
    assert probe(device)["LABEL"] == "userdata", "a refused device must be left as it was"

    cluster.backends({"disk": {**backend, "wipe": True}, "fast": {"kind": "mount", "path": str(path)}})
    _, output = cluster.play("apply.yml", ok=False)
    assert "is not a mount point" in output and "spillway_backends.fast.destructive_ok: true" in output
    assert sorted(p.name for p in path.iterdir()) == ["sentinel.txt"]

    cluster.backends({"disk": {**backend, "wipe": True},
                      "fast": {"kind": "mount", "path": str(path), "destructive_ok": True}})
    recap, _ = cluster.play("apply.yml")
    assert recap["changed"] > 0
    label = device_storage.spillway_device_label(CLUSTER, "disk")
    assert probe(device)["LABEL"] == label and probe(device)["TYPE"] == "ext4"
    mount_point = str(cluster.root / "mnt/disk")
    assert (device, mount_point) in mounts()
    record = cluster.storage_json()["backends"]["disk"]
    assert record["kind"] == "device" and record["device"] == Path(device).name and record["label"] == label
    assert Path(cluster.storage_json()["data_dirs"]["hdfs_data"]).is_dir()
    assert (cluster.root / "mnt/fast").resolve() == path / f"spillway-{CLUSTER}"
    assert (path / f"spillway-{CLUSTER}/fio").is_dir()

    # wipe: true is still set: the marker makes the second run mount-and-go, no reformat.
    (Path(mount_point) / "fio/keep.dat").write_text("data")
    recap, _ = cluster.play("apply.yml")
    assert recap["changed"] == 0
    assert (Path(mount_point) / "fio/keep.dat").read_text() == "data"

    cluster.play("teardown.yml")
    assert not any(source == device for source, _ in mounts())
    assert not cluster.root.exists()
    assert sorted(p.name for p in path.iterdir()) == ["sentinel.txt"]
    assert sentinel.read_text() == "the operator's"
    assert probe(device)["LABEL"] == label, "teardown never wipes a device"
    check = tmp_path / "check"
    check.mkdir()
    run(["mount", "-o", "ro", device, str(check)])
    try:
        assert (check / "fio/keep.dat").read_text() == "data" and (check / "hdfs/data").is_dir()
    finally:
        run(["umount", str(check)])


def write_dos_partition_table(device):
    """An MBR with one Linux partition (2 MiB at 1 MiB), as fdisk would write it."""
    entry = bytes([0x00, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (4096).to_bytes(4, "little")
    mbr = bytearray(512)
    mbr[446:462] = entry
    mbr[510:512] = b"\x55\xaa"
    with open(device, "r+b") as disk:
        disk.write(mbr)


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def another_clusters_emulated_disk(tmp_path, loop_device, with_upper):
    """What role emulated_storage makes for another cluster: an image with a filesystem in a folder that carries that
    cluster's ownership record, a lower loop over it and (with_upper) an upper loop over the lower one.
    -> (image, lower, upper or None)."""
    folder = tmp_path / "other-cluster"
    (folder / "disks").mkdir(parents=True)
    (folder / ".spillway-owner.json").write_text(json.dumps({
        "format": "spillway-owner/1", "cluster": "other", "cluster_id": "0123456789abcdef",
        "resource": "spillway_root", "created": "2026-11-28T00:00:00Z", "owns": []}))
    image = folder / "disks" / "hdd.img"
    run(["truncate", "--size", "64M", str(image)])
    run(["mkfs.ext4", "-q", "-L", "other-hdd", str(image)])
    lower = loop_device("lower", backing=image)
    return image, lower, loop_device("upper", backing=Path(lower)) if with_upper else None


@pytest.mark.parametrize("layer", ["image loop alone", "lower loop", "upper loop"])
def test_a_loop_device_of_an_emulated_disk_is_refused_even_with_wipe(cluster, loop_device, tmp_path, layer):
    """docs/safety.md "Devices": a loop device of one of the harness's emulated disks (the running bench's HDD is
    such a chain) would be judged "wipe" by its signatures alone."""
    image, lower, upper = another_clusters_emulated_disk(tmp_path, loop_device, layer != "image loop alone")
    device = upper if layer == "upper loop" else lower
    before = sha256(image)
    cluster.backends({"disk": {"kind": "device", "device": device, "fstype": "ext4", "destructive_ok": True,
                               "wipe": True}})
    _, output = cluster.play("apply.yml", ok=False)
    assert f"spillway_backends.disk: refusing {device}: it" in output, output[-3000:]
    assert {"image loop alone": "which a Spillway cluster owns (its ownership record)",
            "lower loop": f"backs loop device {upper}",
            "upper loop": f"is a loop device over loop device {lower}"}[layer] in output.replace("\n", " ")
    assert "Fix: name a free disk in spillway_backends.disk.device" in output.replace("\n", " ")
    assert sha256(image) == before
    assert not any(source in (lower, upper) for source, _ in mounts())


def test_a_device_a_loop_device_is_attached_to_is_refused(cluster, loop_device, tmp_path):
    disk = loop_device("disk")
    run(["mkfs.ext4", "-q", "-L", "someone", disk])
    over = loop_device("over", backing=Path(disk))
    before = sha256(tmp_path / "disk.img")
    cluster.backends({"disk": {"kind": "device", "device": disk, "fstype": "ext4", "destructive_ok": True,
                               "wipe": True}})
    _, output = cluster.play("apply.yml", ok=False)
    assert f"refusing {disk}: it backs loop device {over}" in output.replace("\n", " "), output[-3000:]
    assert sha256(tmp_path / "disk.img") == before


def test_partition_table_is_refused_even_with_destructive_ok(cluster, loop_device):
    device = loop_device("parted")
    write_dos_partition_table(device)
    assert probe(device)["PTTYPE"] == "dos"
    cluster.backends({"disk": {"kind": "device", "device": device, "fstype": "ext4", "destructive_ok": True}})
    _, output = cluster.play("apply.yml", ok=False)
    assert f"{device} is not blank" in output and "dos signature" in output and "wipe: true" in output
    assert probe(device)["PTTYPE"] == "dos"


def test_teardown_refuses_a_root_outside_the_owned_root(cluster, tmp_path):
    cluster.backends({"fast": {"kind": "mount", "path": str(tmp_path), "destructive_ok": True}})
    cluster.root.mkdir()
    (cluster.root / "keep.txt").write_text("x")
    _, output = cluster.play("teardown.yml", ok=False, owned_root=tmp_path / "elsewhere")
    assert "Refusing to tear down" in output
    assert (cluster.root / "keep.txt").exists()


def sweep(root, backends, tmp_path, target="file", patterns="randread"):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    env = {**os.environ, "SPILLWAY_ROOT": str(root), "SPILLWAY_OUT": str(out),
           "SPILLWAY_BACKENDS": " ".join(f"{name}={path}" for name, path in backends.items()),
           "P_PATTERNS": patterns, "P_BLOCK_SIZES": "4k", "P_RUNTIME_S": "1", "P_RAMP_S": "0",
           "P_IODEPTH": "1", "P_FILE_SIZE": "1m", "P_TARGET": target}
    return subprocess.run([str(SWEEP)], cwd=SWEEP.parent, env=env, capture_output=True, text=True, timeout=60)


def test_fio_writes_only_below_the_harness_owned_fio_dirs(tmp_path):
    root = tmp_path / "root"
    (root / "mnt/a").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    refused = sweep(root, {"a": root / "mnt/a", "b": outside}, tmp_path, patterns="randwrite")
    assert refused.returncode == 2
    assert f"backend 'b' is at {outside}, outside the harness-owned {root}/mnt/b" in refused.stderr
    assert not (root / "mnt/a/fio").exists() and list(outside.iterdir()) == []

    done = sweep(root, {"a": root / "mnt/a"}, tmp_path, patterns="randwrite")
    assert done.returncode == 0, done.stderr
    assert (root / "mnt/a/fio/sweep.dat").stat().st_size == 2**20


def test_fio_raw_device_only_for_a_device_backend_with_destructive_ok(tmp_path):
    root = tmp_path / "root"
    (root / "mnt/a").mkdir(parents=True)
    record = {"kind": "emulated", "mount": f"{root}/mnt/a", "source": None}
    (root / "storage.json").write_text(json.dumps({"backends": {"a": record}}))
    refused = sweep(root, {"a": root / "mnt/a"}, tmp_path, target="device")
    assert refused.returncode == 2 and "backend 'a' is kind emulated" in refused.stderr
    assert "destructive_ok: true" in refused.stderr

    record.update(kind="device", destructive_ok=True, source="/dev/null")
    (root / "storage.json").write_text(json.dumps({"backends": {"a": record}}))
    refused = sweep(root, {"a": root / "mnt/a"}, tmp_path, target="device", patterns="read,randwrite")
    assert refused.returncode == 2 and "raw-device patterns randwrite" in refused.stderr
    assert not (tmp_path / "out/fio-a-read-4k.json").exists()
