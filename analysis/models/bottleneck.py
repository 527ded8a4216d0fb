"""Per-resource ideal times per stage (Monotasks, `../shared/papers/monotasks-performance-clarity-sosp17.txt` §6):

    ideal CPU time     = executor CPU time of the stage / cores of the cluster (N * P)
    ideal disk time    = bytes the stage moved on a device / that device's throughput (per node: / N)
    ideal network time = shuffle bytes fetched from other nodes / network throughput (per node: / N)
    modeled stage time = max of the three; the bottleneck is the resource with the longest ideal time

and the what-ifs of §6.5: the best-case time with one resource infinitely fast (the maximum of the others) or
N times faster (its ideal time / N). Like the paper, a what-if scales the measured stage time by the modeled
change, which absorbs what the ideal times leave out (ramp-up, imperfect parallelism).
Disk bytes and request sizes are the ones the I/O-aware model measured at the device (iomodel), so the page
cache is accounted for; throughput is the fio sweep (or profile caps) of the backend at that request size.
"""
from __future__ import annotations

import math

import pandas as pd

from ..stages import STAGE_IDENTITY
from .iomodel.bandwidths import Bandwidths
from .iomodel.configurations import Configuration
from .iomodel.fit_predict import StageModel, fit, io_terms

RESOURCES = ("cpu", "disk", "network")
# A node's network when nothing says otherwise: 10 Gb/s, the I/O-aware paper's cluster (Table I).
DEFAULT_NETWORK_BYTES_PER_S = 10e9 / 8


def ideal_cpu_s(cpu_time_s: float, nodes: int, cores: int) -> float:
    """Sum of compute time / cores in the cluster (§6.1: 20 minutes of CPU on 80 cores = 15 s)."""
    return cpu_time_s / (nodes * cores)


def ideal_io_s(data_bytes: float, throughput_bytes_per_s: float) -> float:
    """Data transferred / resource throughput (§6.1: 20 GB over 10 disks x 100 MB/s = 20 s)."""
    return data_bytes / throughput_bytes_per_s


def what_if(ideal: dict[str, float], measured_s: float, resource: str, factor: float = math.inf) -> float:
    """Stage time if `resource` were `factor` times faster (inf: not a constraint at all): the measured time
    scaled by new model / old model (§6.3)."""
    old = max(ideal.values())
    new = max(v / factor if r == resource else v for r, v in ideal.items())
    return measured_s * new / old if old > 0 else measured_s


def ideal_times(config: Configuration, stage: pd.Series, model: StageModel, hdfs: str, local: str,
                bandwidths: Bandwidths, network_bytes_per_s: float = DEFAULT_NETWORK_BYTES_PER_S
                ) -> tuple[dict[str, float], str, list[dict]]:
    """A measured stage's ideal CPU, disk and network seconds with HDFS on `hdfs` and the local dirs on `local`
    (the configuration's own placement, or another: the same bytes at the other backends' throughput), the
    busiest disk's backend, and io_terms' paths (D, request size, BW and its source per path)."""
    paths = io_terms(model, hdfs, local, config.nodes, bandwidths)["paths"]
    disk_s, disk_backend = _disk_s(paths)
    ideal = {"cpu": ideal_cpu_s(stage["executor_cpu_time_s"] or 0.0, config.nodes, config.cores),
             # reads and writes of all devices: a disk serves one request stream, devices run in parallel
             "disk": disk_s,
             "network": ideal_io_s((stage["shuffle_remote_bytes_read"] or 0.0) / config.nodes, network_bytes_per_s)}
    return ideal, disk_backend, paths


def stage_bottlenecks(config: Configuration, models: list[StageModel], bandwidths: Bandwidths,
                      network_bytes_per_s: float = DEFAULT_NETWORK_BYTES_PER_S, faster: float = 2.0) -> pd.DataFrame:
    """One row per stage of a measured configuration: ideal CPU, disk and network seconds, the bottleneck,
    the modeled time and the what-ifs (each resource infinitely fast, and `faster` times faster)."""
    by_identity = {m.identity: m for m in models}
    rows = []
    for _, stage in config.stages.iterrows():
        model = by_identity.get(tuple(stage[STAGE_IDENTITY]))
        if model is None:
            continue
        ideal, disk_backend, _paths = ideal_times(config, stage, model, config.hdfs, config.local, bandwidths,
                                                  network_bytes_per_s)
        measured = float(stage["duration_s"])
        bottleneck = max(ideal, key=ideal.get)
        row = {"workload": config.workload, "sweep": config.sweep, **{k: stage[k] for k in STAGE_IDENTITY},
               "stage_id": int(stage["stage_id"]), "measured_s": measured, "bottleneck": bottleneck,
               "disk_backend": disk_backend,
               "modeled_s": max(ideal.values()),
               **{f"ideal_{r}_s": ideal[r] for r in RESOURCES}}
        for resource in RESOURCES:
            row[f"{resource}_infinite_s"] = what_if(ideal, measured, resource)
            row[f"{resource}_{faster:g}x_s"] = what_if(ideal, measured, resource, faster)
        rows.append(row)
    return pd.DataFrame(rows)


def _disk_s(paths: list[dict]) -> tuple[float, str]:
    """The ideal disk seconds of the busiest backend and that backend ("" when the stage moved nothing)."""
    per_device: dict[str, float] = {}
    for path in paths:
        per_device[path["backend"]] = per_device.get(path["backend"], 0.0) + path["time_s"]
    if not per_device:
        return 0.0, ""
    busiest = max(per_device, key=per_device.get)
    return per_device[busiest], busiest


def time_shares(configs: list[Configuration], bandwidths: Bandwidths,
                network_bytes_per_s: float = DEFAULT_NETWORK_BYTES_PER_S) -> pd.DataFrame:
    """Where each measured workload run's Spark stage time went: per run and bottleneck (`cpu`, `disk` of a backend,
    `network`), the measured seconds of the stages it bounded and their share of the run's summed stage time (%).
    Each run is modeled on its own bytes and request sizes (a fit on that run alone)."""
    columns = ["workload_id", "resource", "backend", "stage_s", "share_pct", "stages_s", "stages"]
    frames = []
    for config in configs:
        limits = stage_bottlenecks(config, fit([config], bandwidths)[config.key], bandwidths,
                                   network_bytes_per_s)
        if limits.empty:
            continue
        limits = limits.assign(backend=limits["disk_backend"].where(limits["bottleneck"] == "disk", ""))
        shares = limits.groupby(["bottleneck", "backend"], as_index=False).agg(stage_s=("measured_s", "sum"))
        total = float(limits["measured_s"].sum())
        frames.append(shares.rename(columns={"bottleneck": "resource"}).assign(
            workload_id=config.workload_id, share_pct=100 * shares["stage_s"] / total if total > 0 else float("nan"),
            stages_s=total, stages=len(limits)))
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns].sort_values(
        ["workload_id", "stage_s"], ascending=[True, False], ignore_index=True)
