"""The run directory: results/<run-id>/ with manifest.json, raw/, tables/ and report.html.

The manifest is rewritten (atomically) after every step, so a crash or Ctrl-C leaves a readable
record of what ran, what failed and what is missing. Its fields are documented in
docs/run-directory.md.
"""
import json
import os
import socket
import subprocess
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

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


class RunDirectory:
    def __init__(self, path, manifest):
        self.path = Path(path)
        self.manifest = manifest

    @classmethod
    def create(cls, run_id, **facts):
        path = RESULTS / run_id
        (path / "raw").mkdir(parents=True)
        (path / "logs").mkdir()
        manifest = {"schema_version": SCHEMA_VERSION, "run_id": run_id, "status": "running",
                    "started_at": utc_now(), "ended_at": None, "controller": socket.gethostname(),
                    "git": git_state(), **facts, "steps": [], "workloads": []}
        run = cls(path, manifest)
        run.save()
        latest = RESULTS / "latest"
        if latest.is_symlink() or not latest.exists():
            latest.unlink(missing_ok=True)
            latest.symlink_to(run_id)
        return run

    def save(self):
        tmp = self.path / ".manifest.json.tmp"
        tmp.write_text(json.dumps(self.manifest, indent=2, default=str) + "\n")
        os.replace(tmp, self.path / "manifest.json")

    @contextmanager
    def step(self, name, record=None, **details):
        """Record a step's start, end, duration and status in `record` (default: the run's steps)."""
        entry = {"name": name, "status": "running", "started_at": utc_now(), "ended_at": None,
                 "duration_s": None, **details}
        (self.manifest["steps"] if record is None else record).append(entry)
        self.save()
        start = time.monotonic()
        try:
            yield entry
            entry["status"] = "ok"
        except KeyboardInterrupt:
            entry["status"] = "interrupted"
            raise
        except StepFailed as err:
            entry["status"] = "failed"
            entry["error"] = str(err)
            raise
        except Exception as err:
            entry["status"] = "failed"
            entry["error"] = f"{type(err).__name__}: {err}"
            raise
        finally:
            entry["ended_at"] = utc_now()
            entry["duration_s"] = round(time.monotonic() - start, 3)
            self.save()

    def finish(self, status):
        self.manifest["status"] = status
        self.manifest["ended_at"] = utc_now()
        self.save()
