"""The run directory: results/<run-id>/ with manifest.json, raw/, tables/ and report.html.

The manifest is rewritten (atomically) after every step, so a crash or Ctrl-C leaves a readable
record of what ran, what failed and what is missing. Its fields are documented in
docs/run-directory.md.
"""
import errno
import glob
import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import run_protocol
from run_layout import ATTEMPTS, LATEST, LOGS, MANIFEST, RAW, resolve_run_dir, writing
from spillway import REPO, RESULTS

SCHEMA_VERSION = 1


def utc_now():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_run_id(cluster):
    return f"{datetime.now().strftime('%Y%m%d-%H%M%S')}-{cluster}"


def git_state():
    def git(*args):
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else None
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain"))}


class StepFailed(Exception):
    """A step failed; the message says what and where to look."""
    # the part of a workload run that failed (prepare, run, validate...: spillway/bench/workload_run.py), if one did
    part = None


def step_outcome(err):
    """(status, error) of a step that `err` ended: Ctrl-C interrupts it, a failure is recorded with its message, and
    anything else (the interpreter exiting) leaves it running, as the manifest then last said."""
    if isinstance(err, KeyboardInterrupt):
        return "interrupted", None
    if isinstance(err, StepFailed):
        return "failed", str(err)
    if isinstance(err, Exception):
        return "failed", f"{type(err).__name__}: {err}"
    return "running", None


class RunNotResumable(Exception):
    """The run named for resuming is unknown or has nothing left to do; the message says which."""


def resolve(ref):
    """A run directory from its id under results/, `latest`, or a path (run_layout.resolve_run_dir), that
    holds a manifest."""
    try:
        path = resolve_run_dir(str(ref), RESULTS)
    except FileNotFoundError:
        path = None
    if path is not None and (path / MANIFEST).is_file():
        return path
    known = sorted(p.parent.name for p in RESULTS.glob(f"*/{MANIFEST}") if not p.parent.is_symlink())
    raise RunNotResumable(f"no run '{ref}': neither a run directory nor a run id under {RESULTS}"
                          + (f" (the newest: {', '.join(known[-3:])})" if known else " (there is no run yet)"))


# A resumed run's cluster and workloads name folders, locks and make targets: plain names only (docs/safety.md).
PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
PLAIN_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")
# The cap of a run directory's JSON records: manifest.json, and raw/<host>/facts.json and storage.json, which the
# bench folds into the manifest (the analysis caps the manifest and storage.json the same: analysis/safeio.py).
MANIFEST_MAX_BYTES = 64 * 2**20


class RecordNotRead(ValueError):
    """A run directory's record that is not read: a link, not a regular file, or over its cap; the message says
    which."""


def read_record(path, limit=MANIFEST_MAX_BYTES):
    """The JSON value of a run directory's record, read only when it is a regular file (a link is not followed, a
    FIFO or a device not opened for reading) of at most `limit` bytes, and never more than that read: a run directory
    is untrusted input (docs/safety.md). FileNotFoundError when there is none; RecordNotRead, or json's ValueError or
    RecursionError, when it is not a record."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise RecordNotRead("a symbolic link, not followed") from None
        raise
    with open(descriptor, "rb") as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise RecordNotRead("not a regular file")
        data = handle.read(limit + 1) if info.st_size <= limit else b""
    if info.st_size > limit or len(data) > limit:
        raise RecordNotRead(f"larger than {limit // 2**20} MiB")
    return json.loads(data)


def resumable_manifest(path):
    """A run's manifest as far as a resume trusts it: a JSON object whose run_id, status, cluster, workloads and scale
    are plain values naming what exists here. A run directory is untrusted input: anything else is refused, naming
    the field."""
    def refuse(field, problem):
        raise RunNotResumable(f"{path}: {field}: {problem}; this run cannot be resumed (start a new bench)")
    try:
        manifest = read_record(path)
    except RecordNotRead as err:
        refuse("(file)", str(err))
    except (OSError, ValueError, RecursionError) as err:
        refuse("(file)", f"not readable as JSON ({type(err).__name__}: {str(err)[:200]})")
    if not isinstance(manifest, dict):
        refuse("(top level)", "not a JSON object")
    for field in ("run_id", "status", "cluster"):
        if not isinstance(manifest.get(field), str):
            refuse(field, "missing or not a string")
    if not RUN_ID.fullmatch(manifest["run_id"]):
        refuse("run_id", f"{manifest['run_id'][:80]!r} is not a run id (letters, digits, _ . -)")
    if not PLAIN_NAME.fullmatch(manifest["cluster"]) or not (REPO / "inventories" / manifest["cluster"]).is_dir():
        refuse("cluster", f"{manifest['cluster'][:80]!r} is not the name of a folder of inventories/")
    parameters = manifest.get("parameters")
    if not isinstance(parameters, dict):
        refuse("parameters", "missing or not an object")
    workloads = parameters.get("workloads")
    if not isinstance(workloads, list) or not all(isinstance(w, str) and PLAIN_NAME.fullmatch(w)
                                                  and (REPO / "workloads" / w / "workload.yml").is_file()
                                                  for w in workloads):
        refuse("parameters.workloads", "not a list of the names of folders of workloads/")
    scale = parameters.get("scale", "tiny")
    if not isinstance(scale, str) or not PLAIN_NAME.fullmatch(scale):
        refuse("parameters.scale", "not a plain scale name")
    for field, problem in plan_parameter_problems(parameters):
        refuse(f"parameters.{field}", problem)
    return manifest


# The most repetitions a resumed run may ask for (the rounds of run_protocol): the plan's own size limit
# (spillway.bench.plan) bounds the rest.
MAX_REPEAT = run_protocol.MAX_ROUNDS
RELEASE = re.compile(r"[0-9][0-9A-Za-z.-]{0,31}")


def whole(value, least, most):
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= most


def plan_parameter_problems(parameters):
    """(field, problem) for each value of the manifest's `parameters` a resume plans with that is not of its type:
    whole numbers in their range, switches true or false, names plain. Absent ones are as runs recorded them before
    the option existed (spillway.bench.resume.recorded_parameters)."""
    problems = []
    if not whole(parameters.get("repeat"), 1, MAX_REPEAT):
        problems.append(("repeat", f"{str(parameters.get('repeat'))[:40]!r} is not a whole number from 1 to "
                                   f"{MAX_REPEAT}"))
    for switch in ("warmup", "group_warmups", "drop_caches", "storage_probe"):
        if switch in parameters and not isinstance(parameters[switch], bool):
            problems.append((switch, f"{str(parameters[switch])[:40]!r} is not true or false"))
    if parameters.get("monitoring") is not None and not isinstance(parameters["monitoring"], bool):
        problems.append(("monitoring", f"{str(parameters['monitoring'])[:40]!r} is not true, false or null"))
    lists = {"executor_cores": lambda c: c is None or whole(c, 1, 4096),
             "spark_versions": lambda v: v is None or isinstance(v, str) and bool(RELEASE.fullmatch(v)),
             "placements": lambda p: isinstance(p, dict) and set(p) == {"hdfs", "local"}
             and all(isinstance(b, str) and PLAIN_NAME.fullmatch(b) for b in p.values())}
    what = {"executor_cores": "null or a whole number from 1 to 4096", "spark_versions": "null or a release name",
            "placements": "an object of backend names {hdfs, local}"}
    for field, valid in lists.items():
        values = parameters.get(field, [])
        if not isinstance(values, list) or not values and field in parameters or not all(map(valid, values)):
            problems.append((field, f"not a non-empty list, each {what[field]}"))
    return problems


def move_outputs_aside(tree, workload_id, dest, root=None):
    """Move every `<tree>/<source>/<workload_id>/` (one per collector, and `workload`) to `<dest>/<source>/`, both
    below `root` (default `tree`) and reached without a link (run_layout.writing.move: a link on the way is refused).

    Used for a workload run's outputs before it runs again on resume: with the folders in place the new
    attempt would mix its files with the interrupted one's (event logs accumulate). Returns the sources moved."""
    moved = []
    for folder in sorted(Path(tree).glob(f"*/{glob.escape(workload_id)}")):
        if folder.is_dir() and not folder.parent.name.startswith("."):
            writing.move(folder, Path(dest) / folder.parent.name / workload_id, root or tree)
            moved.append(folder.parent.name)
    return moved


class RunDirectory:
    def __init__(self, path, manifest):
        self.path = Path(path)
        self.manifest = manifest
        self._step_clocks = {}  # id of a running step's entry -> time.monotonic() at its start

    @classmethod
    def create(cls, run_id, **facts):
        path = RESULTS / run_id
        (path / RAW).mkdir(parents=True)
        (path / LOGS).mkdir()
        manifest = {"schema_version": SCHEMA_VERSION, "run_id": run_id, "status": "running",
                    "started_at": utc_now(), "ended_at": None, "controller": socket.gethostname(),
                    "git": git_state(), **facts, "steps": [], "workloads": []}
        run = cls(path, manifest)
        run.save()
        run.mark_running()
        latest = RESULTS / LATEST
        if latest.is_symlink() or not latest.exists():
            latest.unlink(missing_ok=True)
            latest.symlink_to(run_id)
        return run

    @classmethod
    def open_for_resume(cls, ref):
        """An existing run that has something left to do: not `completed`."""
        path = resolve(ref)
        manifest = resumable_manifest(path / MANIFEST)
        if manifest.get("status") == "completed":
            raise RunNotResumable(f"run {manifest['run_id']} completed already (every step ok): nothing to resume; "
                                  f"`make report RUN={manifest['run_id']}` rebuilds its report")
        run = cls(path, manifest)
        pid = run.running_pid()
        if pid:
            raise RunNotResumable(f"run {manifest['run_id']} is still running (bench process {pid} on this host): "
                                  "let it finish, or stop it (Ctrl-C) and resume then")
        return run

    def mark_running(self):
        """Say which process writes this run, so that no resume starts while it lives; finish() removes it."""
        writing.write_text(self.path / ".bench.pid", f"{os.getpid()} {socket.gethostname()}\n", self.path)

    def running_pid(self):
        """The live process of this host that is running this bench, else None (a run killed hard leaves
        status `running` but no live process)."""
        try:
            pid, host = (self.path / ".bench.pid").read_text().split()
            if host == socket.gethostname() and int(pid) != os.getpid():
                os.kill(int(pid), 0)
                return int(pid)
        except (OSError, ValueError):
            pass
        return None

    def set_attempt_aside(self, record, attempt):
        """Move a workload run's outputs on the controller (raw/<host>/<source>/<id>/, its Prometheus archive,
        its step logs) to attempts/<id>.attempt-<n>/ with the same layout, out of the analysis' way, and
        return the record's summary for its `attempts`, its step logs pointing at where they went."""
        wid = record["id"]
        folder = f"{ATTEMPTS}/{wid}.attempt-{attempt}"
        dest = self.path / folder
        for host in sorted(p for p in (self.path / RAW).glob("*") if p.is_dir()):
            if host.name != "prometheus":
                move_outputs_aside(host, wid, dest / RAW / host.name, self.path)
        archive = self.path / RAW / "prometheus" / f"{wid}.json"
        if os.path.lexists(archive):
            writing.move(archive, dest / RAW / "prometheus" / archive.name, self.path)
        steps = json.loads(json.dumps(record.get("steps", [])))
        # `<id>.<action>.log` and its `.vars.json`, also the plays recorded in no step (a stop after Ctrl-C);
        # an action has no dot, so the logs of `kmeans-0.5` are not taken for those of `kmeans-0`
        for path in sorted((self.path / LOGS).glob(f"{glob.escape(wid)}.*")):
            action = path.name[len(wid) + 1:].removesuffix(".log").removesuffix(".vars.json")
            if "." not in action:
                writing.move(path, dest / LOGS / path.name, self.path)
        for step in steps:
            if step.get("log"):
                step["log"] = f"{folder}/{LOGS}/{Path(step['log']).name}"
        summary = {"attempt": attempt, "status": record.get("status"), "started_at": record.get("started_at"),
                   "ended_at": record.get("ended_at"), "steps": steps, "outputs": folder}
        if record.get("warnings"):
            summary["warnings"] = record["warnings"]
        return summary

    def save(self):
        """manifest.json rewritten whole, through a new file renamed over it (run_layout.writing)."""
        writing.write_text(self.path / MANIFEST, json.dumps(self.manifest, indent=2, default=str) + "\n", self.path)

    @contextmanager
    def step(self, name, record=None, **details):
        """Record a step's start, end, duration and status in `record` (default: the run's steps), around a block."""
        entry = self.begin_step(name, record, **details)
        status, error = "running", None
        try:
            yield entry
            status = "ok"
        except BaseException as err:
            status, error = step_outcome(err)
            raise
        finally:
            self.end_step(entry, status, error)

    def begin_step(self, name, record=None, **details):
        """A step's manifest entry in `record` (default: the run's steps), running from now until end_step(): for a
        step that does not fit a block of code (the parts of one Ansible run, spillway/bench/workload_run.py)."""
        entry = {"name": name, "status": "running", "started_at": utc_now(), "ended_at": None,
                 "duration_s": None, **details}
        (self.manifest["steps"] if record is None else record).append(entry)
        self._step_clocks[id(entry)] = time.monotonic()
        self.save()
        return entry

    def end_step(self, entry, status, error=None):
        """A step begun by begin_step() ends with `status` (ok, failed, interrupted) and, when failed, its error."""
        entry["status"] = status
        if error is not None:
            entry["error"] = error
        entry["ended_at"] = utc_now()
        entry["duration_s"] = round(time.monotonic() - self._step_clocks.pop(id(entry)), 3)
        self.save()

    def finish(self, status):
        self.manifest["status"] = status
        self.manifest["ended_at"] = utc_now()
        self.save()
        (self.path / ".bench.pid").unlink(missing_ok=True)


HOST_RECORDS = ("storage", "monitoring")


def write_host_facts(run_dir, host, payload):
    """raw/<host>/facts.json from facts.yml's reading of a host, and its storage.json and monitoring.json (the
    storage and monitoring roles' records, as the host holds them) when it has them. `payload`: {"facts": {...},
    "storage": text or None, "monitoring": text or None}."""
    if not PLAIN_HOST.fullmatch(host):
        raise ValueError(f"host name {host!r}: not a plain host name (letters, digits, '.', '_', '-')")
    folder = Path(run_dir) / RAW / host
    # raw/ and raw/<host> reached without a link, each file replacing whatever is at its name (run_layout.writing)
    writing.write_text(folder / "facts.json", json.dumps(payload["facts"], indent=4, sort_keys=True) + "\n", run_dir)
    for record in HOST_RECORDS:
        if payload.get(record) is not None:
            writing.write_text(folder / f"{record}.json", payload[record], run_dir)


def prepare_fetch(run_dir, host):
    """Before the collectors' fetch unpacks a host's archive into raw/<host>/ with tar (playbooks/roles/collectors/
    tasks/fetch.yml): raw/<host>/ made a real folder, a link at it, at one of its source folders or at one of their
    workload-run folders refused (tar extracts through such a link), and whatever lies where the archive is fetched
    to (raw/.fetch-<host>.tgz) removed, not followed (the fetch writes through a link)."""
    if not PLAIN_HOST.fullmatch(host):
        raise ValueError(f"host name {host!r}: not a plain host name (letters, digits, '.', '_', '-')")
    run_dir = Path(run_dir)
    folder = writing.directory(run_dir / RAW / host, run_dir)
    for source in folder.iterdir():
        for entry in [source, *(source.iterdir() if source.is_dir() and not source.is_symlink() else ())]:
            if entry.is_symlink():
                raise writing.Refused(f"{entry} is a symbolic link (to {os.readlink(entry)}): the fetch does not "
                                      "unpack through it; remove it and run again")
    (run_dir / RAW / f".fetch-{host}.tgz").unlink(missing_ok=True)


def main(argv=None):
    """`python3 -m spillway.run_record resumable <run>`: for make, before anything is installed or touched:
    fails clearly on an unknown or completed run, else prints the preflight's arguments for it.
    `python -m spillway.run_record host-facts <run-dir> <host>`: facts.yml's payload on stdin into raw/<host>/.
    `python -m spillway.run_record prepare-fetch <run-dir> <host>`: raw/<host>/ ready for the fetch (prepare_fetch)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 3 and argv[0] == "host-facts":
        write_host_facts(argv[1], argv[2], json.load(sys.stdin))
        return 0
    if len(argv) == 3 and argv[0] == "prepare-fetch":
        try:
            prepare_fetch(argv[1], argv[2])
        except writing.Refused as refused:
            print(f"error: {refused}", file=sys.stderr)
            return 2
        return 0
    if len(argv) != 2 or argv[0] != "resumable":
        print("usage: python3 -m spillway.run_record resumable <run-id|path>\n"
              "       python -m spillway.run_record host-facts <run-dir> <host> < payload.json\n"
              "       python -m spillway.run_record prepare-fetch <run-dir> <host>", file=sys.stderr)
        return 2
    try:
        run = RunDirectory.open_for_resume(argv[1])
    except RunNotResumable as err:
        print(f"error: RESUME: {err}", file=sys.stderr)
        return 2
    parameters = run.manifest.get("parameters") or {}
    print(f"--cluster {run.manifest['cluster']} --workloads {','.join(parameters.get('workloads', []))} "
          f"--scale {parameters.get('scale', 'tiny')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
