"""Times per configuration (workload run steps, Spark stages): medians over measured repetitions, the speedup
against the baseline configuration and whether the statistics tell it from noise."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import metrics, statistics
from .configurations import configuration_order, with_configuration
from .runs import Run


def _speedup_table(spread: pd.DataFrame, keys: list[str], order: list[str],
                   noise: statistics.Noise | None = None) -> pd.DataFrame:
    """Tidy table: one row per key and configuration with median/min/max/runs, the spread flag and the
    speedup = baseline median / this median (> 1: faster than the baseline, the first configuration), and whether
    that difference is significant (analysis.statistics: `verdict`, the interval of the speedup, why, and the noise
    level it had to exceed). `noise`: the host's, when known; else the largest spread of the configurations
    repeated in `spread` itself, when any is."""
    if spread.empty:
        return pd.DataFrame()
    noise = noise or statistics.noise_from_repetitions(spread)
    baseline = order[0]
    frame = spread.copy()
    base = frame[frame["configuration"] == baseline].set_index(keys)
    frame = frame.join(base["median"].rename("baseline_median_s"), on=keys)
    frame = frame.join(base["samples"].rename("baseline_samples"), on=keys)
    frame["speedup_vs_baseline"] = frame["baseline_median_s"] / frame["median"]
    frame["spread_flag"] = metrics.wide_spread(frame["median"], frame["min"], frame["max"])
    verdicts = []
    for row in frame.to_dict("records"):
        if row["configuration"] == baseline:
            verdicts.append((statistics.BASELINE, math.nan, math.nan, "the baseline"))
            continue
        if not isinstance(row["baseline_samples"], (list, tuple, np.ndarray)):
            verdicts.append((statistics.CANNOT_TELL, math.nan, math.nan, f"not run in the baseline, {baseline}"))
            continue
        result = statistics.compare(row["baseline_samples"], row["samples"], noise)
        verdicts.append((result.verdict, result.low, result.high, result.reason))
    frame[["verdict", "speedup_ci_low", "speedup_ci_high", "verdict_reason"]] = pd.DataFrame(
        verdicts, index=frame.index, columns=["verdict", "speedup_ci_low", "speedup_ci_high", "verdict_reason"])
    frame["noise_pct"] = noise.pct if noise else math.nan
    frame["noise_source"] = noise.source if noise else ""
    frame = frame.drop(columns=["baseline_samples"])
    frame = frame.rename(columns={"median": "median_s", "min": "min_s", "max": "max_s"})
    frame["configuration"] = pd.Categorical(frame["configuration"], categories=order, ordered=True)
    return frame.sort_values(keys + ["configuration"], ignore_index=True)


def workload_times(runs: list[Run], noise: statistics.Noise | None = None) -> tuple[pd.DataFrame, list[str]]:
    frame = with_configuration(runs, [metrics.run_time_by_placement(r.tables["workloads"]) for r in runs])
    order = configuration_order(frame, runs)
    keys = ["workload", "sweep"]
    return _speedup_table(frame, keys, order, noise), order


def stage_times(runs: list[Run], order: list[str], noise: statistics.Noise | None = None) -> pd.DataFrame:
    frames = [metrics.stage_time_by_cores(r.tables["stages"], r.tables["workloads"]) for r in runs]
    frame = with_configuration(runs, frames)
    if frame.empty or not order:
        return pd.DataFrame()
    return _speedup_table(frame, ["workload", "sweep", "app", "stage_id", "name"],
                          order + [c for c in configuration_order(frame, runs) if c not in order], noise)
