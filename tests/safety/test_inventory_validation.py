"""Validation sees the inventory Ansible will use, and no inventory file crashes it.

Each case writes a scratch copy of inventories/ under tmp_path and proves the negative: the inventory is refused
with a message naming the file, the field and the fix; where a command is run, it exits non-zero, with no
traceback, and a decoy file stands for what it would have touched and stays byte-identical.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from spillway import REPO, inventory, inventory_files
from spillway.inventory import InventoryError
from scratch_inventories import (cluster_name, copy_cluster, decoy, edit_yaml, inventories,  # noqa: F401
                                 problems_of, run, scratch_repo)

ANSIBLE_INVENTORY = REPO / ".venv" / "bin" / "ansible-inventory"


def one_problem(cluster, *words):
    """The one problem that holds every word (each a part of the message the user must see)."""
    problems = problems_of(cluster)
    matching = [p for p in problems if all(w in p for w in words)]
    assert matching, f"no problem holds {words}: {problems}"
    return matching[0]


# --- What Ansible sees is what is validated -------------------------------------------------------------------

def ansible_hostvars(folder):
    out = subprocess.run([str(ANSIBLE_INVENTORY), "-i", str(folder), "--list"], capture_output=True, text=True,
                         check=True, cwd=REPO)
    return json.loads(out.stdout)["_meta"]["hostvars"]


def write_layered(folder):
    """An inventory that uses every merge rule: all.vars, group vars in hosts.yml at two depths, a priority,
    group_vars files and folders, host vars in hosts.yml (a host named twice) and host_vars files."""
    (folder / "group_vars" / "workers").mkdir(parents=True)
    (folder / "host_vars").mkdir()
    (folder / "hosts.yml").write_text(yaml.safe_dump({
        "all": {"vars": {"v_all": "hosts-all", "v_group": "hosts-all", "v_host": "hosts-all"},
                "hosts": {"a": {"v_host": "hosts-a-first"}},
                "children": {
                    "namenode": {"hosts": {"a": {"v_host": "hosts-a-second", "v_twice": 1}}},
                    "resourcemanager": {"hosts": {"a": None}}, "controller": {"hosts": {"a": None}},
                    "workers": {"vars": {"v_group": "hosts-workers", "v_deep": "workers"},
                                "hosts": {"b": None},
                                "children": {"fast": {"vars": {"v_deep": "fast"}, "hosts": {"c": None}}}},
                    "zeta": {"vars": {"v_prio": "zeta", "ansible_group_priority": 5}, "hosts": {"b": None}},
                    "alpha": {"vars": {"v_prio": "alpha"}, "hosts": {"b": None}}}}}))
    (folder / "group_vars" / "all.yml").write_text(yaml.safe_dump({"v_all": "gv-all", "v_group": "gv-all"}))
    (folder / "group_vars" / "workers" / "10-a.yml").write_text("v_dir: first\nv_group: gv-workers-dir\n")
    (folder / "group_vars" / "workers" / "20-b.yml").write_text("v_dir: second\n")
    (folder / "group_vars" / "fast.yml").write_text("v_file: fast\n")
    (folder / "host_vars" / "c.yml").write_text("v_host: hv-c\nv_deep: hv-c\n")
    return folder


@pytest.mark.parametrize("cluster", ["local", "emu", "pfs"])
def test_the_merge_is_ansibles_on_the_shipped_inventories(cluster):
    merged = inventory_files.read(REPO / "inventories" / cluster).host_vars
    assert merged == ansible_hostvars(REPO / "inventories" / cluster)


def test_the_merge_is_ansibles_on_every_precedence_rule(tmp_path):
    folder = write_layered(tmp_path / "layered")
    merged = inventory_files.read(folder)
    assert merged.host_vars == ansible_hostvars(folder)
    assert merged.host_vars["c"]["v_deep"] == "hv-c" and merged.host_vars["b"]["v_prio"] == "zeta"
    assert str(merged.host_sources["c"]["v_host"]).endswith("host_vars/c.yml")


def test_a_host_var_in_hosts_yml_is_validated(inventories):
    edit_yaml(inventories / "local" / "hosts.yml",
              lambda d: d["all"]["children"]["workers"]["hosts"].update(localhost={"spillway_root": "/tmp/x y"}))
    problem = one_problem("local", "hosts.yml: all.children.workers.hosts.localhost", "spillway_root",
                          "'/tmp/x y'", "not a safe absolute path")
    assert "give a plain path" in problem


def test_a_root_from_a_group_vars_file_is_validated(inventories):
    (inventories / "local" / "group_vars" / "workers.yml").write_text("spillway_root: /var/lib/../etc\n")
    problem = one_problem("local", "group_vars/workers.yml", "spillway_root", "not a safe absolute path")
    assert "/var/lib/../etc" in problem


@pytest.mark.parametrize("where", ["group_vars/workers.yml", "host_vars/localhost.yml", "hosts.yml"])
def test_backends_set_outside_group_vars_all_are_refused(inventories, where):
    backends = {"hdd": {"kind": "device", "device": "/dev/sda", "fstype": "xfs", "destructive_ok": True}}
    if where == "hosts.yml":
        edit_yaml(inventories / "local" / "hosts.yml",
                  lambda d: d["all"]["children"]["workers"].update(vars={"spillway_backends": backends}))
    else:
        path = inventories / "local" / where
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump({"spillway_backends": backends}))
    problem = one_problem("local", where, "spillway_backends", "move it there")
    assert "group_vars/all.yml" in problem


def test_a_group_vars_file_of_no_group_is_refused_with_did_you_mean(inventories):
    (inventories / "local" / "group_vars" / "worker.yml").write_text("spillway_root: /var/lib/spillway/w\n")
    one_problem("local", "group_vars/worker.yml", "no group 'worker'", "did you mean 'workers'?")


def test_another_inventory_file_in_the_folder_is_refused(inventories):
    (inventories / "local" / "more-hosts.yml").write_text("all: {hosts: {evil: }}\n")
    one_problem("local", "more-hosts.yml", "Ansible reads every file", "hosts.yml, group_vars/ and host_vars/")


@pytest.mark.parametrize("where, path", [
    ("group_vars/all.yml", ["spillway_monitorin"]),
    ("hosts.yml", ["all", "vars", "spillway_monitorin"]),
    ("host_vars/localhost.yml", ["spillway_monitorin"]),
])
def test_an_unknown_spillway_variable_is_an_error_with_did_you_mean(inventories, where, path):
    file = inventories / "local" / where
    file.parent.mkdir(exist_ok=True)
    data = yaml.safe_load(file.read_text()) if file.exists() else {}
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = {"enabled": False}
    file.write_text(yaml.safe_dump(data))
    one_problem("local", where, "spillway_monitorin:", "not a spillway variable", "did you mean 'spillway_monitoring'?")


def test_role_variables_an_inventory_may_set_are_known():
    known = inventory.known_variables()
    assert {"spillway_bind_address", "spillway_root", "spillway_monitoring", "spillway_emulation"} <= set(known)


# --- Malformed files: a clear message, never a traceback --------------------------------------------------------

@pytest.mark.parametrize("jit", ["-XX:OnOutOfMemoryError=touch /tmp/spillway-pwned", "c1 $(touch /tmp/x)", "C1", 1])
def test_spillway_jvm_takes_a_compiler_name_never_a_jvm_option(inventories, jit):
    # The JVM options it selects are fixed in role common (workload_jvm_options); only these names choose them.
    edit_yaml(inventories / "local" / "group_vars" / "all.yml", lambda data: data.update(spillway_jvm={"jit": jit}))
    problem = one_problem("local", "spillway_jvm.jit")
    assert "tiered" in problem and "c1" in problem, problem



@pytest.mark.parametrize("value", ["none", "dropped; rm -rf /", True, {"every": 1}])
def test_spillway_hdfs_page_cache_takes_kept_or_dropped_only(inventories, value):
    # the dropper's command is fixed in role hadoop (tasks/block_cache.yml); the value only switches it on
    edit_yaml(inventories / "local" / "group_vars" / "all.yml",
              lambda data: data.update(spillway_hdfs_page_cache=value))
    problem = one_problem("local", "spillway_hdfs_page_cache")
    assert "kept" in problem and "dropped" in problem, problem

MALFORMED_HOSTS = [
    ("a scalar", "localhost\n", "(top level): is text ('localhost')", "a mapping of groups"),
    ("all a list", "all: [localhost]\n", "all: is a list", "a group is a mapping of hosts:, children:, vars:"),
    ("workers a list", "all:\n  children:\n    workers: [localhost]\n", "all.children.workers: is a list",
     "a group is a mapping"),
    ("hosts a list", "all:\n  hosts: [localhost]\n", "all.hosts: is a list", "a mapping of host names"),
    ("a typo'd group key", "all:\n  host: {localhost: }\n", "all.host: not a key of a group", "did you mean 'hosts'"),
    ("deep nesting", "all:\n  vars:\n    x: " + "[" * 5000 + "]" * 5000 + "\n", "nested", "at most 32"),
    ("deep mappings", "all: " + "{a: " * 40 + "1" + "}" * 40 + "\n", "nested deeper than 32 levels", "flatten it"),
    ("a tab", "all:\n\tchildren: {}\n", "line 2, column 1", "replace the tab with spaces"),
    ("a non-UTF-8 byte", b"all:\n  vars: {x: caf\xe9}\n", "line 2: byte 0xe9 is not UTF-8", "save the file as UTF-8"),
    ("an empty file", "", "empty", "list the cluster's hosts under all.children.<role>.hosts"),
    ("only a comment", "# nothing\n", "empty", "list the cluster's hosts"),
    ("a self-referencing alias", "all: &a\n  vars: {x: *a}\n", "", "all"),
    ("a number as a host name", "all:\n  hosts: {1: }\n", "not text", "quote it"),
    ("a group containing itself", "all:\n  children:\n    g:\n      children:\n        g: {}\n",
     "a group cannot contain itself", "remove it"),
]


@pytest.mark.parametrize("case, text, fact, fix", MALFORMED_HOSTS, ids=[c[0] for c in MALFORMED_HOSTS])
def test_malformed_hosts_yml_is_refused_naming_file_field_and_fix(inventories, case, text, fact, fix):
    path = inventories / "local" / "hosts.yml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    problems = problems_of("local")
    assert any(str(path) in p and fact in p and fix in p for p in problems), problems


MALFORMED_VARS = [
    ("a list", "- spillway_cluster: local\n", "(top level): is a list", "a mapping of variable: value"),
    ("a scalar", "local\n", "(top level): is text", "a mapping of variable: value"),
    ("a tab", "spillway_cluster: local\nspillway_backends:\n\thdd: {}\n", "line 3", "replace the tab with spaces"),
    ("bad YAML", "spillway_cluster: [local\n", "not valid YAML", "fix the YAML syntax there"),
    ("a non-UTF-8 byte", b"\xff\xfe", "byte 0xff is not UTF-8", "save the file as UTF-8"),
    ("vault-encrypted", "$ANSIBLE_VAULT;1.1;AES256\n6162\n", "encrypted", "encrypt only the secret values"),
    ("empty", "", "spillway_cluster", "required"),
]


@pytest.mark.parametrize("case, text, fact, fix", MALFORMED_VARS, ids=[c[0] for c in MALFORMED_VARS])
def test_malformed_group_vars_are_refused_naming_file_field_and_fix(inventories, case, text, fact, fix):
    path = inventories / "local" / "group_vars" / "all.yml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    problems = problems_of("local")
    assert any(str(path) in p and fact in p and fix in p for p in problems), problems


def test_vault_values_and_unsafe_tags_are_read_as_ansible_reads_them(inventories):
    with (inventories / "local" / "group_vars" / "all.yml").open("a") as f:
        f.write("grafana_admin_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\n"
                "grafana_admin_user: !unsafe '{{ x }}'\n")  # a variable a role reads: others are refused
    assert inventory.load("local").variables["grafana_admin_user"] == "{{ x }}"


# --- The commands: refused before anything is touched, exit non-zero, no traceback -------------------------------

@pytest.mark.parametrize("command", [
    ["make", "--no-print-directory", "teardown"],
    ["make", "--no-print-directory", "setup"],
    ["make", "--no-print-directory", "preflight"],
    ["make", "--no-print-directory", "bench", "DRY_RUN=1"],
    [".venv/bin/python", "-m", "spillway", "validate", "--cluster"],
    [".venv/bin/python", "-m", "spillway", "bench", "--cluster"],
    [".venv/bin/python", "-m", "spillway", "preflight", "--cluster"],
])
def test_every_entry_point_refuses_a_malformed_inventory_before_touching_anything(tmp_path, decoy, cluster_name,
                                                                                  command):
    repo = scratch_repo(tmp_path)
    folder = copy_cluster(repo / "inventories", "local", cluster_name, spillway_root=str(decoy.parent))
    hosts = folder / "hosts.yml"
    hosts.write_text("all:\n  children:\n    workers: [localhost]\n")
    argv = command + ([f"CLUSTER={cluster_name}"] if command[0] == "make" else [cluster_name])
    result = run(repo, *argv)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    assert f"{hosts}: all.children.workers: is a list" in result.stderr, result.stderr
    assert "a group is a mapping of hosts:" in result.stderr
    assert "PLAY [" not in result.stdout
    assert decoy.read_bytes() == b"another cluster's state\n"


@pytest.mark.parametrize("command", [["make", "--no-print-directory", "cluster-up"],
                                     ["make", "--no-print-directory", "cluster-down"],
                                     [".venv/bin/python", "-m", "emulation", "down", "--cluster"]])
def test_emulation_entry_points_validate_the_merged_inventory(tmp_path, decoy, cluster_name, command):
    repo = scratch_repo(tmp_path)
    folder = copy_cluster(repo / "inventories", "emu", cluster_name)
    edit_yaml(folder / "group_vars" / "all.yml", lambda d: d["spillway_emulation"].update(state_dir=str(decoy.parent)))
    (folder / "group_vars" / "workers.yml").write_text("spillway_monitorin: {enabled: false}\n")
    argv = command + ([f"CLUSTER={cluster_name}"] if command[0] == "make" else [cluster_name])
    result = run(repo, *argv)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "group_vars/workers.yml: spillway_monitorin: not a spillway variable" in result.stderr, result.stderr
    assert "did you mean 'spillway_monitoring'?" in result.stderr
    assert decoy.read_bytes() == b"another cluster's state\n"


# --- Fuzzing: any text or structure gives ok or InventoryError ----------------------------------------------------

YAMLISH = st.text(alphabet=st.sampled_from(list("all:childrenhostsvarsworkers-[]{},:&*!#|>'\"\t\n 01.\\é")),
                  max_size=200)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                    st.sampled_from(["localhost", "hosts", "children", "vars", "spillway_root", "/var/lib/spillway"]))
TREES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.one_of(st.sampled_from(["all", "hosts", "children", "vars", "workers", "namenode",
                                               "localhost", "spillway_root", "spillway_backends"]),
                              st.integers()), inner, max_size=4)), max_leaves=20)


def loads_cleanly(cluster):
    try:
        inventory.load(cluster)
    except InventoryError as err:
        assert err.problems and all(isinstance(p, str) and p for p in err.problems)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=YAMLISH, which=st.sampled_from(["hosts.yml", "group_vars/all.yml", "group_vars/workers.yml"]))
def test_fuzzed_text_gives_ok_or_a_clear_error(inventories, text, which):
    path = inventories / "local" / which
    original = path.read_bytes() if path.exists() else None
    path.write_text(text)
    try:
        loads_cleanly("local")
    finally:
        if original is None:
            path.unlink()
        else:
            path.write_bytes(original)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=TREES, which=st.sampled_from(["hosts.yml", "group_vars/all.yml"]), raw=st.binary(max_size=16))
def test_fuzzed_structures_give_ok_or_a_clear_error(inventories, tree, which, raw):
    path = inventories / "local" / which
    original = path.read_bytes()
    try:
        path.write_text(yaml.safe_dump(tree))
        loads_cleanly("local")
        path.write_bytes(original.replace(b"localhost", raw, 1))
        loads_cleanly("local")
    finally:
        path.write_bytes(original)
