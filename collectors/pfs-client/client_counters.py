"""What start and stop of the pfs-client collector share: the pfs backends of this worker and one snapshot of each
file system client's own counters, written verbatim behind a one-line JSON header (docs/collectors.md, pfs-client).

Nothing runs in the background: the clients keep cumulative counters, so two snapshots bound the window."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from spillway_collector import Context, NothingHere

HEADER_PREFIX = "# spillway-pfs-client "
TIMEOUT_S = 30
# GlusterFS (10) writes io-stats dumps only below this directory: `<value>.<io-stats instance>`; a value with
# "../" is refused. glusterd creates the directory, but a client-only host may not have it (nor a private /run).
GLUSTER_DUMP_DIR = Path("/var/run/gluster")
GLUSTER_DUMP_WAIT_S = 5.0
LUSTRE_STATS_GLOBS = ("/proc/fs/lustre/llite/*/stats", "/sys/kernel/debug/lustre/llite/*/stats")


def pfs_backends(root: Path) -> dict[str, dict]:
    """The `kind: pfs` backends of this host's storage.json (role storage). None of that kind, the usual case on
    disk clusters, or no storage.json: nothing to observe here (NothingHere), not a failure."""
    try:
        storage = json.loads((root / "storage.json").read_text())
    except FileNotFoundError:
        raise NothingHere(f"no {root / 'storage.json'}: no pfs backend known on this host") from None
    backends = {name: backend for name, backend in sorted((storage.get("backends") or {}).items())
                if (backend or {}).get("kind") == "pfs"}
    if not backends:
        raise NothingHere("no pfs backend in storage.json: no parallel file system client on this host")
    return backends


def snapshot_all(ctx: Context, phase: str) -> None:
    """Write client-<backend>.<phase> for every pfs backend; a backend whose counters cannot be read gets a note.
    A snapshot already taken is kept, so a second stop changes nothing."""
    for name, backend in pfs_backends(ctx.root).items():
        dest = ctx.out / f"client-{name}.{phase}"
        if dest.exists():
            continue
        fstype = backend.get("fstype") or ""
        mount = backend.get("path") or backend.get("mount") or ""
        if fstype == "lustre":
            found = lustre_llite_stats(mount)
        elif fstype == "fuse.glusterfs":
            found = gluster_io_stats_dump(mount, f"spillway-pfs-client-{ctx.run_id}-{ctx.workload_id}-{name}-{phase}")
        else:
            found = (None, f"no client counter source known for file system type {fstype!r}")
        counters, source = found
        if counters is None:
            ctx.note(f"backend {name} ({fstype} at {mount}), {phase}: nothing recorded: {source}")
            continue
        header = {"epoch": round(time.time(), 6), "backend": name, "fstype": fstype, "mount": mount,
                  "source": source}
        dest.write_text(HEADER_PREFIX + json.dumps(header, sort_keys=True) + "\n" + counters)


def lustre_llite_stats(mount: str) -> tuple[str | None, str]:
    """(llite stats text as `lctl get_param` prints it, how it was read), or (None, why not).

    The llite instance of this mount comes from `lfs getname <mount>` (`<fsname>-<instance> <mount>`); without lfs
    every mounted instance is recorded."""
    instance = "*"
    if shutil.which("lfs"):
        named = subprocess.run(["lfs", "getname", mount], capture_output=True, text=True, timeout=TIMEOUT_S)
        if named.returncode == 0 and named.stdout.split():
            instance = named.stdout.split()[0]
    if shutil.which("lctl"):
        param = f"llite.{instance}.stats"
        result = subprocess.run(["lctl", "get_param", param], capture_output=True, text=True, timeout=TIMEOUT_S)
        if result.returncode == 0 and result.stdout.strip():
            return result.stdout, f"lctl get_param {param}"
        lctl_said = f"lctl get_param {param}: {result.stderr.strip() or 'nothing'}; "
    else:
        lctl_said = "no lctl; "
    for pattern in LUSTRE_STATS_GLOBS:
        files = sorted(glob.glob(pattern.replace("/*/", f"/{instance}/")))
        if files:
            # The same layout as lctl's output, so one parser reads both.
            text = "".join(f"llite.{Path(file).parent.name}.stats=\n{Path(file).read_text()}" for file in files)
            return text, " ".join(files)
    searched = " or ".join(pattern.split("/llite")[0] for pattern in LUSTRE_STATS_GLOBS)
    return None, f"{lctl_said}no Lustre llite stats under {searched}: no Lustre client here"


def gluster_io_stats_dump(mount: str, name: str) -> tuple[str | None, str]:
    """(the FUSE client's io-stats dump, how it was read), or (None, why not).

    Setting the virtual xattr `trusted.io-stats-dump` to <name> on the mount makes the client write
    /var/run/gluster/<name>.<io-stats instance, the volume name>; the file is read and removed."""
    if not os.path.ismount(mount):
        return None, f"{mount} is not mounted"
    GLUSTER_DUMP_DIR.mkdir(parents=True, exist_ok=True)
    pattern = str(GLUSTER_DUMP_DIR / f"{glob.escape(name)}.*")
    for stale in glob.glob(pattern):
        os.unlink(stale)
    try:
        os.setxattr(mount, "trusted.io-stats-dump", name.encode())
    except OSError as error:
        return None, f"setxattr trusted.io-stats-dump on {mount}: {error}"
    deadline = time.monotonic() + GLUSTER_DUMP_WAIT_S
    while not (dumps := sorted(glob.glob(pattern))) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not dumps:
        return None, (f"no io-stats dump {pattern} within {GLUSTER_DUMP_WAIT_S:.0f} s after setting "
                      "trusted.io-stats-dump (see the client's log: conditional_dump)")
    texts = [Path(dump).read_text(errors="replace") for dump in dumps]
    for dump in dumps:
        os.unlink(dump)
    return "".join(texts), f"trusted.io-stats-dump -> {', '.join(dumps)}"
