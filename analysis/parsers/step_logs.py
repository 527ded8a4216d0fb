"""The Ansible log of each step of a bench (`logs/<workload-id>.<step>.log`, written on the controller): the lines
of the spillway_timing callback (playbooks/callback_plugins/spillway_timing.py), one per task after it ended, e.g.
`timing:   75.77 s  Workload command: tpch run: ./tpch run`. Every other line is Ansible's free text and is ignored.

`timing_lines(text)`: (task, seconds) of each timing line of a log, in the log's order.

`workload_commands_table(run_dir, manifest)`: the workload commands' own times, one row per timing line whose task
starts with "Workload command" in the logs of each workload run's prepare, run and validate steps. Which workload
runs and steps there are comes from the manifest (its workload runs' `id` and their steps, named `<id>: <step>`); a
step's duration there also holds the step playbook's start-up, shipping the job code and reading the storage
layout, these rows the command alone. A failed command has its row too: the callback times a task that failed.

| column | type | from |
|---|---|---|
| workload_id | text | the workload run's `id` in the manifest |
| step | text | "prepare", "run" or "validate" |
| task | text | the task's name as logged, e.g. "Workload command: tpch run: ./tpch run" |
| duration_s | float, s | the timing line's seconds (the callback prints hundredths) |

The run directory is untrusted input (docs/safety.md): a log is read only as `logs/<id>.<step>.log`, only for an id
that is a plain name (PLAIN_ID, no ".."), through analysis.safeio (kind "step-log"), inside safeio.confined; the
manifest's `log` field, which names the same file for a run the bench wrote, is never taken as a path. Beside the
frame, the `sources` rows (host empty, source "step-log", file `logs/<id>.<step>.log`) of each log: `ok` (rows: its
commands), `refused` (a symbolic link, not a regular file, over the cap), `error` (unreadable), `missing` (absent
though its step ended ok; a step that failed or was interrupted may have left none: no row). A workload run whose
id is not a plain name has one `refused` row (file `manifest.json`) and nothing of it is read.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import pandas as pd

from .. import safeio
from run_layout import LOGS, MANIFEST

TIMING = re.compile(r"^timing:\s+(?P<seconds>[\d.]+) s\s+(?P<task>.*)$")
COMMAND_STEPS = ("prepare", "run", "validate")
COMMAND_TASK = "Workload command"
COLUMNS = ["workload_id", "step", "task", "duration_s"]
# What the bench's workload ids are made of (a workload's name, sweep values, placement backends, -r<n>, -p<n>):
# an id of these alone, without "..", names a file directly in logs/ and nothing else.
PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=,+-]*")
SOURCE = "step-log"


def timing_lines(log_text: str) -> Iterator[tuple[str, float]]:
    for line in log_text.splitlines():
        match = TIMING.match(line)
        if not match:
            continue
        try:
            seconds = float(match["seconds"])
        except ValueError:      # "1.2.3 s": text that looks like the callback's line, not one it wrote
            continue
        yield match["task"], seconds


def is_plain_id(workload_id) -> bool:
    return isinstance(workload_id, str) and PLAIN_ID.fullmatch(workload_id) is not None and ".." not in workload_id


def workload_commands_table(run_dir: Path, manifest: dict) -> tuple[pd.DataFrame, list[dict]]:
    """(the table, its `sources` rows): see the module's docstring."""
    run_dir = Path(run_dir)
    rows: list[dict] = []
    sources: list[dict] = []
    read: set[tuple[str, str]] = set()
    with safeio.confined(run_dir):
        for workload in manifest.get("workloads") or []:
            workload_id = workload.get("id")
            steps = [(_command_step(record.get("name")), record.get("status"))
                     for record in workload.get("steps") or []]
            steps = [(step, status) for step, status in steps if step]
            if not steps:
                continue
            if not is_plain_id(workload_id):
                sources.append(_source(workload_id if isinstance(workload_id, str) else "", MANIFEST, "refused",
                                       f"workload id {workload_id!r} is not a plain name ({PLAIN_ID.pattern}, "
                                       "no '..'): no file is named after it, its step logs are not read"))
                continue
            for step, status in steps:
                if (workload_id, step) in read:
                    continue
                read.add((workload_id, step))
                file = f"{LOGS}/{workload_id}.{step}.log"
                try:
                    # Ansible relays the commands' own output, in whatever encoding they wrote it
                    text = safeio.read_text(run_dir / file, SOURCE, errors="replace")
                except FileNotFoundError:
                    if status == "ok":
                        sources.append(_source(workload_id, file, "missing", f"no {file}, though the step ended ok"))
                    continue
                except safeio.Refused as error:
                    sources.append(_source(workload_id, file, "refused", str(error)))
                    continue
                except OSError as error:
                    sources.append(_source(workload_id, file, "error", f"{type(error).__name__}: {error}"))
                    continue
                commands = [{"workload_id": workload_id, "step": step, "task": task, "duration_s": seconds}
                            for task, seconds in timing_lines(text) if task.startswith(COMMAND_TASK)]
                rows += commands
                sources.append(_source(workload_id, file, "ok", "" if commands else
                                       "no timing line of a workload command", rows=len(commands)))
    frame = pd.DataFrame(rows, columns=COLUMNS).astype(
        {"workload_id": "str", "step": "str", "task": "str", "duration_s": "float64"})
    return frame, sources


def _command_step(name) -> str | None:
    """The step of a workload run's step record named `<id>: <step>`, when it is one that runs commands."""
    _, separator, step = str(name or "").rpartition(": ")
    return step if separator and step in COMMAND_STEPS else None


def _source(workload_id: str, file: str, status: str, message: str, rows: int = 0) -> dict:
    return {"host": "", "source": SOURCE, "workload_id": workload_id, "file": file, "status": status, "rows": rows,
            "message": message[:500]}
