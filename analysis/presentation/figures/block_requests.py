"""Block requests as the trace recorded them: request-size histograms and request offsets over time, per device,
for one run or a row per run."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ... import metrics
from ...formatting import count, size_label, utc
from .layout import RunView, across_runs_figure, by_workload, panel_grid, plain_log_labels, png, stamp


def request_size_panel(ax, panel: pd.DataFrame, bins, title: str) -> None:
    """One device's request counts per log2 size bin (metrics.request_size_histogram), reads beside writes."""
    for offset, op in ((-0.2, "read"), (0.2, "write")):
        counts = panel[panel["op"] == op].set_index("bin_bytes")["requests"].reindex(bins, fill_value=0)
        ax.bar(np.arange(len(bins)) + offset, counts.to_numpy(), width=0.4, label=op)
    ax.set_xticks(np.arange(len(bins)), [size_label(b) for b in bins], rotation=45, fontsize=7)
    ax.set_yscale("log")
    plain_log_labels(ax.yaxis)
    ax.set_ylabel("requests (count)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


SIZE_BIN_AXIS = "request size bin (bytes, >= lower bound, log2 bins)"


def request_size_figures(requests: pd.DataFrame, run_id: str) -> list[dict]:
    """(c) of the report: request-size histograms (log2 bins) per workload, one panel per host and device."""
    histogram = metrics.request_size_histogram(requests)
    figures = []
    if histogram.empty:
        return figures
    for workload_id, per_workload in histogram.groupby("workload_id", observed=True):
        panels = list(per_workload.groupby(["host", "device"], observed=True))
        fig, axes = panel_grid([len(panels)], 5, 3.8)
        bins = np.array(sorted(per_workload["bin_bytes"].unique()))
        for ax, ((host, device), panel) in zip(axes[0], panels):
            request_size_panel(ax, panel, bins, f"{device} on {host}")
            ax.set_xlabel(SIZE_BIN_AXIS)
        fig.suptitle(f"block request sizes during {workload_id} — run {run_id}")
        stamp(fig, [run_id])
        totals = per_workload.groupby("op")["requests"].sum().to_dict()
        figures.append({"workload_id": workload_id, "png": png(fig),
                        "caption": ", ".join(f"{op}: {count(n, 'request')}" for op, n in totals.items())})
    return figures


def request_size_figures_across(runs: list[RunView]) -> list[dict]:
    """Per workload run id: request-size histograms, one row of panels per run that traced it, on common bins."""
    figures = []
    histograms = [metrics.request_size_histogram(r.tables["block_requests"]) for r in runs]
    for workload_id, rows in by_workload(runs, histograms):
        per_run = [(run, list(h.groupby(["host", "device"], observed=True))) for run, h in rows]
        fig, axes = panel_grid([len(panels) for _, panels in per_run], 5, 3.6)
        bins = np.array(sorted(set().union(*(set(h["bin_bytes"]) for _, h in rows))))
        for line, (run, panels) in enumerate(per_run):
            for col, ((host, device), panel) in enumerate(panels):
                request_size_panel(axes[line][col], panel, bins, f"{run.label}: {run.device(host, device)} on {host}")
        axes[-1][0].set_xlabel(SIZE_BIN_AXIS)
        figures.append(across_runs_figure(fig, f"block request sizes during {workload_id}, per run and device",
                                    workload_id, [r for r, _ in rows]))
    return figures


# ---------------------------------------------------------------- request offsets

def offset_panel(ax, panel: pd.DataFrame, t0: float, title: str) -> None:
    """One device's request offsets over time (NVMe paper Fig. 8), reads and writes colored."""
    for op, color in (("read", "tab:blue"), ("write", "tab:orange")):
        points = panel[panel["op"] == op]
        # sparse traces (a few hundred requests) need larger dots to be seen at all
        ax.scatter(points["issue_time_s"] - t0, points["offset_bytes"] / 2**30, s=2 if len(panel) > 5000 else 8,
                   color=color, label=f"{op} ({len(points):,})", rasterized=True, linewidths=0)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(f"time since {utc(t0)} (s)")
    ax.set_ylabel("offset (GiB from device start)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, markerscale=4)


def offset_figures(requests: pd.DataFrame, device_backends: dict[tuple[str, str], str], run_id: str) -> list[dict]:
    """Where on each device requests landed over time (NVMe paper Fig. 8): one figure per workload, one panel
    per device, named with its backend from `device_backends` ((host, device) -> backend)."""
    offsets = metrics.request_offsets(requests)
    figures = []
    totals = metrics.data_requests(requests).groupby("workload_id", observed=True).size()
    for workload_id, per_workload in offsets.groupby("workload_id", observed=True):
        panels = list(per_workload.groupby(["host", "device"], observed=True))
        t0 = per_workload["issue_time_s"].min()
        fig, axes = panel_grid([len(panels)], 5.5, 3.8, sharex=True)
        for ax, ((host, device), panel) in zip(axes[0], panels):
            backend = device_backends.get((host, device))
            offset_panel(ax, panel, t0, f"{device}" + (f" ({backend})" if backend else "") + f" on {host}")
        fig.suptitle(f"block request offsets over time during {workload_id} — run {run_id}")
        fig.tight_layout()
        stamp(fig, [run_id])
        total = int(totals[workload_id])
        caption = f"{len(per_workload):,} of {total:,} data requests plotted" + (
            " (a fixed random sample per device)" if len(per_workload) < total else "")
        figures.append({"workload_id": workload_id, "png": png(fig), "caption": caption})
    return figures


def offset_figures_across(runs: list[RunView]) -> list[dict]:
    """Per workload run id: request offsets over time, one row of device panels per run, each from that run's
    own first request."""
    figures = []
    for workload_id, rows in by_workload(runs, [metrics.request_offsets(r.tables["block_requests"]) for r in runs]):
        per_run = [(run, offsets["issue_time_s"].min(), list(offsets.groupby(["host", "device"], observed=True)))
                   for run, offsets in rows]
        fig, axes = panel_grid([len(panels) for _, _, panels in per_run], 5.5, 3.6)
        for line, (run, t0, panels) in enumerate(per_run):
            for col, ((host, device), panel) in enumerate(panels):
                offset_panel(axes[line][col], panel, t0, f"{run.label}: {run.device(host, device)} on {host}")
        figures.append(across_runs_figure(fig, f"block request offsets over time during {workload_id}, per run "
                                         "and device (a fixed random sample when large)",
                                    workload_id, [r for r, _ in rows]))
    return figures
