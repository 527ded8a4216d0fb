"""The runner's manifest.json (docs/run-directory.md): steps and what a partial run lacks."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from .. import safeio
from run_layout import MANIFEST

STEP_COLUMNS = ["scope", "workload_id", "name", "status", "started_at", "ended_at", "duration_s", "error"]
EXPECTED_KEYS = ("run_id", "status", "cluster", "started_at", "ended_at", "storage", "emulation",
                 "hosts", "steps", "workloads")


class _Each:
    """A JSON object whose every value has the shape `spec` (e.g. backend name -> backend)."""

    def __init__(self, spec) -> None:
        self.spec = spec


class _Record:
    """A JSON object of the shape `spec` that is no record at all without its `required` fields: a workload run
    without an id can be matched to none of its files."""

    def __init__(self, spec: dict, required: tuple[str, ...]) -> None:
        self.spec = spec
        self.required = required


_NUMBER = (int, float)
_STEP = {"name": str, "status": str, "started_at": str, "ended_at": str, "duration_s": _NUMBER, "log": str,
         "ansible_changed": int, "error": str}
_PLACEMENT = {"hdfs": str, "local": str}
_WORKLOAD = {"id": str, "workload": str, "repetition": int, "warmup": bool, "scale": str, "parameters": dict,
             "placement": _PLACEMENT, "executor_cores": int, "status": str, "started_at": str, "ended_at": str,
             "steps": [_STEP], "monitoring": dict, "warnings": [str], "attempts": [dict],
             "versions": {"spark": str, "scala": str, "hadoop": str, "hadoop_examples": str, "java": str}}
# What the analysis reads of manifest.json (docs/run-directory.md), with the types documented there: the
# tables and the report rely on them. Fields not listed are kept as they are.
SCHEMA = {
    "schema_version": int, "run_id": str, "status": str, "started_at": str, "ended_at": str, "controller": str,
    "git": dict, "cluster": str, "stopped_by": str,
    "inventory": {"name": str, "sha256": str, "groups": _Each([str])},
    "parameters": dict,
    "storage": {"backends": _Each(dict), "placement": _PLACEMENT},
    "emulation": {"profiles": _Each(dict), "limitations": (list, str), "nodes": dict},
    "hosts": _Each({"storage": {"backends": _Each(dict)}}),
    "plan": [str], "resumed": [dict], "steps": [_STEP], "workloads": [_Record(_WORKLOAD, required=("id",))],
}


def conform(manifest, schema=SCHEMA) -> tuple[dict, list[str]]:
    """(the manifest without the parts that lack the documented shape, what was left out and why). null is
    accepted anywhere (the readers take it as absent); a top level that is no JSON object gives {}."""
    problems: list[str] = []
    if not isinstance(manifest, dict):
        return {}, [f"the manifest is {_type_name(manifest)}, not a JSON object"]
    return _conform(manifest, schema, "", problems), problems


def _type_name(value) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, _NUMBER) else type(value).__name__)


def _conform(value, spec, where: str, problems: list[str], item: bool = False):
    """`value` fitted to `spec`, or _LEFT_OUT (with the reason in `problems`). null stands for an absent
    field, but not for an item of a list or object (its readers would meet None where they expect one)."""
    if value is None:
        return _left_out(where, value, _expected(spec), problems) if item else None
    if isinstance(spec, _Record):
        fitted = _conform(value, spec.spec, where, problems)
        missing = [key for key in spec.required if fitted is not _LEFT_OUT and fitted.get(key) is None]
        if missing:
            problems.append(f"{where} has no {', '.join(missing)}: left out")
            return _LEFT_OUT
        return fitted
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return _left_out(where, value, "an object", problems)
        fitted = {key: _conform(sub, spec[key], f"{where}.{key}" if where else key, problems) if key in spec else sub
                  for key, sub in value.items()}
        return {key: sub for key, sub in fitted.items() if sub is not _LEFT_OUT}
    if isinstance(spec, _Each):
        if not isinstance(value, dict):
            return _left_out(where, value, "an object", problems)
        fitted = {key: _conform(sub, spec.spec, f"{where}.{key}", problems, item=True) for key, sub in value.items()}
        return {key: sub for key, sub in fitted.items() if sub is not _LEFT_OUT}
    if isinstance(spec, list):
        if not isinstance(value, list):
            return _left_out(where, value, "a list", problems)
        fitted = [_conform(sub, spec[0], f"{where}[{index}]", problems, item=True) for index, sub in enumerate(value)]
        return [sub for sub in fitted if sub is not _LEFT_OUT]
    expected = spec if isinstance(spec, tuple) else (spec,)
    # A JSON true is a Python int too: a count or a time that is a boolean is as wrong as one that is text.
    if isinstance(value, bool) and bool not in expected or not isinstance(value, expected):
        return _left_out(where, value, _expected(spec), problems)
    return value


_LEFT_OUT = object()


def _expected(spec) -> str:
    if isinstance(spec, (dict, _Each, _Record)) or spec is dict:
        return "an object"
    if isinstance(spec, list) or spec is list:
        return "a list"
    if spec == _NUMBER:
        return "a number"
    if isinstance(spec, tuple):
        return " or ".join(_expected(one) for one in spec)
    return {str: "text", int: "an integer", bool: "a boolean"}[spec]


def _left_out(where: str, value, expected: str, problems: list[str]):
    problems.append(f"{where} is {_type_name(value)}, not {expected}: left out")
    return _LEFT_OUT


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
                    "placement_local", "executor_cores", "sweep", "parameters", "start_time_s", "end_time_s", "duration_s",
                    "prepare_s", "run_s", "validate_s", "warnings"]


def _step_seconds(workload: dict, step: str) -> float | None:
    """Duration of one of a workload run's steps (its records are named '<id>: <step>')."""
    for record in workload.get("steps", []) or []:
        if str(record.get("name", "")).endswith(f": {step}") and record.get("status") == "ok":
            return record.get("duration_s")
    return None


def workloads_table(manifest: dict) -> pd.DataFrame:
    """One row per workload run: what ran (workload, placement, executor cores, the swept parameter values
    as `sweep`, every parameter as compact JSON in `parameters`), its status (ok, failed, invalid = its output failed validation, interrupted), whether it was
    the discarded warm-up, start/end (epoch s) and the seconds of its prepare/run/validate steps."""
    rows = []
    swept = _swept_parameters(manifest)
    swept_spark = _swept_spark(manifest)
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
                     "sweep": " ".join([*(f"{k}={params[k]}" for k in swept.get(workload.get("workload"), [])
                                         if k in params), *_spark_point(workload, swept_spark)]),
                     "parameters": json.dumps(params, sort_keys=True, separators=(",", ":"), default=str),
                     "start_time_s": start, "end_time_s": end,
                     "duration_s": (end - start) if (start is not None and end is not None) else None,
                     **{f"{step}_s": _step_seconds(workload, step) for step in ("prepare", "run", "validate")},
                     "warnings": "; ".join(workload.get("warnings", []) or [])})
    frame = pd.DataFrame(rows, columns=WORKLOAD_COLUMNS)
    frame["executor_cores"] = pd.to_numeric(frame["executor_cores"], errors="coerce").astype("Int64")
    for column in ("prepare_s", "run_s", "validate_s"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame


def worker_nodes(manifest: dict) -> int | None:
    """How many worker nodes the run had: its inventory's `workers` group, else the hosts it recorded; None when
    the manifest says neither (throughput per node divides by it)."""
    workers = ((manifest.get("inventory") or {}).get("groups") or {}).get("workers") or []
    return len(workers) or len(manifest.get("hosts") or {}) or None


def _swept_parameters(manifest: dict) -> dict[str, list[str]]:
    """Per workload, the parameters whose value differs between its runs (a sweep)."""
    values: dict[str, dict[str, set]] = {}
    for workload in manifest.get("workloads", []) or []:
        for key, value in (workload.get("parameters") or {}).items():
            values.setdefault(workload.get("workload"), {}).setdefault(key, set()).add(str(value))
    return {name: sorted(k for k, seen in params.items() if len(seen) > 1) for name, params in values.items()}


def _swept_spark(manifest: dict) -> set:
    """The workloads whose runs ran on more than one Spark release (a VERSIONS sweep, docs/versions.md)."""
    releases: dict[str, set] = {}
    for workload in manifest.get("workloads", []) or []:
        release = spark_release(workload)
        # null: a run of no Spark (TeraSort on MapReduce), one run whatever the sweep, not a release of its own
        if release is not None or "versions" not in workload:
            releases.setdefault(workload.get("workload"), set()).add(release)
    return {name for name, seen in releases.items() if len(seen) > 1}


def spark_release(workload: dict):
    """The Spark release a workload run's manifest record says it ran on (None before runs recorded it)."""
    return ((workload or {}).get("versions") or {}).get("spark")


def _spark_point(workload: dict, swept_spark: set) -> list[str]:
    """`spark=<release>` as part of a run's sweep point when its workload ran on several releases: each release's
    repetitions are then their own point, as a swept parameter's values are."""
    release = spark_release(workload)
    return [f"spark={release}"] if workload.get("workload") in swept_spark and release is not None else []


# ---------------------------------------------------------------- reading manifest.json

@dataclass(frozen=True)
class ManifestReading:
    """The run's manifest as the analysis uses it, and how reading it went: status `ok`, `missing`, `refused`
    (a rule of analysis.safeio stopped the read), `error` (no JSON object) or `malformed` (parts without the
    documented shape were left out: `message` names them)."""

    manifest: dict
    status: str
    message: str = ""


def read_manifest(run_dir: Path) -> ManifestReading:
    path = Path(run_dir) / MANIFEST
    if not os.path.lexists(path):
        return ManifestReading({}, "missing", "no manifest.json")
    try:
        doc = safeio.read_json(path, "manifest")
    except safeio.Refused as error:
        return ManifestReading({}, "refused", str(error))
    except (OSError, ValueError) as error:
        return ManifestReading({}, "error", f"{type(error).__name__}: {error}")
    manifest, problems = conform(doc)
    if not problems:
        return ManifestReading(manifest, "ok")
    shown = "; ".join(problems[:5]) + (f"; ... ({len(problems)} in all)" if len(problems) > 5 else "")
    return ManifestReading(manifest, "error" if not isinstance(doc, dict) else "malformed", shown)


def load_manifest(run_dir: Path) -> dict:
    """The manifest, with only the documented types where it documents them (read_manifest); {} when it is
    absent or unreadable (a partial run still gets a report)."""
    return read_manifest(run_dir).manifest
