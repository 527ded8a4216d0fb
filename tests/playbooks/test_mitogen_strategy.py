"""playbooks/strategy_plugins/mitogen_linear.py: a task's command under Mitogen's strategy may run on every CPU that
it would under Ansible's own. A real play on inventories/local (the local connection: Mitogen's interpreter on this
machine) reads its command's CPU list from /proc; nothing of a cluster is touched. (What the daemons such a play
starts get of signals is the supervisor's: tests/playbooks/test_daemon_supervisor.py.)"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spillway import REPO

PLAY = """
- name: What a task's command inherits
  hosts: localhost
  gather_facts: false
  strategy: {strategy}
  tasks:
    - name: Write this command's CPU list
      ansible.builtin.shell: grep -E '^Cpus_allowed_list:' /proc/$$/status > {out}
      changed_when: false
"""


def inherited(tmp_path, strategy):
    playbook = tmp_path / f"{strategy}.yml"
    out = tmp_path / f"{strategy}.status"
    playbook.write_text(PLAY.format(strategy=strategy, out=out))
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "inventories/local",
                           str(playbook)], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return dict(line.split(":\t", 1) for line in out.read_text().splitlines())


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a CPU pin shows only with two CPUs or more")
def test_a_command_keeps_every_cpu(tmp_path):
    mitogen = inherited(tmp_path, "mitogen_linear")
    plain = inherited(tmp_path, "ansible.builtin.linear")
    # Mitogen's default policy pinned the command to one CPU of this machine's two
    assert mitogen["Cpus_allowed_list"] == plain["Cpus_allowed_list"], (mitogen, plain)
