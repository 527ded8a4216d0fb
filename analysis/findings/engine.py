"""The findings engine: what a rule is, what it reads, and how a rule set is evaluated over a run's tables
(the rules themselves are analysis/findings/rules/; docs/findings.md holds every rule's trigger, threshold, evidence
and action).

Every rule is a Rule: an id, what triggers it, its thresholds (units in their names), and a check that takes the
run's tables (never raw/) and returns one Finding per place it fired (a workload run, a stage, a device), each with
its evidence in words and numbers with units (analysis.formatting) and the numbers themselves. A rule whose tables
the run lacks says so (status `no data`) instead of staying silent.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import pandas as pd
import yaml

from .. import devices, metrics, statistics
from ..models.iomodel.bandwidths import Bandwidths

FIRED, QUIET, NO_DATA = "fired", "did not fire", "no data"
# Dr. Elephant's five severities; a finding is at least low (it fired), its rule's cut-points grade it higher
LEVELS = ("none", "low", "moderate", "severe", "critical")
COLUMNS = ["rule", "key", "level", "title", "workload_id", "host", "subject", "evidence", "action", "recommendation",
           "values"]


@dataclass(frozen=True)
class Finding:
    rule: str
    workload_id: str
    subject: str          # where: a device, a stage, a placement
    evidence: str         # words and numbers with units
    values: dict          # the numbers the evidence quotes (units in the keys)
    host: str = ""
    # where, as the key names it (finding_key): (kind, value) pairs that stay the same from run to run: a host and
    # backend, never a loop device's number; a stage's name and rank, never its id or its application's id
    place: tuple = ()
    # the workload part of the key when the finding is about a workload across configurations (else it is the
    # configuration of `workload_id`, without the repetition)
    workload_key: str = ""
    # what to change, with the value the measurement suggests: a Spark or Hadoop property (`spark.executor.memory`
    # = 2 GiB), an inventory field or a placement; empty when the rule's action says all there is
    recommendation: str = ""


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    trigger: str          # in words, with the thresholds by name
    thresholds: dict      # name (unit in the name) -> value
    action: str
    needs: tuple          # tables (name, column) the check reads; an empty or missing one: no data
    check: Callable[["Inputs", dict], Iterable[Finding]] = field(repr=False, compare=False)
    levels: dict = field(default_factory=dict)   # measure (a key of a finding's values), cut_points, source


# What each rule says (title, trigger, thresholds, action): text, kept once beside the checks, as docs/findings.md
# presents it.
CATALOG = Path(__file__).resolve().parent / "rules" / "catalog.yml"


@functools.cache
def catalog() -> dict[str, dict]:
    return yaml.safe_load(CATALOG.read_text())


def rule(rule_id: str, needs: tuple) -> Callable[[Callable], Rule]:
    """The decorated check (it yields its findings) as the Rule `rule_id` of the catalog, reading the tables `needs`
    names; a rule is evaluated only where a rule set lists it (analysis/findings/rules/__init__.py)."""
    said = catalog()[rule_id]

    def make(check: Callable) -> Rule:
        return Rule(id=rule_id, title=said["title"], trigger=said["trigger"], thresholds=said["thresholds"],
                    action=said["action"], needs=needs, check=check, levels=said["levels"])
    return make


@dataclass
class Inputs:
    """A run's tables and what the rules share: the backend devices, the measured workload runs, the noise."""

    tables: dict[str, pd.DataFrame]
    noise: statistics.Noise | None = None
    _stage_totals: dict | None = field(default=None, repr=False)
    _bandwidths: Bandwidths | None = field(default=None, repr=False)

    def table(self, name: str) -> pd.DataFrame:
        return self.tables.get(name, pd.DataFrame())

    def workload_ids(self, frame: pd.DataFrame) -> pd.DataFrame:
        """`frame`'s rows of measured workload runs, the device benchmarks (the fio sweep) left out (all rows when
        the run lists no workloads)."""
        listed = self.table("workloads")
        if listed.empty or "workload_id" not in frame:
            return frame
        measured = metrics.workload_runs(listed)
        return frame[frame["workload_id"].isin(measured["workload_id"])]

    def bandwidths(self) -> Bandwidths:
        """What each backend's device can do by pattern and request size: the run's fio sweep, else its storage
        profile's caps (models.iomodel.bandwidths); built once for every rule that weighs a rate against it."""
        if self._bandwidths is None:
            self._bandwidths = Bandwidths()
            self._bandwidths.add_fio(self.table("fio"), devices.backend_profiles(self.table("devices")),
                                     "the run's fio sweep")
        return self._bandwidths

    def workload_io(self) -> pd.DataFrame:
        """What each workload run's applications and the backends' devices moved (metrics.workload_io_summary)."""
        return metrics.workload_io_summary({n: self.table(n) for n in ("workloads", "stages", "mr_jobs",
                                                                       "mr_counters", "disk_totals")})

    def stage_share_pct(self, workload_id: str, stage_s: float) -> float:
        """`stage_s` as a share (%) of the workload run's summed stage time (its stages' `duration_s`): how much of
        the workload a stage's finding is about (the per-stage rules' level cap)."""
        if self._stage_totals is None:
            stages = self.table("stages")
            self._stage_totals = (stages.groupby("workload_id")["duration_s"].sum().to_dict()
                                  if {"workload_id", "duration_s"} <= set(stages) else {})
        total = self._stage_totals.get(workload_id, 0.0)
        return 100 * float(stage_s) / total if total > 0 else math.nan

    def backend_devices(self) -> dict[tuple[str, str], str]:
        return devices.device_backends(self.table("devices"))

    def measured_on_backend_devices(self, name: str) -> pd.DataFrame:
        """Table `name`'s rows (host, device columns) of measured workload runs on a backend's device, with `backend`
        (metrics.on_backend_devices)."""
        return metrics.on_backend_devices(self.workload_ids(self.table(name)), self.backend_devices())

    def profile(self, backend: str) -> str:
        return devices.profile_of(self.table("devices"), backend)

    def device_name(self, device: str, backend: str) -> str:
        """`loop3 (ssd)`, or `nvme0n1 (fast: nvme)` where the backend's name is not its profile."""
        profile = self.profile(backend)
        return f"{device} ({backend})" if profile == backend else f"{device} ({backend}: {profile})"

    def rotational(self) -> dict[tuple[str, str], object]:
        frame = self.table("devices")
        if frame.empty or "rotational" not in frame:
            return {}
        on_device = frame[frame["device"] != ""]
        return dict(zip(zip(on_device["host"], on_device["device"]), on_device["rotational"]))


def evaluate(rules: Sequence[Rule], tables: dict[str, pd.DataFrame],
             noise: statistics.Noise | None = None) -> tuple[list[dict], pd.DataFrame]:
    """Every rule of `rules` over a run's tables: (one status row per rule, one row per finding: COLUMNS). `noise`:
    the host's run-to-run noise when known; else the largest spread of the run's repeated configurations, if any."""
    noise = noise or statistics.noise_from_repetitions(metrics.run_time_by_placement(tables.get("workloads", pd.DataFrame())),
                                                       "this run's workloads")
    inputs = Inputs(tables, noise)
    statuses, rows = [], []
    for r in rules:
        if not _has(inputs, r.needs):
            statuses.append(status(r, NO_DATA, 0, "needs " + ", ".join(f"{n}.{c}" for n, c in r.needs)))
            continue
        found = list(r.check(inputs, r.thresholds))
        statuses.append(status(r, FIRED if found else QUIET, len(found)))
        rows += finding_rows(r, found, inputs.table("workloads"))
    return statuses, pd.DataFrame(rows, columns=COLUMNS)


def status(r: Rule, state: str, findings: int, why: str = "") -> dict:
    """A rule's status row (findings.json's `rules`): the rule, whether it fired, how often, what it lacked."""
    return {"rule": r.id, "title": r.title, "trigger": r.trigger, "thresholds": dict(r.thresholds),
            "levels": dict(r.levels), "action": r.action, "status": state, "findings": findings, "why": why}


def level(r: Rule, finding: Finding) -> str:
    """The finding's severity: low, and a level more at each of its rule's cut-points its measure reaches (rising
    cut-points: at or above; falling ones: at or below); low when the measure is missing. A rule whose levels have a
    `cap` (Dr. Elephant's gate of whether a task runs long enough to matter) grades that measure alike and the
    finding takes the lower of the two levels: a stage that is a small part of its workload's time stays low however
    far its own measure goes."""
    if not r.levels:
        return LEVELS[1]
    graded = _graded(finding.values.get(r.levels.get("measure")), r.levels["cut_points"])
    cap = r.levels.get("cap")
    if cap:
        graded = min(graded, _graded(finding.values.get(cap["measure"]), cap["cut_points"]))
    return LEVELS[graded]


def _graded(value, cut_points) -> int:
    """1 (low), and one more per cut-point after the first that `value` reaches; 1 when it is no finite number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return 1
    cuts = list(cut_points)
    rising = cuts[-1] >= cuts[0]
    return 1 + sum(value >= c if rising else value <= c for c in cuts[1:])


def finding_rows(r: Rule, found: list[Finding], workloads: pd.DataFrame | None = None) -> list[dict]:
    """The rows (COLUMNS) of rule `r`'s findings; `values` as strict JSON."""
    return [{"rule": r.id, "key": finding_key(r.id, f, workloads), "level": level(r, f), "title": r.title,
             "workload_id": f.workload_id,
             "host": f.host, "subject": f.subject, "evidence": f.evidence, "action": r.action,
             "recommendation": f.recommendation, "values": json.dumps(_finite(f.values), sort_keys=True)}
            for f in found]


def configuration_key(workload_id: str, workloads: pd.DataFrame | None) -> str:
    """A workload run's configuration, as the key names it: the workload and its sweep point, where HDFS and the
    local dirs were and the executor cores (`terasort engine=spark @ hdfs=hdd local=ssd`): the same for every
    repetition and every run of it; the workload run id itself when the run's table does not list it."""
    if workloads is None or workloads.empty or "workload_id" not in workloads:
        return workload_id
    rows = workloads[workloads["workload_id"] == workload_id]
    if rows.empty:
        return workload_id
    row = rows.iloc[0]
    sweep = row.get("sweep")
    cores = row.get("executor_cores")
    return (f"{row.get('workload', workload_id)}{' ' + sweep if isinstance(sweep, str) and sweep else ''} @ "
            f"hdfs={row.get('placement_hdfs')} local={row.get('placement_local')}"
            f"{'' if cores is None or pd.isna(cores) else f' P={int(cores)}'}")


def finding_key(rule_id: str, finding: Finding, workloads: pd.DataFrame | None = None) -> str:
    """What a script or a CI gate follows a finding by across runs and versions: the rule, the workload (its
    configuration), and where (the finding's place): `spill | terasort engine=spark @ hdfs=hdd local=ssd`,
    `device-saturated | tpch @ hdfs=hdd local=ssd | device=localhost:hdd`. Repetitions of a configuration share
    their findings' keys."""
    workload = finding.workload_key or configuration_key(finding.workload_id, workloads)
    return " | ".join([rule_id, workload, *(f"{kind}={value}" for kind, value in finding.place)])


def _has(inputs: Inputs, needs: tuple) -> bool:
    return all(not inputs.table(name).empty and column in inputs.table(name) for name, column in needs)


def _finite(values: dict) -> dict:
    """NaN and infinities as null: findings.json is strict JSON."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in values.items()}
