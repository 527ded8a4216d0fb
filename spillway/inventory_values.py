"""An inventory's strings and numbers as data, and its files as bounded input (docs/safety.md).

Host names reach ssh's command line, Ansible's shell tasks and the names of files on every host: each is checked
against the host-name grammar before anything runs. A non-finite number fails deep in provisioning: refused at
validation. Every file of the folder is hashed for the run's manifest: only regular files, as streams, each under a
size limit, so that a huge file, a FIFO or `/dev/zero` under group_vars/ is refused naming it instead of read.

Standard library only: spillway.cluster_check imports it under the system python3, before the venv exists.
"""
import ipaddress
import math
import os
import re
import stat

# A label of RFC 1123: letters, digits and '-', neither first nor last, at most 63 characters.
HOST_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
HOST_NAME_MAX = 253
TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
HOST_NAME_RULE = ("a host name is RFC 1123 labels (letters, digits and '-', not first or last, at most 63 each) "
                  "between dots, at most 253 characters, or an IPv4 or IPv6 address")
# Inventory files are YAML (inventory_files refuses those over 1 MiB), keys and notes: far below this.
FILE_MAX_BYTES = 16 * 2**20
CHUNK_BYTES = 2**20


def host_name_problem(name):
    """Why `name` is no host name (HOST_NAME_RULE), or None."""
    if not isinstance(name, str):
        return f"{type(name).__name__} {str(name)[:80]!r} is not text"
    try:
        ipaddress.ip_address(name)
        return None
    except ValueError:
        pass
    if len(name) > HOST_NAME_MAX:
        return f"{name[:80]!r}... is longer than {HOST_NAME_MAX} characters"
    if not all(HOST_LABEL.fullmatch(label) for label in name.split(".")):
        return f"{name[:80]!r} is not a host name"
    return None


def host_problems(hosts_file, hosts, sources):
    """Every host name of the inventory and every `ansible_host` it sets, checked against the host-name grammar:
    `hosts` the inventory's hosts, `sources` (place, variables) of every place that sets variables."""
    problems = []
    for host in sorted(hosts, key=str):
        why = host_name_problem(host)
        if why:
            problems.append(f"{hosts_file}: host {why}: it reaches ssh's command line and shell commands on every "
                            f"host; {HOST_NAME_RULE}. Rename it (set ansible_host for the address)")
    for place, values in sources:
        value = values.get("ansible_host") if isinstance(values, dict) else None
        if value is None or (isinstance(value, str) and TEMPLATE.fullmatch(value)):
            continue  # one expression that Ansible alone renders; ssh_command() then leaves the host to Ansible
        why = host_name_problem(value)
        if why:
            problems.append(f"{place}: ansible_host: {why}: it reaches ssh's command line; {HOST_NAME_RULE}")
    return problems


def non_finite_problems(sources):
    """Every number that is not finite (YAML's .nan, .inf) in the variables of every place, naming the field: a
    budget or a size of NaN passes every comparison and fails mid-way in provisioning."""
    problems = []
    for place, values in sources:
        stack = [(str(name), value) for name, value in (values or {}).items()]
        while stack:
            path, value = stack.pop()
            if isinstance(value, float) and not math.isfinite(value):
                problems.append(f"{place}: {path}: {value} is not a finite number; give a number (YAML's .nan and "
                                ".inf are refused)")
            elif isinstance(value, dict):
                stack += [(f"{path}.{key}", item) for key, item in value.items()]
            elif isinstance(value, list):
                stack += [(f"{path}[{n}]", item) for n, item in enumerate(value)]
    return sorted(problems)


def value_kind(value):
    kinds = [(bool, "true or false"), ((int, float), "a number"), (str, "text"), (list, "a list"), (dict, "a mapping")]
    return next((name for types, name in kinds if isinstance(value, types)), type(value).__name__)


def templated(value):
    return isinstance(value, str) and "{{" in value


def type_problems(sources, defaults):
    """A variable the roles read given a value of another kind than their default's (text for a number, a list for a
    mapping...), naming the field; `defaults` variable -> the roles' default (None: typed elsewhere, or computed).
    A Jinja expression on either side is Ansible's to render."""
    problems = []
    for place, values in sources:
        for name, value in (values or {}).items():
            default = defaults.get(name)
            if default is None or value is None or templated(default) or templated(value):
                continue
            if value_kind(value) != value_kind(default):
                problems.append(f"{place}: {name}: {str(value)[:80]!r} is {value_kind(value)}, where the roles read "
                                f"{value_kind(default)} (their default: {str(default)[:80]!r}); give "
                                f"{value_kind(default)}")
    return problems


def kind_of(mode):
    """What a non-regular file is, in words."""
    kinds = [(stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket")]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def folder_files(root, shown_from=None):
    """(files, problems): the regular files below `root`, sorted, as an inventory's digest covers them, and a
    problem for each entry that is neither a folder nor a regular file or is over FILE_MAX_BYTES (named relative
    to `shown_from` when given). Links are followed, as Ansible follows them; a dangling one is no file."""
    files, problems = [], []
    for path in sorted(root.rglob("*")):
        try:
            mode, size = os.stat(path).st_mode, os.stat(path).st_size
        except OSError:
            continue
        shown = path.relative_to(shown_from) if shown_from else path
        if stat.S_ISDIR(mode):
            continue
        if not stat.S_ISREG(mode):
            problems.append(f"{shown}: {kind_of(mode)}, not a regular file: an inventory folder holds files only "
                            "(it is read and hashed whole); remove it")
        elif size > FILE_MAX_BYTES:
            problems.append(f"{shown}: {size} bytes, over the {FILE_MAX_BYTES // 2**20} MiB limit of an inventory "
                            "file; remove it, or keep it outside the inventory folder")
        else:
            files.append(path)
    return files, problems


class FileRefused(ValueError):
    """A file to hash is not a regular file or is over its size limit."""


def hash_file(update, path, limit=FILE_MAX_BYTES, header=None):
    """Feed regular file `path` to `update` in chunks, after `header(size)`'s bytes when given; FileRefused when it
    is no regular file (checked on the opened file: a FIFO is opened without blocking) or is over `limit` bytes;
    what it holds beyond its size at the check is not read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"{path}: {kind_of(info.st_mode)}, not a regular file: not read")
        if info.st_size > limit:
            raise FileRefused(f"{path}: {info.st_size} bytes, over the {limit // 2**20} MiB limit: not read")
        if header:
            update(header(info.st_size))
        remaining = info.st_size
        while remaining:
            chunk = stream.read(min(CHUNK_BYTES, remaining))
            if not chunk:
                raise FileRefused(f"{path}: shrank while it was read; run again")
            update(chunk)
            remaining -= len(chunk)


def hosts_yml_problems(hosts_file, data):
    """The host-name check of host_problems on hosts.yml alone, for the first check that runs before the venv
    (spillway.cluster_check): `data` as YAML parsed it, or its text when the system python has no YAML parser; then
    every key of the file must be a plain word and every ansible_host a word of the host-name alphabet."""
    if isinstance(data, str):
        problems = []
        for number, line in enumerate(data.splitlines(), 1):
            key = re.match(r"\s*([^#\s][^:]*?)\s*:(\s|$)", line)
            address = re.search(r"\bansible_host\s*:\s*([^,}\s]+)", line)
            if key and not re.fullmatch(r"[A-Za-z0-9_.-]+", key.group(1)):
                problems.append(f"{hosts_file}: line {number}: {key.group(1)[:80]!r} is no plain name; "
                                f"{HOST_NAME_RULE}")
            if address and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.:-]*|\{\{[^{}]*\}\}", address.group(1)):
                problems.append(f"{hosts_file}: line {number}: ansible_host: {address.group(1)[:80]!r}: "
                                f"{HOST_NAME_RULE}")
        return problems
    hosts, sources, seen = set(), [], set()
    nodes = [("all", data.get("all") if isinstance(data, dict) else None)]
    while nodes:
        group, node = nodes.pop()
        if not isinstance(node, dict) or id(node) in seen:  # YAML aliases can make a group its own child
            continue
        seen.add(id(node))
        members = node.get("hosts") if isinstance(node.get("hosts"), dict) else {}
        hosts |= set(members)
        sources += [(f"{hosts_file}: {host}", values) for host, values in members.items()]
        sources.append((f"{hosts_file}: {group}.vars", node.get("vars")))
        children = node.get("children") if isinstance(node.get("children"), dict) else {}
        nodes += list(children.items())
    return host_problems(hosts_file, hosts, sources)
