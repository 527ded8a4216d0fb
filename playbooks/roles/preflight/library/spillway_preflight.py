#!/usr/bin/python
"""Read-only checks of one host before provisioning; each check is a row the harness prints in one table.

One module call does every on-host check, so a cluster's preflight costs one round trip per host. It changes
nothing (check mode and normal mode are the same) and never fails: a problem is a FAIL row with its fix.
Rows: {check, status: ok|FAIL|warn, detail, fix}. Clock skew and reachability are judged by the play
(they need the controller's view).
"""
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import time

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: spillway_preflight
short_description: Read-only preflight checks of a Spillway host (Java, storage paths, free space, ports)
options:
  java_home: {type: str, required: true}
  java_package: {type: str, required: true}
  java_needed_by: {type: dict, default: {}, description: "Spark release -> the oldest Java major it runs on"}
  hadoop_java_needed_by: {type: dict, default: {}, description: "the Hadoop release -> the oldest Java major it runs on"}
  check_storage: {type: bool, default: false, description: "this host holds data (a worker)"}
  backends: {type: dict, default: {}, description: "spillway_backends of the inventory"}
  spillway_root: {type: str, required: true}
  min_free_gib: {type: float, required: true}
  ports: {type: dict, default: {}, description: "port -> inventory setting that changes it, for this host"}
  cluster: {type: str, required: true}
  node_budget: {type: dict, default: {}, description: "spillway_node of the inventory: memory_gib, cores"}
  node_budget_floor: {type: dict, default: {}, description: "what the host's processes need: MiB by what needs it"}
  node_budget_minimum_mib: {type: int, default: 0, description: "the smallest budget that holds them (role common's memory plan)"}
"""

GIB = 1024 ** 3


def row(check, status, detail, fix=""):
    return {"check": check, "status": status, "detail": detail, "fix": fix}


def run(argv):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 127, "", str(err)
    return proc.returncode, proc.stdout, proc.stderr


def check_privileges():
    uid = os.geteuid()
    if uid == 0:
        return row("privileges", "ok", "tasks run as root")
    return row("privileges", "FAIL", f"tasks run as uid {uid}, not root (loop devices, mounts, throttles and "
               "the daemons' state under /var/lib/spillway need root)",
               "connect as root (ansible_user: root) or set ansible_become: true with passwordless sudo")


JAVA_VERSION = re.compile(r'version "(?:1\.)?(\d+)')


def check_java(java_home, package, needs=None, hadoop_needs=None):
    """`needs`: {Spark release: the oldest Java major it runs on} for the releases the cluster installs;
    `hadoop_needs`: the same for its Hadoop release (3.5.0's classes are Java 17's)."""
    java = os.path.join(java_home, "bin", "java")
    code, out, err = run([java, "-version"])
    if code == 0:
        first = (err or out).splitlines()[0].strip()
        major = JAVA_VERSION.search(first)

        def older(wanted):
            return sorted(release for release, oldest in (wanted or {}).items()
                          if major is None or int(major.group(1)) < int(oldest))
        too_old, hadoop_too_old = older(needs), older(hadoop_needs)
        if too_old or hadoop_too_old:
            problems = ([f"Spark {release} needs Java {needs[release]}+" for release in too_old]
                        + [f"Hadoop {release} needs Java {hadoop_needs[release]}+" for release in hadoop_too_old])
            newest = max([int(needs[r]) for r in too_old] + [int(hadoop_needs[r]) for r in hadoop_too_old])
            leave = ([f"leave {', '.join(too_old)} out of spillway_versions.spark"] if too_old else []) + (
                ["set spillway_versions.hadoop to another release"] if hadoop_too_old else [])
            return row("java", "FAIL", f"{java}: {first}; " + ", ".join(problems),
                       f"set java_home to a Java {newest} or newer, or {' and '.join(leave)}")
        return row("java", "ok", f"{java}: {first}")
    code, out, _ = run(["apt-cache", "policy", package])
    candidate = re.search(r"Candidate:\s*(\S+)", out)
    if code == 0 and candidate and candidate.group(1) != "(none)":
        return row("java", "warn", f"no {java}; apt can install {package} {candidate.group(1)}",
                   "make setup installs it (or set java_home to an installed Java 17)")
    return row("java", "FAIL", f"no {java} and apt has no candidate for {package}",
               f"install Java 17 and set java_home, or add a Debian mirror carrying {package}")


def check_diskstats():
    try:
        with open("/proc/diskstats") as stats:
            lines = stats.read().splitlines()
    except OSError as err:
        return row("diskstats", "FAIL", f"/proc/diskstats unreadable: {err.strerror}",
                   "iostat and the device metrics read it: give the host (container) the kernel's /proc")
    if not lines:
        return row("diskstats", "FAIL", "/proc/diskstats is empty",
                   "iostat and the device metrics read it: give the host (container) the kernel's /proc")
    return row("diskstats", "ok", f"/proc/diskstats readable ({len(lines)} devices)")


def mount_of(path):
    """(source, fstype) when `path` itself is a mount point, else None."""
    code, out, _ = run(["findmnt", "--json", "--output", "SOURCE,FSTYPE", "--mountpoint", path])
    if code != 0:
        return None
    mounts = json.loads(out).get("filesystems") or [{}]
    return mounts[0].get("source"), mounts[0].get("fstype")


def check_mount_backend(name, backend, cluster):
    path = os.path.normpath(backend["path"])
    check, fix_path = f"storage:{name}", f"spillway_backends.{name}.path in inventories/{cluster}/group_vars/all.yml"
    plain_ok = backend.get("destructive_ok", False)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        if plain_ok:
            return row(check, "ok", f"kind mount: {path} does not exist; destructive_ok: role storage creates it")
        return row(check, "FAIL", f"kind mount: {path} does not exist",
                   f"create and mount the disk at {path} on every worker, or fix {fix_path}")
    if stat.S_ISBLK(mode) or stat.S_ISCHR(mode):
        return row(check, "FAIL", f"kind mount: {path} is a device, not a mount point",
                   f"the harness never formats a device: make a file system on it, mount it and give the "
                   f"mount point as {fix_path}")
    if not stat.S_ISDIR(mode):
        return row(check, "FAIL", f"kind mount: {path} is a file, not a directory", f"fix {fix_path}")
    mounted = mount_of(path)
    if mounted is None and plain_ok:
        return row(check, "ok", f"kind mount: {path} is a plain directory, allowed by destructive_ok")
    if mounted is None:
        return row(check, "FAIL", f"kind mount: {path} is a directory but not a mount point (data would land on "
                   "whatever disk holds it)", f"mount the backend's disk at {path}, or fix {fix_path}")
    return row(check, "ok", f"kind mount: {path} is the mount point of {mounted[0]} ({mounted[1]})")


def check_pfs_backend(name, backend, cluster):
    """A shared file system: an existing mount point (the storage role then checks its type), or a GlusterFS
    volume the harness builds over the hosts of group pfs_servers at provisioning."""
    check = f"storage:{name}"
    if "mount" not in backend:
        return row(check, "ok", "kind pfs: a GlusterFS volume over group pfs_servers, built at provisioning")
    path = os.path.normpath(backend["mount"])
    mounted = mount_of(path) if os.path.isdir(path) else None
    if mounted is None:
        return row(check, "FAIL", f"kind pfs: {path} is not a mount point on this host",
                   f"mount the shared file system at {path} on every worker, or fix spillway_backends.{name}.mount "
                   f"in inventories/{cluster}/group_vars/all.yml")
    return row(check, "ok", f"kind pfs: {path} is the mount point of {mounted[0]} ({mounted[1]})")


def check_emulated_backend(name, backend):
    check = f"storage:{name}"
    profile = f"kind emulated ({backend.get('profile')}, {backend.get('size_gib')} GiB)"
    missing = [tool for tool in ("losetup", "findmnt", "truncate") if not shutil.which(tool)]
    try:
        loop_control = stat.S_ISCHR(os.stat("/dev/loop-control").st_mode)
    except OSError:
        loop_control = False
    if not loop_control:
        return row(check, "FAIL", f"{profile}: no /dev/loop-control, so no loop devices",
                   "load the loop module (modprobe loop); in a container, pass /dev/loop-control and /dev/loop*")
    if missing:
        return row(check, "FAIL", f"{profile}: {', '.join(missing)} not found", "install util-linux, coreutils")
    return row(check, "ok", f"{profile}: loop devices available (/dev/loop-control)")


def check_device_backend(name, backend):
    device = backend["device"]
    try:
        is_block = stat.S_ISBLK(os.stat(device).st_mode)
    except OSError:
        is_block = False
    if not is_block:
        return row(f"storage:{name}", "FAIL", f"kind device: {device} is no block device",
                   f"fix spillway_backends.{name}.device (the same device on every worker)")
    return row(f"storage:{name}", "ok", f"kind device: {device} is a block device (role storage formats it only "
               "with destructive_ok, one holding signatures only with wipe)")


def existing_ancestor(path):
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def free_bytes(path):
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def check_mount_space(name, backend, min_free_gib):
    path = existing_ancestor(os.path.normpath(backend.get("path") or backend["mount"]))
    if not os.path.isdir(path):
        return row(f"space:{name}", "FAIL", f"{path} is no directory", "see the storage row")
    free = free_bytes(path)
    detail = f"{free / GIB:.1f} GiB free on {path}, at least {min_free_gib:g} GiB wanted (preflight_min_free_gib)"
    if free < min_free_gib * GIB:
        return row(f"space:{name}", "FAIL", detail, f"free space on {path}, or lower preflight_min_free_gib")
    return row(f"space:{name}", "ok", detail)


def check_emulated_space(emulated, spillway_root, cluster):
    """The sparse images grow to size_gib as a bench writes: the file system under <root>/disks must hold them."""
    disks_dir = os.path.join(spillway_root, "disks")
    holder = existing_ancestor(disks_dir)
    need, parts = 0, []
    for name, backend in sorted(emulated.items()):
        image = os.path.join(disks_dir, f"{name}.img")
        allocated = os.stat(image).st_blocks * 512 if os.path.isfile(image) else 0
        need += max(backend["size_gib"] * GIB - allocated, 0)
        parts.append(f"{name} {backend['size_gib']} GiB" + (f" ({allocated / GIB:.1f} allocated)" if allocated else ""))
    free = free_bytes(holder)
    where = disks_dir if holder == disks_dir else f"{holder} (to hold {disks_dir})"
    detail = f"images {', '.join(parts)} still need {need / GIB:.1f} GiB; {free / GIB:.1f} GiB free under {where}"
    if free < need:
        return row("space:emulated", "FAIL", detail,
                   f"lower size_gib in inventories/{cluster}/group_vars/all.yml or free space under {holder}")
    return row("space:emulated", "ok", detail)


LISTEN_LINE = re.compile(r"^\S+\s+\d+\s+\d+\s+(?P<address>\S+):(?P<port>\d+)\s+\S+\s*(?P<users>.*)$")


def listeners():
    """Port -> pids of the processes listening on it (`ss -Htlnp`); an empty set when ss cannot name them."""
    code, out, err = run(["ss", "-H", "-t", "-l", "-n", "-p"])
    if code != 0:
        raise OSError(err.strip() or "ss failed")
    ports = {}
    for line in out.splitlines():
        match = LISTEN_LINE.match(line.strip())
        if match:
            pids = {int(pid) for pid in re.findall(r"pid=(\d+)", match["users"])}
            ports.setdefault(int(match["port"]), set()).update(pids)
    return ports


def spillway_daemon_pids(state_parent):
    """Live pids in the spillway-daemon pid files of every cluster root beside this one (provisioning stops
    those daemons before starting its own, so their ports count as free)."""
    pids = set()
    for pid_file in glob.glob(os.path.join(state_parent, "*", "run", "*.pid")):
        try:
            with open(pid_file) as handle:
                first = handle.readline().strip()
        except OSError:
            continue
        if first.isdigit() and os.path.exists(f"/proc/{first}"):
            pids.add(int(first))
    return pids


def process_name(pid):
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return "exited"


def check_ports(ports, spillway_root, cluster):
    if not ports:
        return row("ports", "ok", "no port to bind on this host")
    try:
        held = listeners()
    except OSError as err:
        return row("ports", "warn", f"ports not checked: {err}", "install iproute2 (ss)")
    ours = spillway_daemon_pids(os.path.dirname(os.path.normpath(spillway_root)))
    conflicts, reused = [], 0
    for port in sorted(ports):
        if port not in held:
            continue
        if held[port] and held[port] <= ours:
            reused += 1
            continue
        holders = ", ".join(f"pid {pid} ({process_name(pid)})" for pid in sorted(held[port] - ours)) or \
            "a process this user cannot see"
        conflicts.append((port, f"port {port} ({ports[port]}) held by {holders}"))
    if conflicts:
        settings = ", ".join(ports[port] for port, _ in conflicts)
        return row("ports", "FAIL", "; ".join(text for _, text in conflicts),
                   f"stop that process, or set {settings} in inventories/{cluster}/group_vars/all.yml")
    detail = f"{len(ports)} ports free"
    if reused:
        detail = f"{len(ports) - reused} ports free, {reused} held by Spillway daemons (provisioning restarts them)"
    return row("ports", "ok", detail)


def host_memory_bytes(meminfo="/proc/meminfo"):
    with open(meminfo) as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no MemTotal in {meminfo}")


def check_node_budget(budget, floor, memory_bytes, cpus, minimum_mib=0):
    """spillway_node against the host: no more than it has, enough memory for its daemons and one container."""
    if not budget:
        return row("budget", "ok", "none (spillway_node not set): the cluster's processes share the host")
    problems, fixes = [], []
    memory_gib, cores = budget.get("memory_gib"), budget.get("cores")
    if memory_gib is not None:
        host_gib = memory_bytes / GIB
        floor_mib = sum(floor.values())
        if memory_gib > host_gib:
            problems.append(f"spillway_node.memory_gib is {memory_gib:g} GiB, the host has {host_gib:.1f} GiB")
            fixes.append(f"set spillway_node.memory_gib to at most {int(host_gib)}")
        elif memory_gib * 1024 < floor_mib:
            needs = ", ".join(f"{what} {mib} MiB" for what, mib in floor.items())
            problems.append(f"spillway_node.memory_gib is {memory_gib:g} GiB, less than the {floor_mib / 1024:.2f} GiB "
                            f"this host's processes need ({needs})")
            fixes.append(f"set spillway_node.memory_gib to at least {max(floor_mib, minimum_mib) / 1024:.2f} (the "
                         "daemons' heaps and the Spark driver are sized from the budget: docs/cluster.md)")
    if cores is not None and cores > cpus:
        problems.append(f"spillway_node.cores is {cores:g}, the host has {cpus} CPUs")
        fixes.append(f"set spillway_node.cores to at most {cpus}")
    if problems:
        return row("budget", "FAIL", "; ".join(problems), "; ".join(fixes))
    parts = [f"memory {memory_gib:g} GiB of {memory_bytes / GIB:.1f}" if memory_gib is not None else "",
             f"{cores:g} of {cpus} CPUs" if cores is not None else ""]
    return row("budget", "ok", ", ".join(part for part in parts if part))


def main():
    module = AnsibleModule(argument_spec={
        "java_home": {"type": "str", "required": True},
        "java_package": {"type": "str", "required": True},
        "java_needed_by": {"type": "dict", "default": {}},
        "hadoop_java_needed_by": {"type": "dict", "default": {}},
        "check_storage": {"type": "bool", "default": False},
        "backends": {"type": "dict", "default": {}},
        "spillway_root": {"type": "str", "required": True},
        "min_free_gib": {"type": "float", "required": True},
        "ports": {"type": "dict", "default": {}},
        "cluster": {"type": "str", "required": True},
        "node_budget": {"type": "dict", "default": {}},
        "node_budget_floor": {"type": "dict", "default": {}},
        "node_budget_minimum_mib": {"type": "int", "default": 0},
    }, supports_check_mode=True)
    args = module.params
    epoch = time.time()
    rows = [check_privileges(), check_java(args["java_home"], args["java_package"], args["java_needed_by"],
                                                args["hadoop_java_needed_by"]), check_diskstats()]
    if args["check_storage"]:
        emulated = {}
        for name, backend in sorted(args["backends"].items()):
            if backend.get("kind") == "mount":
                rows.append(check_mount_backend(name, backend, args["cluster"]))
                rows.append(check_mount_space(name, backend, args["min_free_gib"]))
            elif backend.get("kind") == "device":
                rows.append(check_device_backend(name, backend))
            elif backend.get("kind") == "pfs":
                rows.append(check_pfs_backend(name, backend, args["cluster"]))
                if "mount" in backend:
                    rows.append(check_mount_space(name, backend, args["min_free_gib"]))
            else:
                rows.append(check_emulated_backend(name, backend))
                emulated[name] = backend
        if emulated:
            rows.append(check_emulated_space(emulated, args["spillway_root"], args["cluster"]))
    ports = {int(port): setting for port, setting in args["ports"].items()}
    rows.append(check_ports(ports, args["spillway_root"], args["cluster"]))
    rows.append(check_node_budget(args["node_budget"], {what: int(mib) for what, mib in args["node_budget_floor"].items()},
                                  host_memory_bytes(), len(os.sched_getaffinity(0)), args["node_budget_minimum_mib"]))
    module.exit_json(changed=False, rows=rows, epoch=epoch, uid=os.geteuid())


if __name__ == "__main__":
    main()
