"""What ties a block device to something else on its host, so that a device backend is only ever a free device.

A `kind: device` backend is formatted when the inventory allows it (destructive_ok, wipe). Its signatures alone
(wipefs, lsblk) do not show that it is someone else's: a loop device that backs one of the harness's own emulated
disks, a disk under an LVM volume or a RAID, a disk a loop device is attached to, the disk of the root file system.
`ties` lists each such tie, read from sysfs and /proc/self/mountinfo only; a backend with any is refused:

- it, a partition of it, or anything built on it (holders, recursively) is mounted, other than at the harness's own
  mount point of that backend (a device it already formatted and mounted there is its own), or holds the root
  file system;
- something is built on it (a device-mapper or md device: its holders);
- it is built on something (its slaves) that is a loop device, mounted, or the root file system's;
- a loop device is attached to it (a loop's backing file is this device);
- it is a loop device over another block device that is itself tied or is a loop, or over a file inside a folder
  the harness owns (an ownership record above it: an emulated disk's image or model, docs/safety.md) or inside
  one of `harness_paths` (every inventory's roots and state_dirs on this machine, known to validation).

Validation calls it for the devices of this machine (spillway.resources.device_problems); role storage's device
judgement calls it on each worker (module spillway_device_ties, which ships this file as its module_utils).
Standard library only, and no import from the spillway package.
"""
import os
import stat

SYS_BLOCK = "/sys/class/block"
OWNER_RECORD = ".spillway-owner.json"
# A loop over a loop over ... : the emulated disks chain two; deeper is refused without looking further.
MAX_CHAIN = 4


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def mounts():
    """{"major:minor": [mount points]} of this mount namespace."""
    found = {}
    for line in _read("/proc/self/mountinfo").splitlines():
        fields = line.split()
        if len(fields) > 4:
            found.setdefault(fields[2], []).append(fields[4].replace("\\040", " "))
    return found


def kname_of(device):
    """The kernel name (sda, loop3, dm-0) of a block device path, or None."""
    try:
        info = os.stat(device)
    except OSError:
        return None
    if not stat.S_ISBLK(info.st_mode):
        return None
    return os.path.basename(os.path.realpath(f"/sys/dev/block/{os.major(info.st_rdev)}:{os.minor(info.st_rdev)}"))


def _partitions(kname):
    return [name for name in _listdir(f"{SYS_BLOCK}/{kname}") if os.path.exists(f"{SYS_BLOCK}/{kname}/{name}/partition")]


def _closure(kname, link):
    """Every device reachable through `link` (holders or slaves) from kname, nearest first."""
    seen, todo = [], [kname]
    while todo:
        for name in _listdir(f"{SYS_BLOCK}/{todo.pop(0)}/{link}"):
            if name not in seen:
                seen.append(name)
                todo.append(name)
    return seen


def _number(kname):
    return _read(f"{SYS_BLOCK}/{kname}/dev")


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _owned_folder(path):
    """The nearest folder above `path` that carries a Spillway ownership record, or None."""
    folder = os.path.dirname(path)
    while True:
        if os.path.lexists(os.path.join(folder, OWNER_RECORD)):
            return folder
        if folder == os.path.dirname(folder):
            return None
        folder = os.path.dirname(folder)


def _loops_over(kname, number):
    """The loop devices whose backing file is this device."""
    found = []
    for loop in _listdir(SYS_BLOCK):
        backing = _read(f"{SYS_BLOCK}/{loop}/loop/backing_file")
        if loop != kname and backing and kname_of(backing) == kname:
            found.append(loop)
    return found


def _loop_ties(kname, harness_paths, depth):
    backing = _read(f"{SYS_BLOCK}/{kname}/loop/backing_file")
    if not backing:
        return []
    if kname_of(backing):
        below = kname_of(backing)
        if below.startswith("loop"):
            return [f"is a loop device over loop device /dev/{below} (an emulated disk is such a chain)"]
        return [f"is a loop device over /dev/{below}, which {tie}"
                for tie in ties_of(below, None, harness_paths, depth + 1)]
    real = os.path.realpath(backing)
    owner = _owned_folder(real)
    if owner:
        return [f"is a loop device over {backing}, inside {owner}, which a Spillway cluster owns (its ownership "
                f"record): one of the harness's own emulated disks"]
    return [f"is a loop device over {backing}, inside {folder}, which a Spillway inventory uses"
            for folder in harness_paths if _inside(real, folder)][:1]


def ties_of(kname, own_mount_point, harness_paths=(), depth=0):
    """The ties of the device with kernel name `kname` (see the module's doc), as phrases after 'it '."""
    if depth > MAX_CHAIN:
        return ["is at the end of a chain of devices deeper than the harness follows"]
    mounted = mounts()
    root = next((number for number, points in mounted.items() if "/" in points), None)
    found = []
    members = [kname] + _partitions(kname)
    holders = [h for member in members for h in _closure(member, "holders")]
    for name in members + holders:
        number = _number(name)
        if number == root:
            found.append(f"holds the root file system (/dev/{name})")
        elsewhere = [p for p in mounted.get(number, []) if p != own_mount_point]
        if elsewhere and number != root:
            found.append(f"is in use: /dev/{name} is mounted at {', '.join(sorted(elsewhere))}")
    if holders:
        found.append(f"is held by {', '.join('/dev/' + h for h in holders)} (something is built on it)")
    for slave in _closure(kname, "slaves"):
        number = _number(slave)
        if slave.startswith("loop") or number == root or mounted.get(number):
            found.append(f"is built on /dev/{slave}, a loop device, mounted or the root file system's")
    for loop in _loops_over(kname, _number(kname)):
        found.append(f"backs loop device /dev/{loop}")
    if kname.startswith("loop"):
        found += _loop_ties(kname, harness_paths, depth)
    return list(dict.fromkeys(found))


def ties(device, own_mount_point=None, harness_paths=()):
    """The ties of the block device at path `device`; [] when there are none or it is no block device (the
    caller's own check names that)."""
    kname = kname_of(device)
    return ties_of(kname, own_mount_point, tuple(harness_paths)) if kname else []
