"""The harness's service accounts (spillway_service_users, spillway_service_group): only its own, never the system's.

Role common makes every service user a locked system account in the service group, with no home and no login
shell: naming an account that exists already (`daemon`, `root`, a person's) would rewrite that account's group,
home, shell and password. So:

- validation (`inventory_problems`, called by spillway.inventory.load) refuses the names of the accounts and
  groups every Debian system has, without touching a host: the base-passwd master lists
  (/usr/share/base-passwd/passwd.master and group.master of Debian's base-passwd 3.6), and the accounts the base
  system's own packages add (systemd's, messagebus, sshd, ...);
- on each host (`judge`, through module spillway_service_accounts of role common: preflight's `accounts` row and
  the check before role common creates the users) an existing account or group of those names must be the
  harness's: recorded in the machine's record, or made by an earlier Spillway before records existed (the shape
  role common gives it: a system account in the service group, home /nonexistent, shell /usr/sbin/nologin), which
  is then adopted and recorded. Anything else is refused, naming it, before any account is changed.

Accounts are the machine's, shared by every cluster on it and by emulated nodes (one /etc/passwd), so their record
is the machine's too (`RECORD`), not a cluster root's: no cluster's teardown deletes it. Standard library only, and
no import from the spillway package: the Ansible module ships this file as its module_utils.
"""
import grp
import json
import os
import pwd
import re
import stat
import tempfile

RECORD = "/etc/spillway/service-accounts.json"
RECORD_FORMAT = "spillway-accounts/1"
RECORD_LIMIT_BYTES = 64 * 1024
SERVICES = ("hdfs", "yarn", "mapred", "workload", "collect")
ACCOUNT_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
# Debian base-passwd's passwd.master and group.master (3.6; gnats until 3.5.x), then what the base system adds.
BASE_ACCOUNTS = frozenset("""
    root daemon bin sys sync games man lp mail news uucp proxy www-data backup list irc gnats _apt nobody
    messagebus sshd polkitd tss uuidd dnsmasq avahi statd _chrony ntp systemd-network systemd-resolve
    systemd-timesync systemd-coredump systemd-journal-remote
""".split())
BASE_GROUPS = frozenset("""
    root daemon bin sys adm tty disk lp mail news uucp man proxy kmem dialout fax voice cdrom floppy tape sudo
    audio dip www-data backup operator list irc src gnats shadow utmp video sasl plugdev staff games users nogroup
    systemd-journal systemd-network systemd-resolve systemd-timesync input kvm render sgx netdev messagebus
    _ssh crontab lpadmin
""".split())
# What role common's users.yml gives every service user: an account with this shape is the harness's.
HARNESS_HOME = "/nonexistent"
HARNESS_SHELL = "/usr/sbin/nologin"
SYSTEM_UID_LIMIT = 1000


def base_name(name, names):
    """Whether `name` is one of the base system's (`names`), systemd-* included."""
    return name in names or name.startswith("systemd-")


def inventory_problems(host_vars, host_sources, default_source):
    """Problems of every host's spillway_service_users and spillway_service_group (merged as Ansible merges them),
    each naming the file that sets the value; `default_source` where no file does."""
    problems = []
    for host, values in sorted(host_vars.items()):
        sources = host_sources.get(host) or {}
        for variable in ("spillway_service_users", "spillway_service_group"):
            if variable in (values or {}):
                problems += _value_problems(str(sources.get(variable, default_source)),
                                            values.get("spillway_service_users") if variable.endswith("users") else None,
                                            values.get("spillway_service_group") if variable.endswith("group") else None)
    return list(dict.fromkeys(problems))


def _value_problems(where, users, group):
    """Problems of spillway_service_users and spillway_service_group as set in `where` (a file), each naming the
    field and the fix; none for values of another type (the role's own assert names those)."""
    problems = []
    fix = ("name an account of the harness's own (the defaults are spillway-hdfs, spillway-yarn, ...), or leave "
           "spillway_service_users out")
    for service, name in sorted((users or {}).items()) if isinstance(users, dict) else []:
        if isinstance(name, str) and base_name(name, BASE_ACCOUNTS):
            problems.append(f"{where}: spillway_service_users.{service}: '{name}' is an account of the base "
                            f"system (every Debian has it); the harness would rewrite its group, home, shell and "
                            f"password: {fix}")
    if isinstance(group, str) and base_name(group, BASE_GROUPS):
        problems.append(f"{where}: spillway_service_group: '{group}' is a group of the base system; the harness "
                        f"would make it its accounts' group and admit its members to the cluster's services: name "
                        f"a group of the harness's own (the default is spillway-hadoop), or leave it out")
    return problems


def read_record(path=RECORD):
    """{"accounts": {name: uid}, "groups": {name: gid}}; empty when there is none. A record that is a link, not a
    regular file, too large or not of this format proves nothing: it is read as empty."""
    empty = {"accounts": {}, "groups": {}}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return empty
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not (stat.S_ISREG(info.st_mode) and info.st_size <= RECORD_LIMIT_BYTES):
            return empty
        try:
            record = json.loads(handle.read(RECORD_LIMIT_BYTES))
        except ValueError:
            return empty
    if not (isinstance(record, dict) and record.get("format") == RECORD_FORMAT):
        return empty
    return {kind: {str(k): v for k, v in (record.get(kind) or {}).items() if isinstance(v, int)}
            for kind in ("accounts", "groups")}


def write_record(record, path=RECORD):
    """Write the record as a new file renamed into place (never through a link)."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o755, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".service-accounts.", dir=folder)
    with os.fdopen(fd, "w") as handle:
        json.dump({"format": RECORD_FORMAT, **record}, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


def _lookup(getter, name):
    try:
        return getter(name)
    except KeyError:
        return None


def _harness_shaped(account, gid):
    return (account.pw_gid == gid and account.pw_dir == HARNESS_HOME and account.pw_shell == HARNESS_SHELL
            and 0 < account.pw_uid < SYSTEM_UID_LIMIT)


def judge(users, group, record):
    """-> (refusals, adoptions): what on this host is not the harness's, each naming it and the fix; and what an
    earlier Spillway made before records, to be recorded. Reads /etc/passwd and /etc/group only."""
    refusals, adoptions = [], {"accounts": {}, "groups": {}}
    names = set(users.values())
    fix = ("name another account in spillway_service_users (the defaults are spillway-hdfs, spillway-yarn, ...); "
           "the harness never changes an account it did not create")
    existing_group = _lookup(grp.getgrnam, group)
    if existing_group and record["groups"].get(group) != existing_group.gr_gid:
        strangers = sorted(set(existing_group.gr_mem) - names)
        strangers += sorted(a.pw_name for a in pwd.getpwall()
                            if a.pw_gid == existing_group.gr_gid and a.pw_name not in names)
        if group in record["groups"] or existing_group.gr_gid == 0 or strangers:
            refusals.append(f"group '{group}' (gid {existing_group.gr_gid}) exists on this host and is not the "
                            f"harness's" + (f": its members include {', '.join(strangers[:5])}" if strangers else "")
                            + "; name another spillway_service_group (the default is spillway-hadoop)")
        else:
            adoptions["groups"][group] = existing_group.gr_gid
    gid = existing_group.gr_gid if existing_group else None
    for service, name in sorted(users.items()):
        account = _lookup(pwd.getpwnam, name)
        if account is None or record["accounts"].get(name) == account.pw_uid:
            continue
        if name not in record["accounts"] and _harness_shaped(account, gid):
            adoptions["accounts"][name] = account.pw_uid
            continue
        why = ("its record names uid %d" % record["accounts"][name] if name in record["accounts"] else
               f"home {account.pw_dir}, shell {account.pw_shell}, gid {account.pw_gid}: not an account the harness "
               f"made")
        refusals.append(f"spillway_service_users.{service}: account '{name}' (uid {account.pw_uid}) exists on this "
                        f"host and is not the harness's ({why}); {fix}")
    return refusals, adoptions


def record_present(users, group, path=RECORD):
    """After role common made them: record every service account and the group as the harness's (the ones already
    recorded keep their entry). Refuses, changing nothing, what `judge` refuses. -> whether the record changed."""
    record = read_record(path)
    refusals, adoptions = judge(users, group, record)
    if refusals:
        raise ValueError(" | ".join(refusals))
    wanted = {"accounts": {**record["accounts"], **{n: pwd.getpwnam(n).pw_uid for n in users.values()}},
              "groups": {**record["groups"], group: grp.getgrnam(group).gr_gid}}
    if wanted == record:
        return False
    write_record(wanted, path)
    return True
