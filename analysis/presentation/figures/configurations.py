"""Configurations side by side: stage time against executor cores per node, and grouped bars of a quantity per
workload and configuration."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ...formatting import MB
from .layout import png, stamp


def cores_figures(by_cores: pd.DataFrame, run_id: str) -> list[dict]:
    """Per workload configuration: stage seconds (metrics.stage_time_by_cores) against executor cores per node
    (P), one line per stage (the longest ones), as in the I/O-aware model paper's scaling runs."""
    figures = []
    if by_cores["executor_cores"].nunique() < 2:
        return figures
    keys = ["workload", "sweep", "placement_hdfs", "placement_local"]
    for key, group in by_cores.dropna(subset=["executor_cores"]).groupby(keys, dropna=False):
        label = " ".join(str(k) for k in key[:2] if isinstance(k, str) and k)
        fig, ax = plt.subplots(figsize=(7, 3.6))
        longest = group.groupby(["app", "stage_id", "name"])["median"].max().nlargest(8).index
        for app, stage_id, name in longest:
            line = group[(group["app"] == app) & (group["stage_id"] == stage_id) & (group["name"] == name)]
            line = line.sort_values("executor_cores")
            ax.plot(line["executor_cores"].astype(int), line["median"], marker="o",
                    label=f"app {app} s{stage_id}: {str(name)[:40]}")
        ax.set_xlabel("executor cores per node, P")
        ax.set_ylabel("stage time (s), median")
        ax.set_xticks(sorted(group["executor_cores"].dropna().astype(int).unique()))
        ax.set_title(f"{label}: stage time against P (hdfs={key[2]}, local={key[3]})", fontsize=9)
        ax.legend(fontsize=6, loc="best")
        stamp(fig, [run_id])
        figures.append({"workload": label, "png": png(fig),
                        "caption": f"{len(longest)} longest stages; medians over measured repetitions"})
    return figures


def configuration_bars(table: pd.DataFrame, value: str, ylabel: str, title: str, run_ids: list[str],
                       group: str = "workload") -> str | None:
    """Grouped bars of `value` (bytes or bytes/s, drawn in MB): one group per `group` value and sweep point, one
    bar per configuration."""
    data = table.dropna(subset=[value])
    if data.empty:
        return None
    data = data.assign(_group=data[group].astype(str) + data["sweep"].map(lambda s: f" ({s})" if s else ""))
    pivot = data.pivot_table(index="_group", columns="configuration", values=value, aggfunc="median", observed=True)
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(pivot) * max(1, pivot.shape[1] / 2)), 4))
    width = 0.8 / max(pivot.shape[1], 1)
    for i, config in enumerate(pivot.columns):
        ax.bar(np.arange(len(pivot)) + i * width - 0.4 + width / 2, pivot[config].to_numpy() / MB, width=width,
               label=str(config))
    ax.set_xticks(np.arange(len(pivot)), pivot.index, rotation=20, fontsize=7, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    stamp(fig, run_ids)
    return png(fig)
