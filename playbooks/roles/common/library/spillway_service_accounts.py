#!/usr/bin/python
"""Check or record the service accounts as the harness's (docs/safety.md, "Accounts").

The one Ansible entry to spillway/service_accounts.py (shipped as module_utils, the same file): preflight's
`accounts` row and role common's users.yml check (state=check) that no existing account or group of
spillway_service_users and spillway_service_group is someone else's, before any account is changed; after users.yml
made them, state=present records them in the machine's record.
"""
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.spillway_service_accounts import RECORD, SERVICES, judge, read_record, record_present

DOCUMENTATION = r"""
module: spillway_service_accounts
short_description: Check or record Spillway's service accounts
options:
  users: {type: dict, required: true, description: "spillway_service_users: service -> account name."}
  group: {type: str, required: true, description: spillway_service_group.}
  state:
    type: str
    choices: [check, present]
    default: check
    description: check only reads (refusals fail the task unless report_only); present records them after creation.
  report_only: {type: bool, default: false, description: "Report refusals in `refusals` without failing (preflight)."}
  record: {type: str, description: The machine's record (tests give their own).}
"""


def main():
    module = AnsibleModule(
        argument_spec={
            "users": {"type": "dict", "required": True},
            "group": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["check", "present"], "default": "check"},
            "report_only": {"type": "bool", "default": False},
            "record": {"type": "str", "default": RECORD},
        },
        supports_check_mode=True,
    )
    params = module.params
    users = {service: str(params["users"][service]) for service in SERVICES if service in params["users"]}
    record = read_record(params["record"])
    refusals, adoptions = judge(users, params["group"], record)
    if refusals and not params["report_only"]:
        module.fail_json(msg="refusing the service accounts before any is changed: " + " | ".join(refusals),
                         refusals=refusals)
    changed = False
    if params["state"] == "present" and not module.check_mode:
        changed = record_present(users, params["group"], params["record"])
    module.exit_json(changed=changed, refusals=refusals, adopted=adoptions)


if __name__ == "__main__":
    main()
