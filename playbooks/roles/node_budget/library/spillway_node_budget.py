#!/usr/bin/python
"""Put a node's memory and CPU budget in place as cgroup v1 groups, or take it away (docs/cluster.md, "Node budgets").

One group per controller (memory, cpu), at the top of each hierarchy, named after the cluster, the host and the id
of the cluster root's ownership record: `spillway.<cluster>.<host>.<cluster_id>`. The name is the group's ownership
record (a cgroup directory cannot hold a file of ours): this module creates, changes and removes only the groups
that carry this root's id, so one cluster never touches another's. The groups in force are listed, one path a line,
in `<spillway_root>/run/node-cgroups`; `spillway-in-budget` (bin/) puts a command into them before it runs it.

A budget taken away (or `state: absent`, at teardown) removes the groups: the processes still inside (daemons
started under the budget) are moved to the hierarchy's top first, so that nothing stays limited by a budget the
inventory no longer has.

`state: cold` (before each measured run) empties the page cache charged to the node's memory group and nothing
else: the pages its own processes read or wrote (HDFS blocks, shuffle files) go, its processes' memory stays. A real
node holds a small part of its data in memory; ours would otherwise start every run with all of the data that the
prepare step just wrote still cached.
"""
import os

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: spillway_node_budget
short_description: Create, update or remove a Spillway node's memory and CPU cgroups
options:
  cgroup_root: {type: path, default: /sys/fs/cgroup, description: "Where the cgroup v1 hierarchies are mounted."}
  cluster: {type: str, required: true}
  host: {type: str, required: true, description: "The inventory host name (a plain name)."}
  cluster_id: {type: str, default: "", description: "The id of this host's cluster root ownership record."}
  memory_bytes: {type: int, default: 0, description: "Memory limit, page cache included; 0 - no memory budget."}
  cpu_quota_us: {type: int, default: 0, description: "CPU time per period (cores x period); 0 - no CPU budget."}
  cpu_period_us: {type: int, default: 100000}
  list_file: {type: path, required: true, description: "Where the groups in force are listed (run/node-cgroups)."}
  state: {type: str, choices: [present, absent, cold], default: present,
          description: "cold: changes no group, empties the page cache of the memory group listed in list_file."}
"""

CONTROLLERS = ("memory", "cpu")


def group_name(cluster, host, cluster_id):
    for part, value in (("cluster", cluster), ("host", host), ("cluster_id", cluster_id)):
        if not value or not all(c.isalnum() or c in "-_" for c in value):
            raise ValueError(f"{part} {value!r} is not a plain name (letters, digits, - and _)")
    return f"spillway.{cluster}.{host}.{cluster_id}"


def read(path):
    with open(path) as handle:
        return handle.read().strip()


def write(path, value):
    with open(path, "w") as handle:
        handle.write(value)


def settings(memory_bytes, cpu_quota_us, cpu_period_us):
    """The files to write in each controller's group, in order (the period before the quota it divides)."""
    wanted = {}
    if memory_bytes:
        wanted["memory"] = [("memory.limit_in_bytes", str(memory_bytes))]
    if cpu_quota_us:
        wanted["cpu"] = [("cpu.cfs_period_us", str(cpu_period_us)), ("cpu.cfs_quota_us", str(cpu_quota_us))]
    return wanted


def processes(group):
    try:
        return [line for line in read(os.path.join(group, "cgroup.procs")).split() if line]
    except FileNotFoundError:
        return []


def remove(group, top):
    """Move the group's processes to the hierarchy's top, then remove the group; returns the pids moved."""
    moved = []
    for _ in range(5):  # a process may fork while it is moved: look again
        pids = processes(group)
        if not pids:
            break
        for pid in pids:
            try:
                write(os.path.join(top, "cgroup.procs"), pid)
                moved.append(pid)
            except ProcessLookupError:
                pass
    os.rmdir(group)
    return moved


def page_cache_bytes(group):
    for line in read(os.path.join(group, "memory.stat")).splitlines():
        key, value = line.split()
        if key == "cache":
            return int(value)
    return 0


def make_cold(params, check_mode):
    """Empty the page cache of this node's memory group, the one the listing names (no listing: no budget, no-op).
    Returns the changes and the bytes of page cache the group held before and after."""
    if not os.path.exists(params["list_file"]):
        return [], {}
    prefix = os.path.join(params["cgroup_root"], "memory", f"spillway.{params['cluster']}.{params['host']}.")
    groups = [line.strip() for line in read(params["list_file"]).splitlines() if line.strip()]
    memory_groups = [group for group in groups if group.startswith(prefix)]
    cache = {}
    for group in memory_groups:
        if "/" in group[len(prefix):] or not os.path.isdir(group):
            raise RuntimeError(f"{params['list_file']} names {group}, not this node's memory group: "
                               "re-run the provisioning")
        before = page_cache_bytes(group)
        if not check_mode:
            # reclaims what it can (the page cache) and leaves what it cannot (the processes' anonymous memory)
            write(os.path.join(group, "memory.force_empty"), "0")
        cache[group] = {"before": before, "after": before if check_mode else page_cache_bytes(group)}
    changes = [f"page cache of {group}: {c['before']} -> {c['after']} bytes" for group, c in cache.items()]
    return changes, cache


def apply(params, check_mode):
    if params["state"] == "absent" and not params["cluster_id"]:
        return [], []  # no cluster root on this host (teardown of nothing): no group can be this cluster's
    name = group_name(params["cluster"], params["host"], params["cluster_id"])
    wanted = settings(params["memory_bytes"], params["cpu_quota_us"], params["cpu_period_us"])
    if params["state"] == "absent":
        wanted = {}
    changes, in_force = [], []
    for controller in CONTROLLERS:
        top = os.path.join(params["cgroup_root"], controller)
        group = os.path.join(top, name)
        if controller not in wanted:
            if os.path.isdir(group):
                changes.append(f"removed {group}")
                if not check_mode:
                    moved = remove(group, top)
                    if moved:
                        changes[-1] += f" (moved out: {' '.join(moved)})"
            continue
        if not os.path.isdir(top):
            raise RuntimeError(f"no cgroup v1 {controller} hierarchy at {top}: a node budget needs it (mount it, or "
                               f"remove spillway_node.{'memory_gib' if controller == 'memory' else 'cores'})")
        if not os.path.isdir(group):
            changes.append(f"created {group}")
            if check_mode:
                in_force.append(group)
                continue
            os.mkdir(group)
        for knob, value in wanted[controller]:
            path = os.path.join(group, knob)
            if read(path) != value:
                changes.append(f"{path} = {value}")
                if not check_mode:
                    write(path, value)
        in_force.append(group)
    # no group in force: no listing at all (spillway-in-budget then joins nothing)
    listing = "".join(f"{group}\n" for group in in_force) or None
    current = None
    if os.path.exists(params["list_file"]):
        with open(params["list_file"]) as handle:
            current = handle.read()
    if current != listing:
        changes.append(f"listed in {params['list_file']}: {' '.join(in_force) or 'none'}")
        if not check_mode:
            if listing:
                write(params["list_file"] + ".tmp", listing)
                os.replace(params["list_file"] + ".tmp", params["list_file"])
            else:
                os.unlink(params["list_file"])
    return changes, in_force


def main():
    spec = {
        "cgroup_root": {"type": "path", "default": "/sys/fs/cgroup"},
        "cluster": {"type": "str", "required": True},
        "host": {"type": "str", "required": True},
        "cluster_id": {"type": "str", "default": ""},
        "memory_bytes": {"type": "int", "default": 0},
        "cpu_quota_us": {"type": "int", "default": 0},
        "cpu_period_us": {"type": "int", "default": 100000},
        "list_file": {"type": "path", "required": True},
        "state": {"type": "str", "choices": ["present", "absent", "cold"], "default": "present"},
    }
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    try:
        if module.params["state"] == "cold":
            changes, page_cache = make_cold(module.params, module.check_mode)
            module.exit_json(changed=bool(changes), changes=changes, page_cache=page_cache)
        changes, in_force = apply(module.params, module.check_mode)
    except (OSError, RuntimeError, ValueError) as err:
        module.fail_json(msg=f"node budget of {module.params['host']}: {err}")
    module.exit_json(changed=bool(changes), changes=changes, cgroups=in_force)


if __name__ == "__main__":
    main()
