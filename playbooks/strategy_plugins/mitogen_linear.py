"""Ansible's linear strategy run over Mitogen (ansible_mitogen, pinned in requirements.txt), named by ansible.cfg.

Mitogen keeps one Python interpreter per host for a whole playbook run and runs each module in it, where plain Ansible
starts a new interpreter, and over SSH a new session, for every task and host: a provisioning that changes nothing
took 35.0 s of wall and 35.8 s of CPU plain, 14.7 s and 14.5 s over Mitogen (docs/performance.md, stop 42). Ansible
finds strategy plugins by folder, and Mitogen's own folder is inside the venv, under a path that names the Python
version: this file is that plugin, found in the checkout.

Mitogen pins its processes to CPUs by default, and what its local interpreter starts inherits the pin: on this 2-core
machine every workload command ran on one core of two (`taskset -p` in a task: mask 2, against 3 without Mitogen) and
a TeraSort's commands took 15 % longer. Commands must have the machine the inventory describes: no pinning.

A task's command may also start with every signal blocked (its interpreter forks it from a thread that blocks them;
seen in some runs, not in others). The plays that use this strategy start no workload command; the daemons they start
get every signal back from the supervisor (roles/hadoop/files/spillway-daemon).
"""
import ansible_mitogen.affinity
from ansible_mitogen.plugins.strategy.mitogen_linear import StrategyModule  # noqa: F401 - Ansible loads it by name

ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()  # the base policy pins nothing
