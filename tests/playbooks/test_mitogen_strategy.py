"""playbooks/strategy_plugins/mitogen_linear.py: a task's command under Mitogen's strategy may run on every CPU that
it would under Ansible's own. A real play on inventories/local (the local connection: Mitogen's interpreter on this
machine) reads its command's CPU list from /proc; nothing of a cluster is touched. (What the daemons such a play
starts get of signals is the supervisor's: tests/playbooks/test_daemon_supervisor.py.)"""
import os

import pytest

from spillway.ansible import run_playbook

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
    done = run_playbook("local", playbook, {}, tmp_path / f"{strategy}.log")
    assert done.ok, done.log_path.read_text()[-3000:]
    return dict(line.split(":\t", 1) for line in out.read_text().splitlines())


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a CPU pin shows only with two CPUs or more")
def test_a_command_keeps_every_cpu(tmp_path):
    mitogen = inherited(tmp_path, "mitogen_linear")
    plain = inherited(tmp_path, "ansible.builtin.linear")
    # Mitogen's default policy pinned the command to one CPU of this machine's two
    assert mitogen["Cpus_allowed_list"] == plain["Cpus_allowed_list"], (mitogen, plain)
