"""Heat maps of bytes over time (Darshan): per workload run, bytes dispatched per time bin, device and direction,
the stages and phases marked; one per run's workload run, or one per configuration across runs."""
from __future__ import annotations

import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ... import access_patterns
from ...formatting import count, format_bytes, number, utc
from .layout import RunView, plain_log_labels, png, span_marks, stamp, workload_spans

HEATMAP_OPS = ("read", "write")


def heatmap_panel(ax, grid: pd.DataFrame, devices: list[tuple[str, str]], edges: np.ndarray, t0: float, norm,
                  labels: dict[tuple[str, str], str], title: str):
    """One direction's bytes per time bin (access_patterns.bytes_heatmap rows of one workload and op) as a heat
    map: a row per (host, device) of `devices`, a column per bin of `edges` (epoch s), empty bins blank; returns
    the mesh for the colour bar."""
    width = edges[1] - edges[0]
    cells = np.zeros((len(devices), len(edges) - 1))
    row_of = {device: row for row, device in enumerate(devices)}
    for cell in grid.itertuples():
        cells[row_of[(cell.host, cell.device)], int(round((cell.bin_start_s - edges[0]) / width))] += cell.bytes
    mesh = ax.pcolormesh(edges - t0, np.arange(len(devices) + 1), np.ma.masked_equal(cells, 0) / 2**20, norm=norm,
                         cmap="viridis", rasterized=True)
    ax.set_yticks(np.arange(len(devices)) + 0.5, [labels.get(d, f"{d[1]} on {d[0]}") for d in devices], fontsize=7)
    ax.invert_yaxis()
    ax.set_title(title, fontsize=9)
    return mesh


def heatmap_figure(grid: pd.DataFrame, marks: pd.DataFrame, labels: dict[tuple[str, str], str], title: str,
                   run_ids: list[str]) -> dict:
    """One workload run's heat map: bytes dispatched per time bin, host and device of `grid`
    (access_patterns.bytes_heatmap rows of that workload run), reads over writes on one colour scale (MiB per bin,
    logarithmic), the Spark stage attempts and MapReduce phases of `marks` (metrics.phase_spans of that workload
    run) shaded with their start lines; devices named by `labels`. Returns its PNG, bin width and caption."""
    width = float(grid["bin_s"].iloc[0])
    first, last = grid["bin_start_s"].min(), grid["bin_start_s"].max()
    edges = first + width * np.arange(int(round((last - first) / width)) + 2)
    t0 = min([first, *marks["start_s"].tolist()])
    devices = sorted(set(zip(grid["host"], grid["device"])))
    positive = grid.loc[grid["bytes"] > 0, "bytes"] / 2**20
    low, high = float(positive.min()), float(positive.max())
    norm = matplotlib.colors.LogNorm(vmin=low if low < high else high / 10, vmax=high)
    fig, axes = plt.subplots(2, 1, figsize=(11, 1.6 + 0.45 * len(devices) * 2), sharex=True, squeeze=False)
    for ax, op in zip(axes[:, 0], HEATMAP_OPS):
        mesh = heatmap_panel(ax, grid[grid["op"] == op], devices, edges, t0, norm, labels,
                             f"{op}s: bytes dispatched per {width:g} s bin")
        span_marks(ax, marks, t0)
        ax.set_xlim(0, max([edges[-1], *marks["end_s"].tolist()]) - t0)
    axes[-1][0].set_xlabel(f"time since {utc(t0)} (s)")
    plain_log_labels(fig.colorbar(mesh, ax=axes[:, 0].tolist(), label=f"MiB per {width:g} s bin (log scale)").ax.yaxis)
    fig.suptitle(title)
    stamp(fig, run_ids)
    totals = grid.groupby("op")[["requests", "bytes"]].sum()
    moved = ", ".join(f"{op}s: {count(totals.at[op, 'requests'], 'request')}, "
                      f"{format_bytes(totals.at[op, 'bytes'])}" for op in HEATMAP_OPS if op in totals.index)
    return {"png": png(fig), "bin": number(width, "s", 1),
            "caption": moved + "; " + (f"{len(marks)} stage/phase spans marked" if len(marks) else
                                       "no Spark stages or MapReduce phases recorded for this workload")}


def heatmap_figures(requests: pd.DataFrame, spans: pd.DataFrame, device_backends: dict[tuple[str, str], str],
                    run_id: str) -> list[dict]:
    """Per traced workload of one run: its heat map (heatmap_figure), devices named with their backends."""
    figures = []
    for workload_id, per_workload in access_patterns.bytes_heatmap(requests).groupby("workload_id", sort=False):
        labels = {(h, d): f"{d}" + (f" ({device_backends[(h, d)]})" if (h, d) in device_backends else "") + f" on {h}"
                  for h, d in set(zip(per_workload["host"], per_workload["device"]))}
        figures.append({"workload_id": workload_id, **heatmap_figure(
            per_workload, workload_spans(spans, workload_id), labels,
            f"block I/O heat map during {workload_id} — run {run_id}", [run_id])})
    return figures


def heatmap_figures_across(heatmap: pd.DataFrame, runs: list[RunView]) -> list[dict]:
    """The comparison's heat maps (across_runs.io_patterns.io_heatmap): per workload and sweep key, one heat map per
    configuration (heatmap_figure), of its first measured workload run, devices named with their storage profiles,
    that run's stages and phases marked. Returns per workload {workload, sweep, figures: [{configuration, run_id,
    workload_id, repetitions, png, bin, caption}]}, in the table's order."""
    sections = []
    if heatmap.empty:
        return sections
    by_run = {r.run_id: r for r in runs}
    for (workload, sweep), per_workload in heatmap.groupby(["workload", "sweep"], sort=False, dropna=False):
        drawn = []
        for configuration, per_config in per_workload.groupby("configuration", sort=True, observed=True):
            runs_of = list(dict.fromkeys(zip(per_config["run_id"], per_config["workload_id"])))
            run_id, workload_id = runs_of[0]
            grid = per_config[(per_config["run_id"] == run_id) & (per_config["workload_id"] == workload_id)]
            run = by_run[run_id]
            labels = {(h, d): (f"{d} ({p})" if p else run.device(h, d)) + f" on {h}"
                      for h, d, p in zip(grid["host"], grid["device"], grid["profile"])}
            drawn.append({"configuration": str(configuration), "run_id": run_id, "workload_id": workload_id,
                          "repetitions": len(runs_of), **heatmap_figure(
                              grid, workload_spans(run.spans, workload_id), labels,
                              f"block I/O heat map during {workload_id} ({configuration}) — run {run_id}", [run_id])})
        sections.append({"workload": workload, "sweep": sweep, "figures": drawn})
    return sections
