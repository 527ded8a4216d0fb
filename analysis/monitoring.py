"""Figures from the Prometheus archive of a run (table `prometheus_series`): what the live dashboards showed,
redrawn offline from the run directory."""
from __future__ import annotations

from datetime import datetime, timezone

import matplotlib

matplotlib.use("Agg")  # no display on the hosts; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

# dashboards.queries ids of the device throughput panels, labelled by backend (spillway_disk_info join)
THROUGHPUT_QUERIES = {"disk_read_bytes": "read", "disk_write_bytes": "write"}
_MB = 1e6


def backend_throughput(series: pd.DataFrame) -> pd.DataFrame:
    """Device throughput summed per backend (over nodes and devices): workload_id, backend, direction,
    time_s, bytes_per_s. Empty when the run has no archive or no series attributed to a backend."""
    columns = ["workload_id", "backend", "direction", "time_s", "bytes_per_s"]
    if series.empty or "backend" not in series.columns or "query_id" not in series.columns:
        return pd.DataFrame(columns=columns)
    rows = series[series["query_id"].isin(list(THROUGHPUT_QUERIES)) & series["backend"].notna()]
    summed = (rows.assign(direction=rows["query_id"].map(THROUGHPUT_QUERIES))
              .groupby(["workload_id", "backend", "direction", "time_s"], as_index=False)["value"].sum(min_count=1))
    return summed.rename(columns={"value": "bytes_per_s"})[columns]


def backend_throughput_figure(series: pd.DataFrame, workloads: pd.DataFrame, run_id: str):
    """Throughput per backend over the whole run (read solid, write dashed), each workload's window shaded
    and named (manifest bounds); None when nothing was archived. Returns a matplotlib Figure."""
    throughput = backend_throughput(series)
    if throughput.empty:
        return None
    t0 = throughput["time_s"].min()
    if not workloads.empty:
        t0 = min(t0, workloads["start_time_s"].min(skipna=True))
    fig, ax = plt.subplots(figsize=(11, 4.2))
    colors = {backend: f"C{i % 10}" for i, backend in enumerate(sorted(throughput["backend"].unique()))}
    labelled = set()
    # one line per workload window: no line is drawn across the gaps between archives
    for (backend, direction, _wid), line in throughput.groupby(["backend", "direction", "workload_id"]):
        label = f"{backend} {direction}"
        ax.plot(line["time_s"] - t0, line["bytes_per_s"] / _MB, color=colors[backend],
                linestyle="-" if direction == "read" else "--", label=None if label in labelled else label)
        labelled.add(label)
    top = ax.get_ylim()[1]
    for index, run in enumerate(workloads.dropna(subset=["start_time_s", "end_time_s"]).itertuples()):
        color = "tab:red" if run.status in ("failed", "invalid", "interrupted") else "0.5"
        ax.axvspan(run.start_time_s - t0, run.end_time_s - t0, alpha=0.08 if index % 2 else 0.16, color=color)
        ax.text(run.start_time_s - t0, top * (0.97 - 0.07 * (index % 3)), f" {run.workload_id}", fontsize=7,
                color="tab:red" if color == "tab:red" else "0.2", va="top")
    started = datetime.fromtimestamp(t0, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    ax.set_xlabel(f"time since {started} (s)")
    ax.set_ylabel("device throughput (MB/s)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"throughput per storage backend (Prometheus, node_exporter) — run {run_id}")
    fig.tight_layout()
    return fig
