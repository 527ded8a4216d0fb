"""Every value that a playbook puts into shell text goes through `quote` (docs/safety.md, "No value becomes code").

A host name with `$(...)` in it reached two shell lines unquoted (the collectors' fetch and the GlusterFS probe, both
inside double quotes, where the shell still runs `$(...)`), and `workload_python_interpreter` was spliced in as the
command itself. This reads every `shell`/`command` task of playbooks/ and holds each Jinja expression in its text to
one of: `| quote`, a list quoted item by item (`map('quote') | join(' ')`), `| int`, or an entry below that says why
its value cannot carry shell text."""
from __future__ import annotations

import re

import yaml

from spillway import REPO

SHELL_MODULES = ("ansible.builtin.shell", "ansible.builtin.command", "ansible.builtin.raw", "shell", "command", "raw")

# Expressions left unquoted on purpose, each with the reason its value is no shell text.
KNOWN_SAFE = {
    "glusterfs_timeout": "an int (role argument spec)",
    "hadoop_stop_timeout": "an int (role argument spec)",
    "monitoring_stop_timeout": "an int (role argument spec)",
    "workload_command.timeout_s | default(3600)": "an int (workloads/schema: integer, minimum 1)",
    "glusterfs_servers | length": "a number",
    "mode": "an octal mode from the role's own vars (hadoop_state_dirs, monitoring_state_dirs)",
    "daemon.name": "a daemon name from the role's own list (hadoop_daemons)",
    "hadoop_host_daemons | map(attribute='name') | join(' ')": "daemon names from the role's own list",
    "hadoop_daemons | map(attribute='name') | reverse | join(' ')": "daemon names from the role's own list",
    "hadoop_restart | reverse | join(' ')": "daemon names from the role's own list",
    "monitoring_process_names | join(' ')": "process names from the role's own list",
    "hadoop_run_as": "a setpriv prefix whose values are quoted where it is defined (roles/hadoop/vars)",
    "monitoring_run_as": "a setpriv prefix whose values are quoted where it is defined (roles/monitoring/vars)",
    "'' if workload_command.needs_root is defined else workload_run_as":
        "a setpriv prefix whose values are quoted where it is defined (the task's vars)",
    "'monitoring' if inventory_hostname == groups['controller'][0] else ''": "one of two literal words",
    "(monitoring_prometheus_config_file is changed) | ternary('yes', 'no')": "one of two literal words",
    "('/*/' ~ workload_id | quote) if workload_id | default('') else ''": "a literal and a quoted value",
}

QUOTED = re.compile(r"(\|\s*quote|map\('quote'\)\s*\|\s*join\(' '\)|\|\s*int)\s*$")


def shell_texts():
    """(file, task name, text) of every shell or command task of playbooks/."""
    found = []

    def walk(node, path, name=""):
        if isinstance(node, dict):
            name = node.get("name", name)
            for module in SHELL_MODULES:
                if module in node:
                    value = node[module]
                    text = value.get("cmd", "") if isinstance(value, dict) else value
                    if isinstance(text, str):
                        found.append((path, name, text))
            for value in node.values():
                walk(value, path, name)
        elif isinstance(node, list):
            for value in node:
                walk(value, path, name)

    for path in sorted((REPO / "playbooks").rglob("*.yml")):
        walk(yaml.safe_load(path.read_text()), path.relative_to(REPO))
    return found


def unquoted_expressions(text):
    expressions = (" ".join(expr.split()) for expr in re.findall(r"\{\{(.*?)\}\}", text, re.S))
    return [expr for expr in expressions if not QUOTED.search(expr) and expr not in KNOWN_SAFE]


def test_every_value_in_shell_text_is_quoted_or_known_to_be_no_shell_text():
    texts = shell_texts()
    assert len(texts) > 40, "the walk found too few shell tasks: has playbooks/ moved?"
    unquoted = {f"{path} ({name})": exprs for path, name, text in texts if (exprs := unquoted_expressions(text))}
    assert unquoted == {}, "quote these (`| quote`), or pass them as argv, or add them to KNOWN_SAFE with the reason"


def test_the_check_sees_a_host_name_spliced_into_double_quotes():
    """The shape the review found: double quotes do not stop `$(...)`."""
    assert unquoted_expressions('echo "{{ inventory_hostname }}: nothing to fetch"') == ["inventory_hostname"]
    assert unquoted_expressions("echo {{ (inventory_hostname ~ ': nothing') | quote }}") == []
    assert unquoted_expressions("{{ workload_python_interpreter }} -m venv x") == ["workload_python_interpreter"]


def test_every_known_safe_expression_is_still_used():
    used = {" ".join(expr.split()) for _, _, text in shell_texts() for expr in re.findall(r"\{\{(.*?)\}\}", text, re.S)}
    assert set(KNOWN_SAFE) - used == set(), "remove the entries no playbook uses any more"
