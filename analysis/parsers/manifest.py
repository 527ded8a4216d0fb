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


WORKLOAD_COLUMNS = ["workload_id", "workload", "repetition", "warmup", "scale", "status", "placement_hdfs",
                    "placement_local", "executor_cores", "sweep", "start_time_s", "end_time_s", "duration_s",
                    "prepare_s", "run_s", "validate_s", "warnings"]


def _step_seconds(workload: dict, step: str) -> float | None:
    """Duration of one of a workload run's steps (its records are named '<id>: <step>')."""
    for record in workload.get("steps", []) or []:
        if str(record.get("name", "")).endswith(f": {step}") and record.get("status") == "ok":
            return record.get("duration_s")
    return None


def workloads_table(manifest: dict) -> pd.DataFrame:
    """One row per workload run: what ran (workload, placement, executor cores, the swept parameter values
    as `sweep`), its status (ok, failed, invalid = its output failed validation, interrupted), whether it was
    the discarded warm-up, start/end (epoch s) and the seconds of its prepare/run/validate steps."""
    rows = []
    swept = _swept_parameters(manifest)
    for workload in manifest.get("workloads", []) or []:
        steps = workload.get("steps", []) or []
        # runs recorded before workload runs had their own bounds: the first step's start, the last step's end
        start = epoch_s(workload.get("started_at") or (steps[0].get("started_at") if steps else None))
        end = epoch_s(workload.get("ended_at") or (steps[-1].get("ended_at") if steps else None))
        placement = workload.get("placement") or (manifest.get("storage") or {}).get("placement") or {}
        params = workload.get("parameters") or {}
        rows.append({"workload_id": workload.get("id"), "workload": workload.get("workload"),
                     "repetition": workload.get("repetition"), "warmup": bool(workload.get("warmup", False)),
                     "scale": workload.get("scale"), "status": workload.get("status", "missing"),
                     "placement_hdfs": placement.get("hdfs"), "placement_local": placement.get("local"),
                     "executor_cores": workload.get("executor_cores"),
                     "sweep": " ".join(f"{k}={params[k]}" for k in swept.get(workload.get("workload"), [])
                                       if k in params),
                     "start_time_s": start, "end_time_s": end,
                     "duration_s": (end - start) if (start is not None and end is not None) else None,
                     **{f"{step}_s": _step_seconds(workload, step) for step in ("prepare", "run", "validate")},
                     "warnings": "; ".join(workload.get("warnings", []) or [])})
    frame = pd.DataFrame(rows, columns=WORKLOAD_COLUMNS)
    frame["executor_cores"] = pd.to_numeric(frame["executor_cores"], errors="coerce").astype("Int64")
    for column in ("prepare_s", "run_s", "validate_s"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame


def _swept_parameters(manifest: dict) -> dict[str, list[str]]:
    """Per workload, the parameters whose value differs between its runs (a sweep)."""
    values: dict[str, dict[str, set]] = {}
    for workload in manifest.get("workloads", []) or []:
        for key, value in (workload.get("parameters") or {}).items():
            values.setdefault(workload.get("workload"), {}).setdefault(key, set()).add(str(value))
    return {name: sorted(k for k, seen in params.items() if len(seen) > 1) for name, params in values.items()}
