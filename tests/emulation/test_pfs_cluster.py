"""The emulated parallel-file-system cluster `pfs` for real (docs/pfs.md): cluster-up, provision.yml over SSH
(each storage server's brick on an emulated disk of its own, glusterd and a sharded GlusterFS volume on st1 and st2,
no Hadoop or Spark there; FUSE mounts and per-node directories on the workers, HDFS and YARN on them), a file written
in worker1's per-node directory read back on worker2 through its own mount with its shards on both bricks, O_DIRECT
writes through the mount landing on both servers' brick devices, a second provisioning that changes nothing, then
`make teardown CLUSTER=pfs` and nothing of the cluster left on the machine (no loop device either).

Root, about 6 minutes on 2 shared cores (the first provisioning is most of it). Prints the provisioning times, the
O_DIRECT dd throughput through worker1's mount and what each server's brick device wrote meanwhile.
"""
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from spillway import REPO

pytestmark = pytest.mark.integration

CLUSTER = "pfs"
# 16 shards of 4 MB besides the file's first piece: the chance that hashing puts all 17 on one brick is 2^-16.
PROBE_MB = 68
SHARD_MB = 4
DD_MB = 256


def sh(*argv, check=True, timeout=600):
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"{' '.join(argv)}:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}"
    return result


def emulation(action):
    return sh(str(REPO / ".venv/bin/python"), "-m", "emulation", action, "--cluster", CLUSTER, check=False)


def on(host, command):
    """stdout of a shell command on one node, over SSH as Ansible reaches it."""
    result = sh(str(REPO / ".venv/bin/ansible"), "-i", f"inventories/{CLUSTER}", host, "-m", "ansible.builtin.shell",
                "-a", command, timeout=300)
    return result.stdout.split("\n", 1)[1].strip()


def provision():
    """(seconds, {host: recap counters}) of provision.yml."""
    started = time.monotonic()
    result = sh(str(REPO / ".venv/bin/ansible-playbook"), "-i", f"inventories/{CLUSTER}", "playbooks/provision.yml",
                timeout=1800)
    recaps = {host: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counters)}
              for host, counters in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", result.stdout, re.MULTILINE)}
    return time.monotonic() - started, recaps


def sectors_written(host, device):
    """Sectors written to a block device since boot, from /proc/diskstats as the host sees it."""
    fields = on(host, f"awk '$3 == \"{device}\"' /proc/diskstats").split()
    return int(fields[9])


def cluster_processes():
    """Command lines of the processes whose arguments name a path of the cluster's nodes."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "/var/lib/spillway/pfs-" in args or "/var/lib/spillway-emulation/pfs" in args:
            found.append(args)
    return found


@pytest.fixture(scope="module")
def pfs(require_setup):
    require_setup(CLUSTER)
    left = emulation("leftovers")
    assert left.returncode in (0, 1), left.stderr
    assert left.stdout.strip() == "nothing" or emulation("is-up").returncode == 0, \
        f"a half-built {CLUSTER} is on this machine: make teardown CLUSTER={CLUSTER} first"
    sh("make", "cluster-up", f"CLUSTER={CLUSTER}")
    yield
    sh("make", "teardown", f"CLUSTER={CLUSTER}", timeout=900)


def test_pfs_cluster_provisions_shares_stripes_and_tears_down(pfs):
    seconds, recaps = provision()
    print(f"\nprovision.yml from scratch: {seconds:.0f} s")
    assert set(recaps) == {"master", "worker1", "worker2", "st1", "st2"}
    assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in recaps.values()), recaps

    bricks = {}
    for server in ("st1", "st2"):
        root = f"/var/lib/spillway/pfs-{server}"
        record = json.loads(on(server, f"cat {root}/storage.json"))
        brick = record["backends"]["pfs"]
        assert (brick["kind"], brick["profile"], brick["mount"]) == ("pfs_brick", "ssd", f"{root}/mnt/pfs"), brick
        assert record["devices"] == [brick["device"]] and brick["device"].startswith("loop")
        assert brick["image"] == f"{root}/disks/pfs.img"
        # The brick directory glusterd serves is on that loop device, whose lower loop is over the harness's image.
        assert on(server, f"findmnt --noheadings --output SOURCE --target {root}/mnt/pfs/brick") == f"/dev/{brick['device']}"
        assert on(server, f"losetup --noheadings --output BACK-FILE /dev/{brick['lower_device']}") == brick["image"]
        # Only what a storage server needs: no Hadoop configuration, no Spark, no daemon of theirs; the collectors
        # (iostat watches the brick devices) are installed with the provisioning, from their bundle beside them.
        assert on(server, f"ls {root}").split() == ["bin", "collectors", "collectors.tar", "disks", "glusterfs",
                                                      "logs", "mnt", "monitoring", "run", "storage.json"]
        bricks[server] = brick["device"]
    volume = on("st1", "gluster --mode=script volume info pfs")
    assert "Brick1: st1:/var/lib/spillway/pfs-st1/mnt/pfs/brick" in volume
    assert "Brick2: st2:/var/lib/spillway/pfs-st2/mnt/pfs/brick" in volume

    storage = json.loads(on("worker1", "cat /var/lib/spillway/pfs-worker1/storage.json"))
    backend = storage["backends"]["pfs"]
    assert (backend["kind"], backend["fstype"], backend["source"]) == ("pfs", "fuse.glusterfs", "st1:/pfs")
    assert backend["data_root"] == "/var/lib/spillway/pfs-worker1/pfs/pfs/spillway/pfs/worker1"
    assert storage["data_dirs"]["hdfs_data"] == "/var/lib/spillway/pfs-worker1/mnt/pfs/hdfs/data"

    # Written in worker1's per-node directory, read on worker2 through worker2's own mount of the volume.
    written = on("worker1", f"cd /var/lib/spillway/pfs-worker1/mnt/pfs/fio && "
                            f"dd if=/dev/urandom of=probe.bin bs=1M count={PROBE_MB} status=none && "
                            "sync && sha256sum probe.bin").split()[0]
    read = on("worker2", "sha256sum /var/lib/spillway/pfs-worker2/pfs/pfs/spillway/pfs/worker1/fio/probe.bin")
    assert read.split()[0] == written

    # Sharded: the first piece is the file itself on one brick, the others are .shard/<gfid>.<n> on either.
    gfid = on("worker1", "python3 -c 'import os; print(os.getxattr(\"/var/lib/spillway/pfs-worker1/mnt/pfs/fio/probe.bin\", "
                         "\"glusterfs.gfid.string\").decode())'")
    assert re.fullmatch(r"[0-9a-f-]{36}", gfid), gfid
    pieces = {}
    for server in ("st1", "st2"):
        brick = f"/var/lib/spillway/pfs-{server}/mnt/pfs/brick"
        pieces[server] = int(on(server, f"n=$(ls {brick}/.shard | grep -c '^{gfid}[.]'); "
                                        f"[ -s {brick}/spillway/pfs/worker1/fio/probe.bin ] && n=$((n + 1)); echo $n"))
    print(f"pieces of the {PROBE_MB} MB file per brick: {pieces}")
    assert sum(pieces.values()) == PROBE_MB // SHARD_MB
    assert all(count > 0 for count in pieces.values()), pieces

    before = {server: sectors_written(server, device) for server, device in bricks.items()}
    dd = on("worker1", "cd /var/lib/spillway/pfs-worker1/mnt/pfs/fio && "
                       f"dd if=/dev/zero of=dd.bin bs=1M count={DD_MB} oflag=direct 2>&1 | tail -1")
    seconds = float(re.search(r"copied, ([0-9.]+) s", dd).group(1))
    written_mb = {server: (sectors_written(server, device) - before[server]) * 512 / 1e6
                  for server, device in bricks.items()}
    print("O_DIRECT dd through worker1's FUSE mount (write):\n" + dd)
    print("written on the brick devices meanwhile: " + ", ".join(
        f"{server} ({bricks[server]}) {mb:.0f} MB, {mb / seconds:.0f} MB/s" for server, mb in written_mb.items()))
    # 64 shards of 4 MB hashed over two bricks: each gets at least a sixteenth with near certainty (and strict O_DIRECT
    # makes the bricks write through at once, so /proc/diskstats has them when dd returns).
    assert all(mb >= DD_MB * 2**20 / 1e6 / 16 for mb in written_mb.values()), written_mb
    assert sum(written_mb.values()) >= DD_MB * 2**20 / 1e6, written_mb
    dd = on("worker1", "cd /var/lib/spillway/pfs-worker1/mnt/pfs/fio && "
                       "dd if=dd.bin of=/dev/null bs=1M iflag=direct 2>&1 | tail -1; rm -f dd.bin probe.bin")
    print("O_DIRECT dd through worker1's FUSE mount (read):\n" + dd)

    seconds, recaps = provision()
    print(f"provision.yml again: {seconds:.0f} s")
    assert {host: r["changed"] for host, r in recaps.items()} == dict.fromkeys(recaps, 0)

    started = time.monotonic()
    sh("make", "teardown", f"CLUSTER={CLUSTER}", timeout=900)
    print(f"make teardown CLUSTER={CLUSTER}: {time.monotonic() - started:.0f} s")
    left = emulation("leftovers")
    assert (left.returncode, left.stdout.strip()) == (0, "nothing"), left.stdout + left.stderr
    assert cluster_processes() == []
    loops = sh("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE").stdout
    assert "/var/lib/spillway/pfs-" not in loops, loops
