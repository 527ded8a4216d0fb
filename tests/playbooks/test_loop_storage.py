"""The emulated_storage role's planning filters (filter_plugins/loop_storage.py) on disk models: which loops and
mounts a modelled disk keeps, when its model is stale with everything above it, and the server's command line.

Pure functions on recorded-shape inputs (losetup and findmnt JSON as the role reads them); no host is touched."""
import importlib.util
import json
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "loop_storage", REPO / "playbooks/roles/emulated_storage/filter_plugins/loop_storage.py")
loop_storage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(loop_storage)

ROOT = "/var/lib/spillway/t"
DISKS = ROOT + "/disks"
KNOBS = ("read_iops", "write_iops", "read_bps", "write_bps")
HDD_MODEL = yaml.safe_load((REPO / "inventories/storage-profiles.yml").read_text())["profiles"]["hdd"]["model"]


def losetup(*pairs):
    """losetup --list --json output for (name, backing file) pairs, as the role reads it."""
    return json.dumps({"loopdevices": [{"name": f"/dev/{name}", "back-file": backing, "maj:min": f"7:{name[4:]}"}
                                       for name, backing in pairs]})


def findmnt(*entries):
    return json.dumps({"filesystems": [{"target": target, "source": source, "maj:min": "0:1", "fstype": fstype}
                                       for target, source, fstype in entries]})


# The chain the role builds for a modelled hdd next to a plain ssd (as on inventories/local).
BUILT_LOOPS = losetup(("loop4", f"{DISKS}/hdd.model/disk"), ("loop5", "/dev/loop4"),
                      ("loop6", f"{DISKS}/ssd.img"), ("loop7", "/dev/loop6"))
BUILT_MOUNTS = findmnt((f"{DISKS}/hdd.model", "spillway-hdd-model", "fuse.spillway-hdd-model"),
                       (f"{ROOT}/mnt/hdd", "/dev/loop5", "ext4"), (f"{ROOT}/mnt/ssd", "/dev/loop7", "ext4"))


def status(*lines):
    return loop_storage.spillway_model_status(list(lines))


def plan(loops, mounts, keep, models):
    return loop_storage.spillway_storage_plan(
        loop_storage.spillway_loop_devices(loops), loop_storage.spillway_mounts(mounts),
        {knob: {} for knob in KNOBS}, ROOT, keep, models)


def test_a_current_model_keeps_its_mount_and_the_loops_over_its_served_file():
    result = plan(BUILT_LOOPS, BUILT_MOUNTS, ["hdd", "ssd"], status("hdd current /r/bin/spillway-hdd-model-abc"))
    hdd, ssd = result["chains"]["hdd"], result["chains"]["ssd"]
    assert hdd == {"image": f"{DISKS}/hdd.img", "backing": f"{DISKS}/hdd.model/disk",
                   "model_mount": f"{DISKS}/hdd.model", "served": True, "mount": f"{ROOT}/mnt/hdd",
                   "lower": "loop4", "lower_majmin": "7:4", "upper": "loop5", "mounted": True}
    assert ssd["backing"] == f"{DISKS}/ssd.img" and ssd["model_mount"] is None and ssd["mounted"]
    assert result["stale_mounts"] == [] and result["stale_model_mounts"] == []
    assert result["stale_uppers"] == [] and result["stale_lowers"] == []
    assert result["model_fstype"] == "fuse.spillway-hdd-model"


def test_a_stale_model_goes_with_its_loops_and_filesystem_mount_its_fuse_mount_listed_apart():
    """Its server died or its command line changed: the mount over it, both loops and the FUSE mount go; the
    FUSE mount is not among the mounts unmounted before the loops (it would be busy)."""
    result = plan(BUILT_LOOPS, BUILT_MOUNTS, ["hdd", "ssd"], status("hdd stale -"))
    assert result["chains"]["hdd"]["served"] is False and result["chains"]["hdd"]["lower"] is None
    assert result["stale_mounts"] == [f"{ROOT}/mnt/hdd"]
    assert result["stale_uppers"] == ["loop5"] and result["stale_lowers"] == ["loop4"]
    assert result["stale_model_mounts"] == [{"target": f"{DISKS}/hdd.model", "backend": "hdd"}]
    assert result["chains"]["ssd"]["mounted"]


def test_teardown_plans_every_model_mount_and_loop_away():
    result = plan(BUILT_LOOPS, BUILT_MOUNTS, [], {})
    assert result["chains"] == {}
    assert result["stale_mounts"] == [f"{ROOT}/mnt/hdd", f"{ROOT}/mnt/ssd"]
    assert result["stale_model_mounts"] == [{"target": f"{DISKS}/hdd.model", "backend": "hdd"}]
    assert result["stale_lowers"] == ["loop4", "loop6"] and result["stale_uppers"] == ["loop5", "loop7"]


def test_a_backend_that_became_a_model_drops_its_loop_over_the_plain_image():
    loops = losetup(("loop4", f"{DISKS}/hdd.img"), ("loop5", "/dev/loop4"))
    mounts = findmnt((f"{ROOT}/mnt/hdd", "/dev/loop5", "ext4"))
    result = plan(loops, mounts, ["hdd"], status("hdd stale -"))
    assert result["chains"]["hdd"]["lower"] is None and result["chains"]["hdd"]["image"] == f"{DISKS}/hdd.img"
    assert result["stale_lowers"] == ["loop4"] and result["stale_mounts"] == [f"{ROOT}/mnt/hdd"]
    assert result["stale_model_mounts"] == []


def test_fuse_mounts_that_are_not_a_models_are_never_planned_away():
    """Another FUSE file system under the root, a model-type mount outside the disks directory or deeper in it:
    none is the harness's model mount."""
    mounts = findmnt((f"{ROOT}/elsewhere.model", "x", "fuse.spillway-hdd-model"),
                     (f"{DISKS}/a/b.model", "x", "fuse.spillway-hdd-model"),
                     (f"{DISKS}/c.model", "x", "fuse.sshfs"))
    result = plan(losetup(), mounts, [], {})
    assert result["stale_model_mounts"] == []


def test_the_servers_command_line_carries_the_profiles_options_then_its_host_path_ones():
    disks = {"hdd": {"size_gib": 8, "model": HDD_MODEL}, "ssd": {"size_gib": 8, "model": None}}
    commands = loop_storage.spillway_model_commands(disks, "/r/bin/spillway-hdd-model-abc", ROOT + "/")
    assert list(commands) == ["hdd"]
    argv = commands["hdd"]
    assert argv[:6] == ["/r/bin/spillway-hdd-model-abc", "--foreground", "--image", f"{DISKS}/hdd.img",
                        "--mountpoint", "/dev/fd/3"]
    pairs = dict(zip(argv[6::2], argv[7::2]))
    assert pairs["--rpm"] == "7200" and pairs["--read-seek-avg-ms"] == "7.4" and pairs["--outer-rate"] == "255000000"
    assert pairs["--reply-early-us"] == str(HDD_MODEL["host_path"]["reply-early-us"])
    assert len(pairs) == len(HDD_MODEL["options"]) + len(HDD_MODEL["host_path"])


def test_the_look_at_the_servers_reads_each_verdict_and_the_build_that_runs():
    assert status("hdd current /r/bin/spillway-hdd-model-abc", "cold stale -", "noise", "x maybe /b") == {
        "hdd": {"verdict": "current", "binary": "/r/bin/spillway-hdd-model-abc"},
        "cold": {"verdict": "stale", "binary": None}}
    # a server whose look failed or said nothing is not current: its disk is rebuilt
    result = plan(BUILT_LOOPS, BUILT_MOUNTS, ["hdd", "ssd"], status())
    assert result["chains"]["hdd"]["served"] is False
