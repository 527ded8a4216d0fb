"""The storage settings the role is given, checked against inventories/schema.yml itself.

spillway.inventory validates an inventory's group_vars/all.yml against the schema before the harness runs a
playbook. What it cannot see are values from elsewhere: extra vars (-e), other group_vars or host_vars files, a
playbook run by hand. The role checks what it was actually given against the same schema, and the rules between
fields that a JSON schema cannot state, before any disk is touched; each problem names the field.
"""
from pathlib import Path

import yaml
from ansible.errors import AnsibleFilterError

STORAGE_KEYS = ("spillway_cluster", "spillway_backends", "spillway_placement")


def spillway_storage_problems(variables, schema_file, profiles, pfs_servers):
    """Problems of {spillway_cluster, spillway_backends, spillway_placement}, each "<field>: <what is wrong>".

    profiles: the storage profile names (inventories/storage-profiles.yml), which the schema leaves for its user
    to fill in; pfs_servers: the hosts of group pfs_servers."""
    try:
        import jsonschema  # the controller's Python (the harness's venv), where spillway.inventory uses it too
    except ImportError as err:
        raise AnsibleFilterError(f"checking the storage settings needs jsonschema on the Ansible controller: {err}. "
                                 "Run Ansible from the harness's venv (.venv/bin/ansible-playbook)") from err
    schema = yaml.safe_load(Path(schema_file).read_text())
    backend_schema = schema["properties"]["spillway_backends"]["additionalProperties"]
    backend_schema["allOf"][0]["then"]["properties"]["profile"]["enum"] = sorted(profiles)
    given = {key: variables[key] for key in STORAGE_KEYS if key in variables}
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(given), key=lambda e: list(e.absolute_path))
    problems = [f"{'.'.join(str(p) for p in error.absolute_path) or '(top level)'}: {error.message}"
                for error in errors]
    if problems:
        return problems
    backends = given["spillway_backends"]
    for purpose, name in sorted(given["spillway_placement"].items()):
        if name not in backends:
            problems.append(f"spillway_placement.{purpose}: '{name}' is not a backend; the backends are "
                            f"{', '.join(sorted(backends))}")
    devices = {}
    for name, backend in sorted(backends.items()):
        if backend["kind"] == "pfs" and "glusterfs" in backend and not pfs_servers:
            problems.append(f"spillway_backends.{name}.glusterfs: the volume is built over the hosts of group "
                            "pfs_servers, which has none; list the storage servers there in hosts.yml, or give the "
                            "mount point of an existing file system as `mount`")
        if backend["kind"] == "device":
            if backend["device"] in devices:
                problems.append(f"spillway_backends.{name}.device: {backend['device']} is also the device of "
                                f"backend '{devices[backend['device']]}'; each backend needs its own device")
            devices.setdefault(backend["device"], name)
    return problems


class FilterModule:
    def filters(self):
        return {"spillway_storage_problems": spillway_storage_problems}
