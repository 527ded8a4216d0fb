"""Load a cluster inventory and validate it before any host is touched.

Every problem names the file, the field and what is allowed, so that the user can fix the
inventory without reading code.
"""
import copy
import difflib
import functools
import hashlib
import os
import re
import shlex
import stat
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import yaml

from spillway import INVENTORIES, REPO, inventory_files, inventory_values, resources, service_accounts, versions
from spillway.inventory_files import ROLE_GROUPS
from spillway.cluster_check import available_clusters

import scale_model

# Paths the harness creates, deletes and passes to shell commands: the schema's safe_path, also per host.
PATH_VARIABLES = ("spillway_root", "spillway_install_dir", "spillway_cache_dir", "workload_python_interpreter")
# Hosts that serve the cluster without running its daemons: the servers of a GlusterFS volume the harness builds
# for a pfs backend (docs/pfs.md). Optional.
SERVICE_GROUPS = ("pfs_servers",)
SINGLE_HOST_GROUPS = ("namenode", "resourcemanager", "controller")


class InventoryError(Exception):
    """The inventory is wrong; the message lists every problem found."""

    def __init__(self, problems):
        self.problems = problems
        super().__init__("\n".join(f"  - {p}" for p in problems))


@dataclass
class Inventory:
    name: str
    path: Path
    groups: dict            # group -> list of host names
    host_vars: dict         # host -> vars given in hosts.yml
    variables: dict         # group_vars/all.yml
    digest: str             # sha256 over the inventory's files
    files: list = field(default_factory=list)

    @property
    def hosts(self):
        return sorted({h for members in self.groups.values() for h in members})

    @property
    def all_local(self):
        """True when every host is this machine over a local connection."""
        return all_local(self.hosts, self.host_vars, self.variables)

    @property
    def backends(self):
        return self.variables["spillway_backends"]

    @property
    def node_budget(self):
        """spillway_node: every node's memory (memory_gib) and CPU (cores) budget; {} without one."""
        return self.variables.get("spillway_node") or {}

    @property
    def hdfs_page_cache(self):
        """spillway_hdfs_page_cache: kept (the default) or dropped during measured runs."""
        return self.variables.get("spillway_hdfs_page_cache") or "kept"

    @property
    def placement(self):
        return self.variables["spillway_placement"]

    def host_variable(self, host, name, default=None):
        """A variable of `host` as hosts.yml and group_vars/all.yml give it (no templating)."""
        return host_variable(self.host_vars, self.variables, host, name, default)

    def spillway_root(self, host):
        return self.host_variable(host, "spillway_root", f"/var/lib/spillway/{self.name}")

    def ssh_command(self, host):
        """ssh's argv reaching `host` as Ansible's ssh connection does, from the same inventory variables;
        None for a local connection or when a variable it needs is templated (only Ansible can render it)."""
        if self.host_variable(host, "ansible_connection", "ssh") == "local":
            return None
        names = {"ansible_port": "-p", "ansible_ssh_private_key_file": "-i", "ansible_user": "-l"}
        given = {name: str(self.host_variable(host, name)) for name in [*names, "ansible_host",
                 "ansible_ssh_common_args", "ansible_ssh_extra_args"] if self.host_variable(host, name) is not None}
        if any("{{" in value for value in given.values()):
            return None
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=10",
                "-o", "ServerAliveCountMax=3"]
        for name, option in names.items():
            if name in given:
                argv += [option, given[name]]
        argv += shlex.split(given.get("ansible_ssh_common_args", "")) + shlex.split(given.get("ansible_ssh_extra_args", ""))
        # "--": a host name is never taken for one of ssh's options (validation refuses a leading '-' too)
        return argv + ["--", given.get("ansible_host", host)]

    @property
    def jvm_jit(self):
        """spillway_jvm.jit: how the workloads' JVMs compile, tiered (the JVM's default) or c1."""
        return (self.variables.get("spillway_jvm") or {}).get("jit", "tiered")

    @property
    def emulation(self):
        """How the hosts are emulated on this machine (spillway_emulation, docs/emulated-cluster.md); None for
        real hosts."""
        return self.variables.get("spillway_emulation")

    def emulated_profiles(self):
        """The storage profiles of the emulated disks: the backends' and the bricks of harness-built GlusterFS
        volumes (their default is the storage role's, read from its defaults so that there is one)."""
        disks = {b["profile"] for b in self.backends.values() if b["kind"] == "emulated"}
        bricks = [b["glusterfs"] for b in self.backends.values() if b["kind"] == "pfs" and "glusterfs" in b]
        if bricks:
            default = role_default("storage", "storage_pfs_brick_default")
            disks |= {{**default, **(g.get("brick") or {})}["profile"] for g in bricks}
        return sorted(disks)


def all_local(hosts, host_vars, variables):
    """True when every one of `hosts` is reached over Ansible's local connection (also before an Inventory is
    built: load() asks it of the workers while it still validates)."""
    return all(host_variable(host_vars, variables, h, "ansible_connection") == "local" for h in hosts)


def host_variable(host_vars, variables, host, name, default=None):
    """A variable of `host` as hosts.yml and group_vars/all.yml give it (no templating)."""
    return host_vars.get(host, {}).get(name, variables.get(name, default))


def storage_profiles():
    return yaml.safe_load((INVENTORIES / "storage-profiles.yml").read_text())


def _schema():
    global _SCHEMA
    if _SCHEMA is None:
        schema = yaml.safe_load((INVENTORIES / "schema.yml").read_text())
        profile_names = sorted(storage_profiles()["profiles"])
        backend = schema["properties"]["spillway_backends"]["additionalProperties"]
        backend["allOf"][0]["then"]["properties"]["profile"]["enum"] = profile_names
        reference = schema["$defs"]["reference_node"]["properties"]
        reference["disks"]["propertyNames"]["enum"] = reference["drives"]["propertyNames"]["enum"] = profile_names
        schema["properties"]["spillway_node"]["properties"]["reference"]["oneOf"][0]["enum"] = sorted(
            scale_model.reference_nodes())
        releases = schema["properties"]["spillway_versions"]["properties"]
        releases["spark"]["items"]["enum"] = list(versions.spark_releases())
        releases["hadoop"]["enum"] = versions.hadoop_releases()
        _SCHEMA = schema
    return copy.deepcopy(_SCHEMA)


_SCHEMA = None
# What the harness reads once for the whole cluster, from group_vars/all.yml (placement, manifest, emulation, the
# port check, teardown; the Makefile greps it for spillway_emulation): set anywhere else, Ansible would provision
# hosts differently from what the harness plans, checks, records and tears down.
CLUSTER_WIDE = ("spillway_cluster", "spillway_backends", "spillway_placement", "spillway_emulation",
                "spillway_monitoring", "spillway_workload_parameters", "hadoop_ports", "spillway_versions")


def role_default(role, name):
    """A role's default as its defaults file writes it (not templated): for Python that must agree with a role, e.g.
    the Spark JVMs' options of the job-code tests and benchmarks."""
    folder = REPO / "playbooks" / "roles" / role / "defaults"
    for defaults in [folder / "main.yml", *sorted(folder.glob("main/*.yml"))]:
        values = yaml.safe_load(defaults.read_text()) if defaults.is_file() else None
        if values and name in values:
            return values[name]
    raise KeyError(f"role {role} has no default {name}")


def known_variables():
    """Every spillway_* variable an inventory may set: the schema's and the roles' (defaults and argument specs)."""
    return tuple(n for n in role_variables() if n.startswith("spillway_"))


def role_variables():
    """Every variable an inventory may set besides Ansible's own (ansible_*): the schema's and the roles'."""
    return tuple(sorted(role_defaults()))


@functools.cache
def role_defaults():
    """Every variable an inventory may set besides Ansible's own (ansible_*) -> the roles' default, which gives its
    type (None for the schema's variables, which the schema types, and those only an argument spec names). Read once
    per process (the roles are this checkout's): 36 YAML files were most of an inventory's validation."""
    schema = _schema()["properties"]
    defaults = dict.fromkeys(schema)
    roles = REPO / "playbooks" / "roles"
    for defaults_file in [*roles.glob("*/defaults/main.yml"), *roles.glob("*/defaults/main/*.yml")]:
        defaults.update({k: v for k, v in (yaml.safe_load(defaults_file.read_text()) or {}).items() if k not in schema})
    # An argument spec's type beats a default's, which may be a Jinja expression: a value of that type stands for it.
    of_type = {"int": 0, "float": 0.0, "bool": False, "str": "", "path": "", "list": [], "dict": {}}
    for spec_file in roles.glob("*/meta/argument_specs.yml"):
        for spec in (yaml.safe_load(spec_file.read_text()).get("argument_specs") or {}).values():
            for name, option in ((spec or {}).get("options") or {}).items():
                if name not in schema:
                    defaults[name] = of_type.get((option or {}).get("type"), defaults.get(name))
    return defaults


def _field(error):
    return ".".join(str(p) for p in error.absolute_path) or "(top level)"


def _short(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def load(name, check_overlaps=True):
    """Load and validate inventories/<name> as Ansible will see it; raise InventoryError listing every problem.
    check_overlaps: also refuse resources that another inventory under inventories/ uses (spillway.resources)."""
    root = INVENTORIES / name
    if not (root / "hosts.yml").is_file():
        raise InventoryError([f"unknown cluster '{name}': no inventories/{name}/hosts.yml. "
                              f"Clusters: {', '.join(available_clusters())}"])
    hosts_file = root / "hosts.yml"
    vars_file = root / "group_vars" / "all.yml"
    files, file_problems = inventory_values.folder_files(root, INVENTORIES.parent)
    if file_problems:  # before any file is read: a FIFO would block, /dev/zero never end
        raise InventoryError(file_problems)
    try:
        eff = inventory_files.read(root)
    except inventory_files.InventoryFileError as err:
        raise InventoryError(err.problems) from None
    problems = []
    groups = {g: eff.members(g) for g in eff.groups}
    host_vars = eff.host_vars
    variables = eff.all_vars
    for group in ROLE_GROUPS:
        if not groups.get(group):
            problems.append(f"{hosts_file}: all.children.{group}: no host has the role '{group}'; "
                            f"every cluster needs at least one host in each of {', '.join(ROLE_GROUPS)}")
    for group in SINGLE_HOST_GROUPS:
        if len(set(groups.get(group, []))) > 1:
            problems.append(f"{hosts_file}: all.children.{group}: exactly one host allowed, got "
                            f"{sorted(set(groups[group]))}")
    for host in sorted(host_vars):
        roles = [g for g in ROLE_GROUPS + SERVICE_GROUPS if host in groups.get(g, [])]
        if not roles:
            problems.append(f"{hosts_file}: host '{host}' has no role: put it under one of "
                            f"{', '.join(ROLE_GROUPS + SERVICE_GROUPS)} (or remove it)")

    known = role_variables()
    for source, values in eff.sources:
        for variable in values:
            if variable not in known and not str(variable).startswith("ansible_"):
                spillway = str(variable).startswith("spillway_")
                close = difflib.get_close_matches(str(variable), known, n=1, cutoff=0.6)
                problems.append(f"{source}: {variable}: " + ("not a spillway variable" if spillway else
                                "not a variable of the harness's roles, nor one of Ansible's (ansible_*)")
                                + " (Ansible would pass it on unused); "
                                + (f"did you mean '{close[0]}'?" if close else
                                   f"the variables are {', '.join(known_variables())}" if spillway else
                                   "remove it (the roles' variables are in playbooks/roles/*/defaults/)"))
    problems += inventory_values.host_problems(hosts_file, set(host_vars).union(*groups.values()), eff.sources)
    problems += inventory_values.non_finite_problems(eff.sources)
    problems += inventory_values.type_problems(eff.sources, role_defaults())

    def where(variable):
        source = eff.all_sources.get(variable)
        return str(source) if source and source.file != vars_file else str(vars_file)

    validator = jsonschema.Draft202012Validator(_schema())
    for error in sorted(validator.iter_errors(variables), key=lambda e: [str(p) for p in e.absolute_path]):
        if error.validator == "oneOf" and error.context:
            # a value meant as one of the forms: name what is wrong in the form it has (an object's missing field,
            # not "not valid under any of the given schemas", nor that it is no string)
            other_forms = {e.relative_schema_path[0] for e in error.context
                           if e.validator == "type" and not e.relative_path}
            in_its_form = [e for e in error.context if e.relative_schema_path[0] not in other_forms]
            error = jsonschema.exceptions.best_match(in_its_form or error.context)
        top = str(error.absolute_path[0]) if error.absolute_path else None
        problems.append(f"{where(top)}: {_field(error)}: {error.message[:300]}")

    for source, values in eff.sources:
        for variable in CLUSTER_WIDE:
            if variable in values and source.file != vars_file:
                problems.append(f"{source}: {variable}: set here, where it can differ from host to host; the harness "
                                f"reads one {variable} for the whole cluster from {vars_file} (it plans, checks, "
                                f"records and tears down by it): move it there")

    if not problems:
        problems += _cross_checks(name, vars_file, variables, host_vars, groups, eff.host_sources)
    problems += service_accounts.inventory_problems(host_vars, eff.host_sources, vars_file)
    if not problems and check_overlaps:
        problems += resources.overlaps(root, eff, variables, groups)
        problems += resources.device_problems(root, eff, variables, groups)
    if problems:
        raise InventoryError(problems)

    digest = hashlib.sha256()
    for path in files:
        label = f"{path.relative_to(root)}\0".encode()
        inventory_values.hash_file(digest.update, path, header=lambda _, label=label: label)
    return Inventory(name=name, path=root, groups={g: sorted(set(h)) for g, h in groups.items()},
                     host_vars=host_vars, variables=variables, digest=digest.hexdigest(),
                     files=[str(p.relative_to(INVENTORIES.parent)) for p in files])


def _cross_checks(name, vars_file, variables, host_vars, groups, host_sources):
    problems = []
    if variables["spillway_cluster"] != name:
        problems.append(f"{vars_file}: spillway_cluster: is '{variables['spillway_cluster']}' but the "
                        f"inventory folder is '{name}'; they must match (state lives in /var/lib/spillway/<name>)")
    backends = variables["spillway_backends"]
    for purpose, backend in variables["spillway_placement"].items():
        if backend not in backends:
            problems.append(f"{vars_file}: spillway_placement.{purpose}: '{backend}' is not a backend; "
                            f"defined backends: {', '.join(sorted(backends))}")
    for bname, backend in sorted(backends.items()):
        if backend["kind"] == "pfs" and "glusterfs" in backend and not groups.get("pfs_servers"):
            problems.append(f"{vars_file}: spillway_backends.{bname}.glusterfs: the volume is built over the hosts "
                            "of group pfs_servers, which has none in hosts.yml; add the storage servers there, or "
                            "give the mount point of an existing file system as `mount`")
    if any(b["kind"] == "pfs" and "glusterfs" in b for b in backends.values()):
        for host in sorted(set(groups.get("pfs_servers", [])) & set(groups.get("workers", []))):
            problems.append(f"{Path(vars_file).parents[1] / 'hosts.yml'}: {host} is in both pfs_servers and "
                            "workers: a storage server of a harness-built GlusterFS volume cannot also be a worker "
                            "(each has its own disks); give the volume servers of their own")
    safe_path = re.compile(_schema()["$defs"]["safe_path"]["pattern"])
    for host, values in sorted(host_vars.items()):
        for variable in PATH_VARIABLES:
            value = (values or {}).get(variable)
            if value is not None and not (isinstance(value, str) and safe_path.search(value)):
                problems.append(f"{host_sources[host][variable]}: {host}: {variable}: {str(value)[:80]!r} is not a "
                                "safe absolute path "
                                "(letters, digits and . _ + - between slashes, no . or .. component); it reaches "
                                "shell commands as root, so give a plain path such as /var/lib/spillway/<cluster>")
    node = variables.get("spillway_node") or {}
    if node.get("reference"):
        used = sorted({b["profile"] for b in backends.values() if b["kind"] == "emulated"})
        try:
            scale_model.scaled_profiles(storage_profiles()["profiles"], node, used)
        except scale_model.ScaleModelError as error:
            problems.append(f"{vars_file}: {error}")
    local_only = all_local(groups.get("workers", []), host_vars, variables)
    problems += _device_checks(vars_file, backends, local_only)
    for bname, backend in sorted(backends.items()):
        if backend["kind"] != "mount" or not local_only:
            continue  # remote mount points are checked on the hosts by the storage role
        path = backend["path"]
        if not os.path.isdir(path):
            problems.append(f"{vars_file}: spillway_backends.{bname}.path: '{path}' does not exist on this "
                            "host; create and mount it, or fix the path")
        elif not os.path.ismount(path) and not backend.get("destructive_ok"):
            problems.append(f"{vars_file}: spillway_backends.{bname}.path: '{path}' is not a mount point, so "
                            "data would land on whatever disk holds it; mount the backend there, or set "
                            "destructive_ok: true to use a plain directory")
    return problems


def _device_checks(vars_file, backends, local_only):
    """kind: device backends: the safety keys make sense together and each device is used once."""
    problems = []
    devices = {}
    for bname, backend in sorted(backends.items()):
        if backend["kind"] != "device":
            continue
        field = f"{vars_file}: spillway_backends.{bname}"
        device = backend["device"]
        if backend.get("wipe") and not backend.get("destructive_ok"):
            problems.append(f"{field}.wipe: true has no effect without destructive_ok: true (the harness touches "
                            f"{device} only when destructive_ok allows it); set both, or neither")
        if device in devices:
            problems.append(f"{field}.device: {device} is also the device of backend '{devices[device]}'; each "
                            "backend needs its own device")
        devices.setdefault(device, bname)
        if local_only and not (os.path.exists(device) and stat.S_ISBLK(os.stat(device).st_mode)):
            problems.append(f"{field}.device: {device} is not a block device on this host; name the disk to "
                            "benchmark (e.g. /dev/sdb or /dev/disk/by-id/...)")
    return problems
