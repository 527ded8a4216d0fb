"""Every figure of the pages (report.html of one run, compare.html of several) and of the notebooks, as
base64 PNG. A figure takes tables and plain values, never a run directory.

What both pages draw is drawn by one *panel* function on one matplotlib axes (fio curves, a request-size
histogram, request offsets, a throughput timeline with its stage spans): the single-run figures lay out one
row of panels, the multi-run ones a row per run."""
from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field

import matplotlib
import matplotlib.colors
import matplotlib.ticker

matplotlib.use("Agg")  # no display on the hosts; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .. import access_patterns, metrics  # noqa: E402
from ..formatting import MB, count, format_bytes, number, size_label, utc  # noqa: E402

# fio patterns that mix reads and writes: their curves say which direction each line is
MIXED_PATTERNS = ("rw", "randrw", "readwrite")
FAILED_SPAN_STATUSES = ("failed", "FAILED", "KILLED")
FAILED_WORKLOAD_STATUSES = ("failed", "invalid", "interrupted")


@dataclass
class RunView:
    """One run as the multi-run figures draw it: its tables and how its devices are named."""
    run_id: str
    label: str          # what tells this run apart from the others compared
    tables: dict[str, pd.DataFrame]
    device_labels: dict[tuple[str, str], str] = field(default_factory=dict)   # (host, device) -> shown name

    def device(self, host: str, device: str) -> str:
        return self.device_labels.get((host, device), device)


# ---------------------------------------------------------------- encoding and naming

def png(fig) -> str:
    """The figure as base64 PNG for an <img> data URL; the figure is closed (pages draw hundreds)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def stamp(fig, run_ids: list[str]) -> None:
    """Every figure names the runs it comes from, also when copied out of the page (the titles say it too;
    this line survives cropping of the title)."""
    text = f"Spillway run {run_ids[0]}" if len(run_ids) == 1 else "Spillway runs " + ", ".join(run_ids)
    fig.text(0.0, 1.0, text, ha="left", va="bottom", fontsize=7, color="0.4", transform=fig.transFigure)


class PlainLogLabels(matplotlib.ticker.LogFormatter):
    """Log-axis tick labels as plain numbers (1, 10, 1,000, 0.01) where matplotlib writes powers of ten in mathtext:
    read without exponents, and drawn without the mathtext parser, which took a tenth of a page's figure time."""

    def _num_to_string(self, x, vmin, vmax):
        return f"{x:,.0f}" if x >= 1 else f"{x:g}"


def plain_log_labels(axis) -> None:
    """PlainLogLabels on a log `axis` (ax.yaxis, a colorbar's long axis), its major and minor ticks."""
    axis.set_major_formatter(PlainLogLabels())
    axis.set_minor_formatter(PlainLogLabels())


def _panel_grid(rows: list[int], panel_width: float, panel_height: float, **subplots):
    """A row of `rows[i]` panels per run, as wide as the widest row; the cells a shorter row leaves are hidden."""
    width = max(rows)
    fig, axes = plt.subplots(len(rows), width, figsize=(panel_width * width, panel_height * len(rows)), squeeze=False,
                             **subplots)
    for line, used in enumerate(rows):
        for col in range(used, width):
            axes[line][col].axis("off")
    return fig, axes


def _by_workload(runs: list[RunView], frames: list[pd.DataFrame]):
    """(workload id, [(run, its rows of that workload)]) for every workload id any frame has, runs in order."""
    workload_ids = dict.fromkeys(w for f in frames if not f.empty for w in f["workload_id"])
    for workload_id in workload_ids:
        rows = [(r, f[f["workload_id"] == workload_id]) for r, f in zip(runs, frames) if not f.empty]
        yield workload_id, [(r, f) for r, f in rows if not f.empty]


def _across_runs(fig, title: str, workload_id: str, shown: list[RunView]) -> dict:
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    stamp(fig, [r.run_id for r in shown])
    return {"workload_id": workload_id, "png": png(fig), "runs": ", ".join(r.run_id for r in shown)}


# ---------------------------------------------------------------- fio

def _block_size_axis(ax, sizes) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    plain_log_labels(ax.yaxis)
    ticks = sorted(set(sizes))
    ax.set_xticks(ticks, [size_label(t) for t in ticks], rotation=45, fontsize=7)
    ax.grid(True, which="both", alpha=0.3)


def fio_curves_figure(series: pd.DataFrame, title: str, run_ids: list[str], ratios: pd.DataFrame | None = None,
               baseline: str = "") -> str | None:
    """Bandwidth and IOPS versus block size, one column per access pattern, one line per `series` (a data
    path: `backend (host)` in a run, `profile — run label` across runs); with `ratios`, a third row with each
    series' bandwidth over the `baseline` series' (the I/O-aware model paper's Fig. 5)."""
    if series.empty:
        return None
    patterns = list(dict.fromkeys(series["rw"]))
    rows = 2 if ratios is None else 3
    fig, axes = plt.subplots(rows, len(patterns), figsize=(4.2 * len(patterns), 7 if rows == 2 else 10), squeeze=False)
    for col, rw in enumerate(patterns):
        for (name, direction), line in series[series["rw"] == rw].groupby(["series", "direction"], sort=False):
            label = name + (f" {direction}" if rw in MIXED_PATTERNS else "")
            axes[0][col].plot(line["block_size_bytes"], line["bandwidth_bytes_per_s"] / MB, marker="o", label=label)
            axes[1][col].plot(line["block_size_bytes"], line["iops"], marker="o", label=label)
        axes[0][col].set_title(f"fio {rw}")
        axes[0][col].set_ylabel("bandwidth (MB/s)")
        axes[1][col].set_ylabel("IOPS (requests/s)")
        axes[0][col].legend(fontsize=7)
        if ratios is not None:
            mine = ratios[ratios["rw"] == rw] if not ratios.empty else ratios
            for (name, direction), line in mine.groupby(["series", "direction"], sort=False) if not mine.empty else []:
                axes[2][col].plot(line["block_size_bytes"], line["bandwidth_ratio"], marker="o",
                                  label=f"{name} / {baseline}")
            axes[2][col].set_ylabel(f"bandwidth ratio to {baseline} (x)", fontsize=8)
            if not mine.empty:
                axes[2][col].legend(fontsize=6)   # "<series> / <baseline>" labels are twice as long
        for row in range(rows):
            _block_size_axis(axes[row][col], series["block_size_bytes"])
        axes[-1][col].set_xlabel("block size (bytes)")
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.02, 1, 0.96))
    stamp(fig, run_ids)
    return png(fig)


def fio_figure(fio: pd.DataFrame, run_id: str) -> str | None:
    """(a) of the report: one run's fio sweep, one line per data path (backend and host)."""
    curves = metrics.fio_curves(fio)
    if curves.empty:
        return None
    series = curves.assign(series=curves["backend"].astype(str) + " (" + curves["host"].astype(str) + ")")
    return fio_curves_figure(series, f"fio bandwidth and IOPS versus block size per data path — run {run_id}", [run_id])


# ---------------------------------------------------------------- request sizes

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
        fig, axes = _panel_grid([len(panels)], 5, 3.8)
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
    for workload_id, rows in _by_workload(runs, histograms):
        per_run = [(run, list(h.groupby(["host", "device"], observed=True))) for run, h in rows]
        fig, axes = _panel_grid([len(panels) for _, panels in per_run], 5, 3.6)
        bins = np.array(sorted(set().union(*(set(h["bin_bytes"]) for _, h in rows))))
        for line, (run, panels) in enumerate(per_run):
            for col, ((host, device), panel) in enumerate(panels):
                request_size_panel(axes[line][col], panel, bins, f"{run.label}: {run.device(host, device)} on {host}")
        axes[-1][0].set_xlabel(SIZE_BIN_AXIS)
        figures.append(_across_runs(fig, f"block request sizes during {workload_id}, per run and device",
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
        fig, axes = _panel_grid([len(panels)], 5.5, 3.8, sharex=True)
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
    for workload_id, rows in _by_workload(runs, [metrics.request_offsets(r.tables["block_requests"]) for r in runs]):
        per_run = [(run, offsets["issue_time_s"].min(), list(offsets.groupby(["host", "device"], observed=True)))
                   for run, offsets in rows]
        fig, axes = _panel_grid([len(panels) for _, _, panels in per_run], 5.5, 3.6)
        for line, (run, t0, panels) in enumerate(per_run):
            for col, ((host, device), panel) in enumerate(panels):
                offset_panel(axes[line][col], panel, t0, f"{run.label}: {run.device(host, device)} on {host}")
        figures.append(_across_runs(fig, f"block request offsets over time during {workload_id}, per run "
                                         "and device (a fixed random sample when large)",
                                    workload_id, [r for r, _ in rows]))
    return figures


# ---------------------------------------------------------------- throughput over time

def span_marks(ax, marks: pd.DataFrame, t0: float) -> None:
    """Spark stage attempts and MapReduce phases (metrics.phase_spans) as shaded, labelled spans; failed red."""
    for index, span in enumerate(marks.itertuples()):
        color = "tab:red" if span.status in FAILED_SPAN_STATUSES else f"C{index % 10}"
        ax.axvspan(span.start_s - t0, span.end_s - t0, alpha=0.10, color=color)
        ax.axvline(span.start_s - t0, color=color, linewidth=0.8)
        # in axes height, not data: runs drawn on shared scales keep their labels in view
        ax.text(span.start_s - t0, 0.97 - 0.07 * (index % 4), span.label, fontsize=7, color=color,
                transform=ax.get_xaxis_transform())


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


def _workload_spans(spans: pd.DataFrame, workload_id: str) -> pd.DataFrame:
    return spans[spans["workload_id"] == workload_id].sort_values("start_s") if not spans.empty else spans


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
        marks = _workload_spans(spans, workload_id)
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
    for workload_id, rows in _by_workload(runs, timelines):
        fig, axes = plt.subplots(len(rows), 1, figsize=(11, 3.2 * len(rows)), squeeze=False, sharex=True, sharey=True)
        for ax, (run, timeline) in zip(axes[:, 0], rows):
            marks = _workload_spans(metrics.phase_spans(run.tables["stages"], run.tables["mr_jobs"]), workload_id)
            t0 = min([timeline["time"].min(), *marks["start_s"].tolist()])
            throughput_panel(ax, _busy(timeline), marks, t0, run.device_labels)
            ax.set_ylabel("throughput (MB/s)")
            ax.set_title(run.label if run.label == run.run_id else f"{run.label} (run {run.run_id})", fontsize=9)
        axes[-1][0].set_xlabel("time since the run's first sample or stage (s)")
        figures.append(_across_runs(fig, f"device throughput (iostat, 1 s) during {workload_id}",
                                    workload_id, [r for r, _ in rows]))
    return figures


# ---------------------------------------------------------------- bytes over time: heat map (Darshan)

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
            per_workload, _workload_spans(spans, workload_id), labels,
            f"block I/O heat map during {workload_id} — run {run_id}", [run_id])})
    return figures


def heatmap_figures_across(heatmap: pd.DataFrame, runs: list[RunView]) -> list[dict]:
    """The comparison's heat maps (comparison.io_heatmap): per workload and sweep key, one heat map per
    configuration (heatmap_figure), of its first measured workload run, devices named with their storage profiles,
    that run's stages and phases marked. Returns per workload {workload, sweep, figures: [{configuration, run_id,
    workload_id, repetitions, png, bin, caption}]}, in the table's order."""
    sections = []
    if heatmap.empty:
        return sections
    by_run = {r.run_id: r for r in runs}
    drawn_runs = set(heatmap["run_id"])
    spans = {r.run_id: metrics.phase_spans(r.tables["stages"], r.tables["mr_jobs"]) for r in runs
             if r.run_id in drawn_runs}
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
                              grid, _workload_spans(spans[run_id], workload_id), labels,
                              f"block I/O heat map during {workload_id} ({configuration}) — run {run_id}", [run_id])})
        sections.append({"workload": workload, "sweep": sweep, "figures": drawn})
    return sections


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


# ---------------------------------------------------------------- configurations: cores, bars

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
