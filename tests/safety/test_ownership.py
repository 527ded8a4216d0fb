"""The harness deletes only what carries its cluster's ownership record (docs/safety.md, "Ownership records").

Each case is tried as a user's ordinary mistake would make it, against decoy trees under tmp_path that must come out
byte-identical (a digest of every path, mode, content and link target, before and after), and each refusal must
name the path, the record it expected and the fix. Python-level cases call spillway.ownership and emulation.cluster
directly; the storage role's cases run it for real (ansible-playbook, local connection) on throwaway inventories
with spillway_root and storage_owned_root under tmp_path, as tests/playbooks/test_storage_safety.py does. The
emulation cases that need network namespaces make their own (prefix spw-t17...) and remove them.
"""
import grp
import hashlib
import importlib.util
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from emulation import cluster as emu_cluster
from emulation.config import from_settings
from spillway import REPO, ownership

_spec = importlib.util.spec_from_file_location("storage_safety", REPO / "tests/playbooks/test_storage_safety.py")
storage_safety = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(storage_safety)

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and the storage role's checks need root")


def tree_digest(top):
    """One digest of everything below `top`: relative paths, modes, file contents and link targets; links are
    never followed."""
    digest = hashlib.sha256()
    top = Path(top)
    for folder, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(folder) / name
            info = path.lstat()
            digest.update(f"{path.relative_to(top)}\0{info.st_mode:o}\0".encode())
            if path.is_symlink():
                digest.update(os.readlink(path).encode())
            elif path.is_file():
                digest.update(path.read_bytes())
    return digest.hexdigest()


def one_line(text):
    """Ansible's YAML output folds long messages and doubles quotes."""
    return " ".join(text.replace("''", "'").split())


def decoy(top, files):
    for relative, content in files.items():
        path = Path(top) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return tree_digest(top)


# -- the mechanism itself -------------------------------------------------------------------------------------
def test_a_directory_is_deleted_only_with_its_own_clusters_record(tmp_path):
    victim = tmp_path / "victim"
    before = decoy(victim, {"passwd": "root:x:0:0\n", "ssh/sshd_config": "PermitRootLogin no\n"})
    with pytest.raises(ownership.OwnershipError) as refused:
        ownership.remove(victim, "alpha")
    message = str(refused.value)
    assert f"refusing to delete {victim}: it has no ownership record ({victim}/.spillway-owner.json)" in message
    assert "expected one naming cluster 'alpha'" in message and "Fix:" in message
    with pytest.raises(ownership.OwnershipError, match="is not empty and has no ownership record"):
        ownership.claim(victim, "alpha", resource="test")
    assert tree_digest(victim) == before

    # a record of another cluster, or of another installation of the same name (another id), is no better
    ownership.write_record(victim, ownership.make_record("beta", "b" * 16, "test"))
    before = tree_digest(victim)
    with pytest.raises(ownership.OwnershipError, match="names cluster 'beta' with id b{16}, not the expected cluster 'alpha'"):
        ownership.remove(victim, "alpha")
    with pytest.raises(ownership.OwnershipError, match="not the expected cluster 'beta' with id a{16}"):
        ownership.remove(victim, "beta", "a" * 16)
    # a record that is a link to a real record elsewhere proves nothing
    own = tmp_path / "own"
    ownership.claim(own, "alpha", resource="test")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "data").write_text("x")
    (linked / ownership.RECORD_NAME).symlink_to(own / ownership.RECORD_NAME)
    with pytest.raises(ownership.OwnershipError, match="is not a regular file"):
        ownership.remove(linked, "alpha")
    # a directory that is a link is refused, its target untouched
    (tmp_path / "dirlink").symlink_to(victim)
    with pytest.raises(ownership.OwnershipError, match="is a symbolic link"):
        ownership.remove(tmp_path / "dirlink", "beta")
    assert tree_digest(victim) == before and (linked / "data").exists()

    assert ownership.remove(victim, "beta", "b" * 16) and not victim.exists()
    record = json.loads((own / ownership.RECORD_NAME).read_text())
    assert (record["format"], record["cluster"], len(record["cluster_id"])) == (ownership.FORMAT, "alpha", 16)


def test_the_claim_command_is_the_migrations_fix_and_takes_no_foreign_tree(tmp_path):
    legacy = tmp_path / "legacy"
    decoy(legacy, {"data": "from before records"})
    run = lambda *args: subprocess.run([str(REPO / ".venv/bin/python"), "-m", "spillway.ownership", *args],  # noqa: E731
                                       cwd=REPO, capture_output=True, text=True)
    assert run("show", str(legacy)).returncode == 1
    done = run("claim", "--cluster", "alpha", "--id", "c" * 16, str(legacy))
    assert done.returncode == 0, done.stderr
    assert ownership.check(legacy, "alpha", "c" * 16)["cluster"] == "alpha"
    before = tree_digest(legacy)
    refused = run("claim", "--cluster", "beta", str(legacy))
    assert refused.returncode == 2 and "names cluster 'alpha'" in refused.stderr
    assert tree_digest(legacy) == before


# -- emulated clusters ------------------------------------------------------------------------------------------
def emulation_of(cluster, state_dir, prefix, hosts=("master", "worker1")):
    host_vars = {h: {"ansible_host": f"10.251.77.{10 + i}", "spillway_root": f"/var/lib/spillway/{cluster}-{h}"}
                 for i, h in enumerate(hosts)}
    return from_settings(cluster, {"state_dir": str(state_dir), "prefix": prefix, "subnet": "10.251.77.0/24",
                                   "gateway": "10.251.77.1"}, list(hosts), host_vars)


@needs_root
def test_emulation_down_refuses_an_etc_like_state_dir(tmp_path):
    etc = tmp_path / "etc"
    before = decoy(etc, {"passwd": "root:x:0:0:root:/root:/bin/bash\n", "ssh/ssh_host_ed25519_key": "KEY\n",
                         "nodes/master/sshd.pid": "1\n"})
    emulation = emulation_of("t17etc", etc, "spw-t17etc")
    for action in (emu_cluster.down, emu_cluster.is_up, emu_cluster.up):
        with pytest.raises(ownership.OwnershipError) as refused:
            action(emulation)
        message = str(refused.value)
        assert str(etc) in message and "no ownership record" in message
        assert f"{etc}/.spillway-owner.json" in message and "cluster 't17etc'" in message
        assert "Fix: state_dir and prefix in spillway_emulation of inventories/t17etc" in message
    assert tree_digest(etc) == before


@pytest.mark.parametrize("owner", ["t17node", "t17other"])
def test_emulation_down_refuses_a_node_root_of_another_id_before_anything(tmp_path, owner):
    """A node root below this cluster's own state_dir whose record is another installation's (the same name, another
    id: a node directory copied in from an earlier state_dir) or another cluster's: `down` and `is_up` refuse, naming
    the root, the id found and the one expected, and the whole state_dir stays byte-identical. No namespace is made:
    the refusal comes before any process, loop device or link is looked at."""
    state_dir = tmp_path / "state" / "t17node"
    emulation = emulation_of("t17node", state_dir, "spw-t17node")
    record = emu_cluster.claim(emulation)
    (state_dir / "ssh").mkdir()
    (state_dir / "ssh" / "id_ed25519").write_text("KEY\n")
    node_root = emu_cluster.node_root_dir(emulation, emulation.nodes[1])
    decoy(node_root, {"disks/hdd.img": "a disk image", "run/node-cgroups": "spw-t17node-worker1\n"})
    ownership.write_record(node_root, ownership.make_record(owner, "b" * 16, "spillway_root of emulated node worker1"))
    before = tree_digest(state_dir)
    for action in (emu_cluster.down, emu_cluster.is_up):
        with pytest.raises(ownership.OwnershipError) as refused:
            action(emulation)
        message = str(refused.value)
        assert f"refusing to remove the emulation in {node_root}: its ownership record " \
               f"({node_root}/.spillway-owner.json) names cluster '{owner}' with id {'b' * 16}, not the expected " \
               f"cluster 't17node' with id {record['cluster_id']}" in message, message
    assert tree_digest(state_dir) == before


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@needs_root
@pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="needs openssh-client")
def test_a_copied_emulated_inventory_cannot_touch_the_originals_nodes_or_keys(tmp_path):
    """`cp -r inventories/emu inventories/emu2` keeps emu's prefix and state_dir: emu2's down, is-up (which gates
    teardown.yml) and up refuse, and emu's node (a namespace with a process in it) and keys survive."""
    state_dir = tmp_path / "state" / "t17emu"
    original = emulation_of("t17emu", state_dir, "spw-t17emu")
    node_namespace = original.nodes[1].namespace(original.prefix)
    record = emu_cluster.claim(original)  # what `up` records before it makes the namespaces
    emu_cluster.prepare_files(original, record)
    ip("netns", "add", node_namespace)
    sleeper = subprocess.Popen(["ip", "netns", "exec", node_namespace, "sleep", "600"])
    try:
        before = tree_digest(state_dir)
        copy = emulation_of("t17emu2", state_dir, "spw-t17emu")
        for action in (emu_cluster.down, emu_cluster.is_up, emu_cluster.up):
            with pytest.raises(ownership.OwnershipError) as refused:
                action(copy)
            message = str(refused.value)
            assert f"its ownership record ({state_dir}/.spillway-owner.json) names cluster 't17emu' with id " \
                   f"{record['cluster_id']}, not the expected cluster 't17emu2'" in message
            assert "a copied inventory keeps the original's: give it its own" in message
        # the copy with a state_dir of its own but the original's prefix: the namespaces are not its to take or remove
        own_state = tmp_path / "state" / "t17emu2"
        copy = emulation_of("t17emu2", own_state, "spw-t17emu")
        for action in (emu_cluster.down, emu_cluster.up):
            with pytest.raises(ownership.OwnershipError, match=f"netns:{node_namespace}"):
                action(copy)
        assert sleeper.poll() is None, "the original's node process was signalled"
        assert node_namespace in emu_cluster.existing_namespaces()
        assert tree_digest(state_dir) == before and not own_state.exists()
        node_root = emu_cluster.node_root_dir(original, original.nodes[1])
        assert ownership.check(node_root, "t17emu", record["cluster_id"])["resource"].endswith("node worker1")
    finally:
        removed = emu_cluster.down(original)  # the owner itself may
        sleeper.wait(timeout=30)
    assert f"namespace {node_namespace}" in removed and not state_dir.exists()
    assert node_namespace not in emu_cluster.existing_namespaces()


@needs_root
@pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="needs openssh-client")
def test_a_state_dir_from_before_records_is_adopted_only_with_its_own_key(tmp_path):
    state_dir = tmp_path / "state" / "t17old"
    emulation = emulation_of("t17old", state_dir, "spw-t17old")
    (state_dir / "ssh").mkdir(parents=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "spillway-t17other",
                    "-f", str(emulation.key_file)], check=True)
    before = tree_digest(state_dir)
    with pytest.raises(ownership.OwnershipError, match="has no ownership record"):
        emu_cluster.claim(emulation)
    with pytest.raises(ownership.OwnershipError, match="has no ownership record"):
        emu_cluster.down(emulation)
    assert tree_digest(state_dir) == before
    for name in ("id_ed25519", "id_ed25519.pub"):
        (state_dir / "ssh" / name).unlink()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "spillway-t17old",
                    "-f", str(emulation.key_file)], check=True)
    record = emu_cluster.claim(emulation)
    assert record["cluster"] == "t17old" and f"netns:{emulation.bridge_namespace}" in record["owns"]
    assert emu_cluster.down(emulation) == [f"directory {state_dir}"]


# -- the storage role -------------------------------------------------------------------------------------------
class Inventory(storage_safety.Cluster):
    """test_storage_safety's throwaway inventory under any cluster name."""

    def settings(self, name, backends):
        first = next(iter(backends))
        (self.inventory / "group_vars/all.yml").write_text(yaml.safe_dump({
            "spillway_cluster": name, "spillway_backends": backends,
            "spillway_placement": {"hdfs": first, "local": first}}))

    def refused(self, playbook):
        _, output = self.play(playbook, ok=False)
        return one_line(output)


@pytest.fixture
def inventory(tmp_path):
    return Inventory(tmp_path)


@needs_root
def test_a_mount_backend_folder_owned_by_name_only_is_neither_used_nor_deleted(inventory, tmp_path):
    path = tmp_path / "data"
    folder = path / "spillway-t17mount"
    before = decoy(path, {"spillway-t17mount/results/run1.csv": "someone's results\n", "other/keep": "x"})
    inventory.settings("t17mount", {"fast": {"kind": "mount", "path": str(path), "destructive_ok": True}})
    output = inventory.refused("apply.yml")
    assert f"refusing to use {folder}: it exists, is not empty and has no ownership record ({folder}/.spillway-owner.json)" in output
    assert "cluster 't17mount' with id" in output
    assert "Fix: spillway_backends.fast.path" in output and f"move {folder} away" in output
    assert tree_digest(path) == before

    # the cluster's root provisioned, the folder still unrecorded (or another installation's): teardown keeps it
    ownership.claim(inventory.root, "t17mount", resource="spillway_root")
    output = inventory.refused("teardown.yml")
    assert f"refusing to delete {folder}: it has no ownership record" in output and "cluster 't17mount' with id" in output
    assert "Fix: it stays" in output
    ownership.write_record(folder, ownership.make_record("t17mount", "f" * 16, "mount-kind backend fast"))
    before = tree_digest(path)
    output = inventory.refused("teardown.yml")
    assert f"its ownership record ({folder}/.spillway-owner.json) names cluster 't17mount' with id {'f' * 16}" in output
    assert tree_digest(path) == before and inventory.root.exists()


@needs_root
def test_a_cluster_named_emulation_cannot_reach_the_emulations_state(inventory, tmp_path):
    """A mount at /var/lib for a cluster named `emulation` resolves to /var/lib/spillway-emulation."""
    var_lib = tmp_path / "var_lib"
    emu_state = var_lib / "spillway-emulation" / "emu"
    decoy(var_lib, {"spillway-emulation/emu/ssh/id_ed25519": "KEY\n", "dpkg/status": "Package: bash\n"})
    ownership.write_record(emu_state, ownership.make_record("emu", "e" * 16, "emulation state_dir"))
    before = tree_digest(var_lib)
    inventory.settings("emulation", {"fast": {"kind": "mount", "path": str(var_lib), "destructive_ok": True}})
    output = inventory.refused("apply.yml")
    assert f"refusing to use {var_lib}/spillway-emulation: it exists, is not empty and has no ownership record" in output
    assert tree_digest(var_lib) == before
    ownership.claim(inventory.root, "emulation", resource="spillway_root")
    output = inventory.refused("teardown.yml")
    assert f"refusing to delete {var_lib}/spillway-emulation: it has no ownership record" in output
    assert tree_digest(var_lib) == before


@needs_root
def test_another_clusters_root_is_refused_before_any_change(inventory):
    """An inventory whose spillway_root is another cluster's (here `local`'s): no disk of it is planned away."""
    before = decoy(inventory.root, {"storage.json": json.dumps({"cluster": "local"}), "disks/hdd.img": "",
                                    "mnt/fio/x": "data"})
    ownership.write_record(inventory.root, ownership.make_record("local", "1" * 16, "spillway_root"))
    before = tree_digest(inventory.root)
    inventory.settings("t17intruder", {"hdd": {"kind": "emulated", "profile": "hdd", "size_gib": 1}})
    for playbook in ("apply.yml", "teardown.yml"):
        output = inventory.refused(playbook)
        assert f"its ownership record ({inventory.root}/.spillway-owner.json) names cluster 'local' with id " \
               f"{'1' * 16}, not the expected cluster 't17intruder'" in output
        assert "make teardown CLUSTER=local" in output
        assert tree_digest(inventory.root) == before


@needs_root
def test_an_installation_from_before_records_is_recorded_on_its_next_provisioning(inventory, tmp_path):
    """Migration: the root its storage.json names, and the mount-kind folder that root links to, get records with
    one cluster id; teardown then deletes both."""
    path = tmp_path / "data"
    folder = path / "spillway-t17legacy"
    decoy(folder, {"fio/sweep.dat": "old"})
    (path / "neighbour").write_text("the operator's")
    (inventory.root / "mnt").mkdir(parents=True)
    (inventory.root / "storage.json").write_text(json.dumps({"cluster": "t17legacy"}))
    (inventory.root / "mnt/fast").symlink_to(folder)
    inventory.settings("t17legacy", {"fast": {"kind": "mount", "path": str(path), "destructive_ok": True}})
    inventory.play("apply.yml")
    root_record = ownership.check(inventory.root, "t17legacy")
    assert ownership.check(folder, "t17legacy", root_record["cluster_id"])["resource"] == "mount-kind backend fast"
    assert (folder / "fio/sweep.dat").read_text() == "old"
    recap, _ = inventory.play("apply.yml")
    assert recap["changed"] == 0
    inventory.play("teardown.yml")
    assert not folder.exists() and not inventory.root.exists()
    assert (path / "neighbour").read_text() == "the operator's"


@needs_root
def test_teardown_checks_the_root_record_before_stopping_daemons_monitoring_or_collectors(inventory, tmp_path):
    """playbooks/teardown.yml itself on a root that `local`'s record names: it fails before its first stop. The
    root holds what each stop would act on: the daemon supervisor the Hadoop and monitoring stops run, and a
    collector left running with its stop; each, if run, would log its arguments and kill the decoy process."""
    stopped = tmp_path / "stopped.log"
    process = subprocess.Popen(["sleep", "600"])
    try:
        stopper = f"#!/bin/sh\necho \"$0 $*\" >> {stopped}\nkill {process.pid}\n"
        decoy(inventory.root, {"bin/spillway-daemon": stopper, "collectors/iostat/stop": stopper,
                               "runs/r1/terasort/iostat/.pid": f"{process.pid}\n", "run/node-cgroups": "",
                               "monitoring.json": "{}"})
        for script in ("bin/spillway-daemon", "collectors/iostat/stop"):
            (inventory.root / script).chmod(0o755)
        ownership.write_record(inventory.root, ownership.make_record("local", "1" * 16, "spillway_root"))
        before = tree_digest(inventory.root)
        inventory.settings("t17teardown", {"hdd": {"kind": "emulated", "profile": "hdd", "size_gib": 1}})
        playbook = Path(sys.executable).with_name("ansible-playbook")  # the venv's, wherever the checkout is
        result = subprocess.run(
            [str(playbook), "-i", str(inventory.inventory), "playbooks/teardown.yml", "-e", f"spillway_root={inventory.root}", "-e", f"storage_owned_root={tmp_path}"],
            cwd=REPO, capture_output=True, text=True, timeout=300)
        output = one_line(result.stdout + result.stderr)
        assert result.returncode != 0, output[-3000:]
        assert f"its ownership record ({inventory.root}/.spillway-owner.json) names cluster 'local' with id " \
               f"{'1' * 16}, not the expected cluster 't17teardown'" in output, output[-3000:]
        assert "Stop the Hadoop daemons" not in output and "Stop the monitoring processes of this host" not in output
        assert not stopped.exists(), stopped.read_text()
        assert process.poll() is None, "the decoy process was stopped"
        assert tree_digest(inventory.root) == before
    finally:
        process.kill()
        process.wait()


# A decoy stop: who runs it (uid, gid, no_new_privs) and what it is told, in <who>/<its collector>.
WHO = """#!/bin/sh
{{ echo "uid $(id -u) gid $(id -g)"; grep NoNewPrivs /proc/self/status; echo "out $SPILLWAY_OUT";
   echo "ids $SPILLWAY_RUN_ID $SPILLWAY_WORKLOAD_ID"; }} > {who}/$(basename "$(dirname "$0")")
"""


@needs_root
def test_teardown_stops_each_collector_left_running_as_the_user_the_bench_ran_it_as():
    """playbooks/teardown.yml on a scratch cluster of its own (its root's own record) where an interrupted bench left
    iostat (the collect user's, no needs_root) and blocktrace (needs_root) running: each installed stop, a decoy that
    records who runs it, runs as the bench ran it: iostat's as the collect user with no_new_privs, blocktrace's as
    root; the installed manifests are the real collector.yml files (a collector.yml in the collect user's output
    folder claiming needs_root changes nothing). In a folder of /tmp that the collect user can reach (pytest's own
    are root's alone), which storage_owned_root names; the node budget's cgroups are looked for below it too."""
    defaults = yaml.safe_load((REPO / "playbooks/roles/common/defaults/main/main.yml").read_text())
    collect_user = defaults["spillway_service_users"]["collect"]
    collect = pwd.getpwnam(collect_user)   # the machine's service account (role common makes it; make setup)
    group = grp.getgrnam(defaults["spillway_service_group"])
    with tempfile.TemporaryDirectory(prefix="spillway-t17collect-") as scratch:
        scratch = Path(scratch)
        scratch.chmod(0o755)
        who = scratch / "who"
        who.mkdir(mode=0o1777)
        who.chmod(0o1777)
        inventory = Inventory(scratch)
        inventory.settings("t17collect", {"hdd": {"kind": "emulated", "profile": "hdd", "size_gib": 1}})
        ownership.claim(inventory.root, "t17collect", resource="spillway_root")
        inventory.root.chmod(0o755)
        for name in ("iostat", "blocktrace"):
            installed = inventory.root / "collectors" / name
            installed.mkdir(parents=True)
            shutil.copy(REPO / "collectors" / name / "collector.yml", installed / "collector.yml")
            (installed / "stop").write_text(WHO.format(who=who))
            (installed / "stop").chmod(0o755)
            out = inventory.root / "runs/r1" / name / "terasort-1"   # as the bench's start left it
            out.mkdir(parents=True)
            (out / ".pid").write_text("4000000 4000000\n")
            # what the collect user may write in its own folder decides nothing
            (out / "collector.yml").write_text(f"name: {name}\nneeds_root: a manifest the collect user wrote\n")
            os.chown(out, 0 if name == "blocktrace" else collect.pw_uid, group.gr_gid)
        for folder in [inventory.root / "collectors", inventory.root / "runs", *(inventory.root / "runs").rglob("*")]:
            if folder.is_dir() and folder.stat().st_uid == 0:
                folder.chmod(0o755)
        playbook = Path(sys.executable).with_name("ansible-playbook")
        teardown = [str(playbook), "-i", str(inventory.inventory), "playbooks/teardown.yml",
                    "-e", f"spillway_root={inventory.root}", "-e", f"storage_owned_root={scratch}",
                    "-e", f"node_budget_cgroup_root={scratch / 'cgroup'}"]
        result = subprocess.run(teardown, cwd=REPO, capture_output=True, text=True, timeout=300)
        output = one_line(result.stdout + result.stderr)
        assert result.returncode == 0, output[-3000:]
        assert "Stopping the collectors left running failed" not in output, output[-3000:]
        ran = {name: (who / name).read_text().splitlines()
               for name in ("iostat", "blocktrace") if (who / name).exists()}
        assert ran.get("iostat", [""])[:2] == [f"uid {collect.pw_uid} gid {group.gr_gid}", "NoNewPrivs:\t1"], ran
        assert ran.get("blocktrace", [""])[:2] == ["uid 0 gid 0", "NoNewPrivs:\t0"], ran
        for name in ("iostat", "blocktrace"):
            assert ran[name][2:] == [f"out {inventory.root}/runs/r1/{name}/terasort-1", "ids r1 terasort-1"], ran
        assert not inventory.root.exists()   # the teardown went on to the end; once more, it changes nothing
        again = subprocess.run(teardown, cwd=REPO, capture_output=True, text=True, timeout=300)
        quiet = " changed=0 " in again.stdout and f"{inventory.root}/runs" not in again.stderr   # no find warning
        assert again.returncode == 0 and quiet, one_line(again.stdout + again.stderr)[-3000:]
