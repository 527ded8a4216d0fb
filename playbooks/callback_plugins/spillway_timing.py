"""Ansible callback that writes how long each task took, so slow steps of a bench can be explained.

Enabled in ansible.cfg; prints one line per task after it ends: `timing: <seconds> s  <task name>`.
"""
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: spillway_timing
type: aggregate
short_description: per-task wall time
description: Prints the wall time of every task when the next one starts and at the end of the play.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "spillway_timing"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._task = None
        self._started = None

    def _close(self):
        if self._task is not None:
            self._display.display(f"timing: {time.monotonic() - self._started:7.2f} s  {self._task}")
        self._task = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        self._task = task.get_name()
        self._started = time.monotonic()

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_playbook_on_stats(self, stats):
        self._close()
