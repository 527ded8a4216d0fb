"""Reading Ansible's output: the failed task's message, on a real recorded ansible-core 2.19 run
(tests/fixtures/ansible/failed-run.log: one ignored failure, then a failed task with a wrapped msg), and a real
workload step on the emulated cluster whose worker3 lost its link mid-step (unreachable-run.log), and one
whose worker1 had a full disk (enospc-run.log)."""
from spillway import REPO
from spillway.ansible import RECAP, _failures, first_message, known_causes, summarise

LOG = (REPO / "tests/fixtures/ansible/failed-run.log").read_text().splitlines()


def test_only_the_unignored_failure_is_reported():
    failures = _failures(LOG)
    assert len(failures) == 1
    assert "Fail when a Hadoop daemon is down" in failures[0]


def test_failed_task_message_is_joined_across_wrapped_lines():
    message = first_message(_failures(LOG))
    assert message.startswith("'Not running on localhost: namenode.")
    assert message.endswith("again (it starts what is down).'")


def test_recap_line_gives_the_change_count():
    (match,) = [m for m in map(RECAP.match, LOG) if m]
    assert (match["host"], match["changed"], match["failed"]) == ("localhost", "1", "1")


def test_a_host_lost_mid_play_is_named_unreachable_and_the_others_count():
    lines = (REPO / "tests/fixtures/ansible/unreachable-run.log").read_text().splitlines()
    result = summarise(lines, 4, "unreachable-run.log")
    assert not result.ok and result.unreachable == ["worker3"]
    assert result.changed == 4 + 5 + 5 + 1
    assert "worker3" in result.failures[0] and "UNREACHABLE" in result.failures[0]
    assert known_causes(result.failures) == []


def test_a_full_disk_is_named_with_its_host():
    # a real step on emu: worker1's SSD filled before the fio sweep; worker2 and worker3 measured theirs
    lines = (REPO / "tests/fixtures/ansible/enospc-run.log").read_text().splitlines()
    result = summarise(lines, 2, "enospc-run.log")
    assert not result.ok and result.unreachable == []
    assert known_causes(result.failures) == ["a disk is full (No space left on device) on worker1"]
    assert known_causes(_failures(LOG)) == []
