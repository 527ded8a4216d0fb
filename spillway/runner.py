"""The bench runner: provision, then for every workload instance start the collectors, run its
prepare/run/validate steps, stop and fetch the collectors; then build the tables and the report.

Everything is validated before anything is touched. Each step prints a progress line with its
time and is recorded in the manifest; a failed workload is marked failed and the bench goes on
with the next one; Ctrl-C stops the collectors and leaves a readable, partial run directory.
"""
import json
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from spillway import REPO, inventory as inventory_mod, workloads as workloads_mod
from spillway.ansible import first_message, run_playbook
from spillway.monitoring import Monitoring, WorkloadMonitor
from spillway.rundir import RunDirectory, StepFailed, new_run_id, utc_now

# The whole suite at the chosen scale: the device sweep first, then the four workloads of the papers.
DEFAULT_WORKLOADS = ("fio-sweep", "terasort", "tpch", "kmeans", "gatk4")
HEARTBEAT_S = 30
# Lines of a step log worth echoing while it runs: not the JVMs' log4j chatter, but job progress.
LOG4J_LINE = re.compile(r"^\d{2,4}[-/]\d\d[-/]\d\d \d\d:\d\d:\d\d")
JOB_PROGRESS = re.compile(r"map \d+% reduce \d+%|Job \S+ completed")


def say(message):
    print(message, flush=True)


class Tail(threading.Thread):
    """Echo new lines of a (local) step log, and a heartbeat while nothing is said."""

    def __init__(self, path, label):
        super().__init__(daemon=True)
        self.path, self.label = Path(path) if path else None, label
        self.stopped = threading.Event()

    def run(self):
        start = last = time.monotonic()
        offset = 0
        while not self.stopped.wait(1.0):
            if self.path and self.path.exists():
                with open(self.path, errors="replace") as f:
                    f.seek(offset)
                    chunk = f.read()
                    offset = f.tell()
                for line in chunk.splitlines():
                    # skip JVM log lines (but not job progress) and indented detail such as counter dumps
                    if line.strip() and not line[0].isspace() and (
                            not LOG4J_LINE.match(line) or JOB_PROGRESS.search(line)):
                        say(f"      {line.strip()[:160]}")
                        last = time.monotonic()
            if time.monotonic() - last >= HEARTBEAT_S:
                say(f"      ... {self.label}: still running, {time.monotonic() - start:.0f} s")
                last = time.monotonic()

    def stop(self):
        self.stopped.set()
        self.join()


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
        self.inventory = inventory_mod.load(cluster)
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
        self.placements = placements(self.inventory, placement, backends)
        self.cores = parse_cores(cores)
        chosen = [workloads_mod.load(name) for name in workload_names]
        from_inventory = self.inventory.variables.get("spillway_workload_parameters") or {}
        workloads_mod.check_overrides(chosen, from_inventory,
                                      f"inventory '{cluster}' spillway_workload_parameters", other_workloads_ok=True)
        from_command_line = workloads_mod.parse_params(params)
        workloads_mod.check_overrides(chosen, from_command_line, "PARAMS")
        self.overrides = {"inventory": from_inventory, "command_line": {str(k): v for k, v in
                                                                         from_command_line.items()}}
        self.instances = []
        for place in self.placements:
            for workload in chosen:
                overrides = workloads_mod.overrides_for(workload, from_inventory, from_command_line)
                for sweep_id, params in workload.instances(scale, overrides):
                    for cores_value in self.cores:
                        base = sweep_id
                        if len(self.placements) > 1:
                            base += f"-hdfs_{place['hdfs']}-local_{place['local']}"
                        if cores_value is not None:
                            base += f"-p{cores_value}"
                        for rep in range(0 if self.warmup else 1, repeat + 1):
                            wid = f"{base}-warmup" if rep == 0 else (base if repeat == 1 else f"{base}-r{rep}")
                            self.instances.append(Instance(workload, wid, params, place, cores_value, rep))
        self.run = None
        self.step_no = 0
        self.placement = None  # the placement the cluster is provisioned with
        # per placement: provision, facts; per workload run: begin, its steps, end; and the report
        self.total_steps = 2 * len(self.placements) + 1 + sum(
            2 + len(steps_with_commands(i.workload, i.params)) for i in self.instances)
        self.collectors_running = None
        self.monitoring = None  # known once the first provisioning has run

    # -- helpers ---------------------------------------------------------------------------------
    def _spillway_root(self):
        """Where step logs appear on a local host (role common's default unless the inventory moves it)."""
        return Path(self.inventory.variables.get("spillway_root", f"/var/lib/spillway/{self.inventory.name}"))

    def _play(self, playbook, log_name, **extra_vars):
        extra = {"run_id": self.run.manifest["run_id"], "run_dir": str(self.run.path), **extra_vars}
        if self.placement:  # extra vars beat group_vars: every playbook sees the placement being measured
            extra["spillway_placement"] = self.placement
        if self.monitoring_override is not None:
            extra["spillway_monitoring"] = self.monitoring_override
        return run_playbook(self.inventory.name, playbook, extra, self.run.path / "logs" / f"{log_name}.log")

    def _progress(self, label):
        self.step_no += 1
        return f"[{self.step_no:>2}/{self.total_steps}] {label}"

    def _timed_play(self, label, playbook, log_name, record=None, step_log=None, **extra_vars):
        """Run a playbook as a recorded step with a progress line; raise StepFailed on failure."""
        line = self._progress(label)
        say(f"{line} ...")
        tail = Tail(step_log if self.inventory.all_local else None, label)
        tail.start()
        started = time.monotonic()
        with self.run.step(label, record=record) as entry:
            try:
                result = self._play(playbook, log_name, **extra_vars)
            finally:
                tail.stop()
            entry["log"] = str(result.log_path.relative_to(self.run.path))
            entry["ansible_changed"] = result.changed
            if not result.ok:
                detail = "\n".join(result.failures) or f"see {result.log_path}"
                say(f"{line}: FAILED after {time.monotonic() - started:.1f} s\n{indent(detail)}")
                raise StepFailed(f"{label} failed (log: {entry['log']}): {first_message(result.failures)}")
        say(f"{line}: ok ({entry['duration_s']:.1f} s{', ' + str(result.changed) + ' changed' if result.changed else ''})")
        return result

    # -- the bench -------------------------------------------------------------------------------
    def execute(self):
        inv = self.inventory
        profiles = inventory_mod.storage_profiles()
        used = inv.emulated_profiles()
        self.run = RunDirectory.create(
            new_run_id(inv.name),
            cluster=inv.name,
            inventory={"name": inv.name, "sha256": inv.digest, "files": inv.files, "groups": inv.groups},
            parameters={"workloads": sorted({i.workload.name for i in self.instances}), "scale": self.scale,
                        "repeat": self.repeat, "warmup": self.warmup, "drop_caches": self.drop_caches,
                        "placements": self.placements, "executor_cores": self.cores,
                        "monitoring": (self.inventory.variables.get("spillway_monitoring") or {}).get("enabled", True),
                        "overrides": self.overrides},
            storage={"backends": inv.backends, "placement": inv.placement},
            emulation={"profiles": {p: profiles["profiles"][p] for p in used},
                       "limitations": profiles["limitations"] if used else []},
            hosts={})
        say(f"Spillway bench {self.run.manifest['run_id']}: cluster '{inv.name}', scale {self.scale}, "
            f"{len(self.instances)} workload run(s): {', '.join(i.id for i in self.instances)}")
        say(f"  run directory: {self.run.path}")
        status = "completed"
        try:
            for _, group in groupby(self.instances, key=lambda i: sorted(i.placement.items())):
                group = list(group)
                self._provision(group[0].placement)
                for instance in group:
                    if not self._workload(instance):
                        status = "failed"
        except KeyboardInterrupt:
            status = "interrupted"
            say("\ninterrupted: stopping collectors and keeping what was collected")
            self._stop_collectors_quietly()
        except StepFailed as err:
            status = "failed"
            say(f"bench stopped: {err}")
        finally:
            self.run.finish(status)
        report = self._report()
        say(f"bench {status}: {len(self.instances)} workload run(s), manifest {self.run.path / 'manifest.json'}")
        if report:
            say(str(report))
        return 0 if status == "completed" else 1

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
        record = {"id": wid, "workload": workload.name, "repetition": instance.repetition,
                  "warmup": instance.warmup, "scale": self.scale, "parameters": params,
                  "placement": instance.placement, "executor_cores": instance.executor_cores,
                  "status": "running", "started_at": utc_now(), "ended_at": None, "steps": []}
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
                out = self._spillway_root() / "runs" / self.run.manifest["run_id"] / "workload" / wid
                self._timed_play(f"{wid}: {step}", "workload-step.yml", f"{wid}.{step}",
                                 record=record["steps"], step_log=out / f"{step}.log",
                                 workload_name=workload.name, workload_id=wid, step=step,
                                 params=params, commands=workload.commands(step, params),
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
        proc = subprocess.run([sys.executable, "-m", "analysis", "report", str(self.run.path)], cwd=REPO,
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


def steps_with_commands(workload, params):
    """The workload's steps that have commands for these parameters, in order."""
    return [step for step in workloads_mod.STEPS if workload.commands(step, params)]


def indent(text):
    return "\n".join("    " + line for line in text.splitlines())
