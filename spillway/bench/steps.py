"""The bench's recorded steps: every playbook it runs, with the bench's extra vars and a log under logs/, and every
step with its progress line ([n/total]), its manifest entry and its log echoed while it runs."""
import time
from dataclasses import dataclass
from pathlib import Path

from run_layout import LOGS
from spillway.ansible import first_message, known_causes, run_playbook
from spillway.console import Tail, indent, say
from spillway.run_record import StepFailed, step_outcome


@dataclass
class RecordedStep:
    """A step of the bench while it runs: its progress line, manifest entry, log echo and monotonic start."""
    line: str
    entry: dict
    tail: Tail
    started: float


def local_root(inventory):
    """The cluster root on this machine, for an all-local cluster (one host)."""
    return Path(inventory.spillway_root(inventory.hosts[0]))


def changed_note(result):
    """What a progress line adds for a playbook that changed something: ", <n> changed", else nothing."""
    return f", {result.changed} changed" if result.changed else ""


class Steps:
    """The steps of one bench's run directory `run` on `inventory`, `total` of them counted in its progress lines."""

    def __init__(self, inventory, run, total, monitoring_override):
        self.inventory = inventory
        self.run = run
        self.total = total
        self.done = 0
        self.placement = None  # the placement the cluster is provisioned with (set by the provisioning)
        # The MONITORING=0/1 override as extra vars, for every playbook this bench runs (none without one).
        self.monitoring_vars = {} if monitoring_override is None else {"spillway_monitoring": monitoring_override}

    def play(self, playbook, log_name, **extra_vars):
        return run_playbook(self.inventory.name, playbook, self.playbook_vars(**extra_vars),
                            self.run.path / LOGS / f"{log_name}.log")

    def playbook_vars(self, **extra_vars):
        """The extra vars of every playbook this bench runs: the run, the placement, the monitoring override."""
        extra = {"run_id": self.run.manifest["run_id"], "run_dir": str(self.run.path), **extra_vars}
        if self.placement:  # extra vars beat group_vars: every playbook sees the placement being measured
            extra["spillway_placement"] = self.placement
        extra.update(self.monitoring_vars)
        return extra

    def progress(self, label):
        self.done += 1
        return f"[{self.done:>2}/{self.total}] {label}"

    def timed_play(self, label, playbook, log_name, record=None, **extra_vars):
        """Run a playbook as a recorded step with a progress line; raise StepFailed on failure."""
        step = self.started(label, record, Tail(None, label))
        try:
            result = self.play(playbook, log_name, **extra_vars)
        except BaseException as err:
            self.ended(step, error=err)
            raise
        self.ended(step, result)
        return result

    def started(self, label, record, tail):
        """A recorded step begins: its progress line, its manifest entry, and `tail` echoing its log."""
        line = self.progress(label)
        say(f"{line} ...")
        tail.start()
        return RecordedStep(line, self.run.begin_step(label, record=record), tail, time.monotonic())

    def ended(self, step, result=None, error=None):
        """A step begun by started() ends: with its playbook's `result` (StepFailed, its causes and fixes said, when
        it failed), or ended early by `error`, recorded as RunDirectory.step() records it."""
        step.tail.stop()
        if error is not None:
            self.run.end_step(step.entry, *step_outcome(error))
            return
        try:
            self.record_play(step.entry, result, step.line, step.started)
        except StepFailed as err:
            self.run.end_step(step.entry, "failed", str(err))
            raise
        self.run.end_step(step.entry, "ok")
        say(f"{step.line}: ok ({step.entry['duration_s']:.1f} s{changed_note(result)})")

    def record_play(self, entry, result, line, started):
        """A step's playbook outcome into its manifest entry; StepFailed, with its causes and fixes, on failure."""
        entry["log"] = str(result.log_path.relative_to(self.run.path))
        entry["ansible_changed"] = result.changed
        if result.unreachable:  # their outputs of this step are missing; the other hosts' are kept
            entry["unreachable_hosts"] = result.unreachable
        if not result.ok:
            detail = "\n".join(result.failures) or f"see {result.log_path}"
            finish = f"then finish the run with make bench RESUME={self.run.manifest['run_id']}"
            hints = [f"{cause}: free space there, {finish}" for cause in known_causes(result.failures)]
            if result.unreachable:
                hints.append(f"unreachable over SSH: {', '.join(result.unreachable)} (their outputs of this step "
                             f"are missing): check the hosts' network and sshd, {finish}")
            say(f"{line}: FAILED after {time.monotonic() - started:.1f} s\n{indent(detail)}"
                + "".join(f"\n   {hint}" for hint in hints))
            raise StepFailed(f"{entry['name']} failed (log: {entry['log']}): {first_message(result.failures)}"
                             + "".join(f"; {hint}" for hint in hints))
