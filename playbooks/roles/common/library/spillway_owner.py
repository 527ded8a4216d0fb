#!/usr/bin/python
"""Claim, check or delete a directory by its ownership record (docs/safety.md, "Ownership records").

The one Ansible entry to the mechanism of spillway/ownership.py (shipped as module_utils, the same file): every task
of the roles that creates a directory the harness may later delete claims it here, and every task that deletes one
deletes it here, after the record has been checked. A refusal fails the task before anything is touched, with the
message naming the path, the record found and the record expected.
"""
import json
import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.spillway_ownership import OwnershipError, check, claim, read_record, remove

DOCUMENTATION = r"""
module: spillway_owner
short_description: Claim, check or delete a directory by its Spillway ownership record
options:
  path: {type: str, required: true, description: The directory.}
  cluster: {type: str, required: true, description: The cluster that claims, checks or deletes it.}
  cluster_id:
    type: str
    default: ""
    description: The id the record must carry (the cluster root's); empty at the root itself, whose record holds it.
  state:
    type: str
    choices: [claim, check, absent]
    default: check
    description: claim creates and records it (or accepts it); check only reads; absent deletes it after the check.
  resource: {type: str, default: "", description: What the directory is, written into a new record.}
  anchor:
    type: bool
    default: false
    description: The cluster root, checked by name; any other directory is deleted only against a known cluster_id.
  adopt: {type: bool, default: false, description: "The caller has shown the unrecorded directory is this cluster's."}
  legacy_marker:
    type: dict
    description: "{file, content}: an unrecorded directory holding this file with this content is adopted."
  legacy_storage_json:
    type: bool
    default: false
    description: An unrecorded directory whose storage.json names this cluster is adopted.
  fix: {type: str, default: "", description: The fix a refusal names (default - the claim command or move it away).}
  mode: {type: str, default: "0755", description: Mode of a directory it creates.}
"""


def text_of(path):
    """Content of a regular file (never through a link), None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(1 << 20).decode("utf-8", "replace")


def legacy_owned(params):
    """Whether an unrecorded directory is unambiguously this cluster's, from what the harness wrote there before
    ownership records existed."""
    path = params["path"]
    marker = params["legacy_marker"]
    if marker and (text_of(os.path.join(path, marker["file"])) or "").strip() == str(marker["content"]):
        return True
    if params["legacy_storage_json"]:
        try:
            return json.loads(text_of(os.path.join(path, "storage.json")) or "null").get("cluster") == params["cluster"]
        except (ValueError, AttributeError):
            return False
    return False


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "str", "required": True},
            "cluster": {"type": "str", "required": True},
            "cluster_id": {"type": "str", "default": ""},
            "state": {"type": "str", "choices": ["claim", "check", "absent"], "default": "check"},
            "resource": {"type": "str", "default": ""},
            "anchor": {"type": "bool", "default": False},
            "adopt": {"type": "bool", "default": False},
            "legacy_marker": {"type": "dict"},
            "legacy_storage_json": {"type": "bool", "default": False},
            "fix": {"type": "str", "default": ""},
            "mode": {"type": "str", "default": "0755"},
        },
        supports_check_mode=True,
    )
    params = module.params
    path = os.path.normpath(params["path"])
    cluster, cluster_id, state = params["cluster"], params["cluster_id"] or None, params["state"]
    fix = params["fix"] or None
    result = {"changed": False, "path": path, "record": None, "cluster_id": "", "exists": os.path.lexists(path)}
    try:
        if state == "claim":
            adopt = params["adopt"] or (result["exists"] and os.path.isdir(path) and read_record(path) is None
                                        and legacy_owned(params))
            record, changed = claim(path, cluster, cluster_id, resource=params["resource"] or path, adopt=adopt,
                                    fix=fix, check_mode=module.check_mode, mode=int(params["mode"], 8))
            result.update(changed=changed, record=record)
        elif state == "check":
            if result["exists"]:
                result["record"] = check(path, cluster, cluster_id, fix=fix)
        else:
            if result["exists"] and not params["anchor"] and not cluster_id:
                raise OwnershipError(
                    f"refusing to delete {path}: the cluster id its record must carry is unknown (the cluster root "
                    f"of '{cluster}' on this host has no record, or is gone). Fix: if {path} is the cluster's, "
                    "delete it by hand")
            if result["exists"]:
                result["record"] = check(path, cluster, cluster_id, fix=fix)
            result["changed"] = remove(path, cluster, cluster_id, fix=fix, check_mode=module.check_mode)
    except OwnershipError as err:
        module.fail_json(msg=str(err), **result)
    except OSError as err:
        module.fail_json(msg=f"{path}: {err}", **result)
    result["cluster_id"] = (result["record"] or {}).get("cluster_id", "")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
