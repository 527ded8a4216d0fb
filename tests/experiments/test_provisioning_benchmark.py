"""The provisioning benchmark's figures per role, from a real recorded provisioning of the emulated cluster over SSH
(tests/fixtures/ansible/provision-emu.log: `make bench CLUSTER=emu`'s first provision, from scratch)."""
import pytest

from analysis.parsers.step_logs import TIMING
from spillway import REPO
from experiments.benchmarks.provisioning import seconds_per_role

LOG = (REPO / "tests/fixtures/ansible/provision-emu.log").read_text()


def test_every_timing_line_counts_once_under_its_role():
    per_role = seconds_per_role(LOG)
    lines = [float(m["seconds"]) for m in map(TIMING.match, LOG.splitlines()) if m]
    assert len(lines) > 100
    assert sum(per_role.values()) == pytest.approx(sum(lines))
    assert {"common", "storage", "emulated_storage", "hadoop", "spark", "monitoring"} <= set(per_role)
    # tasks written in the playbook itself, not in a role
    assert per_role["(playbook)"] > 0
    assert all(seconds >= 0 for seconds in per_role.values())


def test_a_role_name_is_what_precedes_the_separator_only():
    line = "timing:    1.50 s  hadoop : Start the daemons : all of them"
    assert seconds_per_role(line) == {"hadoop": 1.5}
    assert seconds_per_role("timing:    0.25 s  Write a file: facts.json") == {"(playbook)": 0.25}
    assert seconds_per_role("TASK [hadoop : Start]\nok: [worker1]") == {}
