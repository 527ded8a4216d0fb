"""What a cluster holds on its hosts and on this machine, so that no two inventories hold the same thing.

Two inventories are exclusive by resource, not by name: a copy of inventories/emu under another name keeps emu's
namespace prefix and state_dir, and its teardown would remove emu's nodes; an inventory whose spillway_root is
/var/lib/spillway/local would detach the local cluster's disks. So:

- validation (`overlaps`, called by spillway.inventory.load before any action) refuses an inventory whose
  resources overlap those of another inventory under inventories/, naming both, the field and the fix:
  the folders the harness creates and deletes (spillway_root per host, the emulation's state_dir, its folders
  inside mount and pfs backends; equal or one inside the other), the emulation's machine-wide names (namespaces
  and the machine's veth, from its prefix), its bridge subnet, and each device of a device backend;
- while an action runs (bench, setup, teardown, cluster-up, cluster-down) it holds a lock per resource key
  (`lock_keys`, spillway.clusterlock), one more per host it runs daemons on: every cluster on a host uses the
  same ports, and provisioning one stops the others' daemons there, so inventories that share a host by design
  (local, hdd, ssd, nvme and tiers all are this machine) may exist side by side but never run at once.

A host is named by where it really is: this machine for a local connection (and for the paths of emulated nodes,
whose loop-device images are machine-wide), the node's own network namespace for the ports of an emulated node,
else its ansible_host (or inventory name).
"""
import ipaddress
import os
import posixpath
from dataclasses import dataclass

from spillway import device_ties, inventory_files

THIS_MACHINE = "this machine"
DEFAULT_STATE_PARENT = "/var/lib/spillway"
DEFAULT_EMULATION_PARENT = "/var/lib/spillway-emulation"
# The veth of the machine into an emulated cluster's bridge is named from the first 13 characters of the prefix
# (emulation/config.py machine_link; interface names have at most 15).
MACHINE_LINK_PREFIX_CHARS = 13


@dataclass(frozen=True)
class Resource:
    kind: str       # path, device, name (machine-wide object name), subnet, host
    host: str       # where it is (THIS_MACHINE, a namespace, a remote host)
    value: str
    field: str      # the inventory field that sets it
    file: str       # the file that sets it

    @property
    def key(self):
        return " ".join(filter(None, (self.kind, self.host, self.value)))

    def describe(self):
        where = "" if self.kind in ("name", "subnet") else f" on {self.host}"
        return {"path": f"path {self.value}{where}", "device": f"device {self.value}{where}",
                "name": f"network object {self.value} on this machine", "subnet": f"subnet {self.value}",
                "host": f"host {self.value} (its Spillway daemons and ports)"}[self.kind]


def _text(value):
    return value if isinstance(value, str) else None


def host_id(host, variables, emulated):
    """Where `host` is, for its paths and devices."""
    if emulated or variables.get("ansible_connection") == "local":
        return THIS_MACHINE
    address = str(variables.get("ansible_host") or host).lower()
    return THIS_MACHINE if address in ("localhost", "127.0.0.1", "::1") else address


def daemon_host_id(host, variables, emulation):
    """Where `host`'s daemons bind their ports: an emulated node has a network namespace of its own."""
    if isinstance(emulation, dict):
        return f"namespace {emulation_prefix(emulation, None)}-{host}"
    return host_id(host, variables, False)


def emulation_prefix(emulation, cluster):
    return str(emulation.get("prefix") or f"spw-{cluster}")


def of(name, eff, variables, groups):
    """Every resource of the inventory `name` (its files already read: eff), with the field and file setting it."""
    found = []
    emulation = variables.get("spillway_emulation")
    emulated = isinstance(emulation, dict)
    vars_file = str(eff.root / "group_vars" / "all.yml")

    def source(host, variable):
        src = eff.host_sources.get(host, {}).get(variable) or eff.all_sources.get(variable)
        return str(src.file) if src else vars_file

    workers = set(groups.get("workers", []))
    for host, hvars in sorted(eff.host_vars.items()):
        where = host_id(host, hvars, emulated)
        root = _text(hvars.get("spillway_root")) or f"{DEFAULT_STATE_PARENT}/{variables.get('spillway_cluster', name)}"
        found.append(Resource("path", where, posixpath.normpath(root), "spillway_root",
                              source(host, "spillway_root") if "spillway_root" in hvars else
                              "the default /var/lib/spillway/<spillway_cluster>"))
        found.append(Resource("host", "", daemon_host_id(host, hvars, emulation), f"hosts.{host}",
                              str(eff.root / "hosts.yml")))
        backends = hvars.get("spillway_backends")
        if host not in workers or not isinstance(backends, dict):
            continue
        for bname, backend in sorted(backends.items()):
            if not isinstance(backend, dict):
                continue
            field = f"spillway_backends.{bname}"
            if backend.get("kind") == "mount" and _text(backend.get("path")):
                folder = posixpath.join(posixpath.normpath(backend["path"]), f"spillway-{variables.get('spillway_cluster', name)}")
                found.append(Resource("path", where, folder, f"{field}.path", source(host, "spillway_backends")))
            elif backend.get("kind") == "pfs" and _text(backend.get("mount")):
                folder = posixpath.join(posixpath.normpath(backend["mount"]), "spillway", str(variables.get("spillway_cluster", name)))
                found.append(Resource("path", where, folder, f"{field}.mount", source(host, "spillway_backends")))
            elif backend.get("kind") == "device" and _text(backend.get("device")):
                device = posixpath.normpath(backend["device"])
                if where == THIS_MACHINE and os.path.exists(device):
                    device = os.path.realpath(device)  # /dev/disk/by-id/... and /dev/sdb are one disk
                found.append(Resource("device", where, device, f"{field}.device",
                                      source(host, "spillway_backends")))
    if emulated:
        source_file = str(eff.all_sources["spillway_emulation"].file) if "spillway_emulation" in eff.all_sources \
            else vars_file
        state_dir = _text(emulation.get("state_dir")) or f"{DEFAULT_EMULATION_PARENT}/{name}"
        found.append(Resource("path", THIS_MACHINE, posixpath.normpath(state_dir), "spillway_emulation.state_dir",
                              source_file))
        prefix = emulation_prefix(emulation, name)
        for obj in [f"{prefix}-net"] + [f"{prefix}-{host}" for host in sorted(eff.host_vars)]:
            found.append(Resource("name", THIS_MACHINE, obj, "spillway_emulation.prefix", source_file))
        if emulation.get("machine_address") is not None:
            found.append(Resource("name", THIS_MACHINE, f"{prefix[:MACHINE_LINK_PREFIX_CHARS]}-m",
                                  "spillway_emulation.prefix", source_file))
        try:
            subnet = ipaddress.ip_network(str(emulation.get("subnet")), strict=False)
            found.append(Resource("subnet", THIS_MACHINE, str(subnet), "spillway_emulation.subnet", source_file))
        except ValueError:
            pass  # the emulation's own validation names it
    return list(dict.fromkeys(found))


def _inside(a, b):
    """Whether path a is b or below it."""
    return a == b or a.startswith(b.rstrip("/") + "/")


def clash(mine, theirs):
    """How two resources overlap, or None."""
    if mine.kind != theirs.kind or mine.host != theirs.host:
        return None
    if mine.kind == "path":
        if mine.value == theirs.value:
            return "the same folder"
        if _inside(mine.value, theirs.value):
            return "a folder inside it"
        if _inside(theirs.value, mine.value):
            return "a folder that contains it"
        return None
    if mine.kind == "subnet":
        return "an overlapping network" if ipaddress.ip_network(mine.value).overlaps(
            ipaddress.ip_network(theirs.value)) else None
    if mine.kind == "host":
        return None  # shared by design; serialized by the lock (lock_keys)
    return "the same" if mine.value == theirs.value else None


FIXES = {
    "spillway_root": "give each cluster its own spillway_root (the default /var/lib/spillway/<spillway_cluster> is)",
    "spillway_emulation.state_dir": "give it its own spillway_emulation.state_dir "
                                    "(e.g. /var/lib/spillway-emulation/<cluster>)",
    "spillway_emulation.prefix": "give it its own spillway_emulation.prefix (e.g. spw-<cluster>)",
    "spillway_emulation.subnet": "give it a subnet of its own (with gateway, machine_address and every "
                                 "ansible_host inside it), e.g. 10.79.0.0/24",
}


def _fix(resource, other):
    if resource.field in FIXES:
        return FIXES[resource.field]
    if resource.kind == "device":
        return (f"each device belongs to one inventory (the other's setup would format it): use another device, "
                f"or remove the backend from one of them")
    return "point the backend at a path of its own"


def _other_inventories(own_folder):
    for folder in sorted(own_folder.parent.iterdir()):
        if folder.name != own_folder.name and (folder / "hosts.yml").is_file():
            yield folder


def _resources_of_others(own_folder):
    """(folder, its resources) of every other inventory beside `own_folder` that can be read. One that cannot is
    skipped: validation refuses every action on it until it is fixed, and then its own validation sees this one."""
    for folder in _other_inventories(own_folder):
        try:
            other = inventory_files.read(folder)
        except (inventory_files.InventoryFileError, OSError):
            continue
        other_groups = {g: other.members(g) for g in other.groups if g in inventory_files.ROLE_GROUPS}
        try:
            yield folder, of(folder.name, other, other.all_vars, other_groups)
        except (TypeError, AttributeError, ValueError):
            continue


def overlaps(own_folder, eff, variables, groups):
    """Problems, one per resource of the inventory in `own_folder` (inventories/<name>) that another inventory beside
    it also uses."""
    name = own_folder.name
    mine = of(name, eff, variables, groups)
    problems = []
    for folder, theirs in _resources_of_others(own_folder):
        named = set()
        for resource in mine:
            for their in theirs:
                how = clash(resource, their)
                if how and resource.kind == "name":
                    if resource.field in named:
                        break  # one prefix makes every namespace name: its first clash says it
                    named.add(resource.field)
                if how:
                    problems.append(
                        f"{resource.file}: {resource.field}: {resource.describe()} of inventory '{name}' is {how} "
                        f"as inventory '{folder.name}' uses ({their.field} in {their.file}): one cluster's setup or "
                        f"teardown would destroy the other's; {_fix(resource, their)}")
                    break
    return list(dict.fromkeys(problems))


def device_problems(own_folder, eff, variables, groups):
    """Problems, one per device backend of this machine tied to anything else on it (spillway.device_ties): mounted
    elsewhere, held or holding, a loop device attached to it, the root file system's, or a loop device over a file
    in a folder of any inventory on this machine (its emulated disks) or below the harness's default folders. Remote
    devices are judged on their hosts by role storage."""
    name = own_folder.name
    mine = of(name, eff, variables, groups)
    devices = [r for r in mine if r.kind == "device" and r.host == THIS_MACHINE]
    if not devices:
        return []
    everyone = mine + [r for _, theirs in _resources_of_others(own_folder) for r in theirs]
    harness_paths = [DEFAULT_STATE_PARENT, DEFAULT_EMULATION_PARENT] + sorted(
        {r.value for r in everyone if r.kind == "path" and r.host == THIS_MACHINE})
    roots = [r.value for r in mine if r.field == "spillway_root" and r.host == THIS_MACHINE]
    problems = []
    for device in devices:
        backend = device.field.split(".")[1]
        own_mount = f"{roots[0]}/mnt/{backend}" if roots else None
        found = device_ties.ties(device.value, own_mount, harness_paths)
        if found:
            problems.append(f"{device.file}: {device.field}: {device.value} on this machine is not free: it "
                            f"{'; it '.join(found)}. The harness formats only a device that nothing else uses: "
                            f"name a free disk")
    return problems


def lock_keys(inv):
    """The resource keys a running action of inventory `inv` (a loaded spillway.inventory.Inventory) holds, each
    with what it is. A folder is held with its parents shared (spillway.clusterlock), so a nested folder of
    another inventory conflicts too."""
    eff = inventory_files.read(inv.path)
    keys = {}
    for r in of(inv.name, eff, inv.variables, inv.groups):
        keys[r.key] = (r.describe(), True)
        if r.kind == "path":
            parent = posixpath.dirname(r.value)
            while parent != posixpath.dirname(parent) or parent == "/":
                ancestor = Resource("path", r.host, parent, r.field, r.file)
                keys.setdefault(ancestor.key, (f"{ancestor.describe()} (holding {r.value} inside it)", False))
                if parent == "/":
                    break
                parent = posixpath.dirname(parent)
    return [(key, what, exclusive) for key, (what, exclusive) in keys.items()]
