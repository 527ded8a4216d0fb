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
from pathlib import Path

from spillway import REPO, inventory as inventory_mod, workloads as workloads_mod
from spillway.ansible import first_message, run_playbook
from spillway.rundir import RunDirectory, StepFailed, new_run_id, utc_now

DEFAULT_WORKLOADS = ("fio-sweep", "terasort")
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


class Bench:
    def __init__(self, cluster, workload_names, scale, repeat, overrides=None):
        # All validation first: nothing is touched before the inventory and workloads are known good.
        self.inventory = inventory_mod.load(cluster)
        self.scale = scale
        self.repeat = repeat
        self.instances = []
        for name in workload_names:
            workload = workloads_mod.load(name)
            for instance_id, params in workload.instances(scale, overrides):
                for rep in range(1, repeat + 1):
                    wid = instance_id if repeat == 1 else f"{instance_id}-r{rep}"
                    self.instances.append((workload, wid, rep, params))
        self.run = None
        self.step_no = 0
        # provision, facts, report + per workload run: begin, its steps, end
        self.total_steps = 3 + sum(2 + len(steps_with_commands(w, p)) for w, _, _, p in self.instances)
        self.collectors_running = None

    # -- helpers ---------------------------------------------------------------------------------
    def _spillway_root(self):
        """Where step logs appear on a local host (role common's default unless the inventory moves it)."""
        return Path(self.inventory.variables.get("spillway_root", f"/var/lib/spillway/{self.inventory.name}"))

    def _play(self, playbook, log_name, **extra_vars):
        extra = {"run_id": self.run.manifest["run_id"], "run_dir": str(self.run.path), **extra_vars}
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
            parameters={"workloads": sorted({w.name for w, *_ in self.instances}), "scale": self.scale,
                        "repeat": self.repeat},
            storage={"backends": inv.backends, "placement": inv.placement},
            emulation={"profiles": {p: profiles["profiles"][p] for p in used},
                       "limitations": profiles["limitations"] if used else []},
            hosts={})
        say(f"Spillway bench {self.run.manifest['run_id']}: cluster '{inv.name}', scale {self.scale}, "
            f"{len(self.instances)} workload run(s): {', '.join(wid for _, wid, _, _ in self.instances)}")
        say(f"  run directory: {self.run.path}")
        status = "completed"
        try:
            self._timed_play("provision", "provision.yml", "provision", provision_health_check=False)
            self._timed_play("facts", "facts.yml", "facts")
            self._load_facts()
            for workload, wid, rep, params in self.instances:
                if not self._workload(workload, wid, rep, params):
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

    def _load_facts(self):
        for host in self.inventory.hosts:
            raw = self.run.path / "raw" / host
            facts = json.loads((raw / "facts.json").read_text()) if (raw / "facts.json").exists() else {}
            storage = raw / "storage.json"
            facts["storage"] = json.loads(storage.read_text()) if storage.exists() else None
            self.run.manifest["hosts"][host] = facts
        self.run.save()

    def _workload(self, workload, wid, rep, params):
        """Run one workload instance; return True when every step succeeded."""
        record = {"id": wid, "workload": workload.name, "repetition": rep, "scale": self.scale,
                  "parameters": params, "status": "running", "steps": []}
        self.run.manifest["workloads"].append(record)
        say(f"== {wid} ({workload.manifest['description']})")
        ok, interrupted = False, False
        self.collectors_running = wid  # stop is harmless for collectors that never started
        try:
            self._timed_play(f"{wid}: health check, start collectors", "workload-begin.yml", f"{wid}.begin",
                             record=record["steps"], workload_id=wid)
            for step in steps_with_commands(workload, params):
                out = self._spillway_root() / "runs" / self.run.manifest["run_id"] / "workload" / wid
                self._timed_play(f"{wid}: {step}", "workload-step.yml", f"{wid}.{step}",
                                 record=record["steps"], step_log=out / f"{step}.log",
                                 workload_name=workload.name, workload_id=wid, step=step,
                                 params=params, commands=workload.commands(step, params))
            ok = True
        except StepFailed:
            pass
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            # Runs on Ctrl-C too: collectors are stopped and fetched before the interrupt goes on.
            record["status"] = "ok" if ok else ("interrupted" if interrupted else "failed")
            self._collectors_stop_and_fetch(wid, record)
            self.run.save()
        return ok

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
