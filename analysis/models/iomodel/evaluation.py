"""How far a prediction is from the measured stage times: per stage, per workload and over all, and the one
fit -> predict -> errors -> summary every caller runs (evaluate)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...stages import STAGE_IDENTITY
from .bandwidths import Bandwidths
from .configurations import Configuration
from .fit_predict import Target, fit, predict

# Below this measured time a stage is mostly scheduling and JVM warm-up (TPC-H SF 0.1: 40-300 ms stages whose
# jitter alone is tens of percent); the error figures are also given over the stages at or above it.
MIN_STAGE_S = 1.0


def measured_stage_times(configs: list[Configuration], target: Target) -> pd.DataFrame:
    """Median stage seconds of the configurations that ran exactly the target (same profiles, P and N), per
    stage identity; `measured_stage_id` is the stage's id in the first of them."""
    frames = [c.stages[STAGE_IDENTITY + ["stage_id", "duration_s"]].assign(workload=c.workload, sweep=c.sweep)
              for c in configs if (c.hdfs, c.local, c.cores, c.nodes) ==
              (target.hdfs, target.local, target.cores, target.nodes)]
    if not frames:
        return pd.DataFrame(columns=["workload", "sweep", *STAGE_IDENTITY, "measured_stage_id", "measured_s",
                                     "measured_runs"])
    joined = pd.concat(frames, ignore_index=True)
    return (joined.groupby(["workload", "sweep", *STAGE_IDENTITY], dropna=False)
            .agg(measured_stage_id=("stage_id", "first"), measured_s=("duration_s", "median"),
                 measured_runs=("duration_s", "size")).reset_index())


def with_errors(predicted: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """Predicted joined with measured by stage identity; error_pct = (predicted - measured) / measured x 100."""
    if predicted.empty:
        return predicted
    joined = predicted.merge(measured, on=["workload", "sweep", *STAGE_IDENTITY], how="left") \
        if not measured.empty else predicted.assign(measured_stage_id=np.nan, measured_s=np.nan, measured_runs=0)
    joined["error_pct"] = 100.0 * (joined["predicted_s"] - joined["measured_s"]) / joined["measured_s"]
    return joined


def stage_label(row) -> str:
    """`app 1 s16`, with the measured run's stage id when there is one (the one to look up in its report)."""
    measured = row.get("measured_stage_id")
    stage_id = row["stage_id"] if measured is None or pd.isna(measured) else measured
    return f"app {int(row['app'])} s{int(stage_id)}"


def error_figures(group: pd.DataFrame) -> dict:
    """Over the stages of `group` that have a measurement: how many, the median and worst absolute stage error
    and the time-weighted error sum |predicted - measured| / sum measured (%); None where there are none."""
    have = group.dropna(subset=["measured_s"])
    if have.empty:
        return {"stages": 0, "median_abs_error_pct": None, "worst_abs_error_pct": None, "weighted_error_pct": None}
    absolute = have["error_pct"].abs()
    return {"stages": int(len(have)), "median_abs_error_pct": float(absolute.median()),
            "worst_abs_error_pct": float(absolute.max()),
            "weighted_error_pct": float(100 * (have["predicted_s"] - have["measured_s"]).abs().sum()
                                        / have["measured_s"].sum())}


def error_summary(joined: pd.DataFrame, min_stage_s: float = MIN_STAGE_S) -> dict:
    """Median absolute stage error and the worst stage (%), per workload and over all; app = sum of stages.
    Per workload the figures over every stage (`all`) and over the stages measured at `min_stage_s` or longer
    (`long`), each with the number of stages it covers."""
    have = joined.dropna(subset=["measured_s"]) if "measured_s" in joined else joined.iloc[0:0]
    summary = {"stages_compared": int(len(have)), "min_stage_s": min_stage_s}
    if have.empty:
        return summary
    absolute = have["error_pct"].abs()
    worst = have.loc[absolute.idxmax()]
    summary.update(median_abs_error_pct=float(absolute.median()), worst_stage_error_pct=float(worst["error_pct"]),
                   worst_stage=f"{worst['workload']} {stage_label(worst)} {worst['name']}")
    apps = []
    for (workload, sweep), group in have.groupby(["workload", "sweep"], dropna=False):
        predicted, measured = group["predicted_s"].sum(), group["measured_s"].sum()
        apps.append({"workload": workload, "sweep": sweep, "predicted_s": float(predicted),
                     "measured_s": float(measured), "error_pct": float(100 * (predicted - measured) / measured),
                     "median_abs_stage_error_pct": float(group["error_pct"].abs().median()),
                     "all": error_figures(group), "long": error_figures(group[group["measured_s"] >= min_stage_s])})
    summary["workloads"] = apps
    return summary


@dataclass
class Evaluation:
    """The model fitted on `profile`, its prediction of one target and how far off it was."""

    models: dict             # (workload, sweep) -> [StageModel]
    stages: pd.DataFrame     # predict() joined with the measured stage times (with_errors)
    summary: dict            # error_summary


def evaluate(profile: list[Configuration], target: Target, bandwidths: Bandwidths,
             measured: list[Configuration] = (), min_stage_s: float = MIN_STAGE_S,
             models: dict | None = None) -> Evaluation:
    """Fit on `profile` (or take `models` fitted already), predict `target`, compare with the `measured`
    configurations of exactly that target: the one fit -> predict -> errors -> summary of every caller (the
    report's model section, `predict`, experiments/validate_model)."""
    models = fit(profile, bandwidths) if models is None else models
    joined = with_errors(predict(models, target, bandwidths), measured_stage_times(list(measured), target))
    return Evaluation(models, joined, error_summary(joined, min_stage_s))
