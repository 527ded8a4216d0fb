"""Decide what the storage role may do with a `kind: device` backend, from read-only probes.

The role probes each device with `wipefs --no-act --json` (every signature: filesystems, RAID members,
partition tables) and `lsblk --json --output KNAME,TYPE,MOUNTPOINTS` (partitions and where anything is
mounted) and hands the answers to spillway_device_verdict, so the safety rules live in one readable,
testable place. Nothing here touches the host.

Rules (docs/storage.md, "Real block devices"):
- nothing at all without `destructive_ok: true`;
- a device mounted anywhere but its harness mount point is refused (in use);
- the harness's own filesystem (type = fstype, label = spillway_device_label) is mounted, never remade;
- any other signature or a partition is refused unless also `wipe: true` (then wiped and formatted);
- a blank device is formatted.
"""

import hashlib
import json

# xfs labels hold at most 12 bytes (ext4: 16), so the marker is a fixed-size digest of cluster and backend.
LABEL_PREFIX = "sw"
LABEL_DIGEST_CHARS = 10


def spillway_device_label(cluster, backend):
    """The filesystem label that marks a device formatted by the harness for this cluster and backend."""
    digest = hashlib.sha1(f"{cluster}/{backend}".encode()).hexdigest()
    return LABEL_PREFIX + digest[:LABEL_DIGEST_CHARS]


def _signatures(wipefs_json):
    text = (wipefs_json or "").strip()
    return json.loads(text).get("signatures", []) if text else []


def _tree(lsblk_json):
    """(the device's own entry, its descendants) from lsblk's JSON."""
    text = (lsblk_json or "").strip()
    devices = json.loads(text).get("blockdevices", []) if text else []
    if not devices:
        return None, []
    descendants, stack = [], list(devices[0].get("children") or [])
    while stack:
        child = stack.pop()
        descendants.append(child)
        stack.extend(child.get("children") or [])
    return devices[0], descendants


def _mountpoints(entry):
    points = entry.get("mountpoints")
    if points is None:
        points = [entry.get("mountpoint")]
    return [p for p in points if p]


def _describe(signatures, partitions):
    found = []
    for sig in signatures:
        what = f"a {sig.get('type') or 'unknown'} signature at offset {sig.get('offset')}"
        if sig.get("label"):
            what += f" (label '{sig['label']}')"
        found.append(what)
    if partitions:
        found.append("partitions " + ", ".join(p["kname"] for p in partitions))
    return "; ".join(found) or "no filesystem signature or partition table"


def spillway_device_verdict(spec, backend, is_block_device, wipefs_json, lsblk_json, mount_point, label):
    """-> {action, found, kname, problem}.

    action: 'mounted' (the harness's filesystem is mounted at mount_point: nothing to do), 'mount' (it exists,
    mount it), 'format' (blank device), 'wipe' (erase the signatures, then format) or 'refuse' (problem says
    why and which inventory key would allow it). found: what the probes saw, for messages and storage.json.
    """
    device = spec["device"]
    key = f"spillway_backends.{backend}"
    verdict = {"action": "refuse", "found": "", "kname": None, "problem": None}
    if not is_block_device:
        verdict["found"] = "no block device at that path"
        verdict["problem"] = (f"{key}.device = {device} is not a block device on this host (missing or a regular "
                              f"file). Fix: set {key}.device to the disk to benchmark.")
        return verdict

    entry, descendants = _tree(lsblk_json)
    signatures = _signatures(wipefs_json)
    partitions = [d for d in descendants if d.get("type") == "part"]
    found = _describe(signatures, partitions)
    verdict.update(found=found, kname=entry["kname"] if entry else None)

    if not spec.get("destructive_ok"):
        verdict["problem"] = (f"{key}: refusing to format or mount {device} (found: {found}). The harness makes "
                              f"a new filesystem on a device, erasing it, only where the inventory says so: set "
                              f"{key}.destructive_ok: true.")
        return verdict

    elsewhere = sorted({p for e in [entry or {}] + descendants for p in _mountpoints(e)} - {mount_point})
    if elsewhere:
        verdict["problem"] = (f"{key}: {device} is in use, mounted at {', '.join(elsewhere)} (found: {found}); the "
                              f"harness never formats or remounts a device in use, whatever destructive_ok and wipe "
                              f"say. Fix: unmount it, or pick another {key}.device.")
        return verdict

    own = (len(signatures) == 1 and not descendants and signatures[0].get("type") == spec["fstype"]
           and signatures[0].get("label") == label)
    if own:
        verdict["action"] = "mounted" if mount_point in _mountpoints(entry) else "mount"
    elif signatures or descendants:
        if spec.get("wipe"):
            verdict["action"] = "wipe"
        else:
            verdict["problem"] = (f"{key}: {device} is not blank (found: {found}) and not the harness's own "
                                  f"{spec['fstype']} filesystem (label '{label}'); destructive_ok alone never "
                                  f"erases existing data. Fix: set {key}.wipe: true to erase every signature and "
                                  f"reformat it.")
    else:
        verdict["action"] = "format"
    return verdict


class FilterModule:
    def filters(self):
        return {
            "spillway_device_label": spillway_device_label,
            "spillway_device_verdict": spillway_device_verdict,
        }
