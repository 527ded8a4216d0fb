"""Ownership records: the harness deletes only a directory that carries a record naming the cluster that asks.

A record is the file `.spillway-owner.json` at the top of the directory it claims (docs/safety.md, "Ownership
records"): one JSON object, {"format": "spillway-owner/1", "cluster": <name>, "cluster_id": <hex>, "resource":
<what it is>, "created": <UTC time>, "owns": [<objects that cannot hold a file, e.g. "netns:spw-emu-net">]}.
It is written when the harness creates the directory and covers everything below it. Every destructive step
calls check() or remove() first; a directory without a record, or with another cluster's, is refused before
anything is touched, naming the path, the record found and the one expected.

Standard library only, and no import from the spillway package: the Ansible module spillway_owner (role common)
ships this very file to every host as its module_utils (a symbolic link, playbooks/roles/common/module_utils).
Command line (the migration and inspection tool): python3 -m spillway.ownership show|claim ... (see main()).
"""
import argparse
import datetime
import json
import os
import secrets
import shutil
import stat
import sys

RECORD_NAME = ".spillway-owner.json"
FORMAT = "spillway-owner/1"
# A record is a few hundred bytes; anything much larger is not one.
MAX_RECORD_BYTES = 64 * 1024
CLAIM_COMMAND = "python3 -m spillway.ownership claim"


class OwnershipError(Exception):
    """A directory is not the asking cluster's (or cannot be shown to be); the message names the path, the record
    found, the record expected and the fix."""


def new_cluster_id():
    return secrets.token_hex(8)


def record_path(directory):
    return os.path.join(str(directory), RECORD_NAME)


def expected_text(cluster, cluster_id=None):
    return f"cluster '{cluster}'" + (f" with id {cluster_id}" if cluster_id else "")


def found_text(record):
    return f"cluster '{record.get('cluster')}' with id {record.get('cluster_id')}"


def read_record(directory):
    """The record of `directory` as a dict, None when it has none. A record that is not a regular file (a link, a
    FIFO), too large, or not a record of this format is an OwnershipError: it proves nothing."""
    path = record_path(directory)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise OwnershipError(f"{path} is not a regular file (a link or special file is never an ownership record)")
    if info.st_size > MAX_RECORD_BYTES:
        raise OwnershipError(f"{path} is over {MAX_RECORD_BYTES} bytes: not an ownership record")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read(MAX_RECORD_BYTES + 1)
    try:
        record = json.loads(raw)
    except ValueError:
        record = None
    if not (isinstance(record, dict) and record.get("format") == FORMAT
            and isinstance(record.get("cluster"), str) and isinstance(record.get("cluster_id"), str)
            and isinstance(record.get("owns", []), list)):
        raise OwnershipError(f"{path} is not an ownership record of format {FORMAT} (cluster, cluster_id)")
    return record


def matches(record, cluster, cluster_id=None):
    return record["cluster"] == cluster and (not cluster_id or record["cluster_id"] == cluster_id)


def default_fix(directory, cluster, cluster_id=None):
    id_option = f" --id {cluster_id}" if cluster_id else ""
    return (f"Fix: if {directory} is cluster '{cluster}''s from before ownership records, mark it with "
            f"`{CLAIM_COMMAND} --cluster {cluster}{id_option} {directory}` and run again; otherwise it is not this "
            f"cluster's: move it away or correct the inventory (docs/safety.md, Ownership records)")


def _directory_or_refuse(directory, action):
    info = os.lstat(directory)
    if stat.S_ISLNK(info.st_mode):
        raise OwnershipError(f"refusing to {action} {directory}: it is a symbolic link (to {os.readlink(directory)}); "
                             "links are never followed to what they point at")
    if not stat.S_ISDIR(info.st_mode):
        raise OwnershipError(f"refusing to {action} {directory}: it is not a directory")


def check(directory, cluster, cluster_id=None, *, action="delete", fix=None):
    """The record of existing `directory` when it names `cluster` (and `cluster_id`, when given); OwnershipError,
    naming the path, what was found, what was expected and the fix, otherwise."""
    directory = str(directory)
    _directory_or_refuse(directory, action)
    record = read_record(directory)
    if record is None:
        raise OwnershipError(
            f"refusing to {action} {directory}: it has no ownership record ({record_path(directory)}); expected one "
            f"naming {expected_text(cluster, cluster_id)}. {fix or default_fix(directory, cluster, cluster_id)}")
    if not matches(record, cluster, cluster_id):
        raise OwnershipError(
            f"refusing to {action} {directory}: its ownership record ({record_path(directory)}) names "
            f"{found_text(record)}, not the expected {expected_text(cluster, cluster_id)}: it belongs to another "
            f"cluster (or another installation of '{record['cluster']}'). " + (
                fix or f"Fix: act on it with its own cluster's inventory (make teardown CLUSTER={record['cluster']}), "
                "or correct the inventory so that it does not name this path"))
    return record


def make_record(cluster, cluster_id, resource, owns=()):
    return {"format": FORMAT, "cluster": cluster, "cluster_id": cluster_id, "resource": resource,
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "owns": sorted(set(owns))}


def write_record(directory, record):
    """Write (or replace) the record of `directory`: a new file beside it, then renamed over it, never through a
    link planted as the record."""
    directory = str(directory)
    temp = os.path.join(directory, f".{RECORD_NAME}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(record, sort_keys=True) + "\n")
    os.replace(temp, record_path(directory))


def is_empty(directory):
    with os.scandir(directory) as entries:
        return next(entries, None) is None


def claim(directory, cluster, cluster_id=None, *, resource, adopt=False, fix=None, check_mode=False, mode=0o755):
    """Make `directory` this cluster's before the harness writes into it; returns (record, changed).

    Missing: created (with its parents) and recorded, with `cluster_id` or a new id. Recorded for this cluster:
    used as it is. Empty: recorded. Unrecorded but `adopt` (the caller has shown that the layout is unambiguously
    this cluster's from before records): recorded. Anything else is refused: never silently taken over."""
    directory = str(directory)
    if not os.path.lexists(directory):
        record = make_record(cluster, cluster_id or new_cluster_id(), resource)
        if not check_mode:
            os.makedirs(directory, mode=mode, exist_ok=True)
            write_record(directory, record)
        return record, True
    _directory_or_refuse(directory, "use")
    record = read_record(directory)
    if record is not None:
        return check(directory, cluster, cluster_id, action="use", fix=fix), False
    if not (adopt or is_empty(directory)):
        raise OwnershipError(
            f"refusing to use {directory}: it exists, is not empty and has no ownership record "
            f"({record_path(directory)}), so nothing shows that it belongs to {expected_text(cluster, cluster_id)}. "
            f"{fix or default_fix(directory, cluster, cluster_id)}")
    record = make_record(cluster, cluster_id or new_cluster_id(), resource)
    if not check_mode:
        write_record(directory, record)
    return record, True


def mounts_below(directory, mountinfo="/proc/self/mountinfo"):
    """Mount points at or below `directory` in this mount namespace (mountinfo's octal escapes decoded)."""
    directory = os.path.normpath(str(directory))
    found = []
    with open(mountinfo) as table:
        for line in table:
            target = line.split()[4]
            target = target.encode().decode("unicode_escape") if "\\" in target else target
            if target == directory or target.startswith(directory.rstrip("/") + "/"):
                found.append(target)
    return found


def remove(directory, cluster, cluster_id=None, *, fix=None, check_mode=False):
    """Delete `directory` and everything below it, only when its record names this cluster (and id) and nothing is
    mounted at or below it; returns whether there was something to delete. Links below it are removed as links."""
    directory = str(directory)
    if not os.path.lexists(directory):
        return False
    check(directory, cluster, cluster_id, fix=fix)
    mounted = mounts_below(directory)
    if mounted:
        raise OwnershipError(f"refusing to delete {directory}: still mounted below it: {', '.join(mounted)}. Fix: "
                             "unmount them (make teardown stops what uses them) and run again")
    if not check_mode:
        shutil.rmtree(directory)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m spillway.ownership", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    show = sub.add_parser("show", help="print a directory's ownership record")
    show.add_argument("path")
    mark = sub.add_parser("claim", help="mark an existing directory as a cluster's (the migration's one-line fix)")
    mark.add_argument("--cluster", required=True)
    mark.add_argument("--id", dest="cluster_id", help="the cluster id the record must carry (from the error message)")
    mark.add_argument("--resource", default="claimed by hand")
    mark.add_argument("path")
    args = parser.parse_args(argv)
    try:
        if args.action == "show":
            _directory_or_refuse(args.path, "read")
            record = read_record(args.path)
            print(json.dumps(record, indent=2) if record else f"{args.path}: no ownership record")
            return 0 if record else 1
        if not os.path.isdir(args.path) or os.path.islink(args.path):
            raise OwnershipError(f"{args.path} is not an existing directory")
        record, changed = claim(args.path, args.cluster, args.cluster_id, resource=args.resource, adopt=True)
        print(f"{args.path}: {'marked as' if changed else 'already'} {found_text(record)}'s")
        return 0
    except OwnershipError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
