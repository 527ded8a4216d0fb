"""Storage sensitivity: a workload's run time on every placement of the backends at hand, measured where the runs
measured it and predicted by the I/O-aware model (iomodel) elsewhere, each prediction with the model's error as
measured on the same runs (docs/models.md, "Storage sensitivity").

The model predicts a stage's time; a run step also holds what no stage covers (the driver's start, scheduling
between jobs). A predicted run step is the predicted sum of stage times plus that remainder as measured (median over
the workload's measured runs): storage does not change it.

The error: each measured placement predicted from the workload's other measured placements (leave one placement
out), against its measured median. A workload measured on one placement has no error of its own; its predictions
carry the error of the workloads of the same runs that do have one, named.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .iomodel import Bandwidths, Configuration, Target, fit, predict

MEASURED, PREDICTED = "measured", "predicted"
COLUMNS = ["workload", "sweep", "cores", "nodes", "hdfs", "local", "how", "run_s", "min_s", "max_s", "runs",
           "predicted_s", "error_pct", "error_median_pct", "error_worst_pct", "error_basis"]


@dataclass(frozen=True)
class Group:
    """The measured runs of one workload (workload, sweep) at one P and N, over any placements."""

    workload: str
    sweep: str
    cores: int
    nodes: int


def _groups(configs: list[Configuration]) -> dict[Group, list[Configuration]]:
    groups: dict[Group, list[Configuration]] = {}
    for config in configs:
        groups.setdefault(Group(config.workload, config.sweep, config.cores, config.nodes), []).append(config)
    return groups


def _stage_sum(config: Configuration) -> float:
    return float(config.stages["duration_s"].sum())


def predicted_run_s(models: dict, configs: list[Configuration], hdfs: str, local: str,
                    bandwidths: Bandwidths) -> float:
    """The run step on a placement: the model's stage times there plus the measured time outside stages."""
    group = configs[0]
    stages = predict(models, Target(hdfs, local, group.cores, group.nodes), bandwidths)
    outside = float(np.median([c.run_s - _stage_sum(c) for c in configs]))
    return float(stages["predicted_s"].sum()) + outside


def _placements(configs: list[Configuration]) -> dict[tuple[str, str], list[Configuration]]:
    by_placement: dict[tuple[str, str], list[Configuration]] = {}
    for config in configs:
        by_placement.setdefault((config.hdfs, config.local), []).append(config)
    return by_placement


def leave_one_out_errors(configs: list[Configuration], bandwidths: Bandwidths) -> list[dict]:
    """Each measured placement of one group predicted from the group's other placements: (placement, measured
    median, predicted, error %, the workload runs fitted). Empty with fewer than two placements."""
    placements = _placements(configs)
    errors = []
    for (hdfs, local), measured in placements.items():
        others = [c for c in configs if (c.hdfs, c.local) != (hdfs, local)]
        if not others:
            continue
        key = others[0].key
        predicted = predicted_run_s({key: fit(others, bandwidths)[key]}, others, hdfs, local, bandwidths)
        actual = float(np.median([c.run_s for c in measured]))
        errors.append({"hdfs": hdfs, "local": local, "measured_s": actual, "predicted_s": predicted,
                       "error_pct": 100 * (predicted - actual) / actual,
                       "fitted": sorted(f"{c.run_id} {c.workload_id}" for c in others)})
    return errors


def _basis(group: Group, configs: list[Configuration]) -> str:
    placements = len(_placements(configs))
    runs = sorted({c.run_id for c in configs})
    return (f"{group.workload}{' ' + group.sweep if group.sweep else ''}: each of its {placements} measured "
            f"placements predicted from the others (runs {', '.join(runs)})")


def storage_sensitivity(configs: list[Configuration], profiles: list[str], bandwidths: Bandwidths) -> pd.DataFrame:
    """One row per workload group and placement (HDFS on each of `profiles` x local dirs on each): the run step
    `run_s`, `how` = measured (median, min, max, runs; `predicted_s` and `error_pct`: that placement predicted from
    the group's others, when it has others) or predicted (`predicted_s` = `run_s`). Every row carries the group's
    model error (median and worst absolute %, `error_basis`: which runs it was measured on); a workload measured on
    one placement carries the pooled error of the groups that have their own."""
    groups = _groups([c for c in configs if not np.isnan(c.run_s)])
    own = {group: leave_one_out_errors(members, bandwidths) for group, members in groups.items()}
    pooled = [e for errors in own.values() for e in errors]
    pooled_basis = "; ".join(_basis(g, groups[g]) for g, e in own.items() if e)
    rows = []
    for group, members in groups.items():
        errors, basis = (own[group], _basis(group, members)) if own[group] else (pooled, pooled_basis)
        absolute = [abs(e["error_pct"]) for e in errors]
        error = {"error_median_pct": float(np.median(absolute)) if absolute else np.nan,
                 "error_worst_pct": float(max(absolute)) if absolute else np.nan,
                 "error_basis": basis if absolute else "not measured: no workload of these runs was measured on "
                                                       "two placements"}
        placements = _placements(members)
        left_out = {(e["hdfs"], e["local"]): e for e in own[group]}
        models = None
        for hdfs, local in itertools.product(profiles, repeat=2):
            base = {"workload": group.workload, "sweep": group.sweep, "cores": group.cores, "nodes": group.nodes,
                    "hdfs": hdfs, "local": local, **error}
            measured = placements.get((hdfs, local))
            if measured:
                times = [c.run_s for c in measured]
                check = left_out.get((hdfs, local), {})
                rows.append({**base, "how": MEASURED, "run_s": float(np.median(times)), "min_s": min(times),
                             "max_s": max(times), "runs": len(times), "predicted_s": check.get("predicted_s", np.nan),
                             "error_pct": check.get("error_pct", np.nan)})
                continue
            models = models or {members[0].key: fit(members, bandwidths)[members[0].key]}
            predicted = predicted_run_s(models, members, hdfs, local, bandwidths)
            rows.append({**base, "how": PREDICTED, "run_s": predicted, "min_s": np.nan, "max_s": np.nan, "runs": 0,
                         "predicted_s": predicted, "error_pct": np.nan})
    return pd.DataFrame(rows, columns=COLUMNS)
