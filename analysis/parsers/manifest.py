"""The runner's manifest.json (docs/run-directory.md): steps and what a partial run lacks."""
from __future__ import annotations

from datetime import datetime

import pandas as pd

STEP_COLUMNS = ["scope", "workload_id", "name", "status", "started_at", "ended_at", "duration_s", "error"]
EXPECTED_KEYS = ("run_id", "status", "cluster", "started_at", "ended_at", "storage", "emulation",
                 "hosts", "steps", "workloads")


def missing_keys(manifest: dict) -> list[str]:
    """Top-level manifest fields a complete run has and this one lacks."""
    return [key for key in EXPECTED_KEYS if key not in manifest]


def epoch_s(value) -> float | None:
    """Epoch seconds of an ISO 8601 time (the manifest's started_at/ended_at), None if absent."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _step_row(scope: str, workload_id: str | None, step: dict) -> dict:
    return {"scope": scope, "workload_id": workload_id, "name": step.get("name", "?"),
            "status": step.get("status", "missing"), "started_at": step.get("started_at"),
            "ended_at": step.get("ended_at"), "duration_s": step.get("duration_s"),
            "error": step.get("error")}


def steps_table(manifest: dict) -> pd.DataFrame:
    """Run-level steps (scope `run`), then each workload run's status and steps (scope `workload`)."""
    rows = [_step_row("run", None, s) for s in manifest.get("steps", []) or []]
    for workload in manifest.get("workloads", []) or []:
        wid = workload.get("id", workload.get("workload", "?"))
        for step in workload.get("steps", []) or []:
            rows.append(_step_row("workload", wid, step))
    frame = pd.DataFrame(rows, columns=STEP_COLUMNS)
    frame["duration_s"] = pd.to_numeric(frame["duration_s"], errors="coerce").astype("float64")
    return frame


def workloads_table(manifest: dict) -> pd.DataFrame:
    """One row per workload run: id, workload, repetition, scale, status, start/end (epoch s)."""
    rows = []
    for workload in manifest.get("workloads", []) or []:
        start, end = epoch_s(workload.get("started_at")), epoch_s(workload.get("ended_at"))
        rows.append({"workload_id": workload.get("id"), "workload": workload.get("workload"),
                     "repetition": workload.get("repetition"), "scale": workload.get("scale"),
                     "status": workload.get("status", "missing"), "start_time_s": start, "end_time_s": end,
                     "duration_s": (end - start) if (start is not None and end is not None) else None,
                     "warnings": "; ".join(workload.get("warnings", []) or [])})
    return pd.DataFrame(rows, columns=["workload_id", "workload", "repetition", "scale", "status",
                                       "start_time_s", "end_time_s", "duration_s", "warnings"])
