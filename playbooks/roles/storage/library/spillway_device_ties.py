#!/usr/bin/python
"""What ties each device backend's device to something else on the host (docs/safety.md, "Devices"), read-only.

The one Ansible entry to spillway/device_ties.py (shipped as module_utils, the same file): role storage's device
judgement refuses a device with any tie (mounted elsewhere, held or holding, a loop device attached to it, a loop
over an emulated disk, the root file system) before anything on the host is touched.
"""
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.spillway_device_ties import ties

DOCUMENTATION = r"""
module: spillway_device_ties
short_description: The ties of each device backend's device on this host
options:
  backends:
    type: list
    elements: dict
    required: true
    description: "[{key, value: {device, ...}}]: the device backends (spillway_backends as items)."
  mount_parent:
    type: str
    required: true
    description: The folder of the harness's own mount points (<spillway_root>/mnt), one per backend.
  harness_paths:
    type: list
    elements: str
    default: []
    description: Folders of the harness on this host; a loop device over a file in one is an emulated disk.
"""


def main():
    module = AnsibleModule(
        argument_spec={"backends": {"type": "list", "elements": "dict", "required": True},
                       "mount_parent": {"type": "str", "required": True},
                       "harness_paths": {"type": "list", "elements": "str", "default": []}},
        supports_check_mode=True,
    )
    params = module.params
    found = {str(b["key"]): ties(str(b["value"]["device"]), f"{params['mount_parent']}/{b['key']}",
                                 params["harness_paths"])
             for b in params["backends"]}
    module.exit_json(changed=False, ties={key: value for key, value in found.items() if value})


if __name__ == "__main__":
    main()
