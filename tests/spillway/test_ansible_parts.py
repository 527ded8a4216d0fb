"""One ansible-playbook run in parts (spillway.ansible.run_playbook_in_parts, the bench's workload runs): real
Ansible on this machine over a local connection, a playbook of three parts (tests/fixtures/ansible/parts.yml), two
inventory hosts that are both this machine."""
import json

import pytest

from spillway import REPO
from spillway.ansible import TIMING, run_playbook_in_parts

PARTS = ["first", "second", "third"]
PLAYBOOK = REPO / "tests/fixtures/ansible/parts.yml"


@pytest.fixture
def inventory(tmp_path):
    path = tmp_path / "hosts.yml"
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    path.write_text(json.dumps({"all": {"hosts": {"one": local, "two": local}}}))
    return path


def run(inventory, tmp_path, **extra):
    events = list(run_playbook_in_parts(str(inventory), str(PLAYBOOK), extra, PARTS, lambda play: play.removeprefix(
        "Part: "), lambda part: tmp_path / f"{part}.log"))
    return [(e.part, None if e.result is None else e.result.ok) for e in events], \
        {e.part: e.result for e in events if e.result is not None}


def task_names(log):
    return [line[len("TASK ["):line.index("]")] for line in log.read_text().splitlines() if line.startswith("TASK [")]


def timed(log):
    return [TIMING.sub("", line) for line in log.read_text().splitlines() if TIMING.match(line)]


def test_each_part_starts_and_ends_in_order_with_its_own_log_tasks_and_timing_lines(inventory, tmp_path):
    events, results = run(inventory, tmp_path)
    assert events == [("first", None), ("first", True), ("second", None), ("second", True), ("third", None),
                      ("third", True)]
    assert (tmp_path / "first.log").read_text().startswith("$ ")  # the command line, its vars file beside it
    assert json.loads((tmp_path / "first.vars.json").read_text()) == {}
    expected = {"first": ["First part's task"],
                "second": ["End the part when a host failed earlier in this run", "Second part's task",
                           "Second part's last task"],
                "third": ["End the part when a host failed earlier in this run", "Third part's task"]}
    for part in PARTS:
        log = tmp_path / f"{part}.log"
        assert log.read_text().count("PLAY [") == 1 and f"PLAY [Part: {part}]" in log.read_text()
        assert task_names(log) == expected[part]
        # every task timed in the log of the part it ran in, though its timing line came out after the next header
        assert timed(log) == expected[part], part
    assert (results["first"].changed, results["second"].changed, results["third"].changed) == (2, 2, 0)
    assert "PLAY RECAP" in (tmp_path / "third.log").read_text()


def test_a_part_that_fails_on_one_host_ends_the_parts_and_holds_the_rest_of_the_run(inventory, tmp_path):
    events, results = run(inventory, tmp_path, fail_in="second", fail_on=["two"])
    assert events == [("first", None), ("first", True), ("second", None), ("second", False)]
    second = (tmp_path / "second.log").read_text()
    # the other host finished the part; the third part's play ended itself and is in the failed part's log
    assert "Second part's last task" in second and "changed: [one]" in second.split("Second part's last task")[1]
    assert "PLAY [Part: third]" in second and "Third part's task" not in second
    assert not (tmp_path / "third.log").exists()
    assert results["second"].returncode == 2 and "fatal: [two]" in results["second"].failures[0]


def test_a_part_that_fails_on_every_host_ends_the_run_there(inventory, tmp_path):
    events, results = run(inventory, tmp_path, fail_in="first", fail_on=["one", "two"])
    assert events == [("first", None), ("first", False)]
    assert len(results["first"].failures) == 2 and not (tmp_path / "second.log").exists()
