"""Storage sensitivity: a workload's run time on every placement of the backends at hand, measured where the runs
measured it and predicted by the I/O-aware model (iomodel) elsewhere, each prediction with the model's error as
measured on the same runs (docs/models.md, "Storage sensitivity").

The model predicts a stage's time; a run step also holds what no stage covers (the driver's start, scheduling
between jobs). A predicted run step is the predicted sum of stage times plus that remainder as measured (median over
the workload's measured runs): storage does not change it.

The error: each measured placement predicted from the workload's other measured placements (leave one placement
out), against its measured median. A workload measured on one placement has no error of its own; its predictions
carry the error of the workloads of the same runs that do have one, named.

Two models, each number labelled with the one that made it (`model`):

- FIT, a workload measured on several placements: the I/O-aware model fitted on them (iomodel.fit), its error by
  leaving one placement out, as above.
- FIO, a workload measured on one placement only, where a fit has no second run to separate the scale term from
  the I/O wait: per stage, the Monotasks resource times of the measured run (models.bottleneck.ideal_times: CPU =
  executor CPU time / (N * P), disk = the busiest device's D / fio BW at the traced request size, network) and the
  same with each path's bytes at the other backend's fio throughput, CPU and network unchanged; the stage's time
  there is its measured time x the new maximum / the old (Monotasks §6.3, bottleneck.what_if). Its error is
  measured by predicting each measured placement of the multi-placement workloads from ONE other placement; with
  none in the runs at hand, the figure measured on the recorded matrix (RECORDED_FIO_ERROR), named as such.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..formatting import format_bytes, number
from ..stages import STAGE_IDENTITY
from .bottleneck import ideal_times
from .iomodel.bandwidths import Bandwidths
from .iomodel.configurations import Configuration
from .iomodel.fit_predict import Target, fit, predict
from .iomodel.formulas import PATHS

MEASURED, PREDICTED = "measured", "predicted"
# Which model made a prediction (findings.json's `model`), and how the pages name it.
FIT, FIO = "io-aware-fit", "fio-resources"
MODEL_NAMES = {FIT: "the I/O-aware model fitted on the workload's measured placements",
               FIO: "the fio resource model from the one measured placement"}
COLUMNS = ["workload", "sweep", "cores", "nodes", "hdfs", "local", "how", "run_s", "min_s", "max_s", "runs",
           "predicted_s", "error_pct", "error_median_pct", "error_worst_pct", "error_basis", "model", "inputs"]
# The fio resource model's error measured on the recorded placement matrix (tests/fixtures/runs/terasort-matrix:
# TeraSort on Spark, tiny, HDFS and local dirs on the local cluster's emulated hdd and ssd, one run each; the fio
# table of the recorded fio-sweep run of the same inventory, 20261121-195701-local, as the matrix has none): each
# placement predicted from each other one alone, 12 predictions. Used only where the runs at hand measured no
# workload on two placements, for the profiles it was measured on; tests/analysis/models/test_fio_sensitivity.py
# recomputes it from the recorded runs.
RECORDED_FIO_ERROR = {"median_pct": 11.8, "worst_pct": 45.3, "profiles": ("hdd", "ssd"),
                      "basis": "not measured on these runs; measured on the recorded matrix run 20261121-201144-local "
                               "(TeraSort tiny, 4 placements of hdd and ssd, each predicted from each other one; fio "
                               "of run 20261121-195701-local) on 2026-11-26, docs/models.md"}


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


# ---------------------------------------------------------------- one measured placement: the fio resource model

class FioModel:
    """The fio resource model over one set of fio curves. Each configuration's stage models (fitted on it alone) are
    fitted once per instance: the sensitivity table predicts every placement from them, and the model's error
    predicts every measured placement from every other one."""

    def __init__(self, bandwidths: Bandwidths):
        self.bandwidths = bandwidths
        self._fitted: dict[int, tuple[Configuration, dict]] = {}   # id -> (the configuration, kept alive; models)

    def _own_models(self, config: Configuration) -> dict:
        if id(config) not in self._fitted:
            self._fitted[id(config)] = (config, {m.identity: m for m in fit([config], self.bandwidths)[config.key]})
        return self._fitted[id(config)][1]

    def stage_times(self, config: Configuration, hdfs: str, local: str) -> pd.DataFrame:
        """fio_stage_times."""
        models, bandwidths = self._own_models(config), self.bandwidths
        rows = []
        for stage in config.stages.to_dict("records"):
            model = models[tuple(stage[k] for k in STAGE_IDENTITY)]
            old, _, _ = ideal_times(config, stage, model, config.hdfs, config.local, bandwidths)
            new, _, paths = ideal_times(config, stage, model, hdfs, local, bandwidths)
            measured = float(stage["duration_s"])
            rows.append({**{k: stage[k] for k in STAGE_IDENTITY}, "stage_id": int(stage["stage_id"]),
                         "measured_s": measured, **{f"{r}_measured_s": v for r, v in old.items()},
                         **{f"{r}_s": v for r, v in new.items()}, "bound": max(new, key=new.get),
                         "predicted_s": measured * max(new.values()) / max(old.values()) if max(old.values()) > 0
                         else measured, "paths": paths})
        return pd.DataFrame(rows)

    def run_s(self, measured: list[Configuration], hdfs: str, local: str) -> float:
        """fio_run_s."""
        return float(np.median([self.stage_times(c, hdfs, local)["predicted_s"].sum() + c.run_s - _stage_sum(c)
                                for c in measured]))

    def inputs(self, config: Configuration, hdfs: str, local: str) -> str:
        """fio_inputs."""
        here = self.stage_times(config, config.hdfs, config.local)
        there = self.stage_times(config, hdfs, local)
        totals: dict[str, dict] = {}
        for side, frame in (("from", here), ("to", there)):
            for paths in frame["paths"]:
                for path in paths:
                    t = totals.setdefault(path["path"], {"data": 0.0, "requests": 0.0, "from": 0.0, "to": 0.0})
                    t[side] += path["time_s"]
                    t.setdefault(f"{side}_backend", path["backend"])
                    t.setdefault("sources", set()).add(path["bandwidth_source"])
                    if side == "from":
                        t["data"] += path["data_bytes"]
                        t["requests"] += path["data_bytes"] / path["request_bytes"]
        parts, sources = [], set()
        for name, t in totals.items():
            pattern = PATHS[name][3]
            per_s = {side: t["data"] / (config.nodes * t[side]) if t[side] > 0 else np.nan for side in ("from", "to")}
            parts.append(f"{PATH_NAMES[name]} {format_bytes(t['data'])} in {format_bytes(t['data'] / t['requests'])} "
                         f"requests: {t['from_backend']} {pattern} {format_bytes(per_s['from'])}/s -> {t['to_backend']} "
                         f"{pattern} {format_bytes(per_s['to'])}/s")
            sources |= t["sources"]
        cpu = float(here["cpu_s"].sum()) if not here.empty else 0.0
        disk = "; ".join(parts) if parts else "no I/O reached a device"
        return (f"fio ({', '.join(sorted(sources)) or 'no bandwidth used'}): {disk}; CPU {number(cpu, 's', 1)} "
                f"(executor CPU / (N x P), over the stages) unchanged; measured {config.run_id} {config.workload_id}")

    def errors(self, configs: list[Configuration]) -> list[dict]:
        """fio_errors."""
        errors = []
        for group, members in _groups([c for c in configs if not np.isnan(c.run_s)]).items():
            placements = _placements(members)
            for (source, from_runs), (target, to_runs) in itertools.permutations(placements.items(), 2):
                predicted = self.run_s(from_runs, *target)
                actual = float(np.median([c.run_s for c in to_runs]))
                errors.append({"workload": group.workload, "sweep": group.sweep, "source": source, "target": target,
                               "measured_s": actual, "predicted_s": predicted,
                               "error_pct": 100 * (predicted - actual) / actual,
                               "runs": sorted({c.run_id for c in members})})
        return errors


def fio_stage_times(config: Configuration, hdfs: str, local: str, bandwidths: Bandwidths) -> pd.DataFrame:
    """Per stage of one measured configuration: its measured time, its resource times on its own placement
    (`*_measured_s`) and with HDFS on `hdfs` and the local dirs on `local` (`cpu_s`, `disk_s`, `network_s`; the
    same device bytes and request sizes at the other backends' fio throughput), the bound there and the predicted
    time = measured x max(there) / max(measured) (Monotasks §6.3); `paths` = io_terms' paths there."""
    return FioModel(bandwidths).stage_times(config, hdfs, local)


def fio_run_s(measured: list[Configuration], hdfs: str, local: str, bandwidths: Bandwidths) -> float:
    """The run step on a placement from the runs of one measured placement: per run, its predicted stage times plus
    its time outside stages as measured; the median over the runs."""
    return FioModel(bandwidths).run_s(measured, hdfs, local)


PATH_NAMES = {"hdfs_read": "HDFS read", "hdfs_write": "HDFS write", "shuffle_read": "shuffle read",
              "shuffle_write": "shuffle write", "spill_read": "spill read", "spill_write": "spill write"}


def fio_inputs(config: Configuration, hdfs: str, local: str, bandwidths: Bandwidths) -> str:
    """What a fio-model prediction used, in words: per I/O path that reached a device, its bytes over the stages, the
    mean request size and the effective fio throughput (bytes / seconds over the stages) on the measured backend and
    on the target one, the fio pattern, where the figures come from; the CPU seconds, unchanged."""
    return FioModel(bandwidths).inputs(config, hdfs, local)


def fio_errors(configs: list[Configuration], bandwidths: Bandwidths) -> list[dict]:
    """The fio resource model's error on the groups measured on several placements: each measured placement
    predicted from each OTHER placement alone (its runs), against its measured median. One dict per (source,
    target) pair: placements, measured, predicted, error %, the runs."""
    return FioModel(bandwidths).errors(configs)


def _fio_error(errors: list[dict], group_profiles: set[str]) -> dict:
    """The fio model's error for a one-placement group: measured on the multi-placement groups of these runs
    (`errors`, FioModel.errors), else the recorded figure when the group's profiles are those it was measured on,
    else not measured."""
    if errors:
        absolute = [abs(e["error_pct"]) for e in errors]
        named = sorted({f"{e['workload']}{' ' + e['sweep'] if e['sweep'] else ''} (runs {', '.join(e['runs'])})"
                        for e in errors})
        return {"error_median_pct": float(np.median(absolute)), "error_worst_pct": float(max(absolute)),
                "error_basis": f"fio model: each measured placement of {'; '.join(named)} predicted from each other "
                               f"one alone ({len(errors)} predictions)"}
    if group_profiles <= set(RECORDED_FIO_ERROR["profiles"]):
        return {"error_median_pct": RECORDED_FIO_ERROR["median_pct"], "error_worst_pct": RECORDED_FIO_ERROR["worst_pct"],
                "error_basis": "fio model: " + RECORDED_FIO_ERROR["basis"]}
    return {"error_median_pct": np.nan, "error_worst_pct": np.nan,
            "error_basis": "not measured: no workload of these runs was measured on two placements"}


def storage_sensitivity(configs: list[Configuration], profiles: list[str], bandwidths: Bandwidths) -> pd.DataFrame:
    """One row per workload group and placement (HDFS on each of `profiles` x local dirs on each): the run step
    `run_s`, `how` = measured (median, min, max, runs; `predicted_s` and `error_pct`: that placement predicted from
    the group's others, when it has others) or predicted (`predicted_s` = `run_s`). Every row carries the group's
    model error (median and worst absolute %, `error_basis`: which runs it was measured on) and `model`: FIT for a
    group measured on several placements, FIO for one measured on one placement only (`inputs`: what its
    prediction used, fio_inputs)."""
    groups = _groups([c for c in configs if not np.isnan(c.run_s)])
    own = {group: leave_one_out_errors(members, bandwidths) for group, members in groups.items()}
    fio = FioModel(bandwidths)
    fio_model_errors = None   # measured once, for the first group measured on one placement
    rows = []
    for group, members in groups.items():
        placements = _placements(members)
        one = len(placements) == 1
        if one:
            fio_model_errors = fio.errors(configs) if fio_model_errors is None else fio_model_errors
            error = _fio_error(fio_model_errors, set(profiles) | {p for pair in placements for p in pair})
        else:
            absolute = [abs(e["error_pct"]) for e in own[group]]
            error = {"error_median_pct": float(np.median(absolute)), "error_worst_pct": float(max(absolute)),
                     "error_basis": _basis(group, members)}
        left_out = {(e["hdfs"], e["local"]): e for e in own[group]}
        models = None
        for hdfs, local in itertools.product(profiles, repeat=2):
            base = {"workload": group.workload, "sweep": group.sweep, "cores": group.cores, "nodes": group.nodes,
                    "hdfs": hdfs, "local": local, **error, "model": FIO if one else FIT, "inputs": ""}
            measured = placements.get((hdfs, local))
            if measured:
                times = [c.run_s for c in measured]
                check = left_out.get((hdfs, local), {})
                rows.append({**base, "how": MEASURED, "run_s": float(np.median(times)), "min_s": min(times),
                             "max_s": max(times), "runs": len(times), "predicted_s": check.get("predicted_s", np.nan),
                             "error_pct": check.get("error_pct", np.nan)})
                continue
            if one:
                predicted = fio.run_s(members, hdfs, local)
                base["inputs"] = fio.inputs(members[0], hdfs, local)
            else:
                models = models or {members[0].key: fit(members, bandwidths)[members[0].key]}
                predicted = predicted_run_s(models, members, hdfs, local, bandwidths)
            rows.append({**base, "how": PREDICTED, "run_s": predicted, "min_s": np.nan, "max_s": np.nan, "runs": 0,
                         "predicted_s": predicted, "error_pct": np.nan})
    return pd.DataFrame(rows, columns=COLUMNS)
