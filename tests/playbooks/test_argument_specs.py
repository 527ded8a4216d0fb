"""Every role's meta/argument_specs.yml: present, true to the role's defaults, and passing at every entry point the
playbooks reach with the shipped inventories.

Ansible checks a role's spec when the role is entered, rendering every option it names first; a spec that fails
there stops provisioning. The last test runs each playbook so that only those checks run: copies of the playbooks
whose role includes carry a tag, `--tags` that tag, check mode, scratch copies of the inventories under another
cluster name over the local connection. Nothing on the machine is touched.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spillway import INVENTORIES, PLAYBOOKS, REPO

ROLES = sorted(p.name for p in (PLAYBOOKS / "roles").iterdir() if (p / "tasks").is_dir())
INCLUDES = ("ansible.builtin.include_role", "ansible.builtin.import_role")
# Defaults a spec leaves out: at role entry they cannot be rendered yet (they read the service hosts' bind addresses
# through hostvars, which the role's own tasks pin as facts first).
RENDERED_TOO_LATE = {"hadoop": {"hadoop_namenode_host", "hadoop_resourcemanager_host", "hadoop_historyserver_host"}}
# What the playbooks need from the command line (the runner's extra vars); none collide between playbooks.
EXTRA_VARS = {"run_id": "r1", "workload_id": "w1", "attempt": 1, "workload_name": "terasort", "step": "run",
              "params": {}, "commands": []}
# What one playbook alone needs besides: given to its import only, as an extra var would also reach the playbooks
# that import collectors.yml with their own collectors_action.
PLAYBOOK_VARS = {"collectors.yml": {"collectors_action": "start"}}
# facts.yml gathers facts (always, whatever the tags): it would reach the inventory's hosts.
PLAYBOOK_NAMES = sorted(p.name for p in PLAYBOOKS.glob("*.yml") if p.name != "facts.yml")


def specs(role):
    return yaml.safe_load((PLAYBOOKS / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]


def role_defaults(role):
    """A role's defaults: defaults/main.yml, or every file of defaults/main/ (role common keeps JSON there too)."""
    folder = PLAYBOOKS / "roles" / role / "defaults"
    files = [folder / "main.yml"] if (folder / "main.yml").is_file() else sorted((folder / "main").glob("*.*"))
    values = {}
    for path in files:
        values.update(yaml.safe_load(path.read_text()) or {})
    return values


def tasks_of(node):
    """Every task of a list of plays or tasks, blocks opened."""
    for item in node or []:
        for key in ("pre_tasks", "tasks", "post_tasks", "block", "rescue", "always"):
            yield from tasks_of(item.get(key))
        if not any(key in item for key in ("hosts", "block", "import_playbook")):
            yield item


def playbook_entry_points():
    """(role, entry point) of every role the playbooks apply or include."""
    found = set()
    for path in PLAYBOOKS.glob("*.yml"):
        plays = yaml.safe_load(path.read_text())
        for play in plays:
            for role in play.get("roles") or []:
                found.add((role if isinstance(role, str) else role["role"], "main"))
        for task in tasks_of(plays):
            for key in INCLUDES:
                if key in task:
                    role, entry = task[key]["name"], task[key].get("tasks_from", "main")
                    # A templated tasks_from ("{{ 'stop' if ... else 'main' }}"): each entry point it can choose.
                    names = ["".join(pair) for pair in re.findall(r"'(\w+)' if|else '(\w+)'", entry)] or [entry]
                    found |= {(role, name) for name in names}
    return found


@pytest.mark.parametrize("role", ROLES)
def test_every_role_documents_its_main_entry_point(role):
    main = specs(role)["main"]
    assert main["short_description"] and main["options"], role


@pytest.mark.parametrize("role", ROLES)
def test_every_default_is_in_the_spec_with_its_real_default(role):
    options = {}
    for entry in specs(role).values():
        options.update(entry.get("options") or {})
    defaults = {name: value for name, value in role_defaults(role).items() if "__" not in name}  # role__private
    missing = set(defaults) - set(options) - RENDERED_TOO_LATE.get(role, set())
    assert not missing, f"role {role}: defaults without a spec: {sorted(missing)}"
    for name, option in options.items():
        if "default" in option and name in defaults:
            assert option["default"] == defaults[name], f"role {role}: {name}"


def test_specs_hold_no_template():
    """Ansible renders a spec as the arguments of its check: a template there fails whenever a name is undefined."""
    for role in ROLES:
        text = (PLAYBOOKS / "roles" / role / "meta" / "argument_specs.yml").read_text()
        assert "{{" not in text and "{%" not in text, role


def test_every_entry_point_the_playbooks_use_has_a_spec_and_a_task_file():
    for role, entry in sorted(playbook_entry_points()):
        assert entry in specs(role), f"role {role}, tasks_from {entry}: no argument spec"
    for role in ROLES:
        for entry in specs(role):
            assert (PLAYBOOKS / "roles" / role / "tasks" / f"{entry}.yml").is_file(), (role, entry)


def scratch_copy(tmp_path, inventory):
    """The playbooks with their role includes tagged `argspec`, and the inventory under another cluster name with
    every host over the local connection."""
    playbooks = tmp_path / "playbooks"
    shutil.copytree(PLAYBOOKS / "tasks", playbooks / "tasks")
    for path in PLAYBOOKS.glob("*.yml"):
        plays = yaml.safe_load(path.read_text())
        for task in tasks_of(plays):
            if any(key in task for key in INCLUDES):
                task["tags"] = ["argspec"]
        (playbooks / path.name).write_text(yaml.safe_dump(plays, sort_keys=False))
    copy = tmp_path / "inventories" / inventory
    shutil.copytree(INVENTORIES / inventory, copy)
    group_vars = yaml.safe_load((copy / "group_vars/all.yml").read_text())
    group_vars["spillway_cluster"] = f"{inventory}-argspec"
    (copy / "group_vars/all.yml").write_text(yaml.safe_dump(group_vars))
    hosts = yaml.safe_load((copy / "hosts.yml").read_text())
    hosts["all"].setdefault("vars", {}).update(ansible_connection="local",
                                               ansible_python_interpreter="{{ ansible_playbook_python }}")
    for host_vars in [hosts["all"].get("hosts") or {}] + [g.get("hosts") or {} for g in hosts["all"]["children"].values()]:
        for values in host_vars.values():
            (values or {}).pop("ansible_connection", None)
    (copy / "hosts.yml").write_text(yaml.safe_dump(hosts))
    return playbooks, copy


@pytest.mark.parametrize("inventory", ["local", "pfs"])
def test_every_entry_point_the_playbooks_reach_passes_its_spec(tmp_path, inventory):
    playbooks, copy = scratch_copy(tmp_path, inventory)
    # Every playbook in one run of Ansible (17 start-ups less; their extra vars do not collide), each in a play of its
    # own as the runner starts it; a failing one names itself in the output.
    (playbooks / "every-playbook.yml").write_text(yaml.safe_dump(
        [{"ansible.builtin.import_playbook": name, **({"vars": PLAYBOOK_VARS[name]} if name in PLAYBOOK_VARS else {})}
         for name in PLAYBOOK_NAMES]))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(copy),
                           str(playbooks / "every-playbook.yml"), "--check", "--tags", "argspec",
                           "-e", json.dumps(EXTRA_VARS)],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
    assert proc.returncode == 0, f"{proc.stdout[-6000:]}{proc.stderr[-2000:]}"
    checked = set(re.findall(r"^TASK \[(\w+) : Validating arguments against arg spec '(\w+)'", proc.stdout, re.MULTILINE))
    expected = playbook_entry_points()
    if inventory != "pfs":  # the storage servers' entry points run only where there are storage servers
        expected -= {("storage", "pfs_servers"), ("glusterfs", "main"), ("glusterfs", "stop_server"),
                     ("common", "users")}
    if "spillway_node" not in yaml.safe_load((copy / "group_vars/all.yml").read_text()):
        expected -= {("node_budget", "cold")}   # a measured run starts cold only on a budgeted node
    if yaml.safe_load((copy / "group_vars/all.yml").read_text()).get("spillway_hdfs_page_cache") != "dropped":
        expected -= {("hadoop", "block_cache")}  # the dropper runs only where the inventory asks for it
    assert expected <= checked, sorted(expected - checked)
