"""fio curves across runs: one series per run and backend, and each series' ratio to the baseline's."""
from __future__ import annotations

import pandas as pd

from .. import metrics
from .runs import Run


def fio_series(runs: list[Run]) -> pd.DataFrame:
    """fio curves of every run, one series per (run, backend), hosts averaged; `series` = profile + run label."""
    frames = []
    for run in runs:
        curves = metrics.fio_curves(run.tables["fio"])
        if curves.empty:
            continue
        curves = (curves.groupby(["backend", "rw", "direction", "block_size_bytes"], observed=True)
                  [["bandwidth_bytes_per_s", "iops"]].mean().reset_index())
        curves["profile"] = curves["backend"].map(run.profile)
        curves["run_id"], curves["run_label"] = run.run_id, run.label
        frames.append(curves)
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    one_run = frame["run_id"].nunique() == 1
    frame["series"] = frame["profile"] if one_run else frame["profile"] + " — " + frame["run_label"]
    return frame


def fio_ratios(series: pd.DataFrame, runs: list[Run]) -> tuple[pd.DataFrame, str]:
    """Each series' bandwidth and IOPS over the baseline series' at the same pattern and block size.
    Baseline: the first run's HDFS backend (the data path the baseline configuration read from)."""
    if series.empty:
        return pd.DataFrame(), ""
    first = series[series["run_id"] == series["run_id"].iloc[0]]
    hdfs = ((runs[0].manifest.get("storage") or {}).get("placement") or {}).get("hdfs")
    baseline = first[first["backend"] == hdfs]["series"]
    baseline = baseline.iloc[0] if not baseline.empty else first["series"].iloc[0]
    keys = ["rw", "direction", "block_size_bytes"]
    base = series[series["series"] == baseline][keys + ["bandwidth_bytes_per_s", "iops"]]
    ratios = series[series["series"] != baseline].merge(base, on=keys, how="left", suffixes=("", "_baseline"))
    ratios["bandwidth_ratio"] = ratios["bandwidth_bytes_per_s"] / ratios["bandwidth_bytes_per_s_baseline"]
    ratios["iops_ratio"] = ratios["iops"] / ratios["iops_baseline"]
    return ratios.dropna(subset=["bandwidth_ratio"]).reset_index(drop=True), baseline
