"""How the workloads used their devices (docs/findings.md: `task-throughput`, `small-requests`, `random-access`,
`read-write-mix`): per-task throughput against what the device can do, the sizes and order of the requests the
block trace recorded, and whether a workload reads or writes."""
from __future__ import annotations

from typing import Iterable

import math

import pandas as pd

from ... import access_patterns, metrics
from ...formatting import count, exact_size, format_bytes, number, rate
from ...models.iomodel.bandwidths import Bandwidths
from ...stages import stage_summary
from ..engine import Finding, Inputs, rule

# The block size at which "what the device gives" is read from the run's fio sweep: the sweep's largest (1 MiB),
# the size HDFS and the page cache's read-ahead stream at; the profile's caps where the run has no sweep.
LARGE_BLOCK_BYTES = 1 << 20
FIO_PATTERN = {("read", True): "randread", ("write", True): "randwrite", ("read", False): "read",
               ("write", False): "write"}


def _capacity(bandwidths: Bandwidths, profile: str, op: str, random: bool, size: float) -> tuple[float, str]:
    """(bytes/s, source) the profile gives at `size`; NaN where neither a sweep nor a profile says."""
    try:
        return bandwidths.at(profile, FIO_PATTERN[(op, random)], size)
    except KeyError:
        return math.nan, "no fio sweep and no storage profile"


def _paths(inputs: Inputs, workload_id: str, backend: str) -> list[str]:
    """What the backend held in that workload run: `hdfs`, `local` (the placement's roles)."""
    runs = inputs.table("workloads")
    row = runs[runs["workload_id"] == workload_id] if "workload_id" in runs else runs.iloc[0:0]
    if row.empty:
        return []
    return [role for role in ("hdfs", "local") if row.iloc[0].get(f"placement_{role}") == backend]


def _faster(inputs: Inputs, bandwidths: Bandwidths, backend: str, op: str, random: bool,
            size: float) -> tuple[str, float] | None:
    """The other backend that gives the most at this direction, pattern and size, if it gives more than `backend`."""
    here = _capacity(bandwidths, inputs.profile(backend), op, random, size)[0]
    others = {b: _capacity(bandwidths, inputs.profile(b), op, random, size)[0]
              for b in set(inputs.table("devices")["backend"]) - {backend}}
    best = max(others.items(), key=lambda item: item[1] if math.isfinite(item[1]) else -1, default=None)
    return best if best and math.isfinite(best[1]) and (not math.isfinite(here) or best[1] > here) else None


def _placement(inputs: Inputs, bandwidths: Bandwidths, workload_id: str, backend: str, op: str, random: bool,
               size: float, fallback: str, only: tuple = ("hdfs", "local")) -> str:
    """A placement of the paths (of `only`) the backend held on the faster backend at this size, with both figures;
    else `fallback`."""
    paths = [p for p in _paths(inputs, workload_id, backend) if p in only]
    faster = _faster(inputs, bandwidths, backend, op, random, size)
    if not paths or faster is None:
        return fallback
    here = _capacity(bandwidths, inputs.profile(backend), op, random, size)[0]
    pattern = FIO_PATTERN[(op, random)]
    return (f"placement {', '.join(f'{p}={faster[0]}' for p in paths)} (from {backend}): fio {pattern} at "
            f"{format_bytes(size)} gives {rate(faster[1])} there against {rate(here)} on {backend}")


def _device_place(host: str, backend: str, op: str) -> tuple:
    return (("device", f"{host}:{backend}"), ("direction", op))


# ---------------------------------------------------------------- per-task throughput (Dr. Elephant's Mapper Speed)

@rule("task-throughput", needs=(("spark_tasks", "input_bytes"), ("stages", "input_bytes"), ("devices", "device")))
def task_throughput(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    stages = inputs.workload_ids(inputs.table("stages"))
    tasks = inputs.workload_ids(inputs.table("spark_tasks"))
    runs = inputs.table("workloads")
    if stages.empty or tasks.empty or "placement_hdfs" not in runs:
        return
    hdfs_of = dict(zip(runs["workload_id"], runs["placement_hdfs"]))
    bandwidths = inputs.bandwidths()
    keys = ["workload_id", "app_id", "stage_id"]
    reading = tasks[(tasks["input_bytes"] > 0) & (tasks["executor_run_time_s"] > 0)]
    speed = reading.assign(speed=reading["input_bytes"] / reading["executor_run_time_s"])
    per_task = speed.groupby(keys).agg(median_bps=("speed", "median"), slowest_bps=("speed", "min"),
                                       tasks=("speed", "size"), run_s=("executor_run_time_s", "sum"),
                                       cpu_s=("executor_cpu_time_s", "sum")).reset_index()
    summary = stage_summary(stages).drop(columns=["executor_run_time_s", "executor_cpu_time_s"], errors="ignore")
    for workload_id, run_stages in summary.groupby("workload_id"):
        backend = hdfs_of.get(workload_id)
        if backend is None or pd.isna(backend):
            continue
        device_bps, source = _capacity(bandwidths, inputs.profile(backend), "read", False, LARGE_BLOCK_BYTES)
        if not math.isfinite(device_bps):
            continue
        for s in run_stages.merge(per_task, on=keys).to_dict("records"):
            if s["input_bytes"] < limits["input_min_bytes"] or s["duration_s"] < limits["stage_min_s"]:
                continue
            share = 100 * s["median_bps"] / device_bps
            if share > limits["median_share_max_pct"]:
                continue
            yield _throughput_finding(inputs, bandwidths, s, backend, device_bps, source, share, limits)


def _throughput_finding(inputs: Inputs, bandwidths: Bandwidths, s: dict, backend: str, device_bps: float,
                        source: str, share: float, limits: dict) -> Finding:
    subject = f"app {s['app']} s{s['stage_id']} {s['name']}"
    cpu_pct = 100 * s["cpu_s"] / s["run_s"]
    concurrent = s["run_s"] / s["duration_s"]       # tasks running at once, on average over the stage
    feeds = int(device_bps // s["median_bps"])      # tasks at the median rate the device's bandwidth could serve
    if cpu_pct >= limits["cpu_share_min_pct"]:
        recommendation = (f"not storage-bound: {rate(s['median_bps'])} per task against the {rate(device_bps)} "
                          f"{backend} gives; more concurrent tasks (spark.executor.cores x executors = {feeds}, from "
                          f"{number(concurrent, '', 1)} at once) before the device limits")
    else:
        recommendation = _placement(inputs, bandwidths, s["workload_id"], backend, "read", False, LARGE_BLOCK_BYTES,
                                    f"the tasks waited off the CPU ({number(cpu_pct, '%', 0)} on it) far below "
                                    f"the {rate(device_bps)} {backend} streams: look at their request sizes and "
                                    f"order (small-requests, random-access) before the device", only=("hdfs",))
    return Finding("task-throughput", s["workload_id"], f"{subject} on {inputs.device_name('HDFS', backend)}",
                   f"{subject}: {count(s['tasks'], 'task')} read {format_bytes(s['input_bytes'])} of input in "
                   f"{number(s['duration_s'], 's', 1)}, median {rate(s['median_bps'])} per task, slowest "
                   f"{rate(s['slowest_bps'])} ({number(share, '%', 1)} and "
                   f"{number(100 * s['slowest_bps'] / device_bps, '%', 1)} of the {rate(device_bps)} HDFS's backend "
                   f"{backend} reads sequentially at {exact_size(LARGE_BLOCK_BYTES)}, {source}); CPU "
                   f"{number(cpu_pct, '%', 0)} of the tasks' run time",
                   {"median_task_bytes_per_s": float(s["median_bps"]), "slowest_task_bytes_per_s":
                    float(s["slowest_bps"]), "device_bytes_per_s": float(device_bps), "median_share_pct": share,
                    "slowest_share_pct": 100 * s["slowest_bps"] / device_bps, "stage_s": float(s["duration_s"]),
                    "stage_share_pct": inputs.stage_share_pct(s["workload_id"], s["duration_s"]),
                    "input_bytes": float(s["input_bytes"]), "cpu_share_pct": cpu_pct, "tasks_device_feeds": feeds},
                   place=(("stage", s["place"]), ("hdfs", backend)),
                   recommendation=recommendation)


# ---------------------------------------------------------------- small requests at the device (Drishti P05/P06)

@rule("small-requests", needs=(("block_requests", "bytes"), ("devices", "device")))
def small_requests(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    sizes = metrics.on_backend_devices(access_patterns.access_sizes(inputs.workload_ids(inputs.table("block_requests"))),
                                       inputs.backend_devices())
    bandwidths, rotational = inputs.bandwidths(), inputs.rotational()
    small_max = limits["small_max_bytes"]
    for (workload_id, host, device, backend, op), per_size in sizes.groupby(
            ["workload_id", "host", "device", "backend", "op"]):
        small = per_size[per_size["size_bytes"] < small_max]
        total, few = int(per_size["requests"].sum()), int(small["requests"].sum())
        share = 100 * few / total if total else 0.0
        if few < limits["small_requests_min"] or share < limits["small_share_min_pct"]:
            continue
        typical = float(small["bytes"].sum() / few)      # the small requests' mean size
        spinning = bool(rotational.get((host, device), False))
        at_size, source = _capacity(bandwidths, inputs.profile(backend), op, spinning, typical)
        at_large = _capacity(bandwidths, inputs.profile(backend), op, spinning, small_max)[0]
        subject = inputs.device_name(device, backend)
        yield Finding("small-requests", workload_id, f"{subject} {op}s",
                      f"{subject} on {host}: {number(few, '', 0)} of {count(total, op)} ({number(share, '%', 1)}) "
                      f"smaller than {exact_size(small_max)}, moving {format_bytes(small['bytes'].sum())} of "
                      f"{format_bytes(per_size['bytes'].sum())}, {format_bytes(typical)} on average, "
                      f"at which the device gives {rate(at_size)} against {rate(at_large)} at "
                      f"{exact_size(small_max)} ({FIO_PATTERN[(op, spinning)]}, {source})",
                      {"small_requests": few, "requests": total, "small_share_pct": share,
                       "mean_small_bytes": typical, "at_common_size_bytes_per_s": at_size,
                       "at_small_max_bytes_per_s": at_large}, host, place=_device_place(host, backend, op),
                      recommendation=_placement(inputs, bandwidths, workload_id, backend, op, spinning, typical,
                                                f"fewer, larger {op}s on {subject}: {rate(at_large)} at "
                                                f"{exact_size(small_max)} against {rate(at_size)} at "
                                                f"{format_bytes(typical)}"))


# ---------------------------------------------------------------- random against sequential (Drishti P11-P14)

@rule("random-access", needs=(("block_requests", "sector"), ("devices", "device")))
def random_access(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    requests = inputs.workload_ids(inputs.table("block_requests"))
    shares = metrics.on_backend_devices(access_patterns.sequential_share(requests), inputs.backend_devices())
    sizes = access_patterns.access_sizes(requests).groupby(["workload_id", "host", "device", "op"])
    bandwidths, rotational = inputs.bandwidths(), inputs.rotational()
    for r in shares[shares["op"] != "all"].to_dict("records"):
        decided = r["sequential"] + r["random"]
        share = 100 - r["sequential_pct"] if decided else 0.0
        if r["random"] < limits["random_requests_min"] or share < limits["random_share_min_pct"]:
            continue
        spinning = bool(rotational.get((r["host"], r["device"]), False))
        per_size = sizes.get_group((r["workload_id"], r["host"], r["device"], r["op"]))
        mean = float(per_size["bytes"].sum() / per_size["requests"].sum())
        profile = inputs.profile(r["backend"])
        random_bps = _capacity(bandwidths, profile, r["op"], True, mean)[0]
        sequential_bps, source = _capacity(bandwidths, profile, r["op"], False, mean)
        subject = inputs.device_name(r["device"], r["backend"])
        backward = decided - r["forward"]
        kind = "rotational: each costs a seek" if spinning else "not rotational: no seek"
        yield Finding("random-access", r["workload_id"], f"{subject} {r['op']}s",
                      f"{subject} on {r['host']} ({kind}): {number(r['random'], '', 0)} of "
                      f"{count(decided, r['op'])} ({number(share, '%', 1)}) did not start where the previous one "
                      f"ended, {count(backward, 'request')} of them backward (Drishti's random); "
                      f"{format_bytes(mean)} on average, at which the device gives {rate(random_bps)} random "
                      f"against {rate(sequential_bps)} sequential ({source})",
                      {"random_requests": int(r["random"]), "requests": int(decided), "random_share_pct": share,
                       "backward_requests": int(backward), "mean_request_bytes": mean,
                       "rotational_random_requests": int(r["random"]) if spinning else 0,
                       "random_bytes_per_s": random_bps, "sequential_bytes_per_s": sequential_bps}, r["host"],
                      place=_device_place(r["host"], r["backend"], r["op"]),
                      recommendation=_placement(inputs, bandwidths, r["workload_id"], r["backend"], r["op"], True,
                                                mean, "none for the device: a solid-state device pays no seek"
                                                if not spinning else f"fewer streams at once on {subject} "
                                                f"(fewer concurrent tasks): {rate(sequential_bps)} sequential "
                                                f"against {rate(random_bps)} random"))


# ---------------------------------------------------------------- read- or write-intensive (Drishti P03/P04)

APPLICATION_WRITE_PATHS = ("hdfs_write_bytes", "shuffle_write_bytes", "spill_bytes")


@rule("read-write-mix", needs=(("disk_totals", "read_bytes"), ("devices", "device")))
def read_write_mix(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    io = inputs.workload_io()
    app_read = metrics.application_read_bytes(io)
    indexed = io.set_index("workload_id")
    app_written = sum((indexed[c].fillna(0) for path in APPLICATION_WRITE_PATHS
                       for c in metrics.PATH_COLUMNS[path] if c in indexed), pd.Series(0.0, index=indexed.index))
    bandwidths = inputs.bandwidths()
    for workload_id, on_devices in inputs.measured_on_backend_devices("disk_totals").groupby("workload_id"):
        read, written = float(on_devices["read_bytes"].sum()), float(on_devices["write_bytes"].sum())
        moved = read + written
        if moved < limits["moved_min_bytes"]:
            continue
        imbalance = 100 * abs(read - written) / moved
        if imbalance < limits["imbalance_min_pct"]:
            continue
        op = "read" if read > written else "write"
        busiest = on_devices.assign(moved=on_devices[f"{op}_bytes"]).sort_values("moved").iloc[-1]
        speeds = {b: _capacity(bandwidths, inputs.profile(b), op, False, LARGE_BLOCK_BYTES)[0]
                  for b in sorted(set(inputs.table("devices")["backend"]))}
        names = ", ".join(sorted(inputs.device_name(d, b) for d, b in zip(on_devices["device"], on_devices["backend"])))
        yield Finding("read-write-mix", workload_id, names,
                      f"{op}-intensive: the backends' devices ({names}) read {format_bytes(read)} and wrote "
                      f"{format_bytes(written)} ({number(100 * read / moved, '%', 0)} reads); the applications read "
                      f"{format_bytes(app_read.get(workload_id, math.nan))} and wrote "
                      f"{format_bytes(app_written.get(workload_id, math.nan))}",
                      {"device_read_bytes": read, "device_write_bytes": written, "imbalance_pct": imbalance,
                       "device_read_share_pct": 100 * read / moved,
                       "app_read_bytes": float(app_read.get(workload_id, math.nan)),
                       "app_write_bytes": float(app_written.get(workload_id, math.nan))},
                      place=(("direction", op),),
                      recommendation=f"compare the backends by their {op} bandwidth, where {busiest['backend']} "
                                     f"did most of it: " + ", ".join(f"{b} {rate(v)}" for b, v in speeds.items())
                                     + f" (sequential {op} at {exact_size(LARGE_BLOCK_BYTES)})")
