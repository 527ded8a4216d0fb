"""First check of `make bench/setup/teardown`, before anything is installed or touched.

Runs on the system python3 with the standard library only, so it answers within a second on a
fresh machine: an unknown cluster, a missing root privilege and (before a bench provisions a cluster
on this host) a port the cluster needs held by another program are reported before the venv,
packages or disks are set up. The full schema validation comes later (spillway.inventory).
"""
import argparse
import ast
import json
import os
import re
import sys
from pathlib import Path

from spillway import INVENTORIES, PLAYBOOKS, WORKLOADS, inventory_values
from spillway.workload_groups import GROUPS, expand

SCALES = ("tiny", "small", "large", "huge")


def available_clusters():
    return sorted(p.name for p in INVENTORIES.iterdir() if (p / "hosts.yml").is_file())


def check(cluster, workloads="", scale=None, ports=False):
    """Return a list of problems, each naming the fix. ports: also check the cluster's ports (provisioning)."""
    problems = []
    known = sorted(p.parent.name for p in WORKLOADS.glob("*/workload.yml"))
    for name in expand(filter(None, (w.strip() for w in workloads.split(",")))):
        if name not in known:
            problems.append(f"unknown workload '{name}'. Workloads: {', '.join(known)}; groups: "
                            f"{', '.join(GROUPS)} (WORKLOADS=a,b)")
    if scale is not None and scale not in SCALES:
        problems.append(f"unknown scale '{scale}'. Scales: {', '.join(SCALES)} (SCALE=tiny)")
    problems += check_cluster(cluster)
    if ports and not problems:
        problems += check_ports(cluster)
    return problems


def check_cluster(cluster):
    clusters = available_clusters()
    if cluster not in clusters:
        return [f"unknown cluster '{cluster}': there is no inventories/{cluster}/hosts.yml. "
                f"Clusters: {', '.join(clusters)}. Use CLUSTER=<one of them>, or add "
                f"inventories/{cluster}/ (see README, 'Add a cluster')."]
    # Hostile names are refused here, before make builds the venv or runs anything with the inventory.
    files, problems = inventory_values.folder_files(INVENTORIES / cluster, INVENTORIES.parent)
    problems = problems or inventory_values.hosts_yml_problems(
        f"inventories/{cluster}/hosts.yml", load_yaml(INVENTORIES / cluster / "hosts.yml", raw=True))
    if problems:
        return problems
    text = "".join(p.read_text() for p in files if p.suffix == ".yml")
    if "kind: emulated" in text and os.geteuid() != 0:
        return [f"cluster '{cluster}' uses emulated storage (loop devices, blkio throttles, mounts), "
                "which needs root. Run as root (sudo make ...), or point its backends at real mounts "
                f"(kind: mount) in inventories/{cluster}/group_vars/all.yml."]
    return []


# --- Ports -------------------------------------------------------------------------------------------------
# Provisioning a cluster on this host stops the daemons of any Spillway cluster here (they share the ports);
# a port held by any other program makes a daemon die at start with a bind error deep in its log.

DEFAULT_STATE_PARENT = Path("/var/lib/spillway")
# The port map: role common's defaults, in JSON so that this standard-library check reads the very values Ansible
# uses (hadoop_ports, monitoring_defaults); role preflight places the same ports per host.
PORT_MAP = PLAYBOOKS / "roles" / "common" / "defaults" / "main" / "ports.json"
# Grafana is a system service (role grafana), not a spillway-daemon process: its port held by it is no conflict.
GRAFANA_SETTING = "spillway_monitoring.grafana.port"


def load_yaml(path, raw=False):
    """Parse an inventory's YAML file: PyYAML when the system python has it, else the subset inventories use (raw:
    else the text itself). None when PyYAML cannot parse it (the full validation names why)."""
    text = Path(path).read_text()
    try:
        import yaml
    except ImportError:
        return text if raw else parse_simple_yaml(text)
    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError:
        if raw:
            return None
        raise


def parse_simple_yaml(text):
    """Block mappings with scalar, quoted, one-line flow mapping or flow list values; other lines (block lists,
    folded strings, what they hold) are skipped. Enough for the ports and switches of an inventory's group_vars."""
    root = {}
    stack = [(-1, root)]
    skip_deeper_than = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if skip_deeper_than is not None and indent > skip_deeper_than:
            continue
        skip_deeper_than = None
        match = re.match(r"\s*([\w.-]+):(?:\s+(.*?))?\s*(?:#.*)?$", line)
        while stack[-1][0] >= indent:
            stack.pop()
        if not match:
            skip_deeper_than = indent
            continue
        key, value = match.group(1), match.group(2)
        parent = stack[-1][1]
        if value is None:
            parent[key] = {}
            stack.append((indent, parent[key]))
        else:
            parent[key] = parse_scalar(value)
            if value in (">-", "|", ">", "|-"):
                skip_deeper_than = indent
    return root


def parse_scalar(value):
    if value.startswith(("{", "[")):
        # Flow collections of plain words: quote the words, then Python can read them.
        quoted = re.sub(r"([\w./-]+)", lambda m: repr(m.group(1)), value)
        try:
            return convert_words(ast.literal_eval(quoted))
        except (ValueError, SyntaxError):
            return value
    return convert_words(value.strip("\"'"))


def convert_words(value):
    if isinstance(value, dict):
        return {key: convert_words(item) for key, item in value.items()}
    if isinstance(value, list):
        return [convert_words(item) for item in value]
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    return {"true": True, "false": False}.get(value.lower(), value)


def merge(base, override):
    """Ansible's combine(recursive=true): the monitoring role merges spillway_monitoring over its defaults."""
    merged = dict(base)
    for key, value in (override or {}).items():
        merged[key] = merge(merged[key], value) if isinstance(merged.get(key), dict) and isinstance(value, dict) \
            else value
    return merged


def cluster_ports(cluster):
    """Port -> the inventory setting that changes it, for every port the cluster's daemons bind."""
    group_vars = load_yaml(INVENTORIES / cluster / "group_vars" / "all.yml")
    port_map = json.loads(PORT_MAP.read_text())
    # A group_vars dict replaces the role's default as a whole (Ansible's hash_behaviour=replace).
    settings = {port: f"hadoop_ports.{name}"
                for name, port in group_vars.get("hadoop_ports", port_map["hadoop_ports"]).items()}
    monitoring = merge(port_map["monitoring_defaults"], group_vars.get("spillway_monitoring"))
    if monitoring["enabled"]:
        for name in ("prometheus_port", "pushgateway_port", "node_exporter_port"):
            settings[monitoring[name]] = f"spillway_monitoring.{name}"
        for daemon, port in monitoring["jmx_exporter_ports"].items():
            settings[port] = f"spillway_monitoring.jmx_exporter_ports.{daemon}"
        if monitoring["grafana"]["enabled"]:
            settings[monitoring["grafana"]["port"]] = GRAFANA_SETTING
    return {int(port): setting for port, setting in settings.items()}


def listening_sockets():
    """Port -> inodes of the TCP sockets listening on it (any address, IPv4 and IPv6)."""
    sockets = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                sockets.setdefault(int(fields[1].rsplit(":", 1)[1], 16), set()).add(fields[9])
    return sockets


def socket_owners(inodes):
    """Socket inode -> pid of a process holding it (processes this user may look into)."""
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    owners = {}
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            for fd in os.scandir(fd_dir):
                inode = wanted.get(os.readlink(fd.path))
                if inode:
                    owners[inode] = int(fd_dir.parent.name)
        except OSError:
            continue
    return owners


def spillway_daemon_pids(state_parent=DEFAULT_STATE_PARENT):
    """Pids recorded by spillway-daemon for the daemons of every cluster on this host."""
    pids = set()
    for pid_file in state_parent.glob("*/run/*.pid"):
        try:
            first_line = pid_file.read_text().split("\n", 1)[0]
        except OSError:
            continue
        if first_line.isdigit():
            pids.add(int(first_line))
    return pids


def process_name(pid):
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "exited"


def check_ports(cluster, state_parent=DEFAULT_STATE_PARENT):
    """Ports of a cluster on this host held by a program that is no Spillway daemon: each names the setting."""
    hosts = (INVENTORIES / cluster / "hosts.yml").read_text()
    if not re.search(r"^\s*ansible_connection:\s*local\b", hosts, re.MULTILINE):
        return []  # the daemons bind on remote hosts: their start names a port conflict there
    needed = cluster_ports(cluster)
    held = {port: inodes for port, inodes in listening_sockets().items() if port in needed}
    if not held:
        return []
    owners = socket_owners(set().union(*held.values()))
    ours = spillway_daemon_pids(state_parent)
    problems = []
    for port in sorted(held):
        pids = {owners[inode] for inode in held[port] if inode in owners}
        expected = ours | ({pid for pid in pids if process_name(pid).startswith("grafana")}
                           if needed[port] == GRAFANA_SETTING else set())
        if pids and pids <= expected:
            continue
        holder = ", ".join(f"pid {pid} ({process_name(pid)})" for pid in sorted(pids - expected)) or \
            "a process this user cannot see"
        problems.append(f"port {port} is in use by {holder}: set {needed[port]} in "
                        f"inventories/{cluster}/group_vars/all.yml, or stop that process.")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(prog="spillway.cluster_check")
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--workloads", default="")
    parser.add_argument("--scale")
    parser.add_argument("--ports", action="store_true",
                        help="also check the ports the cluster binds (`make bench`, the entry point that provisions)")
    args = parser.parse_args(argv)
    problems = check(args.cluster, args.workloads, args.scale, args.ports)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 2 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
