"""playbooks/workload-end.yml's first play: what is left of a workload run after a stopped bench is ended by the
harness's own record (the step environment), and nothing else is.

Real processes, real Ansible (ad hoc, the module from role common's library, local connection): a workload command
as workload-step.yml runs it (timeout(1) in a process group of its own, a shell loop that starts the next command
when one ends) and decoys that differ in one value each: another run, another workload, another cluster root,
a collector of the same run.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from spillway import PLAYBOOKS, REPO

# The module stops whatever on this machine carries the record: a run id of this process alone, so that a test on
# another xdist worker (or in another pytest session) neither stops these processes nor has its own stopped.
RUN_ID = f"20261124-000000-local-{os.getpid()}"
RECORD = {"SPILLWAY_ROOT": "/var/lib/spillway-test-stop", "SPILLWAY_RUN_ID": RUN_ID,
          "SPILLWAY_WORKLOAD_ID": "fio-sweep",
          "SPILLWAY_OUT": f"/var/lib/spillway-test-stop/runs/{RUN_ID}/workload/fio-sweep"}
# A step command: each sleep stands for one fio point; the loop starts the next one when a point ends.
LOOP = "while true; do sleep 300; done"


def start(record, ignore_term=False):
    trap = "trap '' TERM; " if ignore_term else ""
    return subprocess.Popen(["timeout", "--kill-after=30", "600", "bash", "-c", trap + LOOP],
                            env={**os.environ, **record}, start_new_session=True)


def stop_workload(record, grace_s=2):
    args = (f"spillway_root={record['SPILLWAY_ROOT']} run_id={record['SPILLWAY_RUN_ID']} "
            f"workload_id={record['SPILLWAY_WORKLOAD_ID']} grace_s={grace_s}")
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LIBRARY": str(PLAYBOOKS / "roles/common/library")}
    result = subprocess.run([str(Path(sys.executable).parent / "ansible"), "localhost", "-c", "local", "--one-line",
                           "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}",
                           "-m", "spillway_stop_workload", "-a", args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.split("=>", 1)[1])


def ended(proc, within_s=15):
    try:
        proc.wait(timeout=within_s)
        return True
    except subprocess.TimeoutExpired:
        return False


def test_the_runs_processes_end_and_the_decoys_do_not():
    target = start(RECORD)
    decoys = [start({**RECORD, "SPILLWAY_RUN_ID": "20261124-000001-local"}),
              start({**RECORD, "SPILLWAY_WORKLOAD_ID": "fio-sweep-r2"}),
              start({**RECORD, "SPILLWAY_ROOT": "/var/lib/spillway-other"}),
              # a collector of the same workload run: the collectors' stop finishes its files
              start({**RECORD, "SPILLWAY_OUT": f"/var/lib/spillway-test-stop/runs/{RUN_ID}/iostat/fio-sweep"})]
    try:
        time.sleep(0.5)
        result = stop_workload(RECORD)
        assert result["changed"] and {"timeout", "bash", "sleep"} <= set(result["stopped"]), result
        assert result["killed"] == [], result
        assert ended(target)
        assert all(d.poll() is None for d in decoys), "a process without the run's full record was signalled"
        again = stop_workload(RECORD)
        assert not again["changed"] and again["found"] == [], again
    finally:
        for proc in [target, *decoys]:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace():
    stubborn = start(RECORD, ignore_term=True)
    try:
        time.sleep(0.5)
        result = stop_workload(RECORD, grace_s=1)
        assert {"bash", "sleep"} <= set(result["killed"]), result
        assert "killed after 1 s" in result["msg"]
        # in its own session (start_new_session): not another test's loop, which may run meanwhile
        assert subprocess.run(["pgrep", "-s", str(stubborn.pid), "-f", LOOP], capture_output=True).returncode == 1
        assert ended(stubborn)
    finally:
        if stubborn.poll() is None:
            os.killpg(stubborn.pid, 9)
            stubborn.wait()
