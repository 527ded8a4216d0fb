"""What an emulated cluster consists of, read from its inventory: pure functions, no machine state.

The hosts, their addresses and spillway_root come from inventories/<cluster>/hosts.yml (the same file Ansible
reads); the emulation's own settings from spillway_emulation in inventories/<cluster>/group_vars/all.yml.
"""
import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from spillway import INVENTORIES
from spillway.inventory import load as load_inventory

# Inside each node's mount namespace this directory is the node's own: other clusters' roots are not in it.
SPILLWAY_PARENT = PurePosixPath("/var/lib/spillway")
# Interface names in the bridge namespace are the host names (the kernel allows 15 characters).
MAX_IFNAME = 15
RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12,
              "bps": 8, "kbps": 8 * 10**3, "mbps": 8 * 10**6, "gbps": 8 * 10**9}


class EmulationError(Exception):
    """The emulation's inventory is wrong, or the machine cannot host it; the message says how to fix it."""


@dataclass(frozen=True)
class Node:
    name: str
    address: str
    spillway_root: str
    link_rate: str

    def namespace(self, prefix):
        return f"{prefix}-{self.name}"


@dataclass(frozen=True)
class Emulation:
    cluster: str
    prefix: str
    state_dir: Path
    subnet: ipaddress.IPv4Network
    gateway: str
    nodes: tuple
    nice: int = 0
    machine_address: str | None = None

    @property
    def machine_link(self):
        """The machine's end of its veth into the bridge (in the root namespace; at most 15 characters)."""
        return f"{self.prefix[:13]}-m"

    @property
    def bridge_namespace(self):
        return f"{self.prefix}-net"

    @property
    def namespaces(self):
        return [self.bridge_namespace] + [n.namespace(self.prefix) for n in self.nodes]

    @property
    def key_file(self):
        return self.state_dir / "ssh" / "id_ed25519"

    @property
    def known_hosts_file(self):
        return self.state_dir / "ssh" / "known_hosts"

    def node_dir(self, node):
        return self.state_dir / "nodes" / node.name

    def node_pid_file(self, node):
        return self.node_dir(node) / "sshd.pid"


def rate_bits(rate):
    """tc's rate syntax ('1gbit', '100mbit', '125mbps') in bits per second."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([a-z]+)", str(rate).strip().lower())
    if not match or match.group(2) not in RATE_UNITS:
        raise EmulationError(f"link rate '{rate}' is not a tc rate: a number and one of {', '.join(RATE_UNITS)}")
    return int(float(match.group(1)) * RATE_UNITS[match.group(2)])


def tbf_burst_bytes(rate):
    """Bucket size: 10 ms of traffic, at least 64 KiB. Smaller than one timer tick of traffic and tbf cannot
    reach its rate; much larger and short transfers run unshaped."""
    return max(rate_bits(rate) // 8 // 100, 64 * 1024)


def tbf_args(device, rate):
    """`tc qdisc replace` arguments shaping the egress of `device` to `rate`."""
    return ["qdisc", "replace", "dev", device, "root", "tbf", "rate", rate,
            "burst", str(tbf_burst_bytes(rate)), "latency", "20ms"]


def load(cluster):
    """The emulation of inventories/<cluster>, validated; EmulationError names every problem."""
    inventory = load_inventory(cluster)
    source = INVENTORIES / cluster / "group_vars" / "all.yml"
    if "spillway_emulation" not in inventory.variables:
        raise EmulationError(f"{source} has no spillway_emulation: cluster '{cluster}' is not an emulated cluster")
    return from_settings(cluster, inventory.variables["spillway_emulation"] or {}, inventory.hosts,
                         inventory.host_vars, f"{source}: spillway_emulation")


def from_settings(cluster, settings, hosts, host_vars, source="spillway_emulation"):
    problems = []
    prefix = str(settings.get("prefix", f"spw-{cluster}"))
    if not re.fullmatch(r"spw-[a-z0-9-]+", prefix):
        problems.append(f"{source}: prefix '{prefix}' must start with 'spw-' (teardown removes only such objects)")
    state_dir = Path(str(settings.get("state_dir", f"/var/lib/spillway-emulation/{cluster}")))
    if not state_dir.is_absolute() or SPILLWAY_PARENT in [PurePosixPath(p) for p in state_dir.parents] \
            or PurePosixPath(state_dir) == SPILLWAY_PARENT:
        problems.append(f"{source}: state_dir '{state_dir}' must be an absolute path outside {SPILLWAY_PARENT} "
                        "(clusters there stop each other's daemons)")
    try:
        subnet = ipaddress.ip_network(str(settings.get("subnet", "")), strict=True)
        gateway = ipaddress.ip_address(str(settings.get("gateway", "")))
    except ValueError as err:
        raise EmulationError(f"{source}: subnet/gateway: {err}") from None
    if subnet.version != 4 or not subnet.is_private:
        problems.append(f"{source}: subnet {subnet} must be a private IPv4 network")
    if gateway not in subnet:
        problems.append(f"{source}: gateway {gateway} is not in {subnet}")
    default_rate = str(settings.get("link_rate", "1gbit"))
    link_rates = settings.get("link_rates") or {}
    for host in sorted(set(link_rates) - set(hosts)):
        problems.append(f"{source}: link_rates.{host}: no such host in hosts.yml")

    nodes, seen_addresses, seen_roots = [], {str(gateway): "the gateway"}, {}
    machine_address = settings.get("machine_address")
    if machine_address is not None:
        try:
            if ipaddress.ip_address(str(machine_address)) not in subnet:
                problems.append(f"{source}: machine_address {machine_address} is not in {subnet}")
        except ValueError:
            problems.append(f"{source}: machine_address '{machine_address}' must be an address in {subnet}")
        if str(machine_address) in seen_addresses:
            problems.append(f"{source}: machine_address {machine_address} is also the gateway's")
        seen_addresses[str(machine_address)] = "the machine (machine_address)"
    for host in hosts:
        hvars = host_vars.get(host, {})
        where = f"hosts.yml: {host}"
        if not re.fullmatch(r"[a-z][a-z0-9-]*", host) or len(host) > MAX_IFNAME:
            problems.append(f"{where}: an emulated host name is a lower-case DNS label of at most {MAX_IFNAME} "
                            "characters (it names its network interface)")
        address = str(hvars.get("ansible_host", ""))
        try:
            if ipaddress.ip_address(address) not in subnet:
                problems.append(f"{where}: ansible_host {address} is not in {subnet}")
        except ValueError:
            problems.append(f"{where}: ansible_host '{address}' must be an address in {subnet}")
        if address in seen_addresses:
            problems.append(f"{where}: ansible_host {address} is also {seen_addresses[address]}")
        seen_addresses[address] = host
        root = PurePosixPath(str(hvars.get("spillway_root", "")))
        if root.parent != SPILLWAY_PARENT:
            problems.append(f"{where}: spillway_root '{root}' must be a directory directly below {SPILLWAY_PARENT}")
        if str(root) in seen_roots:
            problems.append(f"{where}: spillway_root {root} is also {seen_roots[str(root)]}'s: each node needs its "
                            "own, since loop devices (and their image paths) are machine-wide")
        seen_roots[str(root)] = host
        rate = str(link_rates.get(host, default_rate))
        try:
            rate_bits(rate)
        except EmulationError as err:
            problems.append(f"{source}: {host}: {err}")
        nodes.append(Node(host, address, str(root), rate))
    nice = settings.get("nice", 0)
    if not isinstance(nice, int) or not 0 <= nice <= 19:
        problems.append(f"{source}: nice {nice!r} must be an integer from 0 to 19")
    if problems:
        raise EmulationError("\n".join(f"  - {p}" for p in problems))
    return Emulation(cluster, prefix, state_dir, subnet, str(gateway), tuple(nodes), nice,
                     None if machine_address is None else str(machine_address))


def etc_hosts(emulation):
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    lines += [f"{n.address}\t{n.name}" for n in emulation.nodes]
    return "\n".join(lines) + "\n"


def sshd_config(emulation, node):
    """Key-only root login on the node's address; no PAM (no systemd/logind here), no mode checks on the
    bind-mounted home."""
    node_dir = emulation.node_dir(node)
    return "\n".join([
        f"ListenAddress {node.address}",
        "Port 22",
        f"HostKey {node_dir / 'ssh_host_ed25519_key'}",
        "PidFile /run/sshd.pid",
        "AuthorizedKeysFile /root/.ssh/authorized_keys",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "UseDNS no",
        "MaxStartups 100",
        "MaxSessions 100",
        "AcceptEnv LANG LC_*",
        "Subsystem sftp internal-sftp",
    ]) + "\n"


def known_hosts_line(node, host_public_key):
    key_type, key = host_public_key.split()[:2]
    return f"{node.address},{node.name} {key_type} {key}"


# Runs as the node's first process inside `ip netns exec <ns> unshare --uts --mount --propagation private`,
# then becomes its sshd, which holds the namespaces for as long as it lives.
NODE_INIT = r"""set -eu
hostname "$NODE_NAME"
# The new mount namespace starts as a copy of the machine's: its copies of other clusters' disk mounts would keep
# their loop devices busy after those clusters unmount them. Drop every copy of a loop-device mount and of
# anything below /var/lib/spillway, deepest first.
findmnt -rn -o TARGET,SOURCE | awk '$2 ~ "^/dev/loop" || $1 ~ "^/var/lib/spillway(/|$)" {print $1}' \
  | sort -r | while read -r target; do umount -l "$(printf '%b' "$target")" 2>/dev/null || true; done
# `ip netns exec` gave the node a sysfs of its own network namespace, without the machine's mounts below /sys:
# mount them again (the same cgroup v1 hierarchies, whose root blkio throttles the emulated disks use; tracefs).
printf '%s\n' "$SYS_MOUNTS" | while read -r fstype source target options; do
  [ -n "$fstype" ] || continue
  mkdir -p "$target" && mount -t "$fstype" -o "$options" "$source" "$target" \
    || echo "cannot mount $fstype at $target" >&2
done
mkdir -p /var/lib/spillway /srv  # on a machine that never had a cluster
mount --bind "$NODE_DIR/spillway" /var/lib/spillway
mount --bind "$NODE_DIR/root" /root
mount --bind "$NODE_DIR/tmp" /tmp
mount --bind "$NODE_DIR/srv" /srv
mount --bind "$NODE_DIR/hosts" /etc/hosts
mount --bind "$NODE_DIR/hostname" /etc/hostname
mount -t tmpfs -o size=64m,mode=0755 "$NAMESPACE-run" /run
mkdir -p /run/sshd
exec /usr/sbin/sshd -D -e -f "$NODE_DIR/sshd_config"
"""


def node_command(emulation, node):
    """argv that starts the node: its sshd inside the node's network, UTS and mount namespaces."""
    return ["nice", "-n", str(emulation.nice), "ip", "netns", "exec", node.namespace(emulation.prefix),
            "unshare", "--uts", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", NODE_INIT]


def sys_mounts(proc_mounts):
    """The machine's mounts below /sys (from /proc/self/mounts), parents first, as NODE_INIT's SYS_MOUNTS lines
    "fstype source target options"."""
    lines = []
    for line in proc_mounts.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1].startswith("/sys/"):
            source, target, fstype, options = fields[:4]
            lines.append(f"{fstype} {source} {target} {options}")
    return "\n".join(lines)


def node_environment(emulation, node, proc_mounts):
    return {"NODE_NAME": node.name, "NODE_DIR": str(emulation.node_dir(node)),
            "NAMESPACE": node.namespace(emulation.prefix), "SYS_MOUNTS": sys_mounts(proc_mounts),
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


def is_own_loop_backing(backing_file, emulation):
    """Whether a loop device's backing file (as /sys/block/loopN/loop/backing_file shows it) is a disk image of
    one of this emulation's nodes. While the node lives the kernel shows the path inside the node
    (<spillway_root>/disks/x.img); once its mount namespace is gone, the path below the bind mount's root
    (/<root name>/disks/x.img)."""
    path = backing_file.strip().removesuffix(" (deleted)")
    for node in emulation.nodes:
        root = PurePosixPath(node.spillway_root)
        for prefix in (str(root), f"/{root.name}"):
            if re.fullmatch(re.escape(prefix) + r"/disks/[^/]+\.img", path):
                return True
    return False
