"""What every figure shares: the PNG encoding, the stamp naming its runs, plain log-axis labels, the grid of
panels (a row per run), the runs as the multi-run figures see them, and the stage spans drawn over a time axis."""
from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import matplotlib.ticker
import pandas as pd

FAILED_SPAN_STATUSES = ("failed", "FAILED", "KILLED")


@dataclass
class RunView:
    """One run as the multi-run figures draw it: its tables, its stage and phase spans (metrics.phase_spans, computed
    once for every figure that marks them) and how its devices are named."""
    run_id: str
    label: str          # what tells this run apart from the others compared
    tables: dict[str, pd.DataFrame]
    spans: pd.DataFrame
    device_labels: dict[tuple[str, str], str] = field(default_factory=dict)   # (host, device) -> shown name

    def device(self, host: str, device: str) -> str:
        return self.device_labels.get((host, device), device)


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


def panel_grid(rows: list[int], panel_width: float, panel_height: float, **subplots):
    """A row of `rows[i]` panels per run, as wide as the widest row; the cells a shorter row leaves are hidden."""
    width = max(rows)
    fig, axes = plt.subplots(len(rows), width, figsize=(panel_width * width, panel_height * len(rows)), squeeze=False,
                             **subplots)
    for line, used in enumerate(rows):
        for col in range(used, width):
            axes[line][col].axis("off")
    return fig, axes


def by_workload(runs: list[RunView], frames: list[pd.DataFrame]):
    """(workload id, [(run, its rows of that workload)]) for every workload id any frame has, runs in order."""
    workload_ids = dict.fromkeys(w for f in frames if not f.empty for w in f["workload_id"])
    for workload_id in workload_ids:
        rows = [(r, f[f["workload_id"] == workload_id]) for r, f in zip(runs, frames) if not f.empty]
        yield workload_id, [(r, f) for r, f in rows if not f.empty]


def across_runs_figure(fig, title: str, workload_id: str, shown: list[RunView]) -> dict:
    """A multi-run figure of one workload run id, titled, stamped with the runs `shown` and encoded."""
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    stamp(fig, [r.run_id for r in shown])
    return {"workload_id": workload_id, "png": png(fig), "runs": ", ".join(r.run_id for r in shown)}


def span_marks(ax, marks: pd.DataFrame, t0: float) -> None:
    """Spark stage attempts and MapReduce phases (metrics.phase_spans) as shaded, labelled spans; failed red."""
    for index, span in enumerate(marks.itertuples()):
        color = "tab:red" if span.status in FAILED_SPAN_STATUSES else f"C{index % 10}"
        ax.axvspan(span.start_s - t0, span.end_s - t0, alpha=0.10, color=color)
        ax.axvline(span.start_s - t0, color=color, linewidth=0.8)
        # in axes height, not data: runs drawn on shared scales keep their labels in view
        ax.text(span.start_s - t0, 0.97 - 0.07 * (index % 4), span.label, fontsize=7, color=color,
                transform=ax.get_xaxis_transform())


def workload_spans(spans: pd.DataFrame, workload_id: str) -> pd.DataFrame:
    return spans[spans["workload_id"] == workload_id].sort_values("start_s") if not spans.empty else spans
