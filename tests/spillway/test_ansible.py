"""Reading Ansible's output: the failed task's message, on a real recorded ansible-core 2.19 run
(tests/fixtures/ansible/failed-run.log: one ignored failure, then a failed task with a wrapped msg)."""
from spillway import REPO
from spillway.ansible import RECAP, _failures, first_message

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
