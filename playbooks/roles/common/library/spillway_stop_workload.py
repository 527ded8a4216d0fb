#!/usr/bin/python
"""Stop what is left running of one workload run on this host, found by the harness's own record.

Every process a workload step starts carries the step's environment (playbooks/workload-step.yml): SPILLWAY_ROOT,
SPILLWAY_RUN_ID, SPILLWAY_WORKLOAD_ID and SPILLWAY_OUT, the step's output folder (the collectors have another). After a stopped bench (Ctrl-C, SIGTERM), its commands can outlive the
Ansible that started them: timeout(1) puts each in a process group of its own, and over SSH nothing tells the
remote host that the controller has gone. This module ends exactly those processes: SIGTERM to each, then SIGKILL
to what is still there after `grace_s`. A process without all four values (another run, another cluster, another
workload, the collectors, anything not the harness's) is never signalled. After a run that ended on its own it finds nothing and
changes nothing.
"""
import os
import signal
import time

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: spillway_stop_workload
short_description: Stop the processes of one Spillway workload run still running on this host
options:
  spillway_root: {type: str, required: true}
  run_id: {type: str, required: true}
  workload_id: {type: str, required: true}
  grace_s: {type: float, default: 10, description: "seconds between SIGTERM and SIGKILL"}
"""


def owned_processes(record):
    """{pid: command name} of the processes whose environment holds every KEY=value of `record`."""
    wanted = {f"{key}={value}".encode() for key, value in record.items()}
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                variables = set(environ.read().split(b"\0"))
            with open(f"/proc/{entry}/comm") as comm:
                name = comm.read().strip()
        except OSError:  # ended meanwhile, or a kernel thread
            continue
        if wanted <= variables:
            found[int(entry)] = name
    return found


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def main():
    module = AnsibleModule(argument_spec={
        "spillway_root": {"type": "str", "required": True},
        "run_id": {"type": "str", "required": True},
        "workload_id": {"type": "str", "required": True},
        "grace_s": {"type": "float", "default": 10},
    }, supports_check_mode=True)
    root, run_id, workload_id = (module.params[k] for k in ("spillway_root", "run_id", "workload_id"))
    # SPILLWAY_OUT tells a step's command from the run's collectors, which carry the other three too
    record = {"SPILLWAY_ROOT": root, "SPILLWAY_RUN_ID": run_id, "SPILLWAY_WORKLOAD_ID": workload_id,
              "SPILLWAY_OUT": f"{root.rstrip('/')}/runs/{run_id}/workload/{workload_id}"}
    left = owned_processes(record)
    if not left or module.check_mode:
        module.exit_json(changed=bool(left), stopped=[], killed=[], found=sorted(set(left.values())))
    signal_all(left, signal.SIGTERM)
    deadline = time.monotonic() + module.params["grace_s"]
    remaining = owned_processes(record)
    while remaining and time.monotonic() < deadline:
        # a script may start its next command as the current one ends: that one is the run's too
        signal_all(set(remaining) - set(left), signal.SIGTERM)
        left.update(remaining)
        time.sleep(0.2)
        remaining = owned_processes(record)
    signal_all(remaining, signal.SIGKILL)
    msg = (f"stopped {len(left)} process(es) of {module.params['workload_id']} left running: "
           f"{', '.join(sorted(set(left.values())))}"
           + (f"; killed after {module.params['grace_s']:g} s: {', '.join(sorted(set(remaining.values())))}"
              if remaining else ""))
    module.warn(msg)  # shown in the step's log without -v: what a stop left behind is worth reading
    module.exit_json(changed=True, stopped=sorted(set(left.values())), killed=sorted(set(remaining.values())),
                     msg=msg)


if __name__ == "__main__":
    main()
