"""Inventory strings are data and inventory files bounded input (spillway/inventory_values.py, docs/safety.md).

A host name or `ansible_host` that would change a shell command's meaning or become an ssh option is refused by the
first check (`python3 -m spillway.cluster_check`, before the venv exists), by validation and by the dry run, naming
the field and the fix; the command it carries never runs (its marker file never appears). Every variable the
inventory sets is one the roles read (or Ansible's own); non-finite numbers are refused; the files of the folder
are hashed as streams, regular files under a size limit only, with the same digest as before for normal folders.
"""
import hashlib
import os
import resource
import subprocess
import sys

import pytest

from spillway import INVENTORIES, inventory, inventory_values, setuprecord
from scratch_inventories import (cluster_name, copy_cluster, decoy, edit_yaml, inventories,  # noqa: F401
                                 problems_of, run, scratch_repo)

HOSTILE = {
    "command substitution": "w$(touch {marker})",
    "backticks": "w`touch {marker}`",
    "semicolon": "w;touch {marker}",
    "single quote": "w'x",
    "double quote": 'w"x',
    "newline": "w\ntouch {marker}",
    "ssh option": "-oProxyCommand=touch {marker}",
}


def named(problems, *words):
    matching = [p for p in problems if all(w in p for w in words)]
    assert matching, f"no problem holds {words}: {problems}"
    return matching[0]


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_host_name_is_refused_by_validation(inventories, tmp_path, case):
    name = HOSTILE[case].format(marker=tmp_path / "marker")
    edit_yaml(inventories / "local" / "hosts.yml",
              lambda d: d["all"]["children"]["workers"].update(hosts={name: None}))
    problem = named(problems_of("local"), "hosts.yml: host", "is not a host name", "RFC 1123")
    assert "Rename it" in problem


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_ansible_host_is_refused_by_validation(inventories, tmp_path, case):
    value = HOSTILE[case].format(marker=tmp_path / "marker")
    edit_yaml(inventories / "emu" / "hosts.yml", lambda d: d["all"]["hosts"]["worker1"].update(ansible_host=value))
    named(problems_of("emu"), "hosts.worker1", "ansible_host", "is not a host name")


@pytest.mark.parametrize("case", ["command substitution", "backticks", "ssh option", "newline"])
@pytest.mark.parametrize("command", [
    ["python3", "-m", "spillway.cluster_check", "--cluster"],
    [sys.executable, "-m", "spillway", "bench", "--dry-run", "--workloads", "terasort", "--cluster"],
    [sys.executable, "-m", "spillway", "validate", "--cluster"],
])
def test_every_first_check_refuses_a_hostile_host_name_and_runs_nothing(tmp_path, decoy, cluster_name, command,
                                                                         case):
    marker = tmp_path / "marker"
    repo = scratch_repo(tmp_path)
    folder = copy_cluster(repo / "inventories", "local", cluster_name, spillway_root=str(decoy.parent))
    name = HOSTILE[case].format(marker=marker)
    edit_yaml(folder / "hosts.yml", lambda d: d["all"]["children"]["workers"].update(hosts={name: None}))
    result = run(repo, *command, cluster_name)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "hosts.yml" in result.stderr and "host name" in result.stderr, result.stderr
    assert not marker.exists()
    assert decoy.read_bytes() == b"another cluster's state\n"


def test_ssh_takes_the_host_after_the_end_of_its_options():
    argv = inventory.load("emu").ssh_command("worker2")
    assert argv[-2:] == ["--", "10.77.0.12"]


def test_host_names_of_the_grammar_pass():
    for name in ("localhost", "worker-1", "node1.example.org", "10.77.0.11", "fd00::11", "a" * 63):
        assert inventory_values.host_name_problem(name) is None, name
    for name in ("-w", "w-", "a" * 64, "a..b", "w_1", "", "w x"):
        assert inventory_values.host_name_problem(name), name


def test_a_variable_no_role_reads_is_refused_with_did_you_mean(inventories):
    edit_yaml(inventories / "local" / "group_vars" / "all.yml", lambda d: d.update(hdfs_replicaton=2))
    problem = named(problems_of("local"), "hdfs_replicaton", "not a variable of the harness's roles")
    assert "did you mean 'hdfs_replication'?" in problem


@pytest.mark.parametrize("variable, value, kind", [
    ("hdfs_replication", "2; touch /tmp/x", "where the roles read a number"),
    ("hdfs_replication", [2], "where the roles read a number"),
    ("hadoop_yarn_site_extra_conf", ["a"], "where the roles read a mapping"),
    ("hadoop_wipe_namenode", "yes", "where the roles read true or false"),
])
def test_a_role_variable_of_another_kind_than_its_default_is_refused(inventories, variable, value, kind):
    edit_yaml(inventories / "local" / "group_vars" / "all.yml", lambda d: d.update({variable: value}))
    named(problems_of("local"), f"{variable}:", kind)


@pytest.mark.parametrize("value", ["/usr/bin/python3; touch /tmp/x", "python3", "/usr/bin/$(id -u)", 3])
def test_workload_python_interpreter_is_a_safe_absolute_path(inventories, value):
    edit_yaml(inventories / "local" / "group_vars" / "all.yml", lambda d: d.update(workload_python_interpreter=value))
    named(problems_of("local"), "workload_python_interpreter")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_number_is_refused_naming_the_field(inventories, value):
    edit_yaml(inventories / "local" / "group_vars" / "all.yml",
              lambda d: d.update(spillway_node={"memory_gib": value, "cores": 2}))
    named(problems_of("local"), "spillway_node.memory_gib", "not a finite number")


# --- The inventory's files: regular, bounded, streamed ----------------------------------------------------------

def old_digest(root):
    """The digest as the harness computed it before streaming: recorded runs' RESUME checks compare with it."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize("cluster", ["local", "emu", "pfs"])
def test_the_digest_of_a_normal_inventory_is_unchanged(cluster):
    assert inventory.load(cluster).digest == old_digest(INVENTORIES / cluster)


def limited(*argv, cwd, limit_bytes=1536 * 2**20, timeout=60):
    """Run argv with its address space limited (as `ulimit -v`): reading a 3 GiB file whole cannot succeed."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    return subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, preexec_fn=limit, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def plant(folder, kind):
    """A file under group_vars/: a huge one that Ansible ignores but the digest read whole; a FIFO or a link to
    /dev/zero as a group's variables, which validation opened (blocking) or read without end."""
    target = folder / "group_vars" / ("workers.yml" if kind != "huge" else "notes.bin")
    if kind == "huge":
        with open(target, "wb") as sparse:
            sparse.truncate(3 * 2**30)
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    return target


@pytest.mark.parametrize("kind", ["huge", "fifo", "dev-zero"])
@pytest.mark.parametrize("command", [
    ["python3", "-m", "spillway.cluster_check", "--cluster"],
    [sys.executable, "-m", "spillway", "validate", "--cluster"],
    [sys.executable, "-m", "spillway", "bench", "--dry-run", "--workloads", "terasort", "--cluster"],
])
def test_a_file_that_is_huge_or_not_regular_is_refused_before_it_is_read(tmp_path, decoy, cluster_name, kind,
                                                                         command):
    repo = scratch_repo(tmp_path)
    folder = copy_cluster(repo / "inventories", "local", cluster_name, spillway_root=str(decoy.parent))
    target = plant(folder, kind)
    result = limited(*command, cluster_name, cwd=repo)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr, result.stderr[-2000:]
    assert target.name in result.stderr
    assert ("not a regular file" if kind != "huge" else "over the 16 MiB limit") in result.stderr


@pytest.mark.parametrize("kind", ["huge", "fifo"])
def test_the_setup_digest_reads_no_file_that_is_huge_or_not_regular(tmp_path, cluster_name, kind):
    repo = scratch_repo(tmp_path)
    folder = copy_cluster(repo / "inventories", "local", cluster_name)
    plant(folder, kind)
    result = limited("python3", "-m", "spillway.setuprecord", "digest", cluster_name, cwd=repo)
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr, result.stderr[-2000:]
    if kind == "huge":
        assert result.returncode == 2 and "over the 16 MiB limit" in result.stderr
    else:  # a FIFO is no input of the setup: skipped, never opened
        assert result.returncode == 0 and result.stdout.strip() == setuprecord.inputs_digest(cluster_name, repo)


@pytest.mark.parametrize("cluster", ["local", "emu", "pfs"])
def test_the_first_check_without_pyyaml_passes_the_shipped_hosts_and_refuses_hostile_ones(cluster):
    text = (INVENTORIES / cluster / "hosts.yml").read_text()
    assert inventory_values.hosts_yml_problems("hosts.yml", text) == []
    for name in ("w$(touch x)", "w`touch x`", "w;touch x", "w'x"):
        hostile = text.replace("workers:\n      hosts:\n", f"workers:\n      hosts:\n        \"{name}\":\n", 1)
        assert "is no plain name" in " ".join(inventory_values.hosts_yml_problems("hosts.yml", hostile)), name
    assert inventory_values.hosts_yml_problems("hosts.yml", "all:\n  hosts:\n    a: {ansible_host: -oProxyCommand=x}\n")


def test_a_huge_file_in_another_inventory_does_not_exhaust_validation(tmp_path, decoy, cluster_name):
    """Validation reads every other inventory to compare resources: a 3 GiB group_vars file there was read whole
    (then found over 1 MiB) under every inventory's validation: a MemoryError under `ulimit -v`."""
    repo = scratch_repo(tmp_path)
    copy_cluster(repo / "inventories", "local", cluster_name, spillway_root=str(decoy.parent))
    with open(repo / "inventories" / "emu" / "group_vars" / "workers.yml", "wb") as sparse:
        sparse.truncate(3 * 2**30)
    result = limited(sys.executable, "-m", "spillway", "validate", "--cluster", cluster_name, cwd=repo, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
