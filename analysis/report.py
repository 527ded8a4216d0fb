"""One self-contained HTML page per run: figures as embedded PNG, every number with its unit."""
from __future__ import annotations

import base64
import io
import json
import warnings
from datetime import datetime, timezone
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on the hosts; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from jinja2 import Environment, FileSystemLoader, select_autoescape  # noqa: E402

from . import metrics, monitoring, safeio  # noqa: E402
from .parsers.manifest import missing_keys  # noqa: E402
from .rundir import load_manifest  # noqa: E402
from .tables import read_tables  # noqa: E402

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
_MB = 1e6


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _stamp(fig, run_id: str) -> None:
    """Every figure names the run it comes from, also when copied out of the page (the titles
    say it too; this line survives cropping of the title)."""
    fig.text(0.0, 1.0, f"Spillway run {run_id}", ha="left", va="bottom", fontsize=7, color="0.4",
             transform=fig.transFigure)


def _utc(epoch_s) -> str:
    if epoch_s is None or pd.isna(epoch_s):
        return "-"
    return datetime.fromtimestamp(float(epoch_s), tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _num(value, unit: str = "", digits: int = 2) -> str:
    if value is None or pd.isna(value):
        return "-"
    return f"{float(value):,.{digits}f}{(' ' + unit) if unit else ''}"


# ---------------------------------------------------------------- figures

def fio_figure(fio: pd.DataFrame, run_id: str) -> str | None:
    """(a) bandwidth and IOPS versus block size, one column per access pattern, one line per data path."""
    curves = metrics.fio_curves(fio)
    if curves.empty:
        return None
    patterns = list(dict.fromkeys(curves["rw"]))
    fig, axes = plt.subplots(2, len(patterns), figsize=(4.2 * len(patterns), 7), squeeze=False)
    for col, rw in enumerate(patterns):
        for (host, backend, direction), line in curves[curves["rw"] == rw].groupby(
                ["host", "backend", "direction"], observed=True):
            label = f"{backend} ({host})" + (f" {direction}" if rw in ("rw", "randrw", "readwrite") else "")
            axes[0][col].plot(line["block_size_bytes"], line["bandwidth_bytes_per_s"] / _MB, marker="o", label=label)
            axes[1][col].plot(line["block_size_bytes"], line["iops"], marker="o", label=label)
        axes[0][col].set_title(f"fio {rw}")
        axes[0][col].set_ylabel("bandwidth (MB/s)")
        axes[1][col].set_ylabel("IOPS (requests/s)")
        for ax in (axes[0][col], axes[1][col]):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ticks = sorted(set(curves["block_size_bytes"]))
            ax.set_xticks(ticks, [metrics.size_label(t) for t in ticks], rotation=45, fontsize=7)
            ax.grid(True, which="both", alpha=0.3)
        axes[1][col].set_xlabel("block size (bytes)")
        axes[0][col].legend(fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 0.95))
    fig.suptitle(f"fio bandwidth and IOPS versus block size per data path — run {run_id}")
    _stamp(fig, run_id)
    return _png(fig)


def request_size_figures(requests: pd.DataFrame, run_id: str) -> list[dict]:
    """(c) request-size histograms (log2 bins) per workload, one panel per host and device."""
    histogram = metrics.request_size_histogram(requests)
    figures = []
    if histogram.empty:
        return figures
    for workload_id, per_workload in histogram.groupby("workload_id", observed=True):
        panels = list(per_workload.groupby(["host", "device"], observed=True))
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.8), squeeze=False)
        bins = np.array(sorted(per_workload["bin_bytes"].unique()))
        for ax, ((host, device), panel) in zip(axes[0], panels):
            width = 0.4
            for offset, op in ((-width / 2, "read"), (width / 2, "write")):
                counts = panel[panel["op"] == op].set_index("bin_bytes")["requests"].reindex(bins, fill_value=0)
                ax.bar(np.arange(len(bins)) + offset, counts.to_numpy(), width=width, label=op)
            ax.set_xticks(np.arange(len(bins)), [metrics.size_label(b) for b in bins], rotation=45, fontsize=7)
            ax.set_yscale("log")
            ax.set_xlabel("request size bin (bytes, >= lower bound, log2 bins)")
            ax.set_ylabel("requests (count)")
            ax.set_title(f"{device} on {host}", fontsize=9)
            ax.legend(fontsize=7)
        fig.suptitle(f"block request sizes during {workload_id} — run {run_id}")
        _stamp(fig, run_id)
        totals = per_workload.groupby("op")["requests"].sum().to_dict()
        figures.append({"workload_id": workload_id, "png": _png(fig),
                        "caption": ", ".join(f"{op}: {int(n):,} requests" for op, n in totals.items())})
    return figures


def throughput_figures(iostat: pd.DataFrame, spans: pd.DataFrame, run_id: str,
                       app_rate: pd.DataFrame | None = None) -> list[dict]:
    """(d) device throughput over time per workload, with Spark stages / MR phases as labelled spans;
    under it, where Spark stages ran, the application's I/O volume rate on the same time axis
    (metrics.stage_io_rate, NVMe paper Fig. 5)."""
    timeline = metrics.throughput_timeline(iostat)
    figures = []
    if timeline.empty:
        return figures
    app_rate = app_rate if app_rate is not None else pd.DataFrame(columns=["workload_id"])
    for workload_id, per_workload in timeline.groupby("workload_id", observed=True):
        marks = spans[spans["workload_id"] == workload_id].sort_values("start_s") if not spans.empty else spans
        t0 = min([per_workload["time"].min(), *marks["start_s"].tolist()])
        rate = app_rate[app_rate["workload_id"] == workload_id]
        if rate.empty:
            fig, ax = plt.subplots(figsize=(11, 4))
        else:
            fig, (ax, rate_ax) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True, height_ratios=(3, 2))
            _app_rate_panel(rate_ax, rate, t0)
        for (host, device), line in per_workload.groupby(["host", "device"], observed=True):
            ax.plot(line["time"] - t0, line["read_bytes_per_s"] / _MB, label=f"{device}@{host} read")
            ax.plot(line["time"] - t0, line["write_bytes_per_s"] / _MB, linestyle="--", label=f"{device}@{host} write")
        top = ax.get_ylim()[1]
        for index, span in enumerate(marks.itertuples()):
            color = "tab:red" if span.status in ("failed", "FAILED", "KILLED") else f"C{index % 10}"
            ax.axvspan(span.start_s - t0, span.end_s - t0, alpha=0.10, color=color)
            ax.axvline(span.start_s - t0, color=color, linewidth=0.8)
            ax.text(span.start_s - t0, top * (0.97 - 0.07 * (index % 4)), span.label, fontsize=7, color=color)
        (ax if rate.empty else rate_ax).set_xlabel(f"time since {_utc(t0)} (s)")
        ax.set_ylabel("device throughput (MB/s)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_title(f"device throughput (iostat, 1 s) during {workload_id} — run {run_id}")
        _stamp(fig, run_id)
        figures.append({"workload_id": workload_id, "png": _png(fig),
                        "caption": f"{len(marks)} stage/phase spans marked" if len(marks) else
                        "no Spark stages or MapReduce phases recorded for this workload"})
    return figures


def _app_rate_panel(ax, rate: pd.DataFrame, t0: float) -> None:
    """Stacked application I/O volume rate (Spark stage metrics spread over each stage's duration)."""
    columns = [c.replace("_bytes", "_bytes_per_s") for c in metrics.STAGE_IO_COLUMNS]
    labels = [c.replace("_bytes", "").replace("_", " ") for c in metrics.STAGE_IO_COLUMNS]
    ax.stackplot(rate["time"] - t0, *(rate[c] / _MB for c in columns), labels=labels, step="post", alpha=0.8)
    ax.set_ylabel("application I/O (MB/s)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Spark stages' input, output, shuffle read and write, each spread evenly over its stage", fontsize=9)


def offset_panel(ax, panel: pd.DataFrame, t0: float, title: str) -> None:
    """One device's request offsets over time (NVMe paper Fig. 8), reads and writes colored."""
    for op, color in (("read", "tab:blue"), ("write", "tab:orange")):
        points = panel[panel["op"] == op]
        # sparse traces (a few hundred requests) need larger dots to be seen at all
        ax.scatter(points["issue_time_s"] - t0, points["offset_bytes"] / 2**30, s=2 if len(panel) > 5000 else 8,
                   color=color, label=f"{op} ({len(points):,})", rasterized=True, linewidths=0)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(f"time since {_utc(t0)} (s)")
    ax.set_ylabel("offset (GiB from device start)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, markerscale=4)


def offset_figures(requests: pd.DataFrame, device_backends: dict, run_id: str) -> list[dict]:
    """Where on each device requests landed over time (NVMe paper Fig. 8): one figure per workload,
    one panel per device."""
    offsets = metrics.request_offsets(requests)
    figures = []
    totals = metrics.data_requests(requests).groupby("workload_id", observed=True).size()
    for workload_id, per_workload in offsets.groupby("workload_id", observed=True):
        panels = list(per_workload.groupby(["host", "device"], observed=True))
        t0 = per_workload["issue_time_s"].min()
        fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.8), squeeze=False, sharex=True)
        for ax, ((host, device), panel) in zip(axes[0], panels):
            backend = device_backends.get((host, device))
            offset_panel(ax, panel, t0, f"{device}" + (f" ({backend})" if backend else "") + f" on {host}")
        fig.suptitle(f"block request offsets over time during {workload_id} — run {run_id}")
        fig.tight_layout()
        _stamp(fig, run_id)
        total = int(totals[workload_id])
        caption = f"{len(per_workload):,} of {total:,} data requests plotted" + (
            " (a fixed random sample per device)" if len(per_workload) < total else "")
        figures.append({"workload_id": workload_id, "png": _png(fig), "caption": caption})
    return figures


def cores_figures(by_cores: pd.DataFrame, run_id: str) -> list[dict]:
    """Per workload configuration: stage seconds against executor cores per node (P), one line per stage
    (the longest ones), as in the I/O-aware model paper's scaling runs."""
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
        _stamp(fig, run_id)
        figures.append({"workload": label, "png": _png(fig),
                        "caption": f"{len(longest)} longest stages; medians over measured repetitions"})
    return figures


# ---------------------------------------------------------------- tables for the page

def _spread_cell(row) -> str:
    """median (min-max, n runs), with a flag when repetitions disagree by more than 20 %."""
    if pd.isna(row["median"]):
        return "-"
    text = _num(row["median"], "s", 1)
    if row["runs"] > 1:
        text += f" ({_num(row['min'], '', 1)}–{_num(row['max'], 's', 1)}, {int(row['runs'])} runs)"
        if row["median"] and (row["max"] - row["min"]) / row["median"] > 0.2:
            text += " ⚠ spread > 20 %"
    return text


def _placement_rows(by_placement: pd.DataFrame) -> list[dict]:
    """Run-step time per workload configuration under each placement, with the ratio to the fastest."""
    if by_placement.empty or by_placement[["placement_hdfs", "placement_local"]].drop_duplicates().shape[0] < 2:
        return []
    rows = []
    keys = ["workload", "sweep", "executor_cores"]
    for _, group in by_placement.groupby(keys, dropna=False, sort=False):
        fastest = group["median"].min()
        for row in group.sort_values(["placement_hdfs", "placement_local"]).to_dict("records"):
            rows.append({"workload": row["workload"], "sweep": row["sweep"],
                         "cores": "default" if pd.isna(row["executor_cores"]) else int(row["executor_cores"]),
                         "hdfs": row["placement_hdfs"], "local": row["placement_local"], "time": _spread_cell(row),
                         "ratio": _num(row["median"] / fastest, "x", 2) if fastest else "-"})
    return rows


def _cores_rows(by_cores: pd.DataFrame) -> tuple[list, list[dict]]:
    """Stage time per P as columns: (the P values, one row per stage)."""
    cores = sorted(int(c) for c in by_cores["executor_cores"].dropna().unique())
    if len(cores) < 2:
        return [], []
    keys = ["workload", "sweep", "placement_hdfs", "placement_local", "app", "stage_id", "name"]
    rows = []
    for key, group in by_cores.dropna(subset=["executor_cores"]).groupby(keys, dropna=False, sort=False):
        by_p = {int(r["executor_cores"]): _spread_cell(r) for r in group.to_dict("records")}
        rows.append({"workload": key[0], "sweep": key[1], "placement": f"hdfs={key[2]}, local={key[3]}",
                     "stage": f"app {key[4]} s{key[5]}", "name": key[6],
                     "times": [by_p.get(p, "-") for p in cores]})
    return cores, rows


def _stage_rows(stages: pd.DataFrame) -> list[dict]:
    rows = []
    if stages.empty or "stage_id" not in stages:
        return rows
    for s in stages.itertuples():
        group = getattr(s, "job_group", None)
        rows.append({"workload": s.workload_id, "host": s.host, "app": s.app_id,
                     "group": group if isinstance(group, str) else "", "stage": f"{s.stage_id}" + (f" (attempt {s.attempt})" if s.attempt else ""),
                     "name": s.name, "tasks": s.num_tasks, "status": s.status, "duration": _num(s.duration_s, "s"),
                     "input": metrics.format_bytes(s.input_bytes), "output": metrics.format_bytes(s.output_bytes),
                     "shuffle_read": metrics.format_bytes(s.shuffle_read_bytes),
                     "shuffle_write": metrics.format_bytes(s.shuffle_write_bytes),
                     "spill": f"{metrics.format_bytes(s.memory_spilled_bytes)} mem / "
                              f"{metrics.format_bytes(s.disk_spilled_bytes)} disk",
                     "cpu": _num(s.executor_cpu_time_s, "s"), "run": _num(s.executor_run_time_s, "s")})
    return rows


def _mr_rows(mr_jobs: pd.DataFrame, mr_counters: pd.DataFrame) -> list[dict]:
    summary = metrics.mr_job_summary(mr_jobs, mr_counters)
    rows = []
    for job in summary.to_dict("records"):
        rows.append({"workload": job["workload_id"], "job": job["job_id"], "name": job.get("job_name"),
                     "status": job["status"], "duration": _num(job.get("duration_s"), "s"),
                     "tasks": f"{job.get('total_maps')} maps / {job.get('total_reduces')} reduces",
                     **{k: metrics.format_bytes(job.get(k)) for k in
                        ("hdfs_read_bytes", "hdfs_written_bytes", "shuffle_bytes", "local_written_bytes")},
                     "spilled": _num(job.get("spilled_records"), "records", 0)})
    return rows


def _gluster_rows(bricks: pd.DataFrame, fops: pd.DataFrame, most: int = 4) -> list[dict]:
    """Per workload and brick of a harness-built GlusterFS volume: bytes moved and the file operations that took
    the most time at the brick (calls x average latency)."""
    if bricks.empty:
        return []
    rows = []
    for brick in bricks.sort_values(["workload_id", "volume", "brick_host"]).to_dict("records"):
        key = {k: brick[k] for k in ("workload_id", "volume", "brick_host", "brick_path")}
        mine = fops.loc[(fops[list(key)] == pd.Series(key)).all(axis=1)].nlargest(most, "latency_total_s")
        rows.append({"workload": brick["workload_id"], "brick": f"{brick['brick_host']}:{brick['brick_path']}",
                     "volume": brick["volume"], "window": _num(brick["duration_s"], "s", 0),
                     "read": metrics.format_bytes(brick["read_bytes"]),
                     "written": metrics.format_bytes(brick["write_bytes"]),
                     "fops": ", ".join(f"{f['fop']} {f['calls']:,} x {_num(f['latency_avg_s'] * 1e3, 'ms')}"
                                       for f in mine.to_dict("records"))})
    return rows


def _pfs_client_rows(counters: pd.DataFrame) -> list[dict]:
    """Per workload, worker and pfs backend: what the file system's client counted over the window."""
    if counters.empty:
        return []
    rows = []
    for (workload, host, backend, fstype), group in counters.groupby(["workload_id", "host", "backend", "fstype"]):
        value = group.set_index("counter")["value"]
        calls = {fop: value.get(f"fop.{fop}.calls") for fop in ("READ", "WRITE")}
        rows.append({"workload": workload, "host": host, "backend": f"{backend} ({fstype})",
                     "window": _num(value.get("window"), "s", 0),
                     "read": metrics.format_bytes(value.get("bytes_read", value.get("read_bytes.sum"))),
                     "written": metrics.format_bytes(value.get("bytes_written", value.get("write_bytes.sum"))),
                     "calls": ", ".join(f"{fop} {int(n):,}" for fop, n in calls.items() if n is not None)})
    return rows


def _workload_io_rows(tables: dict[str, pd.DataFrame]) -> list[dict]:
    rows = []
    for w in metrics.workload_io_summary(tables).to_dict("records"):
        get = w.get
        status = get("status")
        rows.append({"workload": w["workload_id"],
                     "status": status if isinstance(status, str) else "missing",
                     "duration": _num(get("duration_s"), "s", 1),
                     "input": metrics.format_bytes(get("input_bytes")), "output": metrics.format_bytes(get("output_bytes")),
                     "shuffle_read": metrics.format_bytes(get("shuffle_read_bytes")),
                     "shuffle_write": metrics.format_bytes(get("shuffle_write_bytes")),
                     "spill": metrics.format_bytes(get("spill_disk_bytes")),
                     "mr_hdfs": f"{metrics.format_bytes(get('mr_hdfs_read_bytes'))} / "
                                f"{metrics.format_bytes(get('mr_hdfs_written_bytes'))}",
                     "mr_shuffle": metrics.format_bytes(get("mr_shuffle_bytes")),
                     "device": f"{metrics.format_bytes(get('device_read_bytes'))} / "
                               f"{metrics.format_bytes(get('device_write_bytes'))}"})
    return rows


def device_backends(run_dir: Path, manifest: dict) -> dict[tuple[str, str], str]:
    """(host, kernel device) -> storage backend name: raw/<host>/storage.json, else the manifest's
    hosts[host].storage."""
    mapping = {}
    hosts = set(manifest.get("hosts") or {}) | {p.name for p in (Path(run_dir) / "raw").glob("*") if p.is_dir()}
    for host in sorted(hosts):
        storage = {}
        try:
            storage = safeio.read_json(Path(run_dir) / "raw" / host / "storage.json", "manifest")
        except (OSError, ValueError, safeio.Refused):
            storage = ((manifest.get("hosts") or {}).get(host) or {}).get("storage") or {}
        backends = storage.get("backends") if isinstance(storage, dict) else None
        for backend, facts in (backends if isinstance(backends, dict) else {}).items():
            if isinstance(facts, dict) and isinstance(facts.get("device"), str) and facts["device"]:
                mapping[(host, facts["device"])] = backend
    return mapping


def local_devices(workloads: pd.DataFrame, backends: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    """(host, workload_id) -> the device of the backend holding that workload run's local (shuffle) dirs."""
    by_backend = {(host, backend): device for (host, device), backend in backends.items()}
    hosts = sorted({host for host, _ in backends})
    if workloads.empty or "placement_local" not in workloads:
        return {}
    return {(host, w.workload_id): by_backend[(host, w.placement_local)] for w in workloads.itertuples()
            for host in hosts if (host, w.placement_local) in by_backend}


def _stage_request_tables(sizes: pd.DataFrame, stages: pd.DataFrame) -> list[dict]:
    """One table per workload: stage -> requests, bytes, mean/median size, % reads, per device."""
    tables = []
    for workload_id, per_workload in sizes.groupby("workload_id", sort=False):
        rows = []
        for r in per_workload.to_dict("records"):
            index = r["stage_index"]
            name = stages.at[index, "name"] if index >= 0 else "requests issued while no stage of this host ran"
            rows.append({"stage": r["stage"], "name": name, "host": r["host"],
                         "device": r["device"] + (f" ({r['backend']})" if r["backend"] else ""),
                         "requests": _num(r["requests"], "", 0), "bytes": metrics.format_bytes(r["bytes"]),
                         "mean": metrics.format_bytes(r["mean_bytes"]), "median": metrics.format_bytes(r["median_bytes"]),
                         "reads": _num(r["read_pct"], "%", 1)})
        attributed = per_workload.loc[per_workload["stage_index"] >= 0, "stage_index"]
        tables.append({"workload_id": workload_id, "rows": rows, "stages": attributed.nunique()})
    return tables


def _shuffle_model_rows(model: pd.DataFrame, backends: dict) -> list[dict]:
    return [{"workload": r["workload_id"], "stage": r["stage"], "tasks": int(r["num_tasks"]),
             "shuffle_read": metrics.format_bytes(r["shuffle_read_bytes"]),
             "per_reducer": metrics.format_bytes(r["shuffle_read_bytes"] / r["num_tasks"]) if r["num_tasks"] else "-",
             "map_outputs": r["map_outputs"], "rule": r["parents_rule"],
             "expected": metrics.format_bytes(r["expected_bytes"]),
             "device": "-" if r["device"] is None else f"{r['device']} ({backends.get((r['host'], r['device']), '?')})",
             "reads": f"{int(r['measured_reads']):,} requests, {metrics.format_bytes(r['device_read_bytes'])} "
                      f"({_num(100 * r['device_read_bytes'] / r['shuffle_read_bytes'], '%', 0)} of the shuffle read)",
             "measured": metrics.format_bytes(r["measured_bytes"]), "ratio": _num(r["ratio"], "x", 2)}
            for r in model.to_dict("records")]


def _fio_rows(fio: pd.DataFrame) -> list[dict]:
    curves = metrics.fio_curves(fio)
    return [{"host": c.host, "backend": c.backend, "rw": c.rw, "direction": c.direction,
             "bs": metrics.size_label(c.block_size_bytes), "bw": _num(c.bandwidth_bytes_per_s / _MB, "MB/s", 1),
             "iops": _num(c.iops, "IOPS", 0), "lat": _num(c.lat_mean_s * 1e3, "ms", 3)} for c in curves.itertuples()]


def _problems(manifest: dict, tables: dict[str, pd.DataFrame]) -> list[str]:
    """What a reader must know before trusting the numbers: missing or failed pieces."""
    problems = []
    if not manifest:
        problems.append("manifest.json is missing or unreadable: run-level facts and step statuses are unknown.")
    else:
        gaps = missing_keys(manifest)
        if gaps:
            problems.append(f"manifest.json lacks {', '.join(gaps)} (partial run?).")
        if manifest.get("status") not in (None, "completed"):
            problems.append(f"run status is {manifest.get('status')!r}, not 'completed'.")
    steps = tables["steps"]
    for step in steps[~steps["status"].isin(["ok"])].itertuples():
        where = f"workload {step.workload_id}" if step.workload_id else "run"
        problems.append(f"step {step.name} of {where}: {step.status}" + (f" ({step.error})" if step.error else ""))
    for workload in tables["workloads"].itertuples():
        if workload.status == "invalid":
            problems.append(f"workload {workload.workload_id}: INVALID: its output failed validation; its numbers "
                            "are shown but left out of every median and comparison")
        elif workload.status not in ("ok",):
            problems.append(f"workload {workload.workload_id}: {workload.status}")
    for source in tables["sources"][~tables["sources"]["status"].isin(["ok", "none"])].itertuples():
        problems.append(f"{source.source} of {source.workload_id} on {source.host}: {source.status} — {source.message}")
    for source in tables["sources"][tables["sources"]["message"].fillna("").str.startswith("repaired")].itertuples():
        problems.append(f"{source.file}: {source.message}")
    return problems


def _emulation(manifest: dict) -> dict:
    emulation = manifest.get("emulation") or {}
    profiles = []
    for name, profile in (emulation.get("profiles") or {}).items():
        profile = profile if isinstance(profile, dict) else {"value": profile}
        profiles.append({"name": name, "items": [(k, _describe_profile_value(k, v)) for k, v in profile.items()]})
    limitations = emulation.get("limitations") or []
    if isinstance(limitations, str):
        limitations = [limitations]
    return {"present": "emulation" in manifest, "profiles": profiles, "limitations": limitations}


def _describe_profile_value(key: str, value) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "iops" in key:
            return "uncapped" if value == 0 else f"{value:,} requests/s"
        if "bps" in key or "bandwidth" in key or "bytes" in key:
            return "uncapped" if value == 0 else f"{value / _MB:,.1f} MB/s"
        if key.endswith("_ms"):
            return f"{value} ms"
    return value if isinstance(value, str) else json.dumps(value)


class ReportSectionFailed(UserWarning):
    """A section of the report could not be built: the report shows its error instead. Warned too, so that the
    user sees it on stderr and the tests, which turn this warning into an error (pytest.ini), fail on it."""


def _model_section(run_dir: Path) -> dict:
    """The I/O-aware model and bottleneck section (analysis/models); a model failure must not cost the report."""
    from .models.report_section import model_section
    try:
        return model_section(Path(run_dir))
    except Exception as error:  # noqa: BLE001 - shown in the section instead
        note = f"the model could not be evaluated: {type(error).__name__}: {error}"
        warnings.warn(f"report of {Path(run_dir).name}: {note}", ReportSectionFailed, stacklevel=2)
        return {"tables": [], "note": note}


def _monitoring_png(tables: dict[str, pd.DataFrame], run_id: str) -> str | None:
    """Device throughput per backend from the run's Prometheus archive (what the live dashboard showed)."""
    fig = monitoring.backend_throughput_figure(tables["prometheus_series"], tables["workloads"], run_id)
    if fig is None:
        return None
    _stamp(fig, run_id)
    return _png(fig)


def build_context(run_dir: Path) -> dict:
    manifest = load_manifest(run_dir)
    tables = read_tables(run_dir)
    run_id = manifest.get("run_id") or Path(run_dir).name
    spans = metrics.phase_spans(tables["stages"], tables["mr_jobs"])
    steps = tables["steps"].assign(duration=lambda f: f["duration_s"].map(lambda v: _num(v, "s", 1)),
                                   workload_id=lambda f: f["workload_id"].fillna(""))
    workloads = tables["workloads"].assign(
        duration=lambda f: f["duration_s"].map(lambda v: _num(v, "s", 1)),
        start=lambda f: f["start_time_s"].map(_utc),
        **{step: (lambda f, step=step: f[f"{step}_s"].map(lambda v: _num(v, "s", 1)))
           for step in ("prepare", "run", "validate")},
        cores=lambda f: f["executor_cores"].map(lambda v: "default" if pd.isna(v) else str(int(v))))
    by_cores = metrics.stage_time_by_cores(tables["stages"], tables["workloads"])
    backends = device_backends(run_dir, manifest)
    requests, stages = tables["block_requests"], tables["stages"]
    model = metrics.shuffle_request_size_model(requests, stages, local_devices(tables["workloads"], backends))
    cores, cores_rows = _cores_rows(by_cores)
    return {
        "run_id": run_id, "run_dir": str(run_dir), "manifest": manifest,
        "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "facts": [("cluster", manifest.get("cluster", "missing")), ("status", manifest.get("status", "missing")),
                  ("started", manifest.get("started_at", "missing")), ("ended", manifest.get("ended_at", "missing")),
                  ("controller", manifest.get("controller", "missing")),
                  ("harness commit", (manifest.get("git") or {}).get("commit", "missing")),
                  ("hosts", ", ".join(manifest.get("hosts", {}) or []) or "missing"),
                  ("placement", json.dumps((manifest.get("storage") or {}).get("placement", "missing")))],
        "problems": _problems(manifest, tables),
        "emulation": _emulation(manifest),
        "steps": steps.to_dict("records"), "workloads": workloads.to_dict("records"),
        "workload_io_rows": _workload_io_rows(tables),
        "placement_rows": _placement_rows(metrics.run_time_by_placement(tables["workloads"])),
        "cores": cores, "cores_rows": cores_rows, "cores_figures": cores_figures(by_cores, run_id),
        "stage_rows": _stage_rows(tables["stages"]), "mr_rows": _mr_rows(tables["mr_jobs"], tables["mr_counters"]),
        "gluster_rows": _gluster_rows(tables["gluster_bricks"], tables["gluster_fops"]),
        "pfs_client_rows": _pfs_client_rows(tables["pfs_client"]),
        "fio_rows": _fio_rows(tables["fio"]), "fio_png": fio_figure(tables["fio"], run_id),
        "size_figures": request_size_figures(tables["block_requests"], run_id),
        "throughput_figures": throughput_figures(tables["iostat"], spans, run_id, metrics.stage_io_rate(stages)),
        "stage_request_tables": _stage_request_tables(metrics.stage_request_sizes(requests, stages, backends), stages),
        "shuffle_model_rows": _shuffle_model_rows(model, backends),
        "offset_figures": offset_figures(requests, backends, run_id),
        "monitoring_png": _monitoring_png(tables, run_id),
        "sources": tables["sources"].to_dict("records"),
        "model": _model_section(run_dir),
    }


def render(context: dict) -> str:
    env = Environment(loader=FileSystemLoader(TEMPLATE_DIR), autoescape=select_autoescape(["html", "j2"]))
    return env.get_template("report.html.j2").render(**context)


def write_report(run_dir: Path) -> Path:
    """Render report.html into the run directory and return its path. Written anew and renamed into place
    (analysis.safeio): a symlink planted as report.html is replaced, never written through."""
    with safeio.confined(run_dir):
        page = render(build_context(Path(run_dir)))
    return safeio.write_text(Path(run_dir) / "report.html", page)
