"""Filters that turn what losetup, findmnt and the blkio throttle files report into decisions.

The emulated_storage role gathers the host's state with read-only commands and hands it to these pure
functions, so "which loop devices are ours" and "what is a stale leftover" are decided in one readable,
testable place instead of in long Jinja expressions. Nothing here touches the host.

Ownership rule: a loop device is the harness's only if its backing file is an image under the cluster's
disks directory (a "lower" loop), or if it is backed by such a lower loop (an "upper" loop). Everything
else, including other users' loop devices, is never planned for removal.
"""

import json

LOOP_MAJOR = "7"
DELETED_SUFFIX = " (deleted)"


def _minor(majmin):
    return int(majmin.split(":")[1])


def spillway_loop_devices(losetup_json):
    """`losetup --list --json --output NAME,BACK-FILE,MAJ:MIN` (or `-j FILE`) -> list of dicts.

    Each item: name (kernel name, e.g. loop5), backing (path, " (deleted)" stripped), deleted (bool:
    the backing file was removed while attached), majmin ("7:5"). Sorted by minor number so that
    "the first loop over an image" means the same thing everywhere. losetup prints nothing at all when
    no loop matches.
    """
    text = (losetup_json or "").strip()
    if not text:
        return []
    devices = []
    for entry in json.loads(text).get("loopdevices", []):
        backing = entry.get("back-file") or ""
        deleted = backing.endswith(DELETED_SUFFIX)
        if deleted:
            backing = backing[: -len(DELETED_SUFFIX)]
        devices.append({
            "name": entry["name"].rsplit("/", 1)[-1],
            "backing": backing,
            "deleted": deleted,
            "majmin": entry["maj:min"].strip(),
        })
    return sorted(devices, key=lambda device: _minor(device["majmin"]))


def spillway_mounts(findmnt_json):
    """`findmnt --json --list --output TARGET,SOURCE,MAJ:MIN,FSTYPE` -> list of dicts (target, source, majmin, fstype)."""
    text = (findmnt_json or "").strip()
    if not text:
        return []
    return [
        {
            "target": entry["target"],
            "source": entry.get("source") or "",
            "majmin": (entry.get("maj:min") or "").strip(),
            "fstype": entry.get("fstype") or "",
        }
        for entry in json.loads(text).get("filesystems", [])
    ]


def spillway_throttle_rules(awk_text, knobs):
    """Rules of the blkio throttle files -> {knob: {majmin: value}} with every knob present.

    Input: lines "<file> MAJ:MIN value" as printed by `awk '{print FILENAME, $0}'` over the
    blkio.throttle.<knob>_device files (one command instead of one read per file).
    """
    rules = {knob: {} for knob in knobs}
    for line in (awk_text or "").splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        knob = fields[0].rsplit("/", 1)[-1][len("blkio.throttle."):-len("_device")]
        if knob in rules:
            rules[knob][fields[1]] = int(fields[2])
    return rules


def _under(path, directory):
    return path.startswith(directory.rstrip("/") + "/")


def spillway_storage_plan(loops, mounts, throttle_rules, spillway_root, keep_backends):
    """Decide, for the backends to keep, their loop chain, and list every harness leftover that is stale.

    loops: spillway_loop_devices output; mounts: spillway_mounts output;
    throttle_rules: {knob: {majmin: value}} for the four blkio knobs;
    keep_backends: names of the emulated backends that should exist (empty list = tear everything down).

    Returns {
      disks_dir: where the images live (the layout is defined here, once),
      chains: {backend: {image, mount, lower, lower_majmin, upper, mounted}}  (lower/upper None when not
              attached; mounted: the upper loop is mounted at the backend's mount point),
      stale_mounts: [target, ...]  deepest first, every mount under spillway_root that is not the kept
                    backend's upper loop mounted at its mount point (covers mounts whose loop is gone),
      stale_uppers / stale_lowers: [loop name, ...]  harness loops outside the kept chains,
      stale_rules: [majmin, ...]  throttle rules on stale lower loops and on loop devices that are no longer
                   attached at all (a rule outlives the detach and would throttle the next user of that loop).
    }
    """
    root = spillway_root.rstrip("/")
    disks_dir = root + "/disks"
    attached = {loop["name"]: loop for loop in loops}
    lowers = [loop for loop in loops if _under(loop["backing"], disks_dir)]
    lower_names = {loop["name"] for loop in lowers}
    uppers = [loop for loop in loops
              if loop["backing"].startswith("/dev/") and loop["backing"][len("/dev/"):] in lower_names]

    chains = {}
    for backend in keep_backends:
        image = "%s/%s.img" % (disks_dir, backend)
        lower = next((loop for loop in lowers if loop["backing"] == image and not loop["deleted"]), None)
        upper = None
        if lower is not None:
            upper = next((loop for loop in uppers if loop["backing"] == "/dev/" + lower["name"]), None)
        mount_point = "%s/mnt/%s" % (root, backend)
        chains[backend] = {
            "image": image,
            "mount": mount_point,
            "lower": lower["name"] if lower else None,
            "lower_majmin": lower["majmin"] if lower else None,
            "upper": upper["name"] if upper else None,
            "mounted": upper is not None and any(
                mount["target"] == mount_point and mount["source"] == "/dev/" + upper["name"] for mount in mounts),
        }

    kept_loops = {name for chain in chains.values() for name in (chain["lower"], chain["upper"]) if name}
    kept_mounts = {chain["mount"]: "/dev/" + chain["upper"] for chain in chains.values() if chain["upper"]}

    stale_mounts = sorted(
        {mount["target"] for mount in mounts
         if _under(mount["target"], root) and kept_mounts.get(mount["target"]) != mount["source"]},
        key=lambda target: target.count("/"), reverse=True)
    stale_uppers = [loop["name"] for loop in uppers if loop["name"] not in kept_loops]
    stale_lowers = [loop["name"] for loop in lowers if loop["name"] not in kept_loops]

    stale_lower_majmins = {attached[name]["majmin"] for name in stale_lowers}
    attached_majmins = {loop["majmin"] for loop in loops}
    ruled = {majmin for rules in throttle_rules.values() for majmin in rules}
    stale_rules = sorted(
        (majmin for majmin in ruled
         if majmin.split(":")[0] == LOOP_MAJOR
         and (majmin in stale_lower_majmins or majmin not in attached_majmins)),
        key=_minor)

    return {
        "disks_dir": disks_dir,
        "chains": chains,
        "stale_mounts": stale_mounts,
        "stale_uppers": stale_uppers,
        "stale_lowers": stale_lowers,
        "stale_rules": stale_rules,
    }


class FilterModule:
    def filters(self):
        return {
            "spillway_loop_devices": spillway_loop_devices,
            "spillway_mounts": spillway_mounts,
            "spillway_throttle_rules": spillway_throttle_rules,
            "spillway_storage_plan": spillway_storage_plan,
        }
