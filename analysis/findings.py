"""What the storage did, in sentences: a documented rule set over a run's tables (findings layer: above the models,
below the presentation; docs/findings.md holds every rule's trigger, threshold, evidence and action).

In the manner of Drishti over Darshan logs, for Spark and MapReduce on storage. Every rule is a Rule: an id, what
triggers it, its thresholds (units in their names), and a check that takes the run's tables (never raw/) and
returns one Finding per place it fired (a workload run, a stage, a device), each with its evidence in words and
numbers with units (analysis.formatting) and the numbers themselves. A rule whose tables the run lacks says so
(status `no data`) instead of staying silent. Time differences come from analysis.statistics only: no finding rests
on a difference the statistics call noise.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from . import devices, metrics, statistics
from .formatting import count, format_bytes, number, rate
from .models import bottleneck
from .models.iomodel.bandwidths import Bandwidths
from .models.iomodel.configurations import Configuration
from .stages import with_application_order, with_identity

FIRED, QUIET, NO_DATA = "fired", "did not fire", "no data"
COLUMNS = ["rule", "title", "workload_id", "host", "subject", "evidence", "action", "values"]


@dataclass(frozen=True)
class Finding:
    rule: str
    workload_id: str
    subject: str          # where: a device, a stage, a placement
    evidence: str         # words and numbers with units
    values: dict          # the numbers the evidence quotes (units in the keys)
    host: str = ""


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    trigger: str          # in words, with the thresholds by name
    thresholds: dict      # name (unit in the name) -> value
    action: str
    needs: tuple          # tables (name, column) the check reads; an empty or missing one: no data
    check: Callable[["Inputs", dict], list[Finding]] = field(repr=False, compare=False)


@dataclass
class Inputs:
    """A run's tables and what the rules share: the backend devices, the measured workload runs, the noise."""

    tables: dict[str, pd.DataFrame]
    noise: statistics.Noise | None = None

    def table(self, name: str) -> pd.DataFrame:
        return self.tables.get(name, pd.DataFrame())

    def workload_ids(self, frame: pd.DataFrame) -> pd.DataFrame:
        """`frame`'s rows of measured workload runs (all rows when the run lists no workloads)."""
        measured = metrics.measured_runs(self.table("workloads"))
        if measured.empty or "workload_id" not in frame:
            return frame
        return frame[frame["workload_id"].isin(measured["workload_id"])]

    def backend_devices(self) -> dict[tuple[str, str], str]:
        return devices.device_backends(self.table("devices"))

    def profile(self, backend: str) -> str:
        return devices.profile_of(self.table("devices"), backend)

    def device_name(self, device: str, backend: str) -> str:
        """`loop3 (ssd)`, or `nvme0n1 (fast: nvme)` where the backend's name is not its profile."""
        profile = self.profile(backend)
        return f"{device} ({backend})" if profile == backend else f"{device} ({backend}: {profile})"

    def rotational(self) -> dict[tuple[str, str], object]:
        frame = self.table("devices")
        if frame.empty or "rotational" not in frame:
            return {}
        on_device = frame[frame["device"] != ""]
        return dict(zip(zip(on_device["host"], on_device["device"]), on_device["rotational"]))


RULES: list[Rule] = []


def rule(**spec) -> Callable:
    def register(check: Callable) -> Callable:
        RULES.append(Rule(check=check, **spec))
        return check
    return register


def _on_backend_devices(inputs: Inputs, frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of `frame` (host, device columns) on a backend's device, with `backend` (metrics.on_backend_devices)."""
    return metrics.on_backend_devices(frame, inputs.backend_devices())


# ---------------------------------------------------------------- page cache

@rule(id="page-cache", title="The page cache served most reads: the devices were barely exercised",
      trigger="the backends' devices read less than `device_share_max_pct` of what the applications read "
              "(Spark input and shuffle read, MapReduce HDFS and local reads), in a workload run that read at "
              "least `app_read_min_bytes`",
      thresholds={"device_share_max_pct": 10.0, "app_read_min_bytes": 32 * 2 ** 20},
      action="The run measured memory, not storage: run with DROP_CACHES=1, a scale whose input exceeds the nodes' "
             "free memory, or nodes with a memory budget (spillway_node, docs/cluster.md) that holds a real node's "
             "share of the data, before comparing backends on this workload.",
      needs=(("disk_totals", "read_bytes"), ("devices", "device")))
def page_cache(inputs: Inputs, limits: dict) -> list[Finding]:
    io = metrics.workload_io_summary({n: inputs.table(n) for n in ("workloads", "stages", "mr_jobs", "mr_counters",
                                                                    "disk_totals")})
    app = metrics.application_read_bytes(io)
    disk = _on_backend_devices(inputs, inputs.workload_ids(inputs.table("disk_totals")))
    found = []
    for workload_id, on_devices in disk.groupby("workload_id"):
        read = float(app.get(workload_id, 0.0))
        served = float(on_devices["read_bytes"].sum())
        if read < limits["app_read_min_bytes"] or served >= read * limits["device_share_max_pct"] / 100:
            continue
        share = 100 * served / read
        names = ", ".join(sorted(inputs.device_name(d, b) for d, b in zip(on_devices["device"], on_devices["backend"])))
        found.append(Finding("page-cache", workload_id, names,
                             f"the applications read {format_bytes(read)}; the backends' devices ({names}) read "
                             f"{format_bytes(served)}, {number(share, '%', 1)} of it",
                             {"app_read_bytes": read, "device_read_bytes": served, "device_share_pct": share}))
    return found


# ---------------------------------------------------------------- CPU-bound stages

@rule(id="cpu-bound", title="A stage is CPU-bound in every configuration: storage will not speed it up",
      trigger="a Spark stage whose tasks spent at least `cpu_share_min_pct` of their run time on the CPU in every "
              "configuration of the run that ran it, and that took at least `stage_share_min_pct` of its workload "
              "run's stage time and `stage_min_s`",
      thresholds={"cpu_share_min_pct": 80.0, "stage_share_min_pct": 10.0, "stage_min_s": 1.0},
      action="Faster storage will not shorten this stage: more cores or nodes will (see the model's what-ifs), or "
             "less work per record.",
      needs=(("stages", "executor_cpu_time_s"),))
def cpu_bound(inputs: Inputs, limits: dict) -> list[Finding]:
    stages = inputs.workload_ids(inputs.table("stages"))
    if stages.empty:
        return []
    per_stage = with_application_order(stages).groupby(["workload_id", "app", "stage_id", "name"], dropna=False).agg(
        duration_s=("duration_s", "sum"), cpu_s=("executor_cpu_time_s", "sum"), run_s=("executor_run_time_s", "sum"),
        num_tasks=("num_tasks", "max"), job_group=("job_group", "first"), submitted_ms=("submission_time_ms", "min"),
        input_bytes=("input_bytes", "sum"), output_bytes=("output_bytes", "sum"),
        shuffle_read_bytes=("shuffle_read_bytes", "sum"), shuffle_write_bytes=("shuffle_write_bytes", "sum"),
    ).reset_index()
    per_stage = pd.concat([with_identity(run) for _, run in per_stage.groupby("workload_id")], ignore_index=True)
    runs = inputs.table("workloads")
    workload_of = dict(zip(runs["workload_id"], runs["workload"])) if "workload" in runs else {}
    per_stage["workload"] = per_stage["workload_id"].map(lambda w: workload_of.get(w, w))
    per_stage["cpu_pct"] = 100 * per_stage["cpu_s"] / per_stage["run_s"].where(per_stage["run_s"] > 0)
    per_stage["share_pct"] = 100 * per_stage["duration_s"] / per_stage.groupby("workload_id")["duration_s"].transform("sum")
    found = []
    for _, same in per_stage.groupby(["workload", "app", "job_group", "name", "num_tasks", "ordinal"], dropna=False):
        if not (same["cpu_pct"] >= limits["cpu_share_min_pct"]).all():
            continue
        long = same[(same["share_pct"] >= limits["stage_share_min_pct"]) & (same["duration_s"] >= limits["stage_min_s"])]
        if long.empty:
            continue
        first = same.iloc[0]
        subject = f"app {first['app']} s{first['stage_id']} {first['name']}"
        found.append(Finding("cpu-bound", ", ".join(same["workload_id"]), subject,
                             f"{subject}: CPU {number(same['cpu_pct'].min(), '%', 0)}-{number(same['cpu_pct'].max(), '%', 0)} "
                             f"of task run time in {len(same)} configuration{'s' if len(same) > 1 else ''}; "
                             f"{number(long['duration_s'].median(), 's', 1)}, "
                             f"{number(long['share_pct'].median(), '%', 0)} of its workload run's stage time",
                             {"cpu_share_min_pct": float(same["cpu_pct"].min()), "configurations": len(same),
                              "stage_s": float(long["duration_s"].median()),
                              "stage_share_pct": float(long["share_pct"].median())}))
    return found


# ---------------------------------------------------------------- saturated devices

@rule(id="device-saturated", title="A device was saturated",
      trigger="a backend's device busy at least `util_min_pct` for at least `seconds_min` one-second samples of a "
              "workload run, with requests queueing (mean queue at least `queue_min` in those seconds)",
      thresholds={"util_min_pct": 90.0, "seconds_min": 3, "queue_min": 2.0},
      action="This device limits the workload while it is saturated: move the path it serves (HDFS or the local "
             "dirs: see the placement) to a faster backend, or spread it over more devices.",
      needs=(("iostat", "util_pct"), ("devices", "device")))
def device_saturated(inputs: Inputs, limits: dict) -> list[Finding]:
    iostat = _on_backend_devices(inputs, inputs.workload_ids(inputs.table("iostat")))
    found = []
    for (workload_id, host, device, backend), samples in iostat.groupby(["workload_id", "host", "device", "backend"]):
        busy = samples[samples["util_pct"] >= limits["util_min_pct"]]
        if len(busy) < limits["seconds_min"] or busy["aqu_sz"].mean() < limits["queue_min"]:
            continue
        iops = (busy["r_per_s"] + busy["w_per_s"]).mean()
        awaits = [f"{d} await {number(busy[c].mean(), 'ms', 0)}" for d, c in (("read", "r_await_ms"), ("write", "w_await_ms"))
                  if busy[c].mean() > 0]
        subject = inputs.device_name(device, backend)
        found.append(Finding("device-saturated", workload_id, subject,
                             f"{subject} on {host}: {len(busy)} s at ≥ {number(limits['util_min_pct'], '%', 0)} busy, "
                             f"mean queue {number(busy['aqu_sz'].mean(), 'requests', 1)}, {', '.join(awaits)}, "
                             f"{number(iops, 'IOPS', 0)}, "
                             f"{rate((busy['read_bytes_per_s'] + busy['write_bytes_per_s']).mean())}",
                             {"saturated_s": int(len(busy)), "queue_mean": float(busy["aqu_sz"].mean()),
                              "r_await_ms": float(busy["r_await_ms"].mean()), "w_await_ms": float(busy["w_await_ms"].mean()),
                              "iops": float(iops)}, host))
    return found


# ---------------------------------------------------------------- spill

@rule(id="spill", title="Spark spilled to disk a large share of what it shuffled",
      trigger="a workload run's disk spill is at least `spill_share_min_pct` of its shuffle write and at least "
              "`spill_min_bytes`",
      thresholds={"spill_share_min_pct": 25.0, "spill_min_bytes": 2 ** 20},
      action="Spill writes and reads the local dirs again: give executors more memory, use more partitions "
             "(smaller tasks), or put the local dirs on the faster backend.",
      needs=(("stages", "disk_spilled_bytes"),))
def spill(inputs: Inputs, limits: dict) -> list[Finding]:
    stages = inputs.workload_ids(inputs.table("stages"))
    sums = stages.groupby("workload_id")[["disk_spilled_bytes", "shuffle_write_bytes"]].sum()
    found = []
    for workload_id, row in sums.iterrows():
        spilled, shuffled = float(row["disk_spilled_bytes"]), float(row["shuffle_write_bytes"])
        if spilled < limits["spill_min_bytes"] or spilled < shuffled * limits["spill_share_min_pct"] / 100:
            continue
        share = 100 * spilled / shuffled if shuffled else math.inf
        found.append(Finding("spill", workload_id, "Spark stages",
                             f"spilled {format_bytes(spilled)} to disk against {format_bytes(shuffled)} shuffle "
                             f"written ({number(share, '%', 0)})",
                             {"disk_spilled_bytes": spilled, "shuffle_write_bytes": shuffled, "spill_share_pct": share}))
    return found


# ---------------------------------------------------------------- small shuffle reads on a rotational device

@rule(id="small-shuffle-reads", title="Small shuffle reads on a rotational device",
      trigger="a shuffle-reading stage issued at least `reads_min` read requests on the device of its local dirs, "
              "that device is rotational, and their mean size is below `mean_max_bytes`",
      thresholds={"reads_min": 50, "mean_max_bytes": 64 * 1024},
      action="A disk seeks for each small read: put the local (shuffle) dirs on an SSD, or make fewer, larger "
             "map outputs (fewer map tasks or partitions) so that each reducer's block is larger.",
      needs=(("block_requests", "bytes"), ("stages", "shuffle_read_bytes"), ("devices", "rotational")))
def small_shuffle_reads(inputs: Inputs, limits: dict) -> list[Finding]:
    stages = inputs.workload_ids(inputs.table("stages"))
    local = devices.local_devices(inputs.table("workloads"), inputs.table("devices"))
    model = metrics.shuffle_request_size_model(inputs.table("block_requests"), stages, local)
    rotational = inputs.rotational()
    found = []
    for r in model.to_dict("records"):
        spinning = rotational.get((r["host"], r["device"]))
        if spinning is None or pd.isna(spinning) or not bool(spinning) or r["measured_reads"] < limits["reads_min"] \
                or not r["measured_bytes"] < limits["mean_max_bytes"]:
            continue
        found.append(Finding("small-shuffle-reads", r["workload_id"], f"{r['stage']} on {r['device']}",
                             f"{r['stage']} read {count(r['measured_reads'], 'request')} of {format_bytes(r['measured_bytes'])} "
                             f"on average from {r['device']} (rotational) for {format_bytes(r['shuffle_read_bytes'])} of "
                             f"shuffle (expected block per map output {format_bytes(r['expected_bytes'])})",
                             {"reads": int(r["measured_reads"]), "mean_read_bytes": float(r["measured_bytes"]),
                              "expected_bytes": float(r["expected_bytes"])}, r["host"]))
    return found


# ---------------------------------------------------------------- imbalance

@rule(id="imbalance", title="Imbalance across nodes or devices of a backend",
      trigger="in a workload run, the busiest device of a backend moved at least `max_over_mean_min` times the mean "
              "over that backend's devices (two or more), with at least `backend_min_bytes` moved in all",
      thresholds={"max_over_mean_min": 1.5, "backend_min_bytes": 64 * 2 ** 20},
      action="One node or device did more of the I/O than the others and the stage waits for it: look for data "
             "skew (partitioning), HDFS block placement (hdfs balancer) or a slower device on that node.",
      needs=(("disk_totals", "read_bytes"), ("devices", "device")))
def imbalance(inputs: Inputs, limits: dict) -> list[Finding]:
    disk = _on_backend_devices(inputs, inputs.workload_ids(inputs.table("disk_totals")))
    found = []
    for (workload_id, backend), group in disk.groupby(["workload_id", "backend"]):
        moved = group["read_bytes"] + group["write_bytes"]
        if len(group) < 2 or moved.sum() < limits["backend_min_bytes"] or moved.mean() == 0:
            continue
        ratio = moved.max() / moved.mean()
        if ratio < limits["max_over_mean_min"]:
            continue
        top = group.loc[moved.idxmax()]
        found.append(Finding("imbalance", workload_id, f"backend {backend}",
                             f"{top['device']} on {top['host']} moved {format_bytes(moved.max())}, "
                             f"{number(ratio, 'x', 2)} the mean of the {len(group)} {backend} devices "
                             f"({format_bytes(moved.mean())})",
                             {"max_bytes": float(moved.max()), "mean_bytes": float(moved.mean()),
                              "max_over_mean": float(ratio), "devices": len(group)}, str(top["host"])))
    return found


# ---------------------------------------------------------------- what fio says the device can do

@rule(id="device-underused", title="The workload used a small fraction of what the device can do",
      trigger="in every one-second sample of a workload run, a backend's device moved less than `peak_use_max_pct` of "
              "what it can move at the request sizes it served (the run's fio sweep at that size, random access; "
              "else its storage profile's caps), and it moved at least `moved_min_bytes`",
      thresholds={"peak_use_max_pct": 20.0, "moved_min_bytes": 16 * 2 ** 20},
      action="Storage is not what limits this workload at this scale: a faster device will not shorten it. A "
             "larger scale, cold caches (DROP_CACHES=1) or budgeted nodes make storage matter.",
      needs=(("iostat", "read_bytes_per_s"), ("devices", "device")))
def device_underused(inputs: Inputs, limits: dict) -> list[Finding]:
    bandwidths = Bandwidths()
    bandwidths.add_fio(inputs.table("fio"), devices.backend_profiles(inputs.table("devices")), "the run's fio sweep")
    iostat = _on_backend_devices(inputs, inputs.workload_ids(inputs.table("iostat")))
    found = []
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
        found.append(Finding("device-underused", workload_id, subject,
                             f"{subject} on {host}: at most {number(peak, '%', 1)} of what it can do at the request "
                             f"sizes it served ({source}); {format_bytes(moved)} moved, peak "
                             f"{rate((samples['read_bytes_per_s'] + samples['write_bytes_per_s']).max())}",
                             {"peak_use_pct": peak, "moved_bytes": moved}, host))
    return found


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


# ---------------------------------------------------------------- time differences between configurations

@rule(id="storage-sensitive", title="The placement changed the run time, beyond the noise",
      trigger="two configurations of a workload whose run times differ significantly by the method of "
              "analysis.statistics (docs/compare.md): the `confidence_pct` interval of the ratio excludes 1 and the "
              "difference exceeds the host's noise where it is known",
      thresholds={"confidence_pct": statistics.CONFIDENCE * 100},
      action="Storage matters for this workload: the faster configuration's placement is the one to keep; the "
             "model section says which stages gained.",
      needs=(("workloads", "run_s"),))
def storage_sensitive(inputs: Inputs, limits: dict) -> list[Finding]:
    return [f for f in time_differences(inputs) if f.rule == "storage-sensitive"]


@rule(id="cannot-tell", title="Configurations compared with too few runs to tell",
      trigger="two configurations of a workload whose run times the statistics cannot tell apart from noise: fewer "
              "than `runs_min` runs on a side and no noise level of this host known",
      thresholds={"runs_min": statistics.MIN_RUNS},
      action="Do not rank these configurations: repeat them (REPEAT=3) or measure the host's noise (the same "
             "configuration run twice) so that a difference can be told from noise.",
      needs=(("workloads", "run_s"),))
def cannot_tell(inputs: Inputs, limits: dict) -> list[Finding]:
    return [f for f in time_differences(inputs) if f.rule == "cannot-tell"]


def placement_label(row) -> str:
    cores = "" if pd.isna(row["executor_cores"]) else f", P={int(row['executor_cores'])}"
    return f"HDFS {row['placement_hdfs']}, local {row['placement_local']}{cores}"


def time_differences(inputs: Inputs) -> list[Finding]:
    """Each workload's configurations against its fastest (by median): significant ones as `storage-sensitive`,
    those the statistics cannot tell as `cannot-tell` (one finding per workload listing them)."""
    spread = metrics.run_time_by_placement(inputs.table("workloads"))
    found = []
    for (workload, sweep), group in spread.groupby(["workload", "sweep"], dropna=False):
        if len(group) < 2:
            continue
        fastest = group.loc[group["median"].idxmin()]
        differ, unknown = [], []
        for row in group.drop(index=fastest.name).to_dict("records"):
            result = statistics.compare(row["samples"], fastest["samples"], inputs.noise)
            text = (f"{placement_label(fastest)} {number(fastest['median'], 's', 1)} vs {placement_label(row)} "
                    f"{number(row['median'], 's', 1)}: {number(result.ratio, 'x', 2)}")
            if result.significant:
                differ.append((text + f" ({result.reason})", result))
            elif result.verdict == statistics.CANNOT_TELL:
                unknown.append((placement_label(row), row, result))
        name = f"{workload}{' ' + sweep if isinstance(sweep, str) and sweep else ''}"
        for text, result in differ:
            found.append(Finding("storage-sensitive", name, placement_label(fastest), text,
                                 {"ratio": result.ratio, "ci_low": result.low, "ci_high": result.high}))
        if unknown:
            runs = sorted({int(r["runs"]) for _, r, _ in unknown} | {int(fastest["runs"])})
            spread_pct = (group["median"].max() / group["median"].min() - 1) * 100
            found.append(Finding("cannot-tell", name, f"{len(group)} configurations",
                                 f"{len(group)} configurations with {'/'.join(map(str, runs))} run(s) each differ by up "
                                 f"to {number(spread_pct, '%', 0)} ({number(group['median'].min(), 's', 1)}-"
                                 f"{number(group['median'].max(), 's', 1)}); {unknown[0][2].reason}",
                                 {"configurations": len(group), "spread_pct": spread_pct}))
    return found


# ---------------------------------------------------------------- evaluation and output

TIME_RULES = ("storage-sensitive", "cannot-tell")


def comparison_differences(table: pd.DataFrame) -> list[Finding]:
    """The time rules over a comparison's workload table (analysis.comparison.workload_times: each configuration
    against the baseline with its verdict), instead of each run's own configurations."""
    found = []
    if table.empty or "verdict" not in table:
        return found
    for (workload, sweep), group in table.groupby(["workload", "sweep"], dropna=False, observed=True):
        name = f"{workload}{' ' + sweep if isinstance(sweep, str) and sweep else ''}"
        base = group[group["verdict"] == statistics.BASELINE]
        if base.empty:
            continue
        base = base.iloc[0]
        unknown = group[group["verdict"] == statistics.CANNOT_TELL]
        for row in group[group["verdict"].isin([statistics.FASTER, statistics.SLOWER])].to_dict("records"):
            found.append(Finding("storage-sensitive", name, str(row["configuration"]),
                                 f"{row['configuration']} {number(row['median_s'], 's', 1)} against the baseline "
                                 f"{base['configuration']} {number(base['median_s'], 's', 1)}: "
                                 f"{number(row['speedup_vs_baseline'], 'x', 2)} {row['verdict']} ({row['verdict_reason']})",
                                 {"speedup": float(row["speedup_vs_baseline"]), "ci_low": float(row["speedup_ci_low"]),
                                  "ci_high": float(row["speedup_ci_high"])}))
        if not unknown.empty:
            found.append(Finding("cannot-tell", name, f"{len(unknown)} configurations",
                                 f"{', '.join(map(str, unknown['configuration']))} against the baseline "
                                 f"{base['configuration']}: speedups "
                                 f"{', '.join(number(v, 'x', 2) for v in unknown['speedup_vs_baseline'])}; "
                                 f"{unknown.iloc[0]['verdict_reason']}",
                                 {"configurations": int(len(unknown))}))
    return found


def evaluate_comparison(runs: list[tuple[str, dict[str, pd.DataFrame]]], workload_table: pd.DataFrame,
                        noise: statistics.Noise | None = None) -> tuple[list[dict], pd.DataFrame]:
    """The rule set over several runs: every rule but the time rules on each run's tables (`run`: its label), the
    time rules on the comparison's own verdicts (which pair every configuration of every run)."""
    per_rule: dict[str, dict] = {}
    frames = []
    for label, tables in runs:
        statuses, table = evaluate(tables, noise)
        frames.append(table[~table["rule"].isin(TIME_RULES)].assign(run=label))
        for status in statuses:
            if status["rule"] in TIME_RULES:
                continue
            merged = per_rule.setdefault(status["rule"], {**status, "findings": 0, "status": NO_DATA})
            merged["findings"] += status["findings"]
            merged["status"] = FIRED if merged["findings"] else (QUIET if QUIET in (merged["status"], status["status"])
                                                                 else merged["status"])
    time = comparison_differences(workload_table)
    by_id = {r.id: r for r in RULES}
    for rule_id in TIME_RULES:
        mine = [f for f in time if f.rule == rule_id]
        per_rule[rule_id] = {**_describe(by_id[rule_id]), "status": FIRED if mine else QUIET, "findings": len(mine),
                             "why": ""}
        frames.append(pd.DataFrame(_rows(by_id[rule_id], mine), columns=COLUMNS).assign(run=""))
    statuses = [per_rule[r.id] for r in RULES if r.id in per_rule]
    return statuses, pd.concat(frames, ignore_index=True)


def _rows(r: Rule, found: list[Finding]) -> list[dict]:
    return [{"rule": r.id, "title": r.title, "workload_id": f.workload_id, "host": f.host, "subject": f.subject,
             "evidence": f.evidence, "action": r.action, "values": json.dumps(_finite(f.values), sort_keys=True)}
            for f in found]


def _has(inputs: Inputs, needs: tuple) -> bool:
    return all(not inputs.table(name).empty and column in inputs.table(name) for name, column in needs)


def evaluate(tables: dict[str, pd.DataFrame], noise: statistics.Noise | None = None) -> tuple[list[dict], pd.DataFrame]:
    """Every rule over a run's tables: (one status row per rule, one row per finding: COLUMNS). `noise`: the host's
    run-to-run noise when known; else the largest spread of the run's repeated configurations, if any."""
    noise = noise or statistics.noise_from_repetitions(metrics.run_time_by_placement(tables.get("workloads", pd.DataFrame())),
                                                       "this run's workloads")
    inputs = Inputs(tables, noise)
    statuses, rows = [], []
    for r in RULES:
        if not _has(inputs, r.needs):
            statuses.append({**_describe(r), "status": NO_DATA, "findings": 0,
                             "why": "needs " + ", ".join(f"{n}.{c}" for n, c in r.needs)})
            continue
        found = r.check(inputs, r.thresholds)
        statuses.append({**_describe(r), "status": FIRED if found else QUIET, "findings": len(found), "why": ""})
        rows += _rows(r, found)
    return statuses, pd.DataFrame(rows, columns=COLUMNS)


def _finite(values: dict) -> dict:
    """NaN and infinities as null: findings.json is strict JSON."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in values.items()}


def _describe(r: Rule) -> dict:
    return {"rule": r.id, "title": r.title, "trigger": r.trigger, "thresholds": dict(r.thresholds), "action": r.action}


# ---------------------------------------------------------------- the overview and the sensitivity, for machines

# findings.json's overview and sensitivity: every number's unit is its key's suffix (docs/findings.md).
UNITS = {"_seconds": "seconds", "_bytes": "bytes", "_share": "a fraction of a whole, 0..1",
         "_pct": "percent; a model error is signed: (predicted - measured) / measured", "_count": "a count"}


def overview_frames(tables: dict[str, pd.DataFrame], configs: list[Configuration],
                    bandwidths: Bandwidths) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """What the report's overview shows, as tables: per measured workload run its bytes and reads
    (metrics.workload_overview), per run and backend its devices' bytes, per run and bottleneck its share of the
    stage time (models.bottleneck.time_shares; each run modeled on its own bytes)."""
    overview, per_backend = metrics.workload_overview(tables)
    shares = bottleneck.time_shares(configs, bandwidths) if configs else pd.DataFrame(columns=["workload_id"])
    return overview, per_backend, shares


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def overview_records(run_id: str, overview: pd.DataFrame, per_backend: pd.DataFrame,
                     shares: pd.DataFrame) -> list[dict]:
    """One object per measured workload run of overview_frames: the overview's figures with their units."""
    records = []
    for run in overview.to_dict("records"):
        mine = shares[shares["workload_id"] == run["workload_id"]] if not shares.empty else shares
        backends = per_backend[per_backend["workload_id"] == run["workload_id"]]
        device_share = _number(run["device_read_share_pct"] / 100 if pd.notna(run["device_read_share_pct"]) else None)
        records.append({
            "run_id": run_id, "workload_id": run["workload_id"], "workload": run["workload"],
            "sweep": run["sweep"] or "",
            "placement": {"hdfs": run["placement_hdfs"], "local": run["placement_local"]},
            "executor_cores": None if pd.isna(run["executor_cores"]) else int(run["executor_cores"]),
            "run_seconds": _number(run["run_s"]),
            "stage_time": None if mine.empty else {
                "stages_seconds": float(mine["stages_s"].iloc[0]), "stage_count": int(mine["stages"].iloc[0]),
                "bottlenecks": [{"resource": r["resource"], "backend": r["backend"] or None,
                                 "stages_seconds": float(r["stage_s"]), "share": _number(r["share_pct"] / 100)}
                                for r in mine.to_dict("records")]},
            "bytes_by_path": {path: _number(run[path]) for path in metrics.PATH_COLUMNS},
            "device_bytes_by_backend": [{"backend": d["backend"], "read_bytes": float(d["read_bytes"]),
                                         "write_bytes": float(d["write_bytes"])} for d in backends.to_dict("records")],
            "reads": {"app_read_bytes": _number(run["app_read_bytes"]),
                      "device_read_bytes": _number(run["device_read_bytes"]),
                      "device_write_bytes": _number(run["device_write_bytes"]),
                      "device_share": device_share,
                      "page_cache_share": None if device_share is None else max(0.0, 1 - device_share)}})
    return records


def sensitivity_records(table: pd.DataFrame) -> list[dict]:
    """One object per workload group of models.sensitivity.storage_sensitivity (workload, sweep, P, N): the model that
    predicted (`model`: sensitivity.FIT or FIO), its error on these runs, and every placement's run step, measured or
    predicted (with the model and, for the fio model, its inputs), with its units."""
    records = []
    if table.empty:
        return records
    for (workload, sweep, cores, nodes), group in table.groupby(["workload", "sweep", "cores", "nodes"], sort=False):
        first = group.iloc[0]
        records.append({
            "workload": workload, "sweep": sweep or "", "cores_per_node": int(cores), "nodes": int(nodes),
            "model": first["model"],
            "model_error": {"median_abs_pct": _number(first["error_median_pct"]),
                            "worst_abs_pct": _number(first["error_worst_pct"]), "basis": first["error_basis"]},
            "placements": [{"hdfs": r["hdfs"], "local": r["local"], "how": r["how"], "run_seconds": _number(r["run_s"]),
                            "min_seconds": _number(r["min_s"]), "max_seconds": _number(r["max_s"]),
                            "run_count": int(r["runs"]), "predicted_seconds": _number(r["predicted_s"]),
                            "error_pct": _number(r["error_pct"]),
                            "model": r["model"] if pd.notna(r["predicted_s"]) else None,
                            "inputs": r["inputs"] or None}
                           for r in group.to_dict("records")]})
    return records


def section(records: list[dict] | None = None, error: str = "") -> dict:
    """findings.json's form of a page section: its objects, or why it could not be built (shown on the page too)."""
    return {"error": error or None, "items": records or []}


def as_json(run_id: str, statuses: list[dict], table: pd.DataFrame, noise: statistics.Noise | None,
            overview: dict | None = None, storage_sensitivity: dict | None = None) -> str:
    """findings.json: the rules with their status, then the findings (numbers with units in their keys), then the
    page's overview and storage sensitivity (`section`s of overview_records and sensitivity_records)."""
    findings = [{**{k: v for k, v in row.items() if k != "values"}, "values": json.loads(row["values"])}
                for row in table.to_dict("records")]
    return json.dumps({"run_id": run_id, "noise": asdict(noise) if noise else None, "statistics": statistics.METHOD,
                       "rules": statuses, "findings": findings, "units": UNITS,
                       "overview": overview or section(error="not evaluated"),
                       "sensitivity": storage_sensitivity or section(error="not evaluated")},
                      indent=2, sort_keys=False, default=_plain) + "\n"


def _plain(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")
