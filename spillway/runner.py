"""The bench runner (execution): provision, then for every workload instance start the collectors, run its
prepare/run/validate steps, stop and fetch the collectors; then build the tables and the report.

Everything is validated before anything is touched. Each step prints a progress line with its
time and is recorded in the manifest; a failed workload is marked failed and the bench goes on
with the next one; Ctrl-C stops the collectors and leaves a readable, partial run directory.
"""
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from run_layout import LOGS, MANIFEST, RAW, REPORT
from spillway import REPO, clusterlock, inventory as inventory_mod, provisioning, versions as versions_mod
from spillway import workloads as workloads_mod
from spillway.ansible import first_message, known_causes, run_playbook, run_playbook_in_parts
from spillway.console import Tail, indent, say
from spillway.host_preflight import check_hosts
from spillway.monitoring import Monitoring, WorkloadMonitor
from spillway.notices import emulation_record
from spillway import plan as plan_mod
from spillway.plan import parse_cores, placements, steps_with_commands
from spillway.resume import Resuming
from spillway.run_record import RunDirectory, StepFailed, new_run_id, step_outcome, utc_now
from spillway.stopping import StopSignals, stop_signals_interrupt


@dataclass
class RecordedStep:
    """A step of the bench while it runs: its progress line, manifest entry, log echo and monotonic start."""
    line: str
    entry: dict
    tail: Tail
    started: float


def _part_of_play(play_name):
    """The part of a workload run a play of playbooks/workload-run.yml is (its play names), or None."""
    if play_name in ("Begin a workload run", "End a workload run"):
        return play_name.split()[0].lower()
    _, separator, step = play_name.partition("Workload step: ")
    return step if separator and step in workloads_mod.STEPS else None


class Bench(Resuming):
    """A bench: validated at construction (nothing touched), run by execute(); Resuming finishes a recorded run."""

    def __init__(self, cluster, workload_names, scale, repeat, params="", cores="", placement="",
                 backends="", warmup=None, drop_caches=False, monitoring=None, storage_probe=False, versions=""):
        # All validation first: nothing is touched before the inventory and workloads are known good.
        self._configure(inventory_mod.load(cluster), scale, repeat, warmup, drop_caches, monitoring)
        self.placements = placements(self.inventory, placement, backends)
        self.cores = parse_cores(cores)
        self.spark_versions = versions_mod.parse_versions(versions, self.inventory)
        self.storage_probe = storage_probe
        self._plan(workload_names, workloads_mod.parse_params(params))

    def _configure(self, inventory, scale, repeat, warmup, drop_caches, monitoring):
        self.inventory = inventory
        self.scale = scale
        if repeat < 1:
            raise workloads_mod.WorkloadError(f"REPEAT must be 1 or more, got {repeat}")
        self.repeat = repeat
        # Monotasks' method: one discarded warm-up run before measured repetitions (by default when there
        # are several, so the first one does not pay for cold caches and JIT alone).
        self.warmup = repeat > 1 if warmup is None else warmup
        self.drop_caches = drop_caches
        # MONITORING=0/1 beats the inventory for this bench (e.g. to measure the monitoring's own overhead);
        # every playbook and the bench's own Prometheus client see the same settings.
        self.monitoring_override = None
        if monitoring is not None:
            self.monitoring_override = {**(self.inventory.variables.get("spillway_monitoring") or {}),
                                        "enabled": bool(monitoring)}
            self.inventory.variables["spillway_monitoring"] = self.monitoring_override
        self.run = None
        self.stop_signals = StopSignals()  # replaced by execute()'s, which knows the signal that stopped it
        self.resumed = None  # the plan of the run being finished (bench --resume), else None
        self.step_no = 0
        self.placement = None  # the placement the cluster is provisioned with
        self.collectors_running = None
        self.monitoring = None  # known once the first provisioning has run

    def _plan(self, workload_names, from_command_line):
        """The workload instances, in run order, from the placements, cores, repetitions and overrides."""
        chosen = [workloads_mod.load(name) for name in workload_names]
        from_inventory = self.inventory.variables.get("spillway_workload_parameters") or {}
        workloads_mod.check_overrides(chosen, from_inventory, f"inventory '{self.inventory.name}' "
                                      "spillway_workload_parameters", other_workloads_ok=True)
        workloads_mod.check_overrides(chosen, from_command_line, "PARAMS")
        self.overrides = {"inventory": from_inventory, "command_line": {str(k): v for k, v in
                                                                         from_command_line.items()}}
        self.instances = plan_mod.workload_runs(chosen, self.scale, self.placements, self.cores, self.repeat,
                                                self.warmup, from_inventory, from_command_line, self.spark_versions)
        if self.storage_probe:
            self.instances = plan_mod.with_storage_probe(self.instances, self.inventory)
        versions_mod.refuse_unsupported(self.instances, self.inventory)
        self._count_steps(self.instances)

    def _count_steps(self, instances):
        self.total_steps = plan_mod.count_steps(instances)

    # -- helpers ---------------------------------------------------------------------------------
    def _spillway_root(self):
        """The cluster root on this machine, for an all-local cluster (one host)."""
        return Path(self.inventory.spillway_root(self.inventory.hosts[0]))

    def _play(self, playbook, log_name, **extra_vars):
        return run_playbook(self.inventory.name, playbook, self._playbook_vars(**extra_vars),
                            self.run.path / LOGS / f"{log_name}.log")

    def _playbook_vars(self, **extra_vars):
        """The extra vars of every playbook this bench runs: the run, the placement, the monitoring override."""
        extra = {"run_id": self.run.manifest["run_id"], "run_dir": str(self.run.path), **extra_vars}
        if self.placement:  # extra vars beat group_vars: every playbook sees the placement being measured
            extra["spillway_placement"] = self.placement
        extra.update(self._monitoring_vars())
        return extra

    def _monitoring_vars(self):
        """The MONITORING=0/1 override as extra vars, for every playbook this bench runs (none without one)."""
        return {} if self.monitoring_override is None else {"spillway_monitoring": self.monitoring_override}

    def _progress(self, label):
        self.step_no += 1
        return f"[{self.step_no:>2}/{self.total_steps}] {label}"

    def _timed_play(self, label, playbook, log_name, record=None, **extra_vars):
        """Run a playbook as a recorded step with a progress line; raise StepFailed on failure."""
        step = self._step_started(label, record, Tail(None, label))
        try:
            result = self._play(playbook, log_name, **extra_vars)
        except BaseException as err:
            self._step_ended(step, error=err)
            raise
        self._step_ended(step, result)
        return result

    def _step_started(self, label, record, tail):
        """A recorded step begins: its progress line, its manifest entry, and `tail` echoing its log."""
        line = self._progress(label)
        say(f"{line} ...")
        tail.start()
        return RecordedStep(line, self.run.begin_step(label, record=record), tail, time.monotonic())

    def _step_ended(self, step, result=None, error=None):
        """A step begun by _step_started ends: with its playbook's `result` (StepFailed, its causes and fixes said,
        when it failed), or ended early by `error`, recorded as RunDirectory.step() records it."""
        step.tail.stop()
        if error is not None:
            self.run.end_step(step.entry, *step_outcome(error))
            return
        try:
            self._record_play(step.entry, result, step.line, step.started)
        except StepFailed as err:
            self.run.end_step(step.entry, "failed", str(err))
            raise
        self.run.end_step(step.entry, "ok")
        say(f"{step.line}: ok ({step.entry['duration_s']:.1f} s"
            f"{', ' + str(result.changed) + ' changed' if result.changed else ''})")

    def _step_tail(self, label, workload_id, step, commands):
        """A workload step's log echoed from the first host running its first command (no echo for a begin)."""
        host = (self.inventory.groups[commands[0]["hosts"]] or [None])[0] if commands else None
        if not host:
            return Tail(None, label)
        step_log = (Path(self.inventory.spillway_root(host)) / "runs" / self.run.manifest["run_id"] / "workload"
                    / workload_id / f"{step}.log")
        return Tail(step_log, label, None if self.inventory.all_local else self.inventory.ssh_command(host))

    def _record_play(self, entry, result, line, started):
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

    # -- the bench -------------------------------------------------------------------------------
    def execute(self):
        with clusterlock.held(self.inventory.name, f"a bench on {self.inventory.name}", self.inventory), \
                stop_signals_interrupt() as self.stop_signals:
            if self.resumed:
                return self._run(self._reopen())
            self.run = self.create_run_directory()
            banner = (f"Spillway bench {self.run.manifest['run_id']}: cluster '{self.inventory.name}', scale "
                      f"{self.scale}, {len(self.instances)} workload run(s): {', '.join(i.id for i in self.instances)}")
            probe = self._storage_probe_text()
            return self._run(self.instances, banner + (f"\n  {probe}" if probe else ""))

    def _storage_probe_text(self):
        """What the default bench's storage probe adds to the plan and why (spillway/plan.py), or None."""
        added = [i for i in self.instances if i.storage_probe]
        if not added:
            return None
        where = "; ".join(f"{i.id} (hdfs={i.placement['hdfs']}, local={i.placement['local']})" for i in added)
        return (f"storage probe of the default bench: {where}: {plan_mod.STORAGE_PROBE[0]}'s backends compared by "
                "measurement, and this host's run-to-run noise from its two runs on one placement (docs/findings.md, "
                "\"What the default bench measures\")")

    def dry_run(self):
        """The plan, fully validated, printed; nothing is touched (no lock, no run directory, no host)."""
        to_run = self.resumed.to_run if self.resumed else self.instances
        inv = self.inventory
        say(f"dry run: nothing is touched. Cluster '{inv.name}' ({inv.path}): hosts {', '.join(inv.hosts)}")
        say("  backends: " + ", ".join(f"{name} ({spec['kind']}{', ' + spec['profile'] if 'profile' in spec else ''})"
                                          for name, spec in inv.backends.items()))
        if self.resumed:
            say(f"  resumes run {self.resumed.run.manifest['run_id']}: {len(to_run)} of {len(self.instances)} "
                "workload run(s) still to run")
        installed = versions_mod.installed(inv)
        examples = versions_mod.hadoop_release(installed["hadoop"])["examples"]
        say(f"  versions: Spark {', '.join(installed['spark'])} installed (default line {installed['spark'][0]}), "
            f"Hadoop {installed['hadoop']}"
            + (f" (its MapReduce examples, TeraSort's, are {examples}'s)" if examples != installed["hadoop"] else ""))
        say(f"  scale {self.scale}, repeat {self.repeat}, warm-up {'yes' if self.warmup else 'no'}, drop caches "
            f"{'yes' if self.drop_caches else 'no'}; {len(to_run)} workload run(s), {self.total_steps} steps:")
        probe = self._storage_probe_text()
        if probe:
            say(f"  {probe}")
        for instance in to_run:
            steps = ", ".join(steps_with_commands(instance.workload, instance.params))
            place = f"hdfs={instance.placement['hdfs']}, local={instance.placement['local']}"
            cores = f", {instance.executor_cores} executor core(s)" if instance.executor_cores else ""
            spark = (f", Spark {instance.spark_version}" if instance.spark_version else
                     "" if instance.runs_spark else ", no Spark")
            say(f"  - {instance.id}: {steps} ({place}{cores}{spark}{', warm-up' if instance.warmup else ''})")
            say(f"      parameters: {json.dumps(instance.params, sort_keys=True)}")
        return 0

    def create_run_directory(self):
        """results/<run-id>/ with the manifest's run-level facts and the plan (what a resume finishes)."""
        inv = self.inventory
        profiles = inventory_mod.storage_profiles()
        used = inv.emulated_profiles()
        return RunDirectory.create(
            new_run_id(inv.name),
            cluster=inv.name,
            inventory={"name": inv.name, "sha256": inv.digest, "files": inv.files, "groups": inv.groups},
            parameters={"workloads": sorted({i.workload.name for i in self.instances}), "scale": self.scale,
                        "repeat": self.repeat, "warmup": self.warmup, "drop_caches": self.drop_caches,
                        "placements": self.placements, "executor_cores": self.cores,
                        "spark_versions": self.spark_versions,
                        "storage_probe": self.storage_probe,
                        "monitoring": (self.inventory.variables.get("spillway_monitoring") or {}).get("enabled", True),
                        "overrides": self.overrides},
            plan=[i.id for i in self.instances],
            storage={"backends": inv.backends, "placement": inv.placement},
            emulation=emulation_record(inv, profiles, used),
            hosts={})

    def _run(self, instances, banner=None):
        status = "completed"
        try:
            if banner:
                say(banner)
            say(f"  run directory: {self.run.path}")
            self._preflight()
            for group in plan_mod.placement_groups(instances):
                self._provision(group[0].placement)
                for instance in group:
                    if not self._workload(instance):
                        status = "failed"
        except KeyboardInterrupt:
            status = "interrupted"
            self.run.manifest["stopped_by"] = self.stop_signals.name
            say(f"\ninterrupted ({self.stop_signals.name}): stopping collectors and keeping what was collected; "
                f"finish it with make bench RESUME={self.run.manifest['run_id']}")
            self._stop_collectors_quietly()
        except StepFailed as err:
            status = "failed"
            say(f"bench stopped: {err}")
        finally:
            # a resumed run is complete when every run of its plan is, the earlier sessions' included
            if status == "completed" and any(r["status"] != "ok" for r in self.run.manifest["workloads"]):
                status = "failed"
            self.run.finish(status)
        report = self._report()
        say(f"bench {status}: {len(instances)} workload run(s){' of ' + str(len(self.instances)) if self.resumed else ''}"
            f", manifest {self.run.path / MANIFEST}")
        if report:
            say(str(report))
        return 0 if status == "completed" else 1

    def _preflight(self):
        """Every host checked read-only (playbooks/preflight.yml) before anything is touched: one table."""
        say("preflight: ssh, privileges, java, storage paths, free space, ports, clock of every host ...")
        with self.run.step("preflight", log="logs/preflight.log", table="preflight.json"):
            ok, _ = check_hosts(self.inventory, run_dir=self.run.path, extra_vars=self._monitoring_vars() or None)
            if not ok:
                raise StepFailed(f"preflight failed: nothing was touched; the table above names each problem and "
                                 f"its fix ({self.run.path / 'preflight.json'})")

    def _provision(self, placement):
        """Provision (a no-op when nothing changed) for a placement, then record the hosts' facts."""
        self.placement = placement
        label, suffix = "", ""
        if len({tuple(sorted(i.placement.items())) for i in self.instances}) > 1:
            label = f" (hdfs={placement['hdfs']}, local={placement['local']})"
            suffix = f"-hdfs_{placement['hdfs']}-local_{placement['local']}"
            # a placement the bench comes back to (the storage probe's) keeps the logs of its first provisioning
            earlier = sum(s["name"].startswith(f"provision{label}") for s in self.run.manifest["steps"])
            if earlier:
                label, suffix = f"{label} again", f"{suffix}-{earlier + 1}"
        self._provision_unless_unchanged(f"provision{label}", f"provision{suffix}")
        self._timed_play(f"facts{label}", "facts.yml", f"facts{suffix}")
        self._load_facts()
        self._record_daemon_starts(f"provision{label}")
        if self.monitoring is None:
            self.monitoring = Monitoring.load(self.inventory, self._spillway_root(), self.run.path)
            say(f"  monitoring: {self.monitoring.describe()}")

    def _provision_unless_unchanged(self, label, log_name):
        """provision.yml, unless its check (provision-check.yml) finds every host last provisioned from the same
        inputs and the cluster serving as that provisioning left it (spillway/provisioning.py): such a provisioning
        would change nothing and costs most of a minute. When the check finds the same inputs but the placement and
        a serving cluster, the placement switch (playbooks/placement.yml) instead, and provision.yml only should it
        fail. One step either way; `unchanged` and `switch` say which it was."""
        extra = provisioning.bench_vars(self.inventory, self.placement, self._monitoring_vars())
        line = self._progress(label)
        say(f"{line} ...")
        tail = Tail(None, label)
        tail.start()
        started = time.monotonic()
        with self.run.step(label) as entry:
            try:
                if provisioning.can_skip(self.inventory):
                    check = self._play("provision-check.yml", f"{log_name}.check",
                                       provision_digest=extra["provision_digest"],
                                       provision_base_digest=extra["provision_base_digest"])
                    entry["check_log"] = str(check.log_path.relative_to(self.run.path))
                    entry["unchanged"] = check.ok
                    if check.ok:
                        entry["log"], entry["ansible_changed"] = entry["check_log"], 0
                        say(f"{line}: ok, unchanged since the cluster's last provisioning, not run again "
                            f"({time.monotonic() - started:.1f} s)")
                        return
                    # the check's message begins "provisioning needed: " and says why
                    say(f"   {first_message(check.failures) or 'provisioning needed: see ' + str(check.log_path)}")
                    if not provisioning.can_switch(self.inventory, check.failures):
                        say("   not a placement switch alone: provisioning in full")
                    elif self._switch_placement(entry, f"{line}: placement switch", log_name, extra):
                        return
                result = self._play("provision.yml", log_name, **extra)
            finally:
                tail.stop()
            self._record_play(entry, result, line, started)
        say(f"{line}: ok ({entry['duration_s']:.1f} s{', ' + str(result.changed) + ' changed' if result.changed else ''})")

    def _switch_placement(self, entry, line, log_name, extra):
        """playbooks/placement.yml: only what the placement changes (spillway/provisioning.py), recorded in the
        provisioning's step (`switch`, its log). True when it ended well; False, saying so, when the full provisioning
        has to run instead (the switch left no provisioning record)."""
        say(f"{line} ...")
        started = time.monotonic()
        result = self._play("placement.yml", f"{log_name}.switch", **extra)
        entry["switch"] = result.ok
        entry["switch_log"] = str(result.log_path.relative_to(self.run.path))
        took = time.monotonic() - started
        if not result.ok:
            say(f"{line}: FAILED after {took:.1f} s, provisioning in full instead (log: {entry['switch_log']})\n"
                f"{indent(first_message(result.failures) or 'see ' + str(result.log_path))}")
            return False
        self._record_play(entry, result, line, started)
        say(f"{line}: ok ({took:.1f} s{', ' + str(result.changed) + ' changed' if result.changed else ''})")
        return True

    def _load_facts(self):
        for host in self.inventory.hosts:
            raw = self.run.path / RAW / host
            facts = json.loads((raw / "facts.json").read_text()) if (raw / "facts.json").exists() else {}
            storage = raw / "storage.json"
            facts["storage"] = json.loads(storage.read_text()) if storage.exists() else None
            self.run.manifest["hosts"][host] = facts
        self.run.save()

    def _record_daemon_starts(self, label):
        """The provisioning step's `daemon_starts`: each supervised daemon it started and the CPU seconds that daemon
        had spent by the facts step just after it (facts.yml's daemon_cpu), most of it its start-up and the ready
        wait. A placement switch's JVM start-ups are most of its time on a small host (docs/performance.md)."""
        entry = next(s for s in reversed(self.run.manifest["steps"]) if s["name"] == label)
        since = datetime.fromisoformat(entry["started_at"]).timestamp() - 1.0  # the hosts' clocks, to a tick
        entry["daemon_starts"] = [
            {"host": host, "daemon": daemon, "cpu_s": read["cpu_s"]}
            for host, facts in self.run.manifest["hosts"].items()
            for daemon, read in sorted((facts.get("daemon_cpu") or {}).items())
            if read.get("started_epoch_s", 0) >= since]
        self.run.save()

    def _host_backends(self):
        """Each host's backends as its storage.json (fetched by facts.yml) says: the steps' SPILLWAY_BACKENDS, given
        rather than read on every host by every step."""
        return {host: (facts.get("storage") or {}).get("backends") or {}
                for host, facts in self.run.manifest["hosts"].items()}

    def _workload(self, instance):
        """Run one workload instance; return True when every step succeeded."""
        workload, wid, params = instance.workload, instance.id, instance.params
        attempts, position = self._set_earlier_attempt_aside(wid)
        versions = self._versions_of(instance)
        record = {"id": wid, "workload": workload.name, "repetition": instance.repetition,
                  "warmup": instance.warmup, "scale": self.scale, "parameters": params,
                  "placement": instance.placement, "executor_cores": instance.executor_cores,
                  "versions": versions,
                  "status": "running", "started_at": utc_now(), "ended_at": None, "steps": []}
        if attempts:
            record["attempts"] = attempts
            self.run.manifest["workloads"][position] = record
        else:
            self.run.manifest["workloads"].append(record)
        say(f"== {wid} ({workload.manifest['description']})" + (" [warm-up, not measured]" if instance.warmup else ""))
        status, ended = "failed", False
        self.collectors_running = wid  # stop is harmless for collectors that never started
        monitor = WorkloadMonitor(self.monitoring, self.run.manifest["run_id"], self.run.path, record)
        try:
            monitor.begin()  # start marker, exporter check: warnings only, never a failure
            ended = self._in_one_run(instance, record, versions, monitor)
            status = "ok"
        except StepFailed as failure:
            # A run whose output failed its check is kept and flagged, never counted as a result.
            if failure.part == "validate":
                status = "invalid"
                say(f"   {wid}: INVALID: validation failed; results kept and flagged in the manifest and report")
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            # Runs on Ctrl-C too: collectors are stopped and fetched before the interrupt goes on.
            record["status"] = status
            if not ended:
                monitor.end(status)  # end marker, then the Prometheus series of the window into raw/prometheus/
                self._collectors_stop_and_fetch(wid, record)
            record["ended_at"] = utc_now()
            self.run.save()
        return status == "ok"

    def _in_one_run(self, instance, record, versions, monitor):
        """A workload run's begin (health check, caches, collectors start), steps and, when they all went well, its
        end, in one Ansible run (playbooks/workload-run.yml): each part a recorded step with its progress line and
        log, as _timed_play records a playbook. True when the end ran in it; StepFailed, its `part` set, for the
        first part before the end that failed (no later step runs, and the caller ends the run on its own)."""
        workload, wid, params = instance.workload, instance.id, instance.params
        steps = steps_with_commands(workload, params)
        commands = {step: workload.commands(step, params) for step in steps}
        labels = {"begin": f"{wid}: health check, {'drop caches, ' if self.drop_caches else ''}start collectors",
                  **{step: f"{wid}: {step}" for step in steps}, "end": self._end_label(wid)}
        extra = self._playbook_vars(
            workload_id=wid, drop_caches=self.drop_caches, workload_name=workload.name, params=params,
            steps=steps, step_commands=commands, executor_cores=instance.executor_cores or "",
            spark_version=versions["spark"], pushgateway_url=self.monitoring.pushgateway_url or "",
            host_backends=self._host_backends())
        run = run_playbook_in_parts(self.inventory.name, "workload-run.yml", extra, ["begin", *steps, "end"],
                                    _part_of_play, lambda part: self.run.path / LOGS / f"{wid}.{part}.log")
        failure, step, ended = None, None, False
        try:
            for event in run:
                if event.result is None:
                    if event.part == "end":
                        # every step went well: the end marker and the window's series, while the end play begins
                        record["status"] = "ok"
                        monitor.end("ok")
                    label = labels[event.part]
                    step = self._step_started(label, record["steps"],
                                              self._step_tail(label, wid, event.part, commands.get(event.part)))
                    continue
                ending, step = step, None
                try:
                    self._step_ended(ending, event.result)
                except StepFailed as err:
                    if event.part != "end":
                        err.part, failure = event.part, err
                    else:
                        self._end_failed(wid, record, err)
                if event.part == "end":
                    self.collectors_running, ended = None, True
        except BaseException as err:
            if step is not None:
                self._step_ended(step, error=err)
            raise
        finally:
            run.close()  # when the runner itself was interrupted between two parts: Ansible is stopped too
        if failure:
            raise failure
        return ended

    def _versions_of(self, instance):
        """Every component's release a workload run ran on, for its manifest record: Spark, Scala and Hadoop as
        planned (spillway/versions.py), Java as the controller reported it (facts.yml)."""
        versions = versions_mod.of_run(self.inventory, instance.spark_version, instance.runs_spark)
        controller = (self.inventory.groups.get("controller") or self.inventory.hosts)[0]
        versions["java"] = ((self.run.manifest["hosts"].get(controller) or {}).get("versions") or {}).get("java")
        return versions

    @staticmethod
    def _end_label(wid):
        return f"{wid}: stop collectors, fetch outputs"

    def _collectors_stop_and_fetch(self, wid, record):
        """playbooks/workload-end.yml on its own, for every host: after a failed step, Ctrl-C or a failed host."""
        try:
            self._timed_play(self._end_label(wid), "workload-end.yml", f"{wid}.end", record=record["steps"],
                             workload_id=wid, workload_status=record["status"])
        except StepFailed as err:
            self._end_failed(wid, record, err)
        self.collectors_running = None

    def _end_failed(self, wid, record, err):
        """A failed end is a warning of the workload run, never its failure."""
        record.setdefault("warnings", []).append(str(err))
        # the stop play failed before fetching: fetch on its own, so nothing collected is lost
        self._play("collectors.yml", f"{wid}.fetch-after-failed-end", collectors_action="fetch", workload_id=wid)

    def _stop_collectors_quietly(self):
        if self.collectors_running:
            self._play("workload-end.yml", f"{self.collectors_running}.end-interrupted",
                       workload_id=self.collectors_running)

    def _report(self):
        line = self._progress("report")
        say(f"{line} ...")
        start, started_at = time.monotonic(), utc_now()
        # a resumed run's tables were built before some of its workload runs: parse raw/ again
        proc = subprocess.run([sys.executable, "-m", "analysis", "report", str(self.run.path),
                               *(["--rebuild-tables"] if self.resumed else [])], cwd=REPO,
                              capture_output=True, text=True)
        (self.run.path / LOGS / "report.log").write_text(proc.stdout + proc.stderr)
        took = time.monotonic() - start
        # Recorded after the fact, not with run.step(): the report reads the manifest and would
        # otherwise list its own step as still running.
        self.run.manifest["steps"].append({"name": "report", "status": "ok" if proc.returncode == 0 else "failed",
                                           "started_at": started_at, "ended_at": utc_now(),
                                           "duration_s": round(took, 3), "log": "logs/report.log"})
        self.run.save()
        if proc.returncode != 0:
            say(f"{line}: FAILED ({took:.1f} s)\n{indent(proc.stderr.strip()[-2000:])}")
            return None
        say(f"{line}: ok ({took:.1f} s)")
        return self.run.path / REPORT
