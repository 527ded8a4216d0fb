"""An inventory folder read as Ansible reads it: hosts.yml, group_vars/ and host_vars/, merged into each host's
effective variables by Ansible's precedence, each value with the file (and field) it came from.

Validation must see what the playbooks will see: a value that hosts.yml or group_vars/workers.yml sets overrides
group_vars/all.yml on those hosts, so checking group_vars/all.yml alone would pass an inventory whose hosts run
with other roots or backends. tests/spillway/test_inventory_files.py compares the merge with
`ansible-inventory --list` on the shipped inventories and on scratch ones that use every rule below.

Every shape of malformed file ends in an InventoryFileError naming the file, the field and the fix: this code
reads files a user edits by hand and runs as root before anything is touched, so it never lets an exception of
the YAML parser or of a wrong type through.
"""
import difflib
import stat
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from spillway import inventory_values

# The groups of a cluster's roles: every inventory has a host in each (spillway.inventory), and what another
# inventory holds is read from its hosts in these (spillway.resources).
ROLE_GROUPS = ("namenode", "resourcemanager", "controller", "workers")
# Ansible's YAML inventory: a group is a mapping of these keys (anything else is ignored by Ansible with a warning:
# a typo such as `host:` would drop hosts silently, so it is an error here).
GROUP_KEYS = ("hosts", "children", "vars")
# What the host_group_vars plugin reads for group_vars/<name> and host_vars/<name> (a file with one of these
# suffixes, or a folder of such files, read in sorted order).
VARS_SUFFIXES = ("", ".yml", ".yaml", ".json")
# Files Ansible ignores in an inventory folder (INVENTORY_IGNORE_EXTS and its ignored names); every other file
# there is parsed as inventory, which this code would not see.
IGNORED_SUFFIXES = (".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".ini", ".cfg",
                    ".retry")
MAX_BYTES = 1 << 20
# Real inventories nest a handful of levels; the bound keeps every later recursive walk (jsonschema, Ansible's
# own) far from Python's recursion limit and catches self-referencing YAML aliases.
MAX_DEPTH = 32
MAX_NODES = 100_000


class InventoryFileError(Exception):
    """The inventory's files cannot be read as an inventory; `problems` lists each with its fix."""

    def __init__(self, problems):
        self.problems = problems
        super().__init__("\n".join(problems))


class Vaulted(str):
    """An `!vault` value: Ansible decrypts it at run time; here it is opaque text."""


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader plus the two tags Ansible's loader adds to YAML."""


_Loader.add_constructor("!vault", lambda loader, node: Vaulted(loader.construct_scalar(node)))
_Loader.add_constructor("!unsafe", lambda loader, node: (
    loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else
    loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode) else loader.construct_mapping(node)))


def read_yaml(path, what):
    """The YAML document of `path`, or InventoryFileError saying why not. `what` tells what the file should hold
    (e.g. 'the cluster's variables'), for the messages."""
    path = Path(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):  # a FIFO blocks, /dev/zero never ends
            raise InventoryFileError([f"{path}: {inventory_values.kind_of(info.st_mode)}, not a regular file; it "
                                      f"should be a YAML file holding {what}"])
        with open(path, "rb") as stream:
            raw = stream.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise InventoryFileError([f"{path}: missing; it should hold {what}"]) from None
    except IsADirectoryError:
        raise InventoryFileError([f"{path}: is a folder; it should be a YAML file holding {what}"]) from None
    except OSError as err:
        raise InventoryFileError([f"{path}: cannot be read ({err.strerror}); it should hold {what}"]) from None
    if len(raw) > MAX_BYTES:
        raise InventoryFileError([f"{path}: {info.st_size} bytes, over the 1 MiB an inventory file may have; "
                                  f"it should hold only {what}"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise InventoryFileError([f"{path}: line {line}: byte 0x{raw[err.start]:02x} is not UTF-8 text; save the "
                                  "file as UTF-8 (Ansible reads it as UTF-8 too)"]) from None
    if text.startswith("$ANSIBLE_VAULT"):
        raise InventoryFileError([f"{path}: an encrypted (ansible-vault) file cannot be validated before it is "
                                  "used; keep the file plain and encrypt only the secret values (!vault)"])
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        hint = "fix the YAML syntax there"
        if "\t" in problem or "'\\t'" in problem or "\\t" in problem:
            hint = "YAML indents with spaces only: replace the tab with spaces"
        raise InventoryFileError([f"{path}: {where}not valid YAML ({problem}); {hint}"]) from None
    except RecursionError:
        raise InventoryFileError([f"{path}: nested too deeply to read; an inventory file nests a few levels, "
                                  f"at most {MAX_DEPTH}"]) from None
    except (ValueError, TypeError, OverflowError) as err:  # e.g. a timestamp or tag value PyYAML cannot build
        raise InventoryFileError([f"{path}: a value cannot be read ({err}); quote it to make it text"]) from None
    _check_depth(path, data)
    return data


def _check_depth(path, data):
    """Refuse documents deeper than MAX_DEPTH or larger than MAX_NODES (YAML aliases can make a small file a huge
    or cyclic structure), walking without recursion."""
    stack, seen = [(data, 0, "(top level)")], 0
    while stack:
        node, depth, where = stack.pop()
        seen += 1
        if depth > MAX_DEPTH:
            raise InventoryFileError([f"{path}: {where}: nested deeper than {MAX_DEPTH} levels (or an alias that "
                                      "refers to itself); an inventory file nests a few levels: flatten it"])
        if seen > MAX_NODES:
            raise InventoryFileError([f"{path}: more than {MAX_NODES} values (YAML aliases expanding?); an "
                                      "inventory file is short: write the values out"])
        if isinstance(node, dict):
            stack += [(value, depth + 1, f"{where}.{key}" if depth else str(key)) for key, value in node.items()]
        elif isinstance(node, list):
            stack += [(value, depth + 1, f"{where}[{i}]") for i, value in enumerate(node)]


def type_name(value):
    return {dict: "a mapping", list: "a list", str: "text", int: "a number", float: "a number", bool: "a boolean",
            type(None): "empty"}.get(type(value), type(value).__name__)


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class Source:
    """Where a set of variables was written: a file and, inside hosts.yml, the field."""
    file: Path
    field: str = ""

    def __str__(self):
        return f"{self.file}: {self.field}" if self.field else str(self.file)


@dataclass
class Group:
    name: str
    vars: dict = field(default_factory=dict)
    vars_source: Source = None
    children: set = field(default_factory=set)
    parents: set = field(default_factory=set)
    hosts: list = field(default_factory=list)
    depth: int = 0
    priority: object = 1


@dataclass
class Effective:
    """An inventory folder as Ansible sees it."""
    root: Path
    groups: dict                # name -> Group (with 'all')
    host_vars: dict             # host -> {variable: value}, merged by Ansible's precedence
    host_sources: dict          # host -> {variable: Source of the value that won}
    sources: list               # [(Source, vars mapping)] every place that sets variables, for the name checks
    all_vars: dict              # what group `all` alone gives (hosts.yml all.vars < group_vars/all)
    all_sources: dict           # variable -> Source, for all_vars

    def members(self, group):
        """Hosts of `group` and of its descendants, in order of appearance, once each."""
        seen, order, stack = set(), [], [group]
        while stack:
            name = stack.pop(0)
            g = self.groups.get(name)
            if g is None or name in seen:
                continue
            seen.add(name)
            order += [h for h in g.hosts if h not in order]
            stack += sorted(g.children)
        return order


def _mapping(value, where, what, problems):
    """`value` as a dict when it is a mapping or empty; else a problem naming where and what was expected."""
    if value is None:
        return {}
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            problems.append(f"{where}: the name {_short(bad[0])} is {type_name(bad[0])}, not text; quote it")
            return {k: v for k, v in value.items() if isinstance(k, str)}
        return value
    problems.append(f"{where}: is {type_name(value)} ({_short(value)}); {what}")
    return {}


def read(root):
    """The inventory folder `root` as Ansible reads it, or InventoryFileError listing every problem."""
    root = Path(root)
    hosts_file = root / "hosts.yml"
    problems = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.name in ("hosts.yml", "group_vars", "host_vars") or entry.name.startswith(".") \
                or entry.name.endswith(IGNORED_SUFFIXES):
            continue
        problems.append(f"{entry}: Ansible reads every file of an inventory folder as inventory, and spillway "
                        "validates only hosts.yml, group_vars/ and host_vars/: move its hosts and variables into "
                        "those, or rename it with a .md or .txt suffix if it is documentation")
    tree = read_yaml(hosts_file, "the cluster's hosts and their roles (see inventories/local/hosts.yml)")
    if tree is None:
        raise InventoryFileError([f"{hosts_file}: empty; list the cluster's hosts under all.children.<role>.hosts "
                                  "(namenode, resourcemanager, controller, workers), as inventories/local/hosts.yml"])
    example = "e.g. `all: {children: {workers: {hosts: {localhost: }}}}` (see inventories/local/hosts.yml)"
    tree = _mapping(tree, f"{hosts_file}: (top level)", f"hosts.yml is a mapping of groups, {example}", problems)

    groups = {"all": Group("all")}
    host_file_vars, host_file_sources, sources = {}, {}, []

    def group(name):
        return groups.setdefault(name, Group(name))

    def walk(name, node, where, parent):
        g = group(name)
        if parent is not None and name != "all":
            g.parents.add(parent)
            groups[parent].children.add(name)
        node = _mapping(node, f"{hosts_file}: {where}",
                        f"a group is a mapping of {', '.join(k + ':' for k in GROUP_KEYS)}; {example}", problems)
        for key in node:
            if key not in GROUP_KEYS:
                close = difflib.get_close_matches(key, GROUP_KEYS, n=1)
                problems.append(f"{hosts_file}: {where}.{key}: not a key of a group (Ansible would ignore it); a "
                                f"group has {', '.join(k + ':' for k in GROUP_KEYS)}"
                                + (f": did you mean '{close[0]}'?" if close else ""))
        variables = _mapping(node.get("vars"), f"{hosts_file}: {where}.vars",
                             "a group's vars: is a mapping of variable: value", problems)
        if "ansible_group_priority" in variables:  # Ansible keeps it as the group's priority, not a variable
            variables = dict(variables)
            g.priority = variables.pop("ansible_group_priority")
        if variables:
            g.vars = {**g.vars, **variables}
            g.vars_source = Source(hosts_file, f"{where}.vars")
            sources.append((g.vars_source, variables))
        # Ansible's order: a group's vars, then its children (depth first), then its hosts; a host named twice
        # keeps the variables of the entry read last.
        children = _mapping(node.get("children"), f"{hosts_file}: {where}.children",
                            "a group's children: is a mapping of groups", problems)
        for child, child_node in children.items():
            if child == "all":
                problems.append(f"{hosts_file}: {where}.children.all: 'all' is every host's group, not a child; "
                                "remove it there")
                continue
            if child in _ancestors(groups, name) | {name}:
                problems.append(f"{hosts_file}: {where}.children.{child}: a group cannot contain itself; remove it")
                continue
            walk(child, child_node, f"{where}.children.{child}", name)

        hosts = _mapping(node.get("hosts"), f"{hosts_file}: {where}.hosts",
                         "a group's hosts: is a mapping of host names (each with its variables or nothing), "
                         "e.g. `hosts: {localhost: }`", problems)
        for host, hvars in hosts.items():
            hwhere = f"{where}.hosts.{host}"
            if "[" in host and ":" in host:
                problems.append(f"{hosts_file}: {hwhere}: host ranges are not validated by spillway; list the "
                                "hosts one by one")
            if not host.strip():
                problems.append(f"{hosts_file}: {hwhere}: an empty host name; give the host's name")
                continue
            hvars = _mapping(hvars, f"{hosts_file}: {hwhere}",
                             "a host's entry is a mapping of its variables, or nothing", problems)
            if host not in g.hosts:
                g.hosts.append(host)
            host_file_vars[host] = {**host_file_vars.get(host, {}), **hvars}
            host_file_sources.setdefault(host, {}).update({k: Source(hosts_file, hwhere) for k in hvars})
            if hvars:
                sources.append((Source(hosts_file, hwhere), hvars))
    for name, node in tree.items():
        walk(name, node, name, None if name == "all" else "all")
    if problems:
        raise InventoryFileError(problems)
    _set_depths(groups)

    host_vars_files = {}
    for kind, names, store in (("group_vars", groups, None), ("host_vars", host_file_vars, host_vars_files)):
        folder = root / kind
        for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
            if entry.name.startswith("."):
                continue
            stem = entry.name if entry.is_dir() else entry.stem if entry.suffix in VARS_SUFFIXES else None
            if stem is None:
                continue  # Ansible skips files of other suffixes
            if stem not in names:
                close = difflib.get_close_matches(stem, list(names), n=1)
                thing = "group" if kind == "group_vars" else "host"
                problems.append(f"{entry}: no {thing} '{stem}' in {hosts_file}, so Ansible ignores this file; "
                                + (f"did you mean '{close[0]}'? Rename it" if close else
                                   f"rename it after a {thing} of hosts.yml or remove it"))
    vars_files = {}
    for kind, names in (("group_vars", list(groups)), ("host_vars", list(host_file_vars))):
        for name in names:
            for path in _vars_files(root / kind, name):
                try:
                    data = read_yaml(path, "variables (a mapping of variable: value)")
                except InventoryFileError as err:
                    problems += err.problems
                    continue
                variables = _mapping(data, f"{path}: (top level)",
                                     "a vars file is a mapping of variable: value, e.g. `spillway_cluster: mine`",
                                     problems)
                vars_files.setdefault((kind, name), []).append((Source(path), variables))
                if variables:
                    sources.append((Source(path), variables))
    if problems:
        raise InventoryFileError(problems)

    def combined(layers):
        values, where = {}, {}
        for source, variables in layers:
            values.update(variables)
            where.update({k: source for k in variables})
        return values, where

    def group_layers(name):
        g = groups[name]
        return [(g.vars_source, g.vars)] if g.vars else []

    all_vars, all_sources = combined(group_layers("all") + vars_files.get(("group_vars", "all"), []))
    host_vars, host_sources = {}, {}
    for host in host_file_vars:
        own = sorted((g for g in groups.values() if g.name != "all" and host in _members(groups, g.name)),
                     key=_group_order)
        layers = group_layers("all") + vars_files.get(("group_vars", "all"), [])
        layers += [layer for g in own for layer in group_layers(g.name)]
        layers += [layer for g in own for layer in vars_files.get(("group_vars", g.name), [])]
        layers += [(Source(hosts_file, f"hosts.{host}"), host_file_vars[host])]
        layers += vars_files.get(("host_vars", host), [])
        host_vars[host], host_sources[host] = combined(layers)
        for var, source in host_file_sources.get(host, {}).items():
            if host_sources[host][var].field == f"hosts.{host}":
                host_sources[host][var] = source
    return Effective(root, groups, host_vars, host_sources, sources, all_vars, all_sources)


def _vars_files(folder, name):
    """group_vars/<name>[.yml|.yaml|.json] and the files of a group_vars/<name>/ folder, as Ansible reads them."""
    found = []
    for suffix in VARS_SUFFIXES:
        path = folder / f"{name}{suffix}"
        if path.is_file():
            found.append(path)
        elif suffix == "" and path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")
                            and p.suffix in VARS_SUFFIXES)
    return found


def _ancestors(groups, name):
    seen, stack = set(), [name]
    while stack:
        for parent in groups[stack.pop()].parents:
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


def _members(groups, name):
    seen, hosts, stack = set(), set(), [name]
    while stack:
        g = groups[stack.pop()]
        if g.name in seen:
            continue
        seen.add(g.name)
        hosts |= set(g.hosts)
        stack += list(g.children)
    return hosts


def _set_depths(groups):
    """Ansible's group depth: 0 for all, 1 for its children, a child one deeper than its deepest parent."""
    changed = True
    while changed:
        changed = False
        for g in groups.values():
            depth = max((groups[p].depth + 1 for p in g.parents), default=0)
            if g.name != "all" and depth != g.depth:
                g.depth, changed = depth, True


def _group_order(g):
    """Ansible's sort_groups: depth, then ansible_group_priority, then name; later groups win."""
    try:
        priority = int(g.priority)
    except (TypeError, ValueError):
        priority = 1
    return (g.depth, priority, g.name)
