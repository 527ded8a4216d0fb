"""The compared runs: each run with its tables and the label that tells it apart from the others, and its
workload runs keyed like with like, by the parameters they effectively ran with."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from .. import devices
from ..parsers.manifest import spark_release

WORKLOADS_DIR = Path(__file__).resolve().parents[2] / "workloads"
# A workload name as the harness allows it (a folder of workloads/): nothing else is looked up there.
_WORKLOAD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


@dataclass
class Run:
    run_dir: Path
    run_id: str
    manifest: dict
    tables: dict[str, pd.DataFrame]
    label: str = ""          # what tells this run apart from the others compared

    def profile(self, backend) -> str:
        """A backend name as the storage profile it was (`fast` -> `nvme`), from the run's devices table."""
        return devices.profile_of(self.tables["devices"], backend)


def label_runs(runs: list[Run]) -> None:
    """Cluster name when clusters differ, else the placement in profile terms when that differs, else the id."""
    clusters = [str(r.manifest.get("cluster", "?")) for r in runs]
    placements = [placement_text(r, (r.manifest.get("storage") or {}).get("placement") or {}) for r in runs]
    for run, cluster, placement in zip(runs, clusters, placements):
        parts = []
        if len(set(clusters)) > 1:
            parts.append(cluster)
        if len(set(placements)) > 1:
            parts.append(placement)
        run.label = " ".join(parts)
    labels = [r.label for r in runs]
    for run in runs:
        if not run.label or labels.count(run.label) > 1:
            run.label = f"{run.label} {run.run_id}".strip()


def placement_text(run: Run, placement: dict) -> str:
    return f"HDFS {run.profile(placement.get('hdfs'))}, local {run.profile(placement.get('local'))}"


# ---------------------------------------------------------------- like with like: effective parameters

@functools.lru_cache(maxsize=None)
def _declared(workload: str) -> tuple[dict, dict]:
    """(parameters, scales) of workloads/<workload>/workload.yml; empty when there is no such workload."""
    if not _WORKLOAD_NAME.fullmatch(workload):
        return {}, {}
    try:
        manifest = yaml.safe_load((WORKLOADS_DIR / workload / "workload.yml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}, {}
    if not isinstance(manifest, dict):
        return {}, {}
    return manifest.get("parameters") or {}, manifest.get("scales") or {}


def effective_parameters(record: dict) -> dict[str, str]:
    """The parameter values a workload run ran with, as text: the resolved values its manifest record holds
    (defaults < scale < inventory < PARAMS, however they were set), and for a parameter the record lacks (the run
    was recorded before the parameter existed) what the bench resolves for it at the run's scale from
    workloads/<name>/workload.yml: the scale profile's value, else the default. A parameter is added with a default
    that keeps the old behaviour, so that is what the older run did. A sweep default (a list) says nothing of one
    run and is not filled in."""
    values = {key: str(value) for key, value in (record.get("parameters") or {}).items()}
    declared, scales = _declared(str(record.get("workload")))
    scale = scales.get(str(record.get("scale"))) or {}
    for name, spec in declared.items():
        if name in values or not isinstance(spec, dict):
            continue
        value = scale.get(name, spec.get("default")) if isinstance(scale, dict) else spec.get("default")
        if value is not None and not isinstance(value, (list, dict)):
            values[name] = str(value)
    return values


def key_by_effective_parameters(runs: list[Run]) -> None:
    """Give every workload run of the compared runs the same `sweep` key when it ran the same workload with the
    same effective parameters, however they were set: the values of the parameters that differ between any of the
    compared runs of that workload. Each run's own `sweep` names only what varied inside it, so TeraSort on Spark
    of the default bench (a sweep `engine=[mapreduce, spark]`: `engine=spark`) and of a placement matrix run with
    `PARAMS='terasort.engine=spark'` (no sweep: ``) would land in different rows and never be compared."""
    effective = [(run, record, effective_parameters(record))
                 for run in runs for record in run.manifest.get("workloads", []) or []]
    by_workload: dict[str, list[dict[str, str]]] = {}
    for _, record, values in effective:
        by_workload.setdefault(str(record.get("workload")), []).append(values)
    differing = {name: sorted(key for key in set().union(*seen) if len({v.get(key) for v in seen}) > 1)
                 for name, seen in by_workload.items()}
    # a run that ran a workload on several Spark releases (a VERSIONS sweep, docs/versions.md) keeps them apart, as
    # its own `sweep` does; two runs of one release each stay side by side, the release listed under what differed
    releases: dict[tuple[str, str], set] = {}
    for run, record, _ in effective:
        releases.setdefault((run.run_id, str(record.get("workload"))), set()).add(spark_release(record))
    swept_spark = {name for (_, name), seen in releases.items() if len(seen) > 1}
    keys: dict[str, dict[str, str]] = {run.run_id: {} for run in runs}
    for run, record, values in effective:
        name = str(record.get("workload"))
        keys[run.run_id][record.get("id")] = " ".join(
            [*(f"{key}={values[key]}" for key in differing[name] if key in values),
             *([f"spark={spark_release(record)}"] if name in swept_spark else [])])
    for run in runs:
        table = run.tables["workloads"]
        if not table.empty:
            run.tables["workloads"] = table.assign(sweep=table["workload_id"].map(keys[run.run_id]).fillna(table["sweep"]))
