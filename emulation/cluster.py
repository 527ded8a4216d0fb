"""Bring an emulated cluster up, report on it, take it down (root; ip, tc, unshare, sshd, nc).

Every object made on the machine carries the emulation's prefix (namespaces) or lives below its state_dir, and
is the cluster's by ownership record (spillway/ownership.py, docs/safety.md): state_dir's record names the cluster
and lists the namespaces and the machine link it made; each node's root carries the same cluster id. `down` checks
all of it before it touches anything, then removes only those: processes inside the recorded namespaces, loop
devices whose backing image is a node's, their throttle rules, the namespaces (with their veths and bridge) and
state_dir.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from emulation.config import (EmulationError, etc_hosts, is_own_loop_backing, known_hosts_line, node_command,
                              node_environment, rate_bits, sshd_config, tbf_args)
from spillway import ownership

BLKIO = Path("/sys/fs/cgroup/blkio")
CGROUPS = Path("/sys/fs/cgroup")
BUDGET_CONTROLLERS = ("memory", "cpu")
THROTTLE_KNOBS = ("read_bps", "write_bps", "read_iops", "write_iops")
REQUIRED_COMMANDS = {"ip": "iproute2", "tc": "iproute2", "unshare": "util-linux", "findmnt": "util-linux",
                     "losetup": "util-linux", "/usr/sbin/sshd": "openssh-server", "ssh-keygen": "openssh-client",
                     "nc": "netcat-openbsd"}


def run(argv, check=True, **kwargs):
    done = subprocess.run(argv, check=False, text=True, capture_output=True, **kwargs)
    if check and done.returncode != 0:
        raise EmulationError(f"{' '.join(argv)} failed (exit {done.returncode}): {done.stderr.strip()}")
    return done


def say(message):
    print(message, flush=True)


# -- reading the machine -------------------------------------------------------------------------------
def existing_namespaces():
    out = run(["ip", "-json", "netns", "list"], check=False).stdout.strip()
    return {entry["name"] for entry in json.loads(out or "[]")}


def namespace_pids(namespace):
    out = run(["ip", "netns", "pids", namespace], check=False).stdout
    return [int(p) for p in out.split()]


def node_pid(emulation, node):
    """The node's sshd (its namespaces' anchor) when it runs inside the node's network namespace, else None."""
    try:
        pid = int(emulation.node_pid_file(node).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if pid in namespace_pids(node.namespace(emulation.prefix)) else None


def own_loops(emulation):
    """name -> (MAJ:MIN, backing file) of the loop devices over node disk images, and of the loops stacked on
    those (upper loops, backed by /dev/<lower>)."""
    loops = {}
    for entry in Path("/sys/block").glob("loop*"):
        try:
            backing = (entry / "loop" / "backing_file").read_text().strip()
            majmin = (entry / "dev").read_text().strip()
        except OSError:
            continue  # not attached
        loops[entry.name] = (majmin, backing)
    lowers = {name for name, (_, backing) in loops.items() if is_own_loop_backing(backing, emulation)}
    uppers = {name for name, (_, backing) in loops.items() if backing.removeprefix("/dev/") in lowers}
    return {name: loops[name] for name in lowers | uppers}, uppers


def throttle_rules(majmins):
    """(knob, MAJ:MIN) of the root blkio cgroup's rules that name one of `majmins`."""
    rules = []
    for knob in THROTTLE_KNOBS:
        path = BLKIO / f"blkio.throttle.{knob}_device"
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            if line.split()[:1] and line.split()[0] in majmins:
                rules.append((knob, line.split()[0]))
    return rules


def mounts_below(directory):
    out = run(["findmnt", "-rn", "-o", "TARGET"], check=False).stdout.split()
    return [t for t in out if t == str(directory) or t.startswith(f"{directory}/")]


def status(emulation):
    """What of the emulation exists now: {"nodes": {name: {...}}, "leftovers": [...]}."""
    namespaces = existing_namespaces()
    nodes = {}
    for node in emulation.nodes:
        ns = node.namespace(emulation.prefix)
        nodes[node.name] = {"namespace": ns if ns in namespaces else None, "address": node.address,
                            "sshd_pid": node_pid(emulation, node) if ns in namespaces else None,
                            "processes": len(namespace_pids(ns)) if ns in namespaces else 0,
                            "link_rate_bits": link_rate_bits(ns, "eth0") if ns in namespaces else None}
    loops, _ = own_loops(emulation)
    return {"cluster": emulation.cluster, "bridge_namespace": emulation.bridge_namespace in namespaces,
            "nodes": nodes, "loops": sorted(loops), "throttles": throttle_rules({m for m, _ in loops.values()}),
            "machine_link": emulation.machine_link in machine_links(), "state_dir": emulation.state_dir.exists()}


def leftovers(emulation):
    """Everything of the emulation still on the machine, as text; empty when it is all gone."""
    found = [f"namespace {ns}" for ns in sorted(existing_namespaces() & set(emulation.namespaces))]
    loops, _ = own_loops(emulation)
    found += [f"loop device {name} ({backing})" for name, (_, backing) in sorted(loops.items())]
    found += [f"throttle rule {knob} {majmin}" for knob, majmin in throttle_rules({m for m, _ in loops.values()})]
    if emulation.machine_link in machine_links():
        found.append(f"network link {emulation.machine_link}")
    found += [f"cgroup {group}" for group in budget_groups(emulation)]
    found += [f"mount {target}" for target in mounts_below(emulation.state_dir)]
    if emulation.state_dir.exists():
        found.append(f"directory {emulation.state_dir}")
    return found


# -- ownership --------------------------------------------------------------------------------------------
def network_names(emulation):
    """The objects of the machine that cannot hold a record, as state_dir's record lists them ("owns")."""
    names = [f"netns:{ns}" for ns in emulation.namespaces]
    return names + ([f"link:{emulation.machine_link}"] if emulation.machine_address else [])


def existing_network_names(emulation):
    """Which of this emulation's names exist on the machine now, whoever made them."""
    namespaces = existing_namespaces()
    found = {f"netns:{ns}" for ns in emulation.namespaces if ns in namespaces}
    if emulation.machine_link in machine_links():
        found.add(f"link:{emulation.machine_link}")
    return found


def node_root_dir(emulation, node):
    """A node's spillway_root as the machine sees it: below the node directory bound over /var/lib/spillway."""
    return emulation.node_dir(node) / "spillway" / Path(node.spillway_root).name


def legacy_state_dir(emulation):
    """Whether an unrecorded state_dir is unambiguously this cluster's from before ownership records: its client
    key is the one `up` generated for this cluster (comment spillway-<cluster>)."""
    try:
        return Path(f"{emulation.key_file}.pub").read_text().split()[2:3] == [f"spillway-{emulation.cluster}"]
    except (OSError, IndexError):
        return False


def legacy_network_names(emulation):
    """The existing network objects an adopted state_dir made before records: the namespaces whose sshd is the one
    its pid files name; the bridge namespace and machine link with them."""
    names = {f"netns:{node.namespace(emulation.prefix)}" for node in emulation.nodes if node_pid(emulation, node)}
    if names:
        names |= {f"netns:{emulation.bridge_namespace}", f"link:{emulation.machine_link}"}
    return names


def fix_for(emulation):
    return (f"Fix: state_dir and prefix in spillway_emulation of inventories/{emulation.cluster}/group_vars/all.yml "
            "must be this cluster's own (a copied inventory keeps the original's: give it its own); if they are this "
            "cluster's from before ownership records, `make cluster-up CLUSTER=" + emulation.cluster + "` records "
            f"them (when {emulation.key_file}.pub is the cluster's), then make teardown")


def claim(emulation):
    """Make state_dir this cluster's (create, or adopt an unambiguous one from before records) and record the
    network objects `up` will make; refuses, before anything is made, a state_dir, a namespace or a link of these
    names that another cluster (or nobody) owns. Returns the record."""
    is_dir = emulation.state_dir.is_dir() and not emulation.state_dir.is_symlink()
    prior = ownership.read_record(emulation.state_dir) if is_dir else None
    if prior is not None:
        ownership.check(emulation.state_dir, emulation.cluster, action="use", fix=fix_for(emulation))
    adopted = is_dir and prior is None and legacy_state_dir(emulation)
    owned = set(prior["owns"]) if prior else set()
    foreign = existing_network_names(emulation) - owned - (legacy_network_names(emulation) if adopted else set())
    if foreign:
        raise ownership.OwnershipError(
            f"refusing to use {', '.join(sorted(foreign))}: they exist on the machine and no record of cluster "
            f"'{emulation.cluster}' in {emulation.state_dir} lists them, so another cluster made them "
            f"(prefix {emulation.prefix}). " + fix_for(emulation))
    record, _ = ownership.claim(emulation.state_dir, emulation.cluster, resource="emulation state_dir",
                                adopt=adopted, fix=fix_for(emulation), mode=0o755)
    owned = set(record.get("owns", []))
    wanted = owned | set(network_names(emulation))
    if wanted != owned:
        record = {**record, "owns": sorted(wanted)}
        ownership.write_record(emulation.state_dir, record)
    return record


def check_owned(emulation):
    """Before `down` or a teardown touches anything: state_dir's record names this cluster and lists every existing
    namespace and link of its names, and every node root present carries its id. Returns the record, None when
    nothing of the emulation exists."""
    present = existing_network_names(emulation)
    if not os.path.lexists(emulation.state_dir):
        if present:
            raise ownership.OwnershipError(
                f"refusing to remove {', '.join(sorted(present))}: no state_dir {emulation.state_dir} with an "
                f"ownership record of cluster '{emulation.cluster}' lists them. Fix: if they are this cluster's, "
                "delete them by hand (ip netns delete <name>, ip link delete <name>); otherwise they are another "
                "cluster's: " + fix_for(emulation))
        return None
    record = ownership.check(emulation.state_dir, emulation.cluster, action="remove the emulation in",
                             fix=fix_for(emulation))
    foreign = present - set(record.get("owns", []))
    if foreign:
        raise ownership.OwnershipError(
            f"refusing to remove {', '.join(sorted(foreign))}: the record of {emulation.state_dir} "
            f"({ownership.found_text(record)}) does not list them: another cluster made them. " + fix_for(emulation))
    for node in emulation.nodes:
        root = node_root_dir(emulation, node)
        if os.path.lexists(root):
            ownership.check(root, emulation.cluster, record["cluster_id"], action="remove the emulation in")
    return record


def is_up(emulation):
    if check_owned(emulation) is None:
        return False
    state = status(emulation)
    return state["bridge_namespace"] and all(n["sshd_pid"] for n in state["nodes"].values())


# -- up ----------------------------------------------------------------------------------------------------
def check_machine(emulation):
    missing = sorted({pkg for cmd, pkg in REQUIRED_COMMANDS.items() if not shutil.which(cmd)})
    if missing:
        raise EmulationError(f"missing Debian packages: {' '.join(missing)}. Fix: "
                             f"apt-get install --no-install-recommends {' '.join(missing)}")
    if os.geteuid() != 0:
        raise EmulationError("the emulation needs root (network namespaces, mounts, loop devices)")
    if emulation.machine_address and emulation.machine_link not in machine_links():
        routes = json.loads(run(["ip", "-j", "route", "show", "to", "match", str(emulation.gateway)]).stdout or "[]")
        taken = [r for r in routes if r.get("dst") != "default"]
        if taken:
            raise EmulationError(f"the machine already routes {emulation.subnet} ({taken[0].get('dst')} dev "
                                 f"{taken[0].get('dev')}): choose another subnet in spillway_emulation, or remove "
                                 "machine_address to keep the cluster network off the machine")
    for node in emulation.nodes:
        # A machine-level cluster root of the same name would make its loop devices look like this node's.
        if Path(node.spillway_root).exists() and not emulation.node_dir(node).exists():
            raise EmulationError(f"{node.spillway_root} exists on this machine: another cluster's state has the "
                                 f"name node {node.name} uses; rename the host or its spillway_root")


def write_if_changed(path, text, mode=0o644):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    os.chmod(path, mode)


def prepare_files(emulation, record):
    """Keys, per-node directories and configuration below state_dir (kept across up/down of the nodes); each node's
    root recorded with the state_dir's cluster id before Ansible writes into it."""
    ssh_dir = emulation.state_dir / "ssh"
    ssh_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not emulation.key_file.exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"spillway-{emulation.cluster}",
             "-f", str(emulation.key_file)])
    client_key = Path(f"{emulation.key_file}.pub").read_text()
    known_hosts = []
    for node in emulation.nodes:
        node_dir = emulation.node_dir(node)
        for sub in ("spillway", "root/.ssh", "srv"):
            (node_dir / sub).mkdir(parents=True, exist_ok=True)
        # below the recorded state_dir, so an unrecorded root there is this cluster's from before records
        ownership.claim(node_root_dir(emulation, node), emulation.cluster, record["cluster_id"],
                        resource=f"spillway_root of emulated node {node.name}", adopt=True)
        (node_dir / "tmp").mkdir(exist_ok=True)
        os.chmod(node_dir / "tmp", 0o1777)
        host_key = node_dir / "ssh_host_ed25519_key"
        if not host_key.exists():
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", node.name, "-f", str(host_key)])
        write_if_changed(node_dir / "root/.ssh/authorized_keys", client_key, 0o600)
        write_if_changed(node_dir / "hosts", etc_hosts(emulation))
        write_if_changed(node_dir / "hostname", node.name + "\n")
        write_if_changed(node_dir / "sshd_config", sshd_config(emulation, node))
        known_hosts.append(known_hosts_line(node, Path(f"{host_key}.pub").read_text()))
    write_if_changed(emulation.known_hosts_file, "\n".join(known_hosts) + "\n")


def ensure_namespace(name, created):
    if name not in existing_namespaces():
        run(["ip", "netns", "add", name])
        created.append(f"namespace {name}")
    run(["ip", "-n", name, "link", "set", "lo", "up"])


def link_rate_bits(namespace, device):
    """The tbf rate shaping `device`'s egress in bits/s, None without one."""
    out = run(["tc", "-j", "-n", namespace, "qdisc", "show", "dev", device], check=False).stdout
    for qdisc in json.loads(out or "[]"):
        if qdisc.get("kind") == "tbf" and qdisc.get("root"):
            return qdisc["options"]["rate"] * 8
    return None


def ensure_link_rate(namespace, device, rate, created):
    if link_rate_bits(namespace, device) == rate_bits(rate):
        return
    run(["tc", "-n", namespace, *tbf_args(device, rate)])
    created.append(f"tbf {rate} on {namespace}/{device}")


def ensure_network(emulation, created):
    bridge_ns = emulation.bridge_namespace
    ensure_namespace(bridge_ns, created)
    links = run(["ip", "-n", bridge_ns, "-o", "link", "show"]).stdout
    if " br0:" not in links:
        run(["ip", "-n", bridge_ns, "link", "add", "br0", "type", "bridge"])
        created.append("bridge br0")
    run(["ip", "-n", bridge_ns, "addr", "replace", f"{emulation.gateway}/{emulation.subnet.prefixlen}", "dev", "br0"])
    run(["ip", "-n", bridge_ns, "link", "set", "br0", "up"])
    for node in emulation.nodes:
        ns = node.namespace(emulation.prefix)
        ensure_namespace(ns, created)
        if f" {node.name}@" not in run(["ip", "-n", bridge_ns, "-o", "link", "show"]).stdout:
            run(["ip", "-n", bridge_ns, "link", "add", "name", node.name, "type", "veth", "peer", "name", "eth0",
                 "netns", ns])
            created.append(f"veth {node.name} <-> {ns}/eth0")
        run(["ip", "-n", bridge_ns, "link", "set", "dev", node.name, "master", "br0", "up"])
        run(["ip", "-n", ns, "addr", "replace", f"{node.address}/{emulation.subnet.prefixlen}", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        # Without a default route Ansible's default IPv4 fact is empty.
        run(["ip", "-n", ns, "route", "replace", "default", "via", emulation.gateway])
        ensure_link_rate(bridge_ns, node.name, node.link_rate, created)
        ensure_link_rate(ns, "eth0", node.link_rate, created)
    if emulation.machine_address:
        ensure_machine_link(emulation, created)


def machine_links():
    return {link["ifname"] for link in json.loads(run(["ip", "-j", "link", "show"]).stdout or "[]")}


def ensure_machine_link(emulation, created):
    """The machine's own address in the cluster network, as a real cluster's controller host has one: the bench
    on the machine reads the master's Prometheus and pushes workload markers to its Pushgateway over it. Its peer
    is a port of the bridge like a node's; deleting the bridge namespace removes both ends."""
    if emulation.machine_link not in machine_links():
        run(["ip", "-n", emulation.bridge_namespace, "link", "add", "name", "machine", "type", "veth",
             "peer", "name", emulation.machine_link, "netns", "1"])
        created.append(f"veth {emulation.bridge_namespace}/machine <-> {emulation.machine_link} "
                       f"({emulation.machine_address})")
    run(["ip", "-n", emulation.bridge_namespace, "link", "set", "dev", "machine", "master", "br0", "up"])
    run(["ip", "addr", "replace", f"{emulation.machine_address}/{emulation.subnet.prefixlen}",
         "dev", emulation.machine_link])
    run(["ip", "link", "set", emulation.machine_link, "up"])


def start_node(emulation, node, created):
    if node_pid(emulation, node):
        return
    log = open(emulation.node_dir(node) / "sshd.log", "ab")
    process = subprocess.Popen(node_command(emulation, node), env=node_environment(emulation, node, Path("/proc/self/mounts").read_text()),
                               stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    emulation.node_pid_file(node).write_text(f"{process.pid}\n")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise EmulationError(f"node {node.name} did not start (exit {process.returncode}); see "
                                 f"{emulation.node_dir(node) / 'sshd.log'}")
        probe = run(["ip", "netns", "exec", emulation.bridge_namespace, "nc", "-z", "-w", "1", node.address, "22"],
                    check=False)
        if probe.returncode == 0:
            created.append(f"node {node.name} (sshd pid {process.pid} on {node.address})")
            return
        time.sleep(0.2)
    raise EmulationError(f"node {node.name}'s sshd does not answer on {node.address}:22; see "
                         f"{emulation.node_dir(node) / 'sshd.log'}")


def up(emulation):
    """Create what is missing; with everything up, change nothing. Returns what was created."""
    check_machine(emulation)
    created = []
    record = claim(emulation)
    prepare_files(emulation, record)
    ensure_network(emulation, created)
    for node in emulation.nodes:
        start_node(emulation, node, created)
    return created


# -- down --------------------------------------------------------------------------------------------------
def stop_processes(emulation, timeout=15):
    """TERM, then KILL, every process inside the nodes' network namespaces (sshd and all it started)."""
    namespaces = [n.namespace(emulation.prefix) for n in emulation.nodes] + [emulation.bridge_namespace]
    namespaces = [ns for ns in namespaces if ns in existing_namespaces()]
    stopped = 0
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = [pid for ns in namespaces for pid in namespace_pids(ns)]
        for pid in pids:
            try:
                os.kill(pid, sig)
                stopped += sig == signal.SIGTERM
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(namespace_pids(ns) for ns in namespaces):
            time.sleep(0.2)
        if not any(namespace_pids(ns) for ns in namespaces):
            break
    return stopped


def budget_groups(emulation):
    """The node budgets' cgroups of this emulation's nodes (role node_budget: `spillway.<cluster>.<node>.<id>` at the
    top of the memory and cpu hierarchies), left where teardown.yml did not run."""
    names = re.compile(rf"spillway\.{re.escape(emulation.cluster)}\.({'|'.join(re.escape(n.name) for n in emulation.nodes)})"
                       r"\.[0-9a-f]+")
    return [group for controller in BUDGET_CONTROLLERS if (CGROUPS / controller).is_dir()
            for group in sorted((CGROUPS / controller).iterdir()) if group.is_dir() and names.fullmatch(group.name)]


def remove_loops(emulation):
    """Throttle rules, then upper loops, then lower loops of the nodes' disks (what teardown.yml left)."""
    loops, uppers = own_loops(emulation)
    removed = []
    for knob, majmin in throttle_rules({m for m, _ in loops.values()}):
        (BLKIO / f"blkio.throttle.{knob}_device").write_text(f"{majmin} 0\n")
        removed.append(f"throttle {knob} {majmin}")
    for name in sorted(loops, key=lambda n: n not in uppers):
        run(["losetup", "--detach", f"/dev/{name}"], check=False)
        removed.append(f"loop {name}")
    return removed


def down(emulation):
    """Remove everything of the emulation; returns what was removed. Run teardown.yml first for a clean stop."""
    if check_owned(emulation) is None:
        return []
    removed = []
    stopped = stop_processes(emulation)
    if stopped:
        removed.append(f"{stopped} processes")
    removed += remove_loops(emulation)  # their mount namespaces died with the processes: nothing holds them
    for group in budget_groups(emulation):  # emptied by the processes' end
        group.rmdir()
        removed.append(f"cgroup {group}")
    if emulation.machine_link in machine_links():
        # explicitly: a deleted namespace's veths go later, in the kernel's deferred namespace cleanup
        run(["ip", "link", "delete", emulation.machine_link])
        removed.append(f"network link {emulation.machine_link}")
    for ns in emulation.namespaces:
        if ns in existing_namespaces():
            run(["ip", "netns", "delete", ns])
            removed.append(f"namespace {ns}")
    if emulation.state_dir.exists():
        held = mounts_below(emulation.state_dir)
        if held:
            raise EmulationError(f"still mounted below {emulation.state_dir}: {', '.join(held)}; not removing it")
        ownership.remove(emulation.state_dir, emulation.cluster, fix=fix_for(emulation))
        removed.append(f"directory {emulation.state_dir}")
    # The parent that `up` created for every emulated cluster's state, once the last one is gone.
    if emulation.state_dir.parent.name == "spillway-emulation":
        try:
            emulation.state_dir.parent.rmdir()
        except OSError:
            pass  # absent, or other clusters' state is still in it
    return removed

