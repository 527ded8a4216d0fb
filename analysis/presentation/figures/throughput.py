"""Throughput over time: each device's (iostat) with the stages and phases that ran, the applications' I/O volume
rate under it, and each storage backend's over the whole run (the Prometheus archive)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ... import metrics
from ...formatting import MB, utc
from .layout import RunView, across_runs_figure, by_workload, png, span_marks, stamp, workload_spans

FAILED_WORKLOAD_STATUSES = ("failed", "invalid", "interrupted")


def throughput_panel(ax, timeline: pd.DataFrame, marks: pd.DataFrame, t0: float,
                     device_labels: dict[tuple[str, str], str]) -> None:
    """Read (solid) and write (dashed) MB/s of each device of `timeline` (metrics.throughput_timeline, one
    workload), the stage spans `marks` over them; time from `t0`."""
    for (host, device), line in timeline.groupby(["host", "device"], observed=True):
        name = device_labels.get((host, device), device)
        ax.plot(line["time"] - t0, line["read_bytes_per_s"] / MB, label=f"{name}@{host} read")
        ax.plot(line["time"] - t0, line["write_bytes_per_s"] / MB, linestyle="--", label=f"{name}@{host} write")
    span_marks(ax, marks, t0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _app_rate_panel(ax, rate: pd.DataFrame, t0: float) -> None:
    """Stacked application I/O volume rate (Spark stage metrics spread over each stage's duration)."""
    columns = [c.replace("_bytes", "_bytes_per_s") for c in metrics.STAGE_IO_COLUMNS]
    labels = [c.replace("_bytes", "").replace("_", " ") for c in metrics.STAGE_IO_COLUMNS]
    ax.stackplot(rate["time"] - t0, *(rate[c] / MB for c in columns), labels=labels, step="post", alpha=0.8)
    ax.set_ylabel("application I/O (MB/s)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Spark stages' input, output, shuffle read and write, each spread evenly over its stage", fontsize=9)


def throughput_figures(iostat: pd.DataFrame, spans: pd.DataFrame, run_id: str,
                       app_rate: pd.DataFrame | None = None) -> list[dict]:
    """(d) of the report: device throughput over time per workload, with Spark stages / MR phases as labelled
    spans (metrics.phase_spans); under it, where Spark stages ran, the application's I/O volume rate on the same
    time axis (metrics.stage_io_rate, NVMe paper Fig. 5)."""
    timeline = metrics.throughput_timeline(iostat)
    figures = []
    if timeline.empty:
        return figures
    app_rate = app_rate if app_rate is not None else pd.DataFrame(columns=["workload_id"])
    for workload_id, per_workload in timeline.groupby("workload_id", observed=True):
        marks = workload_spans(spans, workload_id)
        t0 = min([per_workload["time"].min(), *marks["start_s"].tolist()])
        rate = app_rate[app_rate["workload_id"] == workload_id]
        if rate.empty:
            fig, ax = plt.subplots(figsize=(11, 4))
        else:
            fig, (ax, rate_ax) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True, height_ratios=(3, 2))
            _app_rate_panel(rate_ax, rate, t0)
        throughput_panel(ax, per_workload, marks, t0, {})
        (ax if rate.empty else rate_ax).set_xlabel(f"time since {utc(t0)} (s)")
        ax.set_ylabel("device throughput (MB/s)")
        ax.set_title(f"device throughput (iostat, 1 s) during {workload_id} — run {run_id}")
        stamp(fig, [run_id])
        figures.append({"workload_id": workload_id, "png": png(fig),
                        "caption": f"{len(marks)} stage/phase spans marked" if len(marks) else
                        "no Spark stages or MapReduce phases recorded for this workload"})
    return figures


def _busy(timeline: pd.DataFrame) -> pd.DataFrame:
    """The devices that moved any byte: idle ones only clutter a legend shared by several runs."""
    moved = timeline.groupby(["host", "device"], observed=True)[["read_bytes_per_s", "write_bytes_per_s"]] \
        .transform("any").any(axis=1)
    return timeline[moved]


def throughput_figures_across(runs: list[RunView]) -> list[dict]:
    """Per workload run id: device throughput over time, one panel per run on the same scales, each from that
    run's own first sample or stage, stages shaded."""
    figures = []
    timelines = [metrics.throughput_timeline(r.tables["iostat"]) for r in runs]
    for workload_id, rows in by_workload(runs, timelines):
        fig, axes = plt.subplots(len(rows), 1, figsize=(11, 3.2 * len(rows)), squeeze=False, sharex=True, sharey=True)
        for ax, (run, timeline) in zip(axes[:, 0], rows):
            marks = workload_spans(run.spans, workload_id)
            t0 = min([timeline["time"].min(), *marks["start_s"].tolist()])
            throughput_panel(ax, _busy(timeline), marks, t0, run.device_labels)
            ax.set_ylabel("throughput (MB/s)")
            ax.set_title(run.label if run.label == run.run_id else f"{run.label} (run {run.run_id})", fontsize=9)
        axes[-1][0].set_xlabel("time since the run's first sample or stage (s)")
        figures.append(across_runs_figure(fig, f"device throughput (iostat, 1 s) during {workload_id}",
                                    workload_id, [r for r, _ in rows]))
    return figures


def backend_throughput_panel(ax, throughput: pd.DataFrame, workloads: pd.DataFrame) -> None:
    """Throughput per backend (metrics.backend_throughput) over the whole run, read solid, write dashed, each
    workload's window (the manifest's bounds) shaded and named."""
    t0 = throughput["time_s"].min()
    if not workloads.empty:
        t0 = min(t0, workloads["start_time_s"].min(skipna=True))
    colors = {backend: f"C{i % 10}" for i, backend in enumerate(sorted(throughput["backend"].unique()))}
    labelled = set()
    # one line per workload window: no line is drawn across the gaps between archives
    for (backend, direction, _wid), line in throughput.groupby(["backend", "direction", "workload_id"]):
        label = f"{backend} {direction}"
        ax.plot(line["time_s"] - t0, line["bytes_per_s"] / MB, color=colors[backend],
                linestyle="-" if direction == "read" else "--", label=None if label in labelled else label)
        labelled.add(label)
    top = ax.get_ylim()[1]
    for index, run in enumerate(workloads.dropna(subset=["start_time_s", "end_time_s"]).itertuples()):
        color = "tab:red" if run.status in FAILED_WORKLOAD_STATUSES else "0.5"
        ax.axvspan(run.start_time_s - t0, run.end_time_s - t0, alpha=0.08 if index % 2 else 0.16, color=color)
        ax.text(run.start_time_s - t0, top * (0.97 - 0.07 * (index % 3)), f" {run.workload_id}", fontsize=7,
                color="tab:red" if color == "tab:red" else "0.2", va="top")
    ax.set_xlabel(f"time since {utc(t0)} (s)")
    ax.set_ylabel("device throughput (MB/s)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def backend_throughput_figure(throughput: pd.DataFrame, workloads: pd.DataFrame, run_id: str) -> str | None:
    """The run's Prometheus archive redrawn: what the live dashboard showed, per storage backend; None when
    nothing was archived."""
    if throughput.empty:
        return None
    fig, ax = plt.subplots(figsize=(11, 4.2))
    backend_throughput_panel(ax, throughput, workloads)
    ax.set_title(f"throughput per storage backend (Prometheus, node_exporter) — run {run_id}")
    fig.tight_layout()
    stamp(fig, [run_id])
    return png(fig)
