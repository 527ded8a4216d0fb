"""The bench runner: provision, then for every workload instance start the collectors, run its
prepare/run/validate steps, stop and fetch the collectors; then build the tables and the report.

Everything is validated before anything is touched. Each step prints a progress line with its
time and is recorded in the manifest; a failed workload is marked failed and the bench goes on
with the next one; Ctrl-C stops the collectors and leaves a readable, partial run directory.
"""
import json
import queue
import re
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from spillway import REPO, clusterlock, inventory as inventory_mod, workloads as workloads_mod
from spillway.ansible import first_message, known_causes, run_playbook
from spillway.host_preflight import check_hosts
from spillway.monitoring import Monitoring, WorkloadMonitor
from spillway.rundir import (RunDirectory, RunNotResumable, StepFailed, git_state, move_outputs_aside, new_run_id,
                             utc_now)
from spillway.stopping import StopSignals, stop_signals_interrupt

# The whole suite at the chosen scale: the device sweep first, then the four workloads of the papers.
DEFAULT_WORKLOADS = ("fio-sweep", "terasort", "tpch", "kmeans", "gatk4")
HEARTBEAT_S = 30
# A workload run that ended so is not run again on resume: its validation ran (an invalid one stays flagged).
FINISHED = ("ok", "invalid")
# Lines of a step log worth echoing while it runs: not the JVMs' log4j chatter, but job progress.
LOG4J_LINE = re.compile(r"^\d{2,4}[-/]\d\d[-/]\d\d \d\d:\d\d:\d\d")
JOB_PROGRESS = re.compile(r"map \d+% reduce \d+%|Job \S+ completed")


def say(message):
    print(message, flush=True)


class Tail(threading.Thread):
    """Echo the new lines of a step log as the step writes them, and a heartbeat while nothing is said. The log is
    read where it is written: a file on this machine, or over SSH (`ssh_argv`) on the host running the step."""

    def __init__(self, path, label, ssh_argv=None):
        super().__init__(daemon=True)
        self.path, self.label, self.ssh_argv = Path(path) if path else None, label, ssh_argv
        self.stopped = threading.Event()
        self.remote = None

    def run(self):
        start = last = time.monotonic()
        new_lines = self._remote_lines() if self.ssh_argv and self.path else self._local_lines()
        while not self.stopped.wait(1.0):
            for line in new_lines():
                # skip JVM log lines (but not job progress) and indented detail such as counter dumps
                if line.strip() and not line[0].isspace() and (
                        not LOG4J_LINE.match(line) or JOB_PROGRESS.search(line)):
                    say(f"      {line.strip()[:160]}")
                    last = time.monotonic()
            if time.monotonic() - last >= HEARTBEAT_S:
                say(f"      ... {self.label}: still running, {time.monotonic() - start:.0f} s")
                last = time.monotonic()

    def _local_lines(self):
        offset = 0

        def read():
            nonlocal offset
            if not (self.path and self.path.exists()):
                return []
            with open(self.path, errors="replace") as f:
                f.seek(offset)
                chunk = f.read()
                offset = f.tell()
            return chunk.splitlines()
        return read

    def _remote_lines(self):
        # The remote tail ends when our end of the connection closes (its stdin reaches EOF): a remote `tail -F`
        # would otherwise outlive the step on the host, since without a terminal it gets no hangup.
        follow = f"tail -n +1 -F -- {shlex.quote(str(self.path))} 2>/dev/null & read -r _; kill $!"
        self.remote = subprocess.Popen([*self.ssh_argv, follow], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True, errors="replace")
        lines = queue.SimpleQueue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.remote.stdout], daemon=True).start()

        def read():
            found = []
            while not lines.empty():
                found.append(lines.get())
            return found
        return read

    def stop(self):
        self.stopped.set()
        self.join()
        if self.remote:
            try:
                self.remote.stdin.close()
                self.remote.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.remote.kill()
                self.remote.wait()


@dataclass
class Instance:
    """One workload run: a sweep point of a workload under one placement and core count, one repetition."""
    workload: workloads_mod.Workload
    id: str
    params: dict
    placement: dict
    executor_cores: int | None  # None: the cluster's spark-defaults
    repetition: int  # 0 = the discarded warm-up

    @property
    def warmup(self):
        return self.repetition == 0


def placements(inventory, placement, backends):
    """The placements a bench runs under: the inventory's, one given as `hdfs=a,local=b`, or `matrix`:
    HDFS on each of BACKENDS x local dirs on each (the hybrid placements of the I/O-aware model paper)."""
    names = workloads_mod.parse_list(backends, inventory.backends)
    unknown = [b for b in names if b not in inventory.backends]
    if unknown:
        raise workloads_mod.WorkloadError(
            f"BACKENDS: {', '.join(unknown)} not defined in inventory '{inventory.name}'; its backends: "
            f"{', '.join(inventory.backends)}")
    if not placement:
        return [dict(inventory.placement)]
    if placement == "matrix":
        return [{"hdfs": h, "local": loc} for h in names for loc in names]
    chosen = dict(item.split("=", 1) for item in placement.split(",") if "=" in item)
    if set(chosen) != {"hdfs", "local"} or any(b not in inventory.backends for b in chosen.values()):
        raise workloads_mod.WorkloadError(
            f"PLACEMENT: '{placement}' is not 'matrix' or 'hdfs=<backend>,local=<backend>' with backends of "
            f"inventory '{inventory.name}' ({', '.join(inventory.backends)})")
    return [chosen]


def parse_cores(text):
    """CORES='1,2' -> [1, 2]; empty -> [None] (the cluster's executor sizing)."""
    if not text:
        return [None]
    try:
        cores = [int(c) for c in workloads_mod.parse_list(text, ())]
    except ValueError:
        raise workloads_mod.WorkloadError(f"CORES: '{text}' is not a comma-separated list of integers") from None
    if any(c < 1 for c in cores):
        raise workloads_mod.WorkloadError(f"CORES: '{text}': every value must be 1 or more")
    return cores


class Bench:
    def __init__(self, cluster, workload_names, scale, repeat, params="", cores="", placement="",
                 backends="", warmup=None, drop_caches=False, monitoring=None):
        # All validation first: nothing is touched before the inventory and workloads are known good.
        self._configure(inventory_mod.load(cluster), scale, repeat, warmup, drop_caches, monitoring)
        self.placements = placements(self.inventory, placement, backends)
        self.cores = parse_cores(cores)
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
        self.instances = []
        for place in self.placements:
            for workload in chosen:
                overrides = workloads_mod.overrides_for(workload, from_inventory, from_command_line)
                for sweep_id, params in workload.instances(self.scale, overrides):
                    for cores_value in self.cores:
                        base = sweep_id
                        if len(self.placements) > 1:
                            base += f"-hdfs_{place['hdfs']}-local_{place['local']}"
                        if cores_value is not None:
                            base += f"-p{cores_value}"
                        for rep in range(0 if self.warmup else 1, self.repeat + 1):
                            wid = f"{base}-warmup" if rep == 0 else (base if self.repeat == 1 else f"{base}-r{rep}")
                            self.instances.append(Instance(workload, wid, params, place, cores_value, rep))
        self._count_steps(self.instances)

    def _count_steps(self, instances):
        # per placement: provision, facts; per workload run: begin, its steps, end; and the report
        self.total_steps = 2 * len({tuple(sorted(i.placement.items())) for i in instances}) + 1 + sum(
            2 + len(steps_with_commands(i.workload, i.params)) for i in instances)

    # -- helpers ---------------------------------------------------------------------------------
    def _spillway_root(self):
        """The cluster root on this machine, for an all-local cluster (one host)."""
        return Path(self.inventory.spillway_root(self.inventory.hosts[0]))

    def _play(self, playbook, log_name, **extra_vars):
        extra = {"run_id": self.run.manifest["run_id"], "run_dir": str(self.run.path), **extra_vars}
        if self.placement:  # extra vars beat group_vars: every playbook sees the placement being measured
            extra["spillway_placement"] = self.placement
        extra.update(self._monitoring_vars())
        return run_playbook(self.inventory.name, playbook, extra, self.run.path / "logs" / f"{log_name}.log")

    def _monitoring_vars(self):
        """The MONITORING=0/1 override as extra vars, for every playbook this bench runs (none without one)."""
        return {} if self.monitoring_override is None else {"spillway_monitoring": self.monitoring_override}

    def _progress(self, label):
        self.step_no += 1
        return f"[{self.step_no:>2}/{self.total_steps}] {label}"

    def _timed_play(self, label, playbook, log_name, record=None, step_host=None, **extra_vars):
        """Run a playbook as a recorded step with a progress line; raise StepFailed on failure. A workload step's
        log is echoed from `step_host`, the first host running its first command."""
        line = self._progress(label)
        say(f"{line} ...")
        tail = Tail(None, label)
        if step_host:
            step_log = (Path(self.inventory.spillway_root(step_host)) / "runs" / self.run.manifest["run_id"]
                        / "workload" / extra_vars["workload_id"] / f"{extra_vars['step']}.log")
            tail = Tail(step_log, label, None if self.inventory.all_local else self.inventory.ssh_command(step_host))
        tail.start()
        started = time.monotonic()
        with self.run.step(label, record=record) as entry:
            try:
                result = self._play(playbook, log_name, **extra_vars)
            finally:
                tail.stop()
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
                raise StepFailed(f"{label} failed (log: {entry['log']}): {first_message(result.failures)}"
                                 + "".join(f"; {hint}" for hint in hints))
        say(f"{line}: ok ({entry['duration_s']:.1f} s{', ' + str(result.changed) + ' changed' if result.changed else ''})")
        return result

    # -- the bench -------------------------------------------------------------------------------
    def execute(self):
        with clusterlock.held(self.inventory.name, f"a bench on {self.inventory.name}"), \
                stop_signals_interrupt() as self.stop_signals:
            if self.resumed:
                return self._run(self._reopen())
            self.run = self.create_run_directory()
            return self._run(self.instances, f"Spillway bench {self.run.manifest['run_id']}: cluster "
                             f"'{self.inventory.name}', scale {self.scale}, {len(self.instances)} workload run(s): "
                             f"{', '.join(i.id for i in self.instances)}")

    def dry_run(self):
        """The plan, fully validated, printed; nothing is touched (no lock, no run directory, no host)."""
        to_run = self.resumed.to_run if self.resumed else self.instances
        inv = self.inventory
        say(f"dry run: nothing is touched. Cluster '{inv.name}' ({inv.path}): hosts {', '.join(inv.hosts)}")
        say(f"  backends: " + ", ".join(f"{name} ({spec['kind']}{', ' + spec['profile'] if 'profile' in spec else ''})"
                                          for name, spec in inv.backends.items()))
        if self.resumed:
            say(f"  resumes run {self.resumed.run.manifest['run_id']}: {len(to_run)} of {len(self.instances)} "
                "workload run(s) still to run")
        say(f"  scale {self.scale}, repeat {self.repeat}, warm-up {'yes' if self.warmup else 'no'}, drop caches "
            f"{'yes' if self.drop_caches else 'no'}; {len(to_run)} workload run(s), {self.total_steps} steps:")
        for instance in to_run:
            steps = ", ".join(steps_with_commands(instance.workload, instance.params))
            place = f"hdfs={instance.placement['hdfs']}, local={instance.placement['local']}"
            cores = f", {instance.executor_cores} executor core(s)" if instance.executor_cores else ""
            say(f"  - {instance.id}: {steps} ({place}{cores}{', warm-up' if instance.warmup else ''})")
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
            for _, group in groupby(instances, key=lambda i: sorted(i.placement.items())):
                group = list(group)
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
            f", manifest {self.run.path / 'manifest.json'}")
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
        if len(self.placements) > 1:
            label = f" (hdfs={placement['hdfs']}, local={placement['local']})"
            suffix = f"-hdfs_{placement['hdfs']}-local_{placement['local']}"
        self._timed_play(f"provision{label}", "provision.yml", f"provision{suffix}", provision_health_check=False)
        self._timed_play(f"facts{label}", "facts.yml", f"facts{suffix}")
        self._load_facts()
        if self.monitoring is None:
            self.monitoring = Monitoring.load(self.inventory, self._spillway_root(), self.run.path)
            say(f"  monitoring: {self.monitoring.describe()}")

    def _load_facts(self):
        for host in self.inventory.hosts:
            raw = self.run.path / "raw" / host
            facts = json.loads((raw / "facts.json").read_text()) if (raw / "facts.json").exists() else {}
            storage = raw / "storage.json"
            facts["storage"] = json.loads(storage.read_text()) if storage.exists() else None
            self.run.manifest["hosts"][host] = facts
        self.run.save()

    def _workload(self, instance):
        """Run one workload instance; return True when every step succeeded."""
        workload, wid, params = instance.workload, instance.id, instance.params
        attempts, position = self._set_earlier_attempt_aside(wid)
        record = {"id": wid, "workload": workload.name, "repetition": instance.repetition,
                  "warmup": instance.warmup, "scale": self.scale, "parameters": params,
                  "placement": instance.placement, "executor_cores": instance.executor_cores,
                  "status": "running", "started_at": utc_now(), "ended_at": None, "steps": []}
        if attempts:
            record["attempts"] = attempts
            self.run.manifest["workloads"][position] = record
        else:
            self.run.manifest["workloads"].append(record)
        say(f"== {wid} ({workload.manifest['description']})" + (" [warm-up, not measured]" if instance.warmup else ""))
        status, step = "failed", "begin"
        self.collectors_running = wid  # stop is harmless for collectors that never started
        monitor = WorkloadMonitor(self.monitoring, self.run.manifest["run_id"], self.run.path, record)
        try:
            monitor.begin()  # start marker, exporter check: warnings only, never a failure
            self._timed_play(f"{wid}: health check, {'drop caches, ' if self.drop_caches else ''}start collectors",
                             "workload-begin.yml", f"{wid}.begin", record=record["steps"], workload_id=wid,
                             drop_caches=self.drop_caches)
            for step in steps_with_commands(workload, params):
                commands = workload.commands(step, params)
                self._timed_play(f"{wid}: {step}", "workload-step.yml", f"{wid}.{step}",
                                 record=record["steps"], step_host=(self.inventory.groups[commands[0]["hosts"]] or [None])[0],
                                 workload_name=workload.name, workload_id=wid, step=step,
                                 params=params, commands=commands,
                                 executor_cores=instance.executor_cores or "",
                                 pushgateway_url=self.monitoring.pushgateway_url or "")
            status = "ok"
        except StepFailed:
            # A run whose output failed its check is kept and flagged, never counted as a result.
            if step == "validate":
                status = "invalid"
                say(f"   {wid}: INVALID: validation failed; results kept and flagged in the manifest and report")
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            # Runs on Ctrl-C too: collectors are stopped and fetched before the interrupt goes on.
            record["status"] = status
            monitor.end(status)  # end marker, then the Prometheus series of the window into raw/prometheus/
            self._collectors_stop_and_fetch(wid, record)
            record["ended_at"] = utc_now()
            self.run.save()
        return status == "ok"

    # -- resume ----------------------------------------------------------------------------------
    @classmethod
    def resume(cls, ref, given=None):
        """The bench that finishes run `ref` (an id under results/, `latest` or a path) with the plan its manifest
        recorded. `given`: the options written on the command line (name -> value as the CLI parsed it); each
        must agree with the run's."""
        try:
            run = RunDirectory.open_for_resume(ref)
        except RunNotResumable as err:
            raise workloads_mod.WorkloadError(f"RESUME: {err}") from None
        manifest, recorded = run.manifest, recorded_parameters(run.manifest)
        inventory = inventory_mod.load(manifest["cluster"])
        refuse_other_plan(manifest, inventory, given or {})
        if inventory.digest != manifest["inventory"]["sha256"]:
            raise workloads_mod.WorkloadError(
                f"RESUME: inventory '{inventory.name}' changed since run {manifest['run_id']} began (sha256 "
                f"{manifest['inventory']['sha256'][:12]} then, {inventory.digest[:12]} now): its remaining "
                "workload runs would not measure the same cluster")
        monitoring = recorded.get("monitoring")
        if monitoring == (inventory.variables.get("spillway_monitoring") or {}).get("enabled", True):
            monitoring = None  # as the inventory has it: no override
        bench = cls.__new__(cls)
        bench._configure(inventory, recorded["scale"], recorded["repeat"], recorded["warmup"],
                         recorded["drop_caches"], monitoring)
        bench.placements, bench.cores = recorded["placements"], recorded["executor_cores"]
        bench._plan(recorded["workloads"], recorded_command_line(recorded))
        bench.resumed = ResumePlan.of(run, bench.instances)
        bench._count_steps(bench.resumed.to_run)
        return bench

    def _reopen(self):
        """The run directory of the resumed run, marked running again; the workload runs still to do."""
        self.run = self.resumed.run
        manifest = self.run.manifest
        to_run = self.resumed.to_run
        manifest.setdefault("resumed", []).append({"at": utc_now(), "from_status": manifest["status"],
                                                   "git": git_state(), "workload_runs": [i.id for i in to_run]})
        manifest["status"], manifest["ended_at"] = "running", None
        self.run.save()
        self.run.mark_running()
        done = [i.id for i in self.instances if i.id not in {r.id for r in to_run}]
        say(f"Spillway bench {manifest['run_id']} resumed: cluster '{self.inventory.name}', scale {self.scale}, "
            f"{len(to_run)} of {len(self.instances)} workload run(s) to run: {', '.join(i.id for i in to_run) or 'none'}"
            + (f"; finished before: {', '.join(done)}" if done else ""))
        return to_run

    def _set_earlier_attempt_aside(self, wid):
        """When `wid` ran before (an interrupted or failed attempt), move its outputs aside on the hosts and in the
        run directory, and return its `attempts` (the earlier ones and this) and its record's position."""
        records = self.run.manifest["workloads"]
        position = next((n for n, r in enumerate(records) if r["id"] == wid), None)
        if position is None:
            return [], None
        earlier = records[position]
        if earlier["status"] == "running":
            # the bench was killed hard: its collectors may still run; stop them and fetch what they have
            self._play("workload-end.yml", f"{wid}.end-interrupted", workload_id=wid)
        attempt = len(earlier.get("attempts", [])) + 1
        summary = self.run.set_attempt_aside(earlier, attempt)
        self._set_aside_on_hosts(wid, attempt)
        say(f"   {wid}: attempt {attempt} ({earlier['status']}) set aside in {summary['outputs']}/")
        return earlier.get("attempts", []) + [summary], position

    def _set_aside_on_hosts(self, wid, attempt):
        """Each host's runs/<run-id>/<source>/<wid>/ to runs/<run-id>/.attempts/<wid>.attempt-<n>/<source>/: a
        dot folder, which the fetch skips, so the next fetches do not bring the old files back into raw/."""
        run_id = self.run.manifest["run_id"]
        dest = f".attempts/{wid}.attempt-{attempt}"
        if self.inventory.all_local:
            runs = self._spillway_root() / "runs" / run_id
            move_outputs_aside(runs, wid, runs / dest)
            return
        # Remote hosts: playbooks/set-aside.yml does the same on each; its log says what was moved where.
        result = self._play("set-aside.yml", f"{wid}.set-aside", workload_id=wid, attempt=attempt)
        if not result.ok:
            raise StepFailed(f"{wid}: could not move the earlier attempt's outputs aside on the hosts "
                             f"(log: {result.log_path.relative_to(self.run.path)})")

    def _collectors_stop_and_fetch(self, wid, record):
        try:
            self._timed_play(f"{wid}: stop collectors, fetch outputs", "workload-end.yml", f"{wid}.end",
                             record=record["steps"], workload_id=wid)
        except StepFailed as err:
            record.setdefault("warnings", []).append(str(err))
            # the stop play failed before fetching: fetch on its own, so nothing collected is lost
            self._play("collectors.yml", f"{wid}.fetch-after-failed-end", collectors_action="fetch", workload_id=wid)
        self.collectors_running = None

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
        (self.run.path / "logs" / "report.log").write_text(proc.stdout + proc.stderr)
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
        return self.run.path / "report.html"


@dataclass
class ResumePlan:
    """What a resumed bench does: the workload runs of its plan not finished yet, in the recorded order."""
    run: RunDirectory
    to_run: list

    @classmethod
    def of(cls, run, instances):
        """Refuses when the plan rebuilt from the manifest is not the one that ran (workload definitions changed)."""
        records = {r["id"]: r for r in run.manifest["workloads"]}
        planned = {i.id: i for i in instances}
        problems = [f"'{wid}' ran but is no longer planned" for wid in records if wid not in planned]
        problems += [f"'{i.id}' ran with other parameters ({changed_values(records[i.id]['parameters'], i.params)})"
                     for i in instances if i.id in records and
                     records[i.id].get("parameters") != json.loads(json.dumps(i.params, default=str))]
        if problems:
            raise workloads_mod.WorkloadError(
                f"RESUME: run {run.manifest['run_id']} cannot be finished with the same plan: {'; '.join(problems)}. "
                "The workload definitions (workloads/*/workload.yml) changed since it began; start a new bench")
        order = {wid: n for n, wid in enumerate(run.manifest.get("plan") or [])}
        ordered = sorted(instances, key=lambda i: order.get(i.id, len(order)))  # stable: old runs keep the plan's order
        return cls(run, [i for i in ordered if records.get(i.id, {}).get("status") not in FINISHED])


def emulation_record(inventory, profiles, used):
    """What of the run was emulated: the disk profiles used and, for a cluster of emulated hosts, the nodes."""
    record = {"profiles": {p: profiles["profiles"][p] for p in used},
              "limitations": list(profiles["limitations"]) if used else []}
    hosts = inventory.emulation
    if hosts:
        # analysis reads the niceness: the cluster's own processes then count as niced CPU time
        record["nodes"] = {"hosts": inventory.hosts, "nice": int(hosts.get("nice", 0)),
                           "link_rate": str(hosts.get("link_rate", "1gbit")), "link_rates": hosts.get("link_rates") or {}}
        record["limitations"].append(
            f"The {len(inventory.hosts)} hosts are network namespaces on one machine (docs/emulated-cluster.md): they "
            "share its CPUs, memory, page cache and disk; only their links (tc tbf, no latency or loss) and their "
            f"disks' throttles are separate. Every process of the nodes ran at niceness {hosts.get('nice', 0)}.")
        for name, backend in sorted(inventory.backends.items()):
            if backend["kind"] == "pfs" and "glusterfs" in backend:
                servers = ", ".join(inventory.groups.get("pfs_servers", []))
                record["limitations"].append(
                    f"Backend {name} is a GlusterFS volume the harness built over {servers}, emulated hosts whose "
                    "bricks are emulated disks of their own (glusterfs.brick profile, docs/pfs.md): a parallel file "
                    "system's data path (FUSE client, network, striping over servers), not its hardware. Its "
                    "workers have no block device for it: their iostat and block traces are absent; the servers' "
                    "brick disks are traced, and gluster-profile records each brick's file operations.")
    return record


def changed_values(recorded, now):
    return ", ".join(f"{k}: {recorded.get(k)!r} then, {now.get(k)!r} now"
                     for k in sorted(set(recorded) | set(now)) if recorded.get(k) != now.get(k))


def recorded_parameters(manifest):
    """The manifest's `parameters`, with what runs recorded before an option existed filled in as it was then."""
    return {"warmup": False, "drop_caches": False, "executor_cores": [None],
            "placements": [(manifest.get("storage") or {}).get("placement")], **manifest["parameters"]}


def recorded_command_line(parameters):
    """PARAMS as the manifest keeps them (parse_params' form; the key of `name=value` for every workload is
    stored as "None", JSON keys being strings)."""
    return {None if key == "None" else key: values
            for key, values in (parameters.get("overrides") or {}).get("command_line", {}).items()}


# Options of `bench` a resume takes from the manifest: option -> the make variable users write.
PLAN_OPTIONS = {"cluster": "CLUSTER", "workloads": "WORKLOADS", "scale": "SCALE", "repeat": "REPEAT",
                "warmup": "WARMUP", "drop_caches": "DROP_CACHES", "monitoring": "MONITORING", "params": "PARAMS",
                "cores": "CORES", "placement": "PLACEMENT", "backends": "BACKENDS"}


def refuse_other_plan(manifest, inventory, given):
    """Raise naming every option of `given` (as the CLI parsed them) that asks for another plan than the run's."""
    recorded = recorded_parameters(manifest)
    switch = {"0": False, "1": True}
    asked = {  # option -> (what the command line asks for, what the run recorded), both in the manifest's form
        "cluster": lambda v: (v, manifest["cluster"]),
        "workloads": lambda v: (sorted(set(workloads_mod.parse_list(v, DEFAULT_WORKLOADS))), sorted(recorded["workloads"])),
        "scale": lambda v: (v, recorded["scale"]),
        "repeat": lambda v: (int(v), recorded["repeat"]),
        "warmup": lambda v: (switch.get(v, v), recorded["warmup"]),
        "drop_caches": lambda v: (switch.get(v, v), recorded["drop_caches"]),
        "monitoring": lambda v: (switch.get(v, v), recorded.get("monitoring")),
        "params": lambda v: (workloads_mod.parse_params(v), recorded_command_line(recorded)),
        "cores": lambda v: (parse_cores(v), recorded["executor_cores"]),
        "placement": lambda v: (placements(inventory, v, given.get("backends", "")), recorded["placements"]),
        "backends": lambda v: (sorted(workloads_mod.parse_list(v, ())),
                               sorted({b for place in recorded["placements"] for b in place.values()})),
    }
    conflicts = []
    for option, value in given.items():
        if option not in asked or value in ("", None):  # an empty make variable asks for nothing
            continue
        wanted, ran = asked[option](value)
        if wanted != ran:
            conflicts.append(f"{PLAN_OPTIONS[option]} (--{option.replace('_', '-')}) '{value}', but the run has {ran}")
    if conflicts:
        raise workloads_mod.WorkloadError(
            f"RESUME: run {manifest['run_id']} was planned otherwise: {'; '.join(conflicts)}. A resume takes the plan "
            "from the run's manifest: leave these options out")


def steps_with_commands(workload, params):
    """The workload's steps that have commands for these parameters, in order."""
    return [step for step in workloads_mod.STEPS if workload.commands(step, params)]


def indent(text):
    return "\n".join("    " + line for line in text.splitlines())
