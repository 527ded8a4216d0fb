"""One action per cluster, and per resource, at a time. Two benches on one cluster provision and restart each
other's daemons and measure each other's I/O, and a teardown during a bench deletes the disks it writes: both
corrupt results without failing clearly. The same holds for two clusters that share a resource: a host (every
cluster uses the same ports there, and provisioning one stops the others' daemons), a folder, a device, an
emulation's namespaces or subnet (spillway.resources).

An action (a bench, `make setup`, `make teardown`, `make cluster-up`, `make cluster-down`) holds an exclusive
flock on /run/lock/spillway-<cluster>.lock and one on /run/lock/spillway/<key>.lock per resource key of its
inventory while it runs; a folder's parents are held shared, so that another action holding a folder inside it or
around it is refused too. The kernel lets the locks go when the process ends, however it ends.

    python -m spillway.clusterlock check <cluster>    exit 2 with the holder named when an action holds the
                                                     cluster or (when the inventory can be read) any of its resources
    python -m spillway.clusterlock run <cluster> --as WHAT -- COMMAND...
                                                     validate the inventory, hold the cluster and its resources,
                                                     run COMMAND, let go when it ends; exit 2 when refused
"""
import fcntl
import hashlib
import os
import signal
import subprocess
import sys
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path

LOCK_DIR = Path("/run/lock")


class ClusterBusy(Exception):
    """Another process holds the cluster or one of its resources."""


def lock_path(cluster):
    return LOCK_DIR / f"spillway-{cluster}.lock"


def resource_lock_path(key):
    return LOCK_DIR / "spillway" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.lock"


@contextmanager
def _flock(path, holder, exclusive, refusal):
    """Hold `path` for the block; `refusal(other)` is the ClusterBusy message when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "a process that did not say"
            raise ClusterBusy(refusal(other)) from None
        # Holders of a shared lock all write here (the last one's name stays): whoever is refused by it learns
        # of one of them.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{holder} (pid {os.getpid()})\n".encode(), 0)
        try:
            yield
        finally:
            if exclusive:
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)


@contextmanager
def held(cluster, holder, inventory=None):
    """Hold `cluster` exclusively for the block, and with `inventory` (a loaded spillway.inventory.Inventory) each
    of its resources; `holder` (what this process is) is what others are told."""
    with ExitStack() as stack:
        stack.enter_context(_flock(lock_path(cluster), holder, True, lambda other: (
            f"cluster '{cluster}' is in use by {other} ({lock_path(cluster)}): wait until it ends, or stop it "
            f"(Ctrl-C in its terminal, or kill the pid), then try again")))
        if inventory is not None:
            from spillway import resources
            for key, what, exclusive in resources.lock_keys(inventory):
                path = resource_lock_path(key)
                stack.enter_context(_flock(path, holder, exclusive, lambda other, what=what, path=path: (
                    f"{what}, a resource of inventories/{cluster}, is in use by {other} ({path}): that action "
                    f"holds it and inventory '{cluster}' shares it; wait until it ends, or stop it (Ctrl-C in its "
                    f"terminal, or kill the pid), then try again")))
        yield


def _inventory(cluster, required):
    """The validated inventory, or None when it cannot be had here (no inventory, or the system python lacks
    PyYAML/jsonschema: the venv's run of the same action checks the resources)."""
    try:
        from spillway import inventory
    except ImportError:
        if required:
            raise
        return None
    if not required and not (inventory.INVENTORIES / cluster / "hosts.yml").is_file():
        return None
    return inventory.load(cluster)


# Set for the command `run` runs: the cluster whose locks its parent holds, so that a step of it that takes them
# itself (python -m emulation up/down) does not refuse its own make target.
HELD_BY_PARENT = "SPILLWAY_CLUSTER_HELD"


def held_unless_by_parent(cluster, holder, inventory):
    """held(), or nothing when this process runs under `clusterlock run` for the same cluster."""
    if os.environ.get(HELD_BY_PARENT) == cluster:
        return nullcontext()
    return held(cluster, holder, inventory)


def _run(command, cluster):
    """Run `command` to its end: the terminal's Ctrl-C reaches it directly (same process group), so this process
    outlives it and holds the locks until it is done; a SIGTERM or SIGHUP sent to this process alone is passed on."""
    proc = subprocess.Popen(command, env={**os.environ, HELD_BY_PARENT: cluster})
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda received, _: proc.send_signal(received))
    return proc.wait()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "check":
        action, cluster, what, command = "check", argv[1], "a check", None
    elif len(argv) >= 6 and argv[0] == "run" and argv[2] == "--as" and argv[4] == "--":
        action, cluster, what, command = "run", argv[1], argv[3], argv[5:]
    else:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        from spillway.inventory import InventoryError
    except ImportError:  # the system python without PyYAML: only the cluster's own lock is checked
        class InventoryError(Exception):
            pass
    try:
        # The cluster's own lock first: a busy cluster is refused before its inventory is even read.
        with held(cluster, what):
            pass
        inv = _inventory(cluster, required=action == "run")
        with held(cluster, what, inv):
            return 0 if command is None else _run(command, cluster)
    except ClusterBusy as busy:
        print(f"error: {busy}", file=sys.stderr)
    except InventoryError as err:
        print(f"error: inventory '{cluster}' is invalid (nothing was touched):\n{err}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
