"""fio curves: bandwidth and IOPS against block size (one run's data paths, or series across runs with their
ratio to the baseline)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ...formatting import MB, size_label
from .layout import plain_log_labels, png, stamp

# fio patterns that mix reads and writes: their curves say which direction each line is
MIXED_PATTERNS = ("rw", "randrw", "readwrite")


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


def fio_figure(curves: pd.DataFrame, run_id: str) -> str | None:
    """(a) of the report: one run's fio sweep (metrics.fio_curves), one line per data path (backend and host)."""
    if curves.empty:
        return None
    series = curves.assign(series=curves["backend"].astype(str) + " (" + curves["host"].astype(str) + ")")
    return fio_curves_figure(series, f"fio bandwidth and IOPS versus block size per data path — run {run_id}", [run_id])
