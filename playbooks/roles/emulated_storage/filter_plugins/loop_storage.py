"""Filters that turn what losetup, findmnt and the blkio throttle files report into decisions.

The emulated_storage role gathers the host's state with read-only commands and hands it to these pure
functions, so "which loop devices are ours" and "what is a stale leftover" are decided in one readable,
testable place instead of in long Jinja expressions. Nothing here touches the host.

Ownership rule: a loop device is the harness's only if its backing file is under the cluster's disks
directory (a "lower" loop: over an image, or over the file a disk model serves from <disks>/<backend>.model/),
or if it is backed by such a lower loop (an "upper" loop). A disk model's FUSE mount is the harness's only when
it is <disks>/<name>.model of file system type MODEL_FSTYPE. Everything else, including other users' loop devices
and mounts, is never planned for removal.
"""

import json

LOOP_MAJOR = "7"
DELETED_SUFFIX = " (deleted)"
MODEL_FSTYPE = "fuse.spillway-hdd-model"   # the disk model's FUSE mounts (files/spillway-hdd-model.c)
MODEL_SUFFIX = ".model"                    # <disks>/<backend>.model: where a model serves <backend>.img as `disk`
MODEL_FILE = "disk"


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


def _model_paths(disks_dir, backend):
    """(mount point of the model serving <backend>.img, the file it serves there)."""
    mount = "%s/%s%s" % (disks_dir.rstrip("/"), backend, MODEL_SUFFIX)
    return mount, mount + "/" + MODEL_FILE


def _disks_dir(spillway_root):
    return spillway_root.rstrip("/") + "/disks"


def spillway_model_commands(disks, binary, spillway_root):
    """{backend: argv of its model server} for the disks whose spec has a model (emulated_storage_disks).

    The server serves <disks>/<backend>.img on the FUSE descriptor it inherits as fd 3 (the role mounts it), in
    the foreground under the supervisor, with the profile's options and then its host_path ones, each as
    --NAME VALUE in the profile's order."""
    commands = {}
    for backend, disk in sorted(disks.items()):
        model = disk.get("model")
        if not model:
            continue
        argv = [binary, "--foreground", "--image", "%s/%s.img" % (_disks_dir(spillway_root), backend),
                "--mountpoint", "/dev/fd/3"]
        for options in (model.get("options") or {}, model.get("host_path") or {}):
            for name, value in options.items():
                argv += ["--" + name, str(value)]
        commands[backend] = argv
    return commands


def spillway_model_status(lines):
    """The role's look at each model server ("<backend> current|stale <running binary or ->" per line) ->
    {backend: {"verdict": "current" or "stale", "binary": path or None}}."""
    status = {}
    for line in lines or []:
        fields = line.split()
        if len(fields) == 3 and fields[1] in ("current", "stale"):
            status[fields[0]] = {"verdict": fields[1], "binary": None if fields[2] == "-" else fields[2]}
    return status


def spillway_storage_plan(loops, mounts, throttle_rules, spillway_root, keep_backends, models=None):
    """Decide, for the backends to keep, their loop chain, and list every harness leftover that is stale.

    loops: spillway_loop_devices output; mounts: spillway_mounts output;
    throttle_rules: {knob: {majmin: value}} for the four blkio knobs;
    keep_backends: names of the emulated backends that should exist (empty list = tear everything down).
    models: {backend: {"verdict": "current" or "stale", ...}} (spillway_model_status) for the kept backends whose
            disk is a model (the hdd profile): "current" when its server runs with the wanted options; a model that is not current is stale with all above it
            (its loops and filesystem mount), so that it is rebuilt.

    Returns {
      disks_dir: where the images live (the layout is defined here, once),
      model_fstype: the file system type a disk model's FUSE mount is made with,
      chains: {backend: {image, backing, model_mount, served, mount, lower, lower_majmin, upper, mounted}}
              (backing: the lower loop's file, the image or the model's served file; model_mount: None for a
              plain image; served: the model's mount is there and current; lower/upper None when not
              attached; mounted: the upper loop is mounted at the backend's mount point),
      stale_mounts: [target, ...]  deepest first, every mount under spillway_root that is not the kept
                    backend's upper loop mounted at its mount point (covers mounts whose loop is gone), disk
                    models' mounts left out: they go after the loops (stale_model_mounts),
      stale_model_mounts: [{target, backend}, ...]  disk models' FUSE mounts under the disks directory that are not
                    a kept, current model's (unmounted after the loops over them are detached),
      stale_uppers / stale_lowers: [loop name, ...]  harness loops outside the kept chains,
      stale_rules: [majmin, ...]  throttle rules on stale lower loops and on loop devices that are no longer
                   attached at all (a rule outlives the detach and would throttle the next user of that loop).
    }
    """
    root = spillway_root.rstrip("/")
    disks_dir = _disks_dir(root)
    attached = {loop["name"]: loop for loop in loops}
    lowers = [loop for loop in loops if _under(loop["backing"], disks_dir)]
    lower_names = {loop["name"] for loop in lowers}
    uppers = [loop for loop in loops
              if loop["backing"].startswith("/dev/") and loop["backing"][len("/dev/"):] in lower_names]

    models = models or {}
    model_mounts = {mount["target"]: mount for mount in mounts
                    if mount["fstype"] == MODEL_FSTYPE and _under(mount["target"], disks_dir)
                    and "/" not in mount["target"][len(disks_dir) + 1:] and mount["target"].endswith(MODEL_SUFFIX)}
    chains = {}
    for backend in keep_backends:
        image = "%s/%s.img" % (disks_dir, backend)
        model_mount, backing = _model_paths(disks_dir, backend) if backend in models else (None, image)
        served = model_mount in model_mounts and (models.get(backend) or {}).get("verdict") == "current"
        lower = next((loop for loop in lowers if loop["backing"] == backing and not loop["deleted"]), None)
        if model_mount is not None and not served:
            lower = None  # a loop over a model that is gone or outdated is stale, with everything above it
        upper = None
        if lower is not None:
            upper = next((loop for loop in uppers if loop["backing"] == "/dev/" + lower["name"]), None)
        mount_point = "%s/mnt/%s" % (root, backend)
        chains[backend] = {
            "image": image,
            "backing": backing,
            "model_mount": model_mount,
            "served": served,
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
         if _under(mount["target"], root) and mount["target"] not in model_mounts
         and kept_mounts.get(mount["target"]) != mount["source"]},
        key=lambda target: (-target.count("/"), target))  # deepest first; a fixed order among equals
    kept_models = {chain["model_mount"] for chain in chains.values() if chain["served"]}
    stale_model_mounts = [{"target": target, "backend": target[len(disks_dir) + 1:-len(MODEL_SUFFIX)]}
                          for target in sorted(model_mounts) if target not in kept_models]
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
        "model_fstype": MODEL_FSTYPE,
        "chains": chains,
        "stale_mounts": stale_mounts,
        "stale_model_mounts": stale_model_mounts,
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
            "spillway_model_commands": spillway_model_commands,
            "spillway_model_status": spillway_model_status,
        }
