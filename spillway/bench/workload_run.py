"""The workload runs of a bench, one at a time: each one's begin (health check, caches, collectors start), steps and
end in one Ansible run (playbooks/workload-run.yml), each part a recorded step; after a failed step, Ctrl-C or a
failed host, the end (collectors stopped and fetched) on its own. A failed workload run is marked failed (invalid
when its validation failed) and the bench goes on with the next one."""
from pathlib import Path

from run_layout import LOGS
from spillway import versions as versions_mod
from spillway import workloads as workloads_mod
from spillway.ansible import run_playbook_in_parts
from spillway.bench.plan import steps_with_commands
from spillway.console import Tail, say
from spillway.monitoring import WorkloadMonitor
from spillway.run_record import StepFailed, utc_now


def part_of_play(play_name):
    """The part of a workload run a play of playbooks/workload-run.yml is (its play names), or None."""
    if play_name in ("Begin a workload run", "End a workload run"):
        return play_name.split()[0].lower()
    _, separator, step = play_name.partition("Workload step: ")
    return step if separator and step in workloads_mod.STEPS else None


def end_label(wid):
    return f"{wid}: stop collectors, fetch outputs"


def versions_of(inventory, manifest, instance):
    """Every component's release a workload run ran on, for its manifest record: Spark, Scala and Hadoop as
    planned (spillway/versions.py), Java as the controller reported it (facts.yml, in the manifest's `hosts`)."""
    versions = versions_mod.of_run(inventory, instance.spark_version, instance.runs_spark)
    controller = (inventory.groups.get("controller") or inventory.hosts)[0]
    versions["java"] = ((manifest["hosts"].get(controller) or {}).get("versions") or {}).get("java")
    return versions


def host_backends(manifest):
    """Each host's backends as its storage.json (fetched by facts.yml) says: the steps' SPILLWAY_BACKENDS, given
    rather than read on every host by every step."""
    return {host: (facts.get("storage") or {}).get("backends") or {} for host, facts in manifest["hosts"].items()}


class WorkloadRuns:
    """The workload runs of `plan` as recorded steps (`steps`); each one's earlier attempt, if any, set aside by
    `attempts` (spillway/bench/resume.py EarlierAttempts) before it runs again."""

    def __init__(self, steps, plan, attempts):
        self.steps = steps
        self.run = steps.run
        self.inventory = plan.inventory
        self.scale = plan.scale
        self.drop_caches = plan.drop_caches
        self.attempts = attempts
        self.collectors_running = None  # the workload run whose collectors may run, for stop_collectors_quietly

    def run_one(self, instance, monitoring):
        """Run one workload instance; return True when every step succeeded."""
        record = self._record(instance)
        say(f"== {instance.id} ({instance.workload.manifest['description']})"
            + (" [warm-up, not measured]" if instance.warmup else ""))
        status, ended = "failed", False
        self.collectors_running = instance.id  # stop is harmless for collectors that never started
        monitor = WorkloadMonitor(monitoring, self.run.manifest["run_id"], self.run.path, record)
        try:
            monitor.begin()  # start marker, exporter check: warnings only, never a failure
            ended = self._in_one_run(instance, record, monitoring, monitor)
            status = "ok"
        except StepFailed as failure:
            # A run whose output failed its check is kept and flagged, never counted as a result.
            if failure.part == "validate":
                status = "invalid"
                say(f"   {instance.id}: INVALID: validation failed; results kept and flagged in the manifest and "
                    "report")
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            # Runs on Ctrl-C too: collectors are stopped and fetched before the interrupt goes on.
            record["status"] = status
            if not ended:
                monitor.end(status)  # end marker, then the Prometheus series of the window into raw/prometheus/
                self._end_alone(record)
            record["ended_at"] = utc_now()
            self.run.save()
        return status == "ok"

    def _record(self, instance):
        """The workload run's manifest record, in the place of its earlier attempt's (set aside) or appended."""
        attempts, position = self.attempts.set_aside(instance.id)
        record = {"id": instance.id, "workload": instance.workload.name, "repetition": instance.repetition,
                  "warmup": instance.warmup, "scale": self.scale, "parameters": instance.params,
                  "placement": instance.placement, "executor_cores": instance.executor_cores,
                  "versions": versions_of(self.inventory, self.run.manifest, instance),
                  "status": "running", "started_at": utc_now(), "ended_at": None, "steps": []}
        if attempts:
            record["attempts"] = attempts
            self.run.manifest["workloads"][position] = record
        else:
            self.run.manifest["workloads"].append(record)
        return record

    def _in_one_run(self, instance, record, monitoring, monitor):
        """A workload run's begin, steps and, when they all went well, its end, in one Ansible run: each part a
        recorded step with its progress line and log, as Steps.timed_play records a playbook. True when the end ran
        in it; StepFailed, its `part` set, for the first part before the end that failed (no later step runs, and
        the caller ends the run on its own)."""
        workload, wid, params = instance.workload, instance.id, instance.params
        steps = steps_with_commands(workload, params)
        commands = {step: workload.commands(step, params) for step in steps}
        extra = self.steps.playbook_vars(
            workload_id=wid, drop_caches=self.drop_caches, workload_name=workload.name, params=params,
            steps=steps, step_commands=commands, executor_cores=instance.executor_cores or "",
            spark_version=record["versions"]["spark"], pushgateway_url=monitoring.pushgateway_url or "",
            host_backends=host_backends(self.run.manifest))
        events = run_playbook_in_parts(self.inventory.name, "workload-run.yml", extra, ["begin", *steps, "end"],
                                       part_of_play, lambda part: self.run.path / LOGS / f"{wid}.{part}.log")
        parts = _PartsOfOneRun(self, record, commands, monitor)
        try:
            parts.follow(events)
        finally:
            events.close()  # when the runner itself was interrupted between two parts: Ansible is stopped too
        if parts.failure:
            raise parts.failure
        return parts.ended

    def _end_alone(self, record):
        """playbooks/workload-end.yml on its own, for every host: after a failed step, Ctrl-C or a failed host."""
        wid = record["id"]
        try:
            self.steps.timed_play(end_label(wid), "workload-end.yml", f"{wid}.end", record=record["steps"],
                                  workload_id=wid, workload_status=record["status"])
        except StepFailed as err:
            self.end_failed(record, err)
        self.collectors_running = None

    def end_failed(self, record, err):
        """A failed end is a warning of the workload run, never its failure."""
        record.setdefault("warnings", []).append(str(err))
        # the stop play failed before fetching: fetch on its own, so nothing collected is lost
        self.steps.play("collectors.yml", f"{record['id']}.fetch-after-failed-end", collectors_action="fetch",
                        workload_id=record["id"])

    def stop_collectors_quietly(self):
        """After Ctrl-C between two steps: the collectors of the workload run they belonged to stopped, unrecorded."""
        if self.collectors_running:
            self.steps.play("workload-end.yml", f"{self.collectors_running}.end-interrupted",
                            workload_id=self.collectors_running)


class _PartsOfOneRun:
    """The parts of one workload run's Ansible run as they begin and end, each a recorded step; the open one ended
    as interrupted when the run is."""

    def __init__(self, runs, record, commands, monitor):
        self.runs, self.steps, self.record, self.commands, self.monitor = runs, runs.steps, record, commands, monitor
        self.open_step = None
        self.failure = None  # the StepFailed of the first part before the end that failed
        self.ended = False  # the end ran in this run

    def follow(self, events):
        try:
            for event in events:
                if event.result is None:
                    self._begins(event.part)
                else:
                    self._ends(event.part, event.result)
        except BaseException as err:
            if self.open_step is not None:
                self.steps.ended(self.open_step, error=err)
            raise

    def _label(self, part):
        wid = self.record["id"]
        if part == "begin":
            return f"{wid}: health check, {'drop caches, ' if self.runs.drop_caches else ''}start collectors"
        return end_label(wid) if part == "end" else f"{wid}: {part}"

    def _begins(self, part):
        if part == "end":
            # every step went well: the end marker and the window's series, while the end play begins
            self.record["status"] = "ok"
            self.monitor.end("ok")
        label = self._label(part)
        self.open_step = self.steps.started(label, self.record["steps"], self._tail(label, part))

    def _ends(self, part, result):
        ending, self.open_step = self.open_step, None
        try:
            self.steps.ended(ending, result)
        except StepFailed as err:
            if part != "end":
                err.part, self.failure = part, err
            else:
                self.runs.end_failed(self.record, err)
        if part == "end":
            self.runs.collectors_running, self.ended = None, True

    def _tail(self, label, part):
        """A workload step's log echoed from the first host running its first command (no echo for a begin)."""
        commands = self.commands.get(part)
        inventory = self.runs.inventory
        host = (inventory.groups[commands[0]["hosts"]] or [None])[0] if commands else None
        if not host:
            return Tail(None, label)
        step_log = (Path(inventory.spillway_root(host)) / "runs" / self.runs.run.manifest["run_id"] / "workload"
                    / self.record["id"] / f"{part}.log")
        return Tail(step_log, label, None if inventory.all_local else inventory.ssh_command(host))
