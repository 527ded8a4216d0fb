"""One bench per cluster at a time. Two benches on one cluster provision and restart each other's daemons and
measure each other's I/O, and a teardown during a bench deletes the disks it writes: both corrupt results without
failing clearly. The bench holds an exclusive flock on /run/lock/spillway-<cluster>.lock while it runs (the
kernel lets it go when the process ends, however it ends); `make teardown` and `make cluster-down` refuse while
it is held.

    python -m spillway.clusterlock check <cluster>    exit 2 with the holder named when a bench holds the lock
"""
import fcntl
import os
import sys
from contextlib import contextmanager
from pathlib import Path

LOCK_DIR = Path("/run/lock")


class ClusterBusy(Exception):
    """Another process holds the cluster."""


def lock_path(cluster):
    return LOCK_DIR / f"spillway-{cluster}.lock"


@contextmanager
def held(cluster, holder):
    """Hold `cluster` exclusively for the block; `holder` (what this process is) is what others are told."""
    path = lock_path(cluster)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "a process that did not say"
            raise ClusterBusy(
                f"cluster '{cluster}' is in use by {other} ({path}): wait until it ends, or stop it "
                f"(Ctrl-C in its terminal, or kill the pid), then try again") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{holder} (pid {os.getpid()})\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "check":
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with held(argv[1], "a check"):
            return 0
    except ClusterBusy as busy:
        print(f"error: {busy}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
