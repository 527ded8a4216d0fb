#!/usr/bin/python
"""Start or stop this host's collectors in one module run (docs/collectors.md, the collector contract).

One run instead of one task per collector and per folder: every Ansible task costs a module start (0.2-0.7 s on a
loaded 2-core host), and a bench starts and stops the collectors around every workload (issue 19). For each
collector given: `start` creates its output folder, owned by the user it runs as, then runs
`<install_dir>/<name>/<action>` with the contract's environment; a collector without `needs_root` runs as the
unprivileged collect user with no way back to root (setpriv). The collectors run all at once, each with its own time
in the result. The data devices come from the host's storage.json
(backends.*.device) unless `devices` overrides them. A collector never fails the bench: it exits 0 and writes
collector-error.txt; what one printed on stderr or a non-zero exit is returned in `problems` (and shown as a
warning), and the module fails only when a collector is not installed (provision installs them).

`stop_left_running` (teardown) stops what an interrupted bench left running: each output folder of the collectors
given that still holds a pid file (`<runs_dir>/<run_id>/<name>/<workload_id>/.pid`), as the user the bench ran it
as, with that run's and workload's ids. Who that is comes from the collectors given, the installed manifests
(root's), never from a file of an output folder: the collect user owns those.
"""
import glob
import grp
import json
import os
import pwd
import subprocess
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: spillway_collectors
short_description: Start or stop the Spillway collectors of this host
options:
  action: {type: str, required: true, choices: [start, stop, stop_left_running]}
  collectors:
    type: list
    elements: dict
    required: true
    description: the collectors of this host, each {name, needs_root (absent or a reason)}
  install_dir: {type: path, required: true, description: "where provision installed collectors/"}
  run_root: {type: path, description: "<spillway_root>/runs/<run_id>; start and stop"}
  runs_dir: {type: path, description: "<spillway_root>/runs, every run's; stop_left_running"}
  storage_json: {type: path, required: true, description: "the host's storage.json (absent on a host without disks)"}
  contract_env:
    type: dict
    required: true
    description: "the contract's variables shared by every collector (stop_left_running: the run's and
      workload's ids come from each output folder's path)"
  devices: {type: list, elements: str, default: [], description: "data devices; empty, storage.json's"}
  user: {type: str, required: true, description: "the unprivileged collect user"}
  group: {type: str, required: true}
"""


def storage_devices(path):
    """(devices, deviceless backends) of storage.json; a host without one (no data disks) has neither."""
    try:
        with open(path) as handle:
            backends = json.load(handle).get("backends") or {}
    except FileNotFoundError:
        return [], []
    devices = list(dict.fromkeys(b["device"] for b in backends.values() if b.get("device")))
    return devices, [name for name, b in backends.items() if not b.get("device")]


def output_folders(p):
    """[(collector, its output folder, the run's and workload's ids when they are the folder's own)]."""
    if p["action"] != "stop_left_running":
        workload_id = p["contract_env"]["SPILLWAY_WORKLOAD_ID"]
        return [(c, os.path.join(p["run_root"], c["name"], workload_id), {}) for c in p["collectors"]]
    left = []
    for collector in p["collectors"]:
        # <runs_dir>/<run_id>/<name>/ are root's (start makes them); the output folder below is the collector's user's
        pattern = os.path.join(glob.escape(p["runs_dir"]), "*", glob.escape(collector["name"]), "*", ".pid")
        for pid_file in sorted(glob.glob(pattern)):
            out = os.path.dirname(pid_file)
            run_id = os.path.basename(os.path.dirname(os.path.dirname(out)))
            left.append((collector, out, {"SPILLWAY_RUN_ID": run_id, "SPILLWAY_WORKLOAD_ID": os.path.basename(out)}))
    return left


def main():
    module = AnsibleModule(argument_spec={
        "action": {"type": "str", "required": True, "choices": ["start", "stop", "stop_left_running"]},
        "collectors": {"type": "list", "elements": "dict", "required": True},
        "install_dir": {"type": "path", "required": True},
        "run_root": {"type": "path"},
        "runs_dir": {"type": "path"},
        "storage_json": {"type": "path", "required": True},
        "contract_env": {"type": "dict", "required": True},
        "devices": {"type": "list", "elements": "str", "default": []},
        "user": {"type": "str", "required": True},
        "group": {"type": "str", "required": True},
    }, required_if=[("action", "start", ["run_root"]), ("action", "stop", ["run_root"]),
                    ("action", "stop_left_running", ["runs_dir"])])
    p = module.params
    program = "start" if p["action"] == "start" else "stop"
    missing = [c["name"] for c in p["collectors"]
               if not os.access(os.path.join(p["install_dir"], c["name"], program), os.X_OK)]
    if missing:
        module.fail_json(msg=f"collector(s) {', '.join(missing)} not installed in {p['install_dir']}: "
                             "run playbooks/provision.yml (it installs collectors/ on every host)")
    devices, deviceless = storage_devices(p["storage_json"])
    if p["devices"]:
        devices, deviceless = p["devices"], []
    shared = {**{k: str(v) for k, v in p["contract_env"].items()},
              "SPILLWAY_DEVICES": " ".join(devices), "SPILLWAY_DEVICELESS_BACKENDS": " ".join(deviceless)}
    uid, gid = pwd.getpwnam(p["user"]).pw_uid, grp.getgrnam(p["group"]).gr_gid
    as_user = ["setpriv", f"--reuid={p['user']}", f"--regid={p['group']}", "--init-groups", "--no-new-privs", "--"]
    # All at once: each is a short program of its own, most of it waiting (a block trace draining on stop, a
    # sampler's first sample on start), and the collectors do not depend on each other.
    launched = []
    for collector, out, ids in output_folders(p):
        name, privileged = collector["name"], collector.get("needs_root") is not None
        if p["action"] == "start":
            os.makedirs(out, mode=0o755, exist_ok=True)
            os.chown(out, 0 if privileged else uid, gid)
            os.chmod(out, 0o755)
        command = ([] if privileged else as_user) + [os.path.join(p["install_dir"], name, program)]
        stderr = tempfile.TemporaryFile(mode="w+")
        launched.append({"name": name, "out": out, "stderr": stderr, "started": time.monotonic(),
                         "proc": subprocess.Popen(command, env={**os.environ, **shared, **ids, "SPILLWAY_OUT": out},
                                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                  stderr=stderr, text=True)})
    while any("ended" not in item for item in launched):
        for item in launched:
            if "ended" not in item and item["proc"].poll() is not None:
                item["ended"] = time.monotonic()
        time.sleep(0.01)
    ran, problems = [], []
    for item in launched:
        item["stderr"].seek(0)
        stderr = item["stderr"].read().strip()
        item["stderr"].close()
        rc = item["proc"].returncode
        # each collector's own time, in the step's log: what a slow stop (a block trace draining) costs
        ran.append({"name": item["name"], "out": item["out"], "rc": rc, "stderr": stderr,
                    "seconds": round(item["ended"] - item["started"], 2)})
        if rc or stderr:
            where = f" ({item['out']})" if p["action"] == "stop_left_running" else ""
            problems.append(f"collector {item['name']} {p['action']}{where}: exit {rc}: {stderr[-2000:]}")
    for problem in problems:
        module.warn(problem)
    module.exit_json(changed=bool(ran), collectors=ran, problems=problems, devices=devices)


if __name__ == "__main__":
    main()
