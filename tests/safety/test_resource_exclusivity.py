"""One cluster cannot touch another's resources: an inventory that overlaps another under inventories/ is refused
by validation naming both, the field and the fix; and an action holds a lock per resource, so two inventories
that share a host by design never run at once.

Scratch inventories under tmp_path; the locks of the in-process cases live in a tmp_path folder, so that the
machine's real clusters are neither disturbed nor able to disturb these tests.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spillway import REPO, clusterlock, inventory, resources
from scratch_inventories import (cluster_name, copy_cluster, decoy, edit_yaml, inventories,  # noqa: F401
                                 problems_of, run, scratch_repo)


@pytest.fixture
def locks(tmp_path, monkeypatch):
    folder = tmp_path / "locks"
    folder.mkdir()
    monkeypatch.setattr(clusterlock, "LOCK_DIR", folder)
    return folder


def overlap(cluster, field, other, fix):
    """The problem naming `field` of `cluster` overlapping inventory `other`, with the fix."""
    problems = problems_of(cluster)
    hits = [p for p in problems if f": {field}: " in p and f"inventory '{cluster}'" in p
            and f"as inventory '{other}' uses" in p and fix in p]
    assert hits, problems
    return hits[0]


def test_the_shipped_inventories_overlap_in_nothing_but_this_host():
    for name in ("local", "hdd", "ssd", "nvme", "tiers", "emu", "pfs"):
        inventory.load(name)


def test_a_copy_of_emu_keeps_its_prefix_state_dir_subnet_and_roots_and_is_refused(inventories):
    copy_cluster(inventories, "emu", "emu2")
    assert "state_dir" in overlap("emu2", "spillway_emulation.state_dir", "emu",
                                  "give it its own spillway_emulation.state_dir")
    overlap("emu2", "spillway_emulation.prefix", "emu", "give it its own spillway_emulation.prefix")
    overlap("emu2", "spillway_emulation.subnet", "emu", "give it a subnet of its own")
    problem = overlap("emu2", "spillway_root", "emu", "give each cluster its own spillway_root")
    assert "emu2/hosts.yml" in problem and "emu/hosts.yml" in problem


def test_a_copy_of_emu_with_its_own_resources_is_valid(inventories):
    folder = copy_cluster(inventories, "emu", "emu2")
    edit_yaml(folder / "group_vars" / "all.yml", lambda d: d["spillway_emulation"].update(
        state_dir="/var/lib/spillway-emulation/emu2", prefix="spw-emu2", subnet="10.79.0.0/24",
        gateway="10.79.0.1", machine_address="10.79.0.254"))
    text = (folder / "hosts.yml").read_text().replace("10.77.", "10.79.").replace("/emu-", "/emu2-")
    (folder / "hosts.yml").write_text(text.replace("spw-emu-net", "spw-emu2-net"))
    inventory.load("emu2")


@pytest.mark.parametrize("change, field, fix", [
    (lambda e: e.update(prefix="spw-emu"), "spillway_emulation.prefix", "own spillway_emulation.prefix"),
    (lambda e: e.update(subnet="10.77.0.0/16", gateway="10.77.1.1", machine_address="10.77.1.254"),
     "spillway_emulation.subnet", "a subnet of its own"),
    (lambda e: e.update(state_dir="/var/lib/spillway-emulation/emu/inner"), "spillway_emulation.state_dir",
     "own spillway_emulation.state_dir"),
])
def test_each_emulation_resource_alone_is_refused(inventories, change, field, fix):
    folder = copy_cluster(inventories, "pfs", "pfs2")
    edit_yaml(folder / "group_vars" / "all.yml", lambda d: (d["spillway_emulation"].update(
        state_dir="/var/lib/spillway-emulation/pfs2", prefix="spw-pfs2", subnet="10.80.0.0/24",
        gateway="10.80.0.1", machine_address="10.80.0.254"), change(d["spillway_emulation"])))
    hosts = (folder / "hosts.yml").read_text().replace("10.78.", "10.80.").replace("/pfs-", "/pfs2-")
    (folder / "hosts.yml").write_text(hosts)
    if "subnet" in field:
        (folder / "hosts.yml").write_text(hosts.replace("10.80.", "10.77.1."))
    assert "'emu'" in overlap("pfs2", field, "emu", fix)


def test_prefixes_whose_machine_link_names_collide_are_refused(inventories):
    for name, prefix, net in (("longa", "spw-abcdefghi-a", "10.81"), ("longb", "spw-abcdefghi-b", "10.82")):
        folder = copy_cluster(inventories, "emu", name)
        edit_yaml(folder / "group_vars" / "all.yml", lambda d: d["spillway_emulation"].update(
            state_dir=f"/var/lib/spillway-emulation/{name}", prefix=prefix, subnet=f"{net}.0.0/24",
            gateway=f"{net}.0.1", machine_address=f"{net}.0.254"))
        (folder / "hosts.yml").write_text((folder / "hosts.yml").read_text().replace("10.77", net)
                                          .replace("/emu-", f"/{name}-"))
    problem = overlap("longb", "spillway_emulation.prefix", "longa", "own spillway_emulation.prefix")
    assert "network object spw-abcdefghi-m" in problem


def test_a_root_that_is_another_clusters_is_refused(inventories):
    copy_cluster(inventories, "hdd", "mine", spillway_root="/var/lib/spillway/local")
    problem = overlap("mine", "spillway_root", "local", "give each cluster its own spillway_root")
    assert "path /var/lib/spillway/local on this machine" in problem and "the same folder" in problem
    assert "mine/group_vars/all.yml" in problem


@pytest.mark.parametrize("root, how", [("/var/lib/spillway/local/inner", "a folder inside it"),
                                       ("/var/lib", "a folder that contains it")])
def test_a_root_inside_or_around_another_clusters_is_refused(inventories, root, how):
    copy_cluster(inventories, "hdd", "mine", spillway_root=root)
    assert how in overlap("mine", "spillway_root", "local", "own spillway_root")


def test_a_root_set_per_host_in_hosts_yml_is_seen(inventories):
    folder = copy_cluster(inventories, "hdd", "mine")
    edit_yaml(folder / "hosts.yml", lambda d: d["all"]["children"]["workers"]["hosts"].update(
        localhost={"spillway_root": "/var/lib/spillway/tiers"}))
    assert "mine/hosts.yml" in overlap("mine", "spillway_root", "tiers", "own spillway_root")


def test_a_mount_backend_whose_folder_holds_another_clusters_state_is_refused(inventories):
    # a cluster named `emulation` with a mount at /var/lib writes /var/lib/spillway-emulation, emu's state_dir's parent
    copy_cluster(inventories, "hdd", "emulation", spillway_backends={
        "hdd": {"kind": "mount", "path": "/var/lib", "destructive_ok": True}})
    problem = overlap("emulation", "spillway_backends.hdd.path", "emu", "point the backend at a path of its own")
    assert "path /var/lib/spillway-emulation on this machine" in problem


@pytest.mark.parametrize("cluster, mount, what, how", [
    # <mount>/spillway/<cluster> is /var/lib/spillway/emu-worker1: emu's worker1 root
    ("emu-worker1", "/var/lib", "path /var/lib/spillway/emu-worker1 on this machine", "the same folder"),
    # a folder inside emu's state_dir, beside its nodes' roots and keys
    ("mine", "/var/lib/spillway-emulation/emu", "path /var/lib/spillway-emulation/emu/spillway/mine on this machine",
     "a folder inside it")])
def test_a_pfs_mount_whose_folder_holds_another_clusters_state_is_refused(inventories, cluster, mount, what, how):
    copy_cluster(inventories, "hdd", cluster, spillway_root=f"/var/lib/spillway/{cluster}-own",
                 spillway_backends={"hdd": {"kind": "pfs", "mount": mount}})
    problem = overlap(cluster, "spillway_backends.hdd.mount", "emu", "point the backend at a path of its own")
    assert what in problem and how in problem, problem


def remote(inventories, name, address, backends):
    folder = copy_cluster(inventories, "hdd", name, spillway_backends=backends)
    edit_yaml(folder / "hosts.yml", lambda d: (d["all"]["vars"].pop("ansible_connection"),
                                               d["all"]["vars"].update(ansible_host=address)))


def test_a_device_of_another_inventory_on_the_same_host_is_refused(inventories):
    disk = {"hdd": {"kind": "device", "device": "/dev/sdx", "fstype": "xfs", "destructive_ok": True}}
    remote(inventories, "alpha", "node1.example", disk)
    remote(inventories, "beta", "node1.example", disk)
    problem = overlap("beta", "spillway_backends.hdd.device", "alpha", "each device belongs to one inventory")
    assert "device /dev/sdx on node1.example" in problem
    shutil.rmtree(inventories / "alpha")
    remote(inventories, "alpha", "node2.example", disk)
    inventory.load("beta")  # the same device name on another host is another disk


@pytest.fixture
def loop_over(tmp_path):
    """Factory: a throwaway loop device over a new sparse file (at `image`), detached at the end."""
    attached = []

    def attach(image):
        Path(image).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["truncate", "--size", "8M", str(image)], check=True)
        device = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True,
                                check=True).stdout.strip()
        attached.append((device, str(image)))
        return device

    yield attach
    for device, image in attached:
        if Path(f"/sys/block/{Path(device).name}/loop/backing_file").read_text().strip() == image:
            subprocess.run(["losetup", "--detach", device], check=False)


@pytest.mark.throwaway
@pytest.mark.skipif(os.geteuid() != 0, reason="loop devices need root")
def test_a_device_backend_that_is_another_inventorys_emulated_disk_is_refused(inventories, tmp_path, loop_over):
    """docs/safety.md "Devices": a loop device over an image inside another inventory's root (its emulated disk) is
    refused by validation, which compared device backends only with other device backends."""
    root = tmp_path / "alpha-root"
    copy_cluster(inventories, "hdd", "alpha", spillway_root=str(root))
    image = root / "disks" / "hdd.img"
    device = loop_over(image)
    copy_cluster(inventories, "hdd", "beta")
    edit_yaml(inventories / "beta" / "group_vars" / "all.yml", lambda d: d["spillway_backends"].update(
        raw={"kind": "device", "device": device, "fstype": "ext4", "destructive_ok": True, "wipe": True}))
    problems = problems_of("beta")
    assert any(f"spillway_backends.raw.device: {device} on this machine is not free: it is a loop device over "
               f"{image}, inside {root}, which a Spillway inventory uses" in p and "name a free disk" in p
               for p in problems), problems
    free = loop_over(tmp_path / "free.img")
    edit_yaml(inventories / "beta" / "group_vars" / "all.yml", lambda d: d["spillway_backends"]["raw"].update(
        device=free))
    inventory.load("beta")


def test_an_unreadable_other_inventory_does_not_hide_the_check_of_this_one(inventories):
    (inventories / "broken").mkdir()
    (inventories / "broken" / "hosts.yml").write_text("all: [x]\n")
    copy_cluster(inventories, "hdd", "mine", spillway_root="/var/lib/spillway/local")
    overlap("mine", "spillway_root", "local", "own spillway_root")


# --- The locks ------------------------------------------------------------------------------------------------

def alone(tmp_path, monkeypatch, name, source="hdd", **group_vars):
    """inventories/<name> loaded from a folder of its own: valid by itself whatever it shares, as an inventory
    edited after another's action started would be."""
    root = tmp_path / f"only-{name}"
    root.mkdir()
    for extra in ("schema.yml", "storage-profiles.yml"):
        shutil.copy(REPO / "inventories" / extra, root / extra)
    shutil.copytree(REPO / "inventories" / source, root / source)
    copy_cluster(root, source, name, **group_vars)
    shutil.rmtree(root / source)
    monkeypatch.setattr(inventory, "INVENTORIES", root)
    monkeypatch.setattr("spillway.cluster_check.INVENTORIES", root)
    inv = inventory.load(name)
    monkeypatch.setattr(inventory, "INVENTORIES", REPO / "inventories")
    monkeypatch.setattr("spillway.cluster_check.INVENTORIES", REPO / "inventories")
    return inv


def test_two_inventories_on_one_host_never_run_at_once(locks):
    local, hdd = inventory.load("local"), inventory.load("hdd")
    with clusterlock.held("local", "a bench on local", local):
        with pytest.raises(clusterlock.ClusterBusy) as busy:
            with clusterlock.held("hdd", "make setup CLUSTER=hdd", hdd):
                pytest.fail("hdd ran while local held this machine")
        assert "host this machine (its Spillway daemons and ports), a resource of inventories/hdd, is in use by " \
               "a bench on local (pid" in str(busy.value)
    with clusterlock.held("hdd", "the next action", hdd):
        pass


def test_emulated_clusters_and_the_local_one_hold_nothing_in_common(locks):
    with clusterlock.held("local", "a", inventory.load("local")), clusterlock.held("emu", "b", inventory.load("emu")), \
            clusterlock.held("pfs", "c", inventory.load("pfs")):
        pass


@pytest.mark.parametrize("first, second", [("outer", "inner"), ("inner", "outer")])
def test_nested_roots_exclude_each_other_through_the_lock(tmp_path, monkeypatch, locks, first, second):
    roots = {"outer": "/srv/t17/outer", "inner": "/srv/t17/outer/inner"}
    invs = {}
    for name, address in (("outer", "h1.example"), ("inner", "h1.example")):
        invs[name] = alone(tmp_path, monkeypatch, name, spillway_root=roots[name])
    # the host itself is shared too: hold only the folders to see that they alone refuse
    monkeypatch.setattr(resources, "daemon_host_id", lambda host, variables, emulation: f"{id(variables)}")
    with clusterlock.held(first, f"an action on {first}", invs[first]):
        with pytest.raises(clusterlock.ClusterBusy) as busy:
            with clusterlock.held(second, "x", invs[second]):
                pytest.fail("nested roots held at once")
    assert f"in use by an action on {first}" in str(busy.value) and "/srv/t17/outer" in str(busy.value)


def test_sibling_roots_on_separate_hosts_are_held_at_once(tmp_path, monkeypatch, locks):
    a = alone(tmp_path, monkeypatch, "sib-a", spillway_root="/srv/t17/a")
    b = alone(tmp_path, monkeypatch, "sib-b", spillway_root="/srv/t17/b")
    monkeypatch.setattr(resources, "daemon_host_id", lambda host, variables, emulation: f"{id(variables)}")
    with clusterlock.held("sib-a", "a", a), clusterlock.held("sib-b", "b", b):
        pass


HOLD = ("import sys; from pathlib import Path; from spillway import clusterlock; "
        "clusterlock.LOCK_DIR = Path(sys.argv[1]); sys.exit(clusterlock.main(sys.argv[2:]))")


def test_clusterlock_run_refuses_while_a_resource_is_held_and_runs_nothing(locks, tmp_path):
    marker = tmp_path / "ran"
    with clusterlock.held("local", "a bench on local", inventory.load("local")):
        refused = subprocess.run([sys.executable, "-c", HOLD, str(locks), "run", "tiers", "--as", "make teardown",
                                  "--", "touch", str(marker)], cwd=REPO, capture_output=True, text=True)
    assert refused.returncode == 2 and not marker.exists()
    assert "is in use by a bench on local" in refused.stderr and "inventories/tiers" in refused.stderr
    ran = subprocess.run([sys.executable, "-c", HOLD, str(locks), "run", "tiers", "--as", "make teardown", "--",
                          "touch", str(marker)], cwd=REPO, capture_output=True, text=True)
    assert ran.returncode == 0 and marker.exists(), ran.stderr


# --- The commands: refused, naming both, and nothing of the other cluster touched ------------------------------

@pytest.mark.parametrize("target", ["teardown", "cluster-down", "cluster-up", "setup"])
def test_make_refuses_a_copy_of_emu_and_emus_state_survives(tmp_path, decoy, cluster_name, target):
    repo = scratch_repo(tmp_path)
    edit_yaml(repo / "inventories" / "emu" / "group_vars" / "all.yml",
              lambda d: d["spillway_emulation"].update(state_dir=str(decoy.parent)))
    copy_cluster(repo / "inventories", "emu", cluster_name)
    result = run(repo, "make", "--no-print-directory", target, f"CLUSTER={cluster_name}")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"spillway_emulation.state_dir: path {decoy.parent} on this machine of inventory '{cluster_name}' is " \
           "the same folder as inventory 'emu' uses" in result.stderr, result.stderr
    assert "give it its own spillway_emulation.state_dir" in result.stderr
    assert "PLAY [" not in result.stdout
    assert decoy.read_bytes() == b"another cluster's state\n"


@pytest.mark.parametrize("target", ["teardown", "setup", "bench"])
def test_make_refuses_an_inventory_sharing_locals_root_and_locals_state_survives(tmp_path, decoy, cluster_name,
                                                                                  target):
    repo = scratch_repo(tmp_path)
    edit_yaml(repo / "inventories" / "local" / "group_vars" / "all.yml",
              lambda d: d.update(spillway_root=str(decoy.parent)))
    copy_cluster(repo / "inventories", "hdd", cluster_name, spillway_root=str(decoy.parent))
    result = run(repo, "make", "--no-print-directory", target, f"CLUSTER={cluster_name}")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"spillway_root: path {decoy.parent} on this machine of inventory '{cluster_name}' is the same folder " \
           "as inventory 'local' uses" in result.stderr, result.stderr
    assert "PLAY [" not in result.stdout
    assert decoy.read_bytes() == b"another cluster's state\n"


EMULATION = ("import sys; from pathlib import Path; from spillway import clusterlock; "
             "clusterlock.LOCK_DIR = Path(sys.argv[1]); from emulation.__main__ import main; sys.exit(main(sys.argv[2:]))")


@pytest.mark.parametrize("action", ["up", "down"])
def test_emulation_up_and_down_run_by_hand_are_refused_while_the_cluster_is_held(locks, action):
    """Refused before anything is touched: the lock is taken before the namespaces are looked at."""
    with clusterlock.held("emu", "a bench on emu", inventory.load("emu")):
        refused = subprocess.run([sys.executable, "-c", EMULATION, str(locks), action, "--cluster", "emu"],
                                 cwd=REPO, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "is in use by a bench on emu" in refused.stderr and "cluster emu:" not in refused.stdout


def test_a_command_run_under_the_clusters_lock_is_told_so_and_does_not_refuse_its_own_parent(locks, monkeypatch):
    told = subprocess.run([sys.executable, "-c", HOLD, str(locks), "run", "emu", "--as", "make cluster-up", "--",
                           sys.executable, "-c", f"import os; print(os.environ['{clusterlock.HELD_BY_PARENT}'])"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert told.returncode == 0 and told.stdout.strip() == "emu", told.stderr
    emu = inventory.load("emu")
    with clusterlock.held("emu", "make cluster-up CLUSTER=emu", emu):
        with pytest.raises(clusterlock.ClusterBusy):
            with clusterlock.held_unless_by_parent("emu", "python -m emulation up", emu):
                pass
        monkeypatch.setenv(clusterlock.HELD_BY_PARENT, "emu")
        with clusterlock.held_unless_by_parent("emu", "python -m emulation up", emu):
            pass
        # another cluster's marker is not this one's
        monkeypatch.setenv(clusterlock.HELD_BY_PARENT, "pfs")
        with pytest.raises(clusterlock.ClusterBusy):
            with clusterlock.held_unless_by_parent("emu", "python -m emulation up", emu):
                pass
