"""Where the time went: rules on what the devices and the CPU did (docs/findings.md: `page-cache`, `cpu-bound`,
`device-saturated`, `device-underused`): whether storage was exercised at all, whether it or the CPU limited the
workload, or whether it had capacity to spare."""
from __future__ import annotations

from typing import Iterable

import math

import numpy as np
import pandas as pd

from ... import metrics
from ...formatting import format_bytes, number, rate
from ...models.iomodel.bandwidths import Bandwidths
from ...stages import stage_summary
from ..engine import Finding, Inputs, rule


# ---------------------------------------------------------------- page cache

@rule("page-cache", needs=(("disk_totals", "read_bytes"), ("devices", "device")))
def page_cache(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    io = inputs.workload_io()
    app = metrics.application_read_bytes(io)
    disk = inputs.measured_on_backend_devices("disk_totals")
    for workload_id, on_devices in disk.groupby("workload_id"):
        read = float(app.get(workload_id, 0.0))
        served = float(on_devices["read_bytes"].sum())
        if read < limits["app_read_min_bytes"] or served >= read * limits["device_share_max_pct"] / 100:
            continue
        share = 100 * served / read
        names = ", ".join(sorted(inputs.device_name(d, b) for d, b in zip(on_devices["device"], on_devices["backend"])))
        yield Finding("page-cache", workload_id, names,
                      f"the applications read {format_bytes(read)}; the backends' devices ({names}) read "
                      f"{format_bytes(served)}, {number(share, '%', 1)} of it",
                      {"app_read_bytes": read, "device_read_bytes": served, "device_share_pct": share},
                      place=(("devices", ",".join(sorted({f"{h}:{b}" for h, b in zip(on_devices["host"],
                                                                                        on_devices["backend"])}))),))


# ---------------------------------------------------------------- CPU-bound stages

@rule("cpu-bound", needs=(("stages", "executor_cpu_time_s"),))
def cpu_bound(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    per_stage = stage_summary(inputs.workload_ids(inputs.table("stages"))).rename(
        columns={"executor_cpu_time_s": "cpu_s", "executor_run_time_s": "run_s"})
    if per_stage.empty:
        return
    runs = inputs.table("workloads")
    workload_of = dict(zip(runs["workload_id"], runs["workload"])) if "workload" in runs else {}
    per_stage["workload"] = per_stage["workload_id"].map(lambda w: workload_of.get(w, w))
    per_stage["cpu_pct"] = 100 * per_stage["cpu_s"] / per_stage["run_s"].where(per_stage["run_s"] > 0)
    per_stage["share_pct"] = 100 * per_stage["duration_s"] / per_stage.groupby("workload_id")["duration_s"].transform("sum")
    for _, same in per_stage.groupby(["workload", "app", "job_group", "name", "num_tasks", "ordinal"], dropna=False):
        if not (same["cpu_pct"] >= limits["cpu_share_min_pct"]).all():
            continue
        long = same[(same["share_pct"] >= limits["stage_share_min_pct"]) & (same["duration_s"] >= limits["stage_min_s"])]
        if long.empty:
            continue
        first = same.iloc[0]
        subject = f"app {first['app']} s{first['stage_id']} {first['name']}"
        yield Finding("cpu-bound", ", ".join(same["workload_id"]), subject,
                      f"{subject}: CPU {number(same['cpu_pct'].min(), '%', 0)}-{number(same['cpu_pct'].max(), '%', 0)} "
                      f"of task run time in {len(same)} configuration{'s' if len(same) > 1 else ''}; "
                      f"{number(long['duration_s'].median(), 's', 1)}, "
                      f"{number(long['share_pct'].median(), '%', 0)} of its workload run's stage time",
                      {"cpu_share_min_pct": float(same["cpu_pct"].min()), "configurations": len(same),
                       "stage_s": float(long["duration_s"].median()),
                       "stage_share_pct": float(long["share_pct"].median())},
                      place=(("stage", first["place"]),),
                      workload_key=str(first["workload"]))


# ---------------------------------------------------------------- saturated devices

@rule("device-saturated", needs=(("iostat", "util_pct"), ("devices", "device")))
def device_saturated(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    iostat = inputs.measured_on_backend_devices("iostat")
    for (workload_id, host, device, backend), samples in iostat.groupby(["workload_id", "host", "device", "backend"]):
        busy = samples[samples["util_pct"] >= limits["util_min_pct"]]
        if len(busy) < limits["seconds_min"] or busy["aqu_sz"].mean() < limits["queue_min"]:
            continue
        iops = (busy["r_per_s"] + busy["w_per_s"]).mean()
        awaits = [f"{d} await {number(busy[c].mean(), 'ms', 0)}" for d, c in (("read", "r_await_ms"), ("write", "w_await_ms"))
                  if busy[c].mean() > 0]
        subject = inputs.device_name(device, backend)
        yield Finding("device-saturated", workload_id, subject,
                      f"{subject} on {host}: {len(busy)} s at ≥ {number(limits['util_min_pct'], '%', 0)} busy, "
                      f"mean queue {number(busy['aqu_sz'].mean(), 'requests', 1)}, {', '.join(awaits)}, "
                      f"{number(iops, 'IOPS', 0)}, "
                      f"{rate((busy['read_bytes_per_s'] + busy['write_bytes_per_s']).mean())}",
                      {"saturated_s": int(len(busy)), "queue_mean": float(busy["aqu_sz"].mean()),
                       "r_await_ms": float(busy["r_await_ms"].mean()), "w_await_ms": float(busy["w_await_ms"].mean()),
                       "iops": float(iops)}, host, place=(("device", f"{host}:{backend}"),))


# ---------------------------------------------------------------- what fio says the device can do

@rule("device-underused", needs=(("iostat", "read_bytes_per_s"), ("devices", "device")))
def device_underused(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    bandwidths = inputs.bandwidths()
    iostat = inputs.measured_on_backend_devices("iostat")
    for (workload_id, host, device, backend), samples in iostat.groupby(["workload_id", "host", "device", "backend"]):
        profile = inputs.profile(backend)
        moved = float((samples["read_bytes_per_s"] + samples["write_bytes_per_s"]).sum())   # 1 s samples
        if moved < limits["moved_min_bytes"]:
            continue
        try:
            use, source = _capacity_use(samples, bandwidths, profile)
        except KeyError:            # no fio sweep and no profile: nothing says what the device can do
            continue
        peak = float(np.nanmax(use)) if len(use) else math.nan
        if not peak < limits["peak_use_max_pct"]:
            continue
        subject = inputs.device_name(device, backend)
        yield Finding("device-underused", workload_id, subject,
                      f"{subject} on {host}: at most {number(peak, '%', 1)} of what it can do at the request "
                      f"sizes it served ({source}); {format_bytes(moved)} moved, peak "
                      f"{rate((samples['read_bytes_per_s'] + samples['write_bytes_per_s']).max())}",
                      {"peak_use_pct": peak, "moved_bytes": moved}, host, place=(("device", f"{host}:{backend}"),))


def _capacity_use(samples: pd.DataFrame, bandwidths: Bandwidths, profile: str) -> tuple[np.ndarray, str]:
    """Per sample, % of the device's capacity used: read bytes/s over its random-read bandwidth at the mean read size
    plus the same for writes (a device serves one stream: the two shares add up)."""
    use, sources = np.zeros(len(samples)), set()
    for direction, pattern, size in (("read", "randread", "rareq_sz_bytes"), ("write", "randwrite", "wareq_sz_bytes")):
        for i, (moved, request) in enumerate(zip(samples[f"{direction}_bytes_per_s"], samples[size])):
            if moved > 0 and request > 0:
                capacity, source = bandwidths.at(profile, pattern, request)
                use[i] += 100 * moved / capacity
                sources.add(source)
    return use, "; ".join(sorted(sources))

