"""Shared by every test folder: a real `python -m spillway bench` in the background (integration tests of the
local cluster, the emulated cluster's benches and faults)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spillway import REPO, inventory, setuprecord
from spillway.ansible import run_playbook
from spillway.bench import provisioning


@pytest.fixture(scope="session")
def require_setup():
    """require_setup(cluster) fails, naming the fix, when this machine lacks what `make setup CLUSTER=<cluster>`
    installs: the tests that provision an inventory call it before they touch anything (`make test` sets up each
    inventory of the Makefile's TEST_CLUSTERS first)."""
    def require(cluster):
        problems = setuprecord.problems(cluster)
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)
    return require


@pytest.fixture(scope="session")
def provision_as_a_bench():
    return _provision_as_a_bench


def _provision_as_a_bench(cluster, log_dir):
    """The cluster provisioned for its inventory's placement with the variables a bench passes, skipped as a bench
    skips it when provision-check.yml finds every host provisioned from the same inputs and serving. Returns the
    playbook's result, `skipped` set on it (its provisioning record stays, so the next bench skips it too)."""
    inv = inventory.load(cluster)
    extra = provisioning.bench_vars(inv, dict(inv.placement), {})
    check = run_playbook(cluster, "provision-check.yml", extra, Path(log_dir) / "provision-check.log")
    result = check if check.ok else run_playbook(cluster, "provision.yml", extra, Path(log_dir) / "provision.log")
    result.skipped = check.ok
    return result


# What an operator does after a daemon died: start what is not running (role hadoop, tasks start: a running daemon is
# left alone), then wait until the cluster serves (role hadoop, tasks ready).
START_WHAT_STOPPED = """
- name: Start the Hadoop daemons that are not running, then wait until the cluster serves
  hosts: all
  gather_facts: false
  roles:
    - common
  tasks:
    - name: Start
      ansible.builtin.include_role: {name: hadoop, tasks_from: start}
    - name: Wait until the cluster serves
      ansible.builtin.include_role: {name: hadoop, tasks_from: ready}
"""


@pytest.fixture(scope="session")
def start_what_stopped():
    """start_what_stopped(cluster, log_dir): the Hadoop daemons a fault killed started again, as an operator would,
    so that the cluster serves as it was provisioned and the next bench's check skips the provisioning (a full one
    costs the tests that follow minutes). Returns the playbook's result."""
    def start(cluster, log_dir):
        play = Path(log_dir) / "start-what-stopped.yml"
        play.write_text(START_WHAT_STOPPED)
        return run_playbook(cluster, play, {}, Path(log_dir) / "start-what-stopped.log")
    return start


class BenchProcess:
    """A `python -m spillway bench` running in the background, observed through its manifest."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, "-m", "spillway", "bench", *args], cwd=REPO,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.run_dir = None

    def manifest(self):
        if self.run_dir is None:
            for line in iter(self.proc.stdout.readline, ""):
                if "run directory:" in line:
                    self.run_dir = Path(line.split("run directory:")[1].strip())
                    break
        return json.loads((self.run_dir / "manifest.json").read_text())

    def wait_for_step(self, workload_id, step_name, timeout=900):
        """Block until the named step of the workload is running."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for run in self.manifest()["workloads"]:
                if run["id"] == workload_id and any(
                        s["name"].endswith(step_name) and s["status"] == "running" for s in run["steps"]):
                    return
            assert self.proc.poll() is None, "bench ended before the step started"
            time.sleep(1)
        raise TimeoutError(f"{workload_id} {step_name} did not start within {timeout} s")

    def interrupt(self):
        os.killpg(self.proc.pid, signal.SIGINT)

    def finish(self, timeout=900):
        output = self.proc.stdout.read()
        self.proc.wait(timeout=timeout)
        return self.proc.returncode, output


@pytest.fixture
def bench_process():
    started = []

    def start(*args):
        started.append(BenchProcess(*args))
        return started[-1]
    yield start
    for bench in started:
        if bench.proc.poll() is None:
            bench.proc.kill()
