"""Metrics across runs: what the comparison page shows, computed from several runs' tables (metrics layer).

A *configuration* is (run, HDFS placement, local-dir placement, executor cores): one run can hold several
(PLACEMENT=matrix, CORES sweep). Its label names only what differs between the configurations compared, in
storage-profile terms (`hdd`, `nvme`), so that a column reads as the thing being compared. Every median is over
measured repetitions (warm-ups, failed and invalid runs left out); every ratio states its spread.
"""
from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from . import access_patterns, devices, metrics, statistics
from .parsers.manifest import spark_release, worker_nodes
from .stages import with_application_order

HOST_FACTS = ("kernel", "cpu_model", "vcpus", "memory_bytes", "os", "node_budget")
WORKLOADS_DIR = Path(__file__).resolve().parents[1] / "workloads"
# A workload name as the harness allows it (a folder of workloads/): nothing else is looked up there.
_WORKLOAD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


@dataclass
class Run:
    run_dir: Path
    run_id: str
    manifest: dict
    tables: dict[str, pd.DataFrame]
    label: str = ""          # what tells this run apart from the others compared

    def profile(self, backend) -> str:
        """A backend name as the storage profile it was (`fast` -> `nvme`), from the run's devices table."""
        return devices.profile_of(self.tables["devices"], backend)


def label_runs(runs: list[Run]) -> None:
    """Cluster name when clusters differ, else the placement in profile terms when that differs, else the id."""
    clusters = [str(r.manifest.get("cluster", "?")) for r in runs]
    placements = [placement_text(r, (r.manifest.get("storage") or {}).get("placement") or {}) for r in runs]
    for run, cluster, placement in zip(runs, clusters, placements):
        parts = []
        if len(set(clusters)) > 1:
            parts.append(cluster)
        if len(set(placements)) > 1:
            parts.append(placement)
        run.label = " ".join(parts)
    labels = [r.label for r in runs]
    for run in runs:
        if not run.label or labels.count(run.label) > 1:
            run.label = f"{run.label} {run.run_id}".strip()


def placement_text(run: Run, placement: dict) -> str:
    return f"HDFS {run.profile(placement.get('hdfs'))}, local {run.profile(placement.get('local'))}"


# ---------------------------------------------------------------- like with like: effective parameters

@functools.lru_cache(maxsize=None)
def _declared(workload: str) -> tuple[dict, dict]:
    """(parameters, scales) of workloads/<workload>/workload.yml; empty when there is no such workload."""
    if not _WORKLOAD_NAME.fullmatch(workload):
        return {}, {}
    try:
        manifest = yaml.safe_load((WORKLOADS_DIR / workload / "workload.yml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}, {}
    if not isinstance(manifest, dict):
        return {}, {}
    return manifest.get("parameters") or {}, manifest.get("scales") or {}


def effective_parameters(record: dict) -> dict[str, str]:
    """The parameter values a workload run ran with, as text: the resolved values its manifest record holds
    (defaults < scale < inventory < PARAMS, however they were set), and for a parameter the record lacks (the run
    was recorded before the parameter existed) what the bench resolves for it at the run's scale from
    workloads/<name>/workload.yml: the scale profile's value, else the default. A parameter is added with a default
    that keeps the old behaviour, so that is what the older run did. A sweep default (a list) says nothing of one
    run and is not filled in."""
    values = {key: str(value) for key, value in (record.get("parameters") or {}).items()}
    declared, scales = _declared(str(record.get("workload")))
    scale = scales.get(str(record.get("scale"))) or {}
    for name, spec in declared.items():
        if name in values or not isinstance(spec, dict):
            continue
        value = scale.get(name, spec.get("default")) if isinstance(scale, dict) else spec.get("default")
        if value is not None and not isinstance(value, (list, dict)):
            values[name] = str(value)
    return values


def key_by_effective_parameters(runs: list[Run]) -> None:
    """Give every workload run of the compared runs the same `sweep` key when it ran the same workload with the
    same effective parameters, however they were set: the values of the parameters that differ between any of the
    compared runs of that workload. Each run's own `sweep` names only what varied inside it, so TeraSort on Spark
    of the default bench (a sweep `engine=[mapreduce, spark]`: `engine=spark`) and of a placement matrix run with
    `PARAMS='terasort.engine=spark'` (no sweep: ``) would land in different rows and never be compared."""
    effective = [(run, record, effective_parameters(record))
                 for run in runs for record in run.manifest.get("workloads", []) or []]
    by_workload: dict[str, list[dict[str, str]]] = {}
    for _, record, values in effective:
        by_workload.setdefault(str(record.get("workload")), []).append(values)
    differing = {name: sorted(key for key in set().union(*seen) if len({v.get(key) for v in seen}) > 1)
                 for name, seen in by_workload.items()}
    # a run that ran a workload on several Spark releases (a VERSIONS sweep, docs/versions.md) keeps them apart, as
    # its own `sweep` does; two runs of one release each stay side by side, the release listed under what differed
    releases: dict[tuple[str, str], set] = {}
    for run, record, _ in effective:
        releases.setdefault((run.run_id, str(record.get("workload"))), set()).add(spark_release(record))
    swept_spark = {name for (_, name), seen in releases.items() if len(seen) > 1}
    keys: dict[str, dict[str, str]] = {run.run_id: {} for run in runs}
    for run, record, values in effective:
        name = str(record.get("workload"))
        keys[run.run_id][record.get("id")] = " ".join(
            [*(f"{key}={values[key]}" for key in differing[name] if key in values),
             *([f"spark={spark_release(record)}"] if name in swept_spark else [])])
    for run in runs:
        table = run.tables["workloads"]
        if not table.empty:
            run.tables["workloads"] = table.assign(sweep=table["workload_id"].map(keys[run.run_id]).fillna(table["sweep"]))


# ---------------------------------------------------------------- configurations

def _with_configuration(runs: list[Run], frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate per-run frames that carry placement_hdfs/placement_local/executor_cores, adding `run_id`
    and the column label `configuration` (run label + placement and P where those vary)."""
    tagged = [f.assign(run_id=r.run_id, run_label=r.label,
                       hdfs_profile=f["placement_hdfs"].map(r.profile), local_profile=f["placement_local"].map(r.profile))
              for r, f in zip(runs, frames) if not f.empty]
    if not tagged:
        return pd.DataFrame()
    frame = pd.concat(tagged, ignore_index=True)
    clusters = frame["run_id"].map({r.run_id: str(r.manifest.get("cluster", "?")) for r in runs})
    labels = clusters if clusters.nunique() > 1 else pd.Series("", index=frame.index)
    placement = "HDFS " + frame["hdfs_profile"] + ", local " + frame["local_profile"]
    cores = frame["executor_cores"].map(lambda p: "default P" if pd.isna(p) else f"P={int(p)}")
    for part in (placement, cores):
        # a part joins the label only where the label so far does not already tell the configurations apart
        if part.groupby(labels).nunique().max() > 1:
            labels = (labels + " · " + part).str.strip(" ·")
    # two runs alike in all of these (a rerun, another commit) are told apart by their ids
    ambiguous = labels.eq("") | frame.groupby(labels)["run_id"].transform("nunique").gt(1)
    frame["configuration"] = labels.where(~ambiguous, (labels + " · " + frame["run_id"]).str.strip(" ·"))
    return frame


def _configuration_order(frame: pd.DataFrame, runs: list[Run]) -> list[str]:
    """Configurations in RUNS order (the first is the baseline), then placement and P order inside a run."""
    if frame.empty:
        return []
    order = {r.run_id: i for i, r in enumerate(runs)}
    keys = frame.drop_duplicates("configuration").assign(_run=lambda f: f["run_id"].map(order))
    keys = keys.sort_values(["_run", "placement_hdfs", "placement_local", "executor_cores"], na_position="first")
    return keys["configuration"].tolist()


def _speedup_table(spread: pd.DataFrame, keys: list[str], order: list[str],
                   noise: statistics.Noise | None = None) -> pd.DataFrame:
    """Tidy table: one row per key and configuration with median/min/max/runs, the spread flag and the
    speedup = baseline median / this median (> 1: faster than the baseline, the first configuration), and whether
    that difference is significant (analysis.statistics: `verdict`, the interval of the speedup, why, and the noise
    level it had to exceed). `noise`: the host's, when known; else the largest spread of the configurations
    repeated in `spread` itself, when any is."""
    if spread.empty:
        return pd.DataFrame()
    noise = noise or statistics.noise_from_repetitions(spread)
    baseline = order[0]
    frame = spread.copy()
    base = frame[frame["configuration"] == baseline].set_index(keys)
    frame = frame.join(base["median"].rename("baseline_median_s"), on=keys)
    frame = frame.join(base["samples"].rename("baseline_samples"), on=keys)
    frame["speedup_vs_baseline"] = frame["baseline_median_s"] / frame["median"]
    frame["spread_flag"] = metrics.wide_spread(frame["median"], frame["min"], frame["max"])
    verdicts = []
    for row in frame.to_dict("records"):
        if row["configuration"] == baseline:
            verdicts.append((statistics.BASELINE, math.nan, math.nan, "the baseline"))
            continue
        if not isinstance(row["baseline_samples"], (list, tuple, np.ndarray)):
            verdicts.append((statistics.CANNOT_TELL, math.nan, math.nan, f"not run in the baseline, {baseline}"))
            continue
        result = statistics.compare(row["baseline_samples"], row["samples"], noise)
        verdicts.append((result.verdict, result.low, result.high, result.reason))
    frame[["verdict", "speedup_ci_low", "speedup_ci_high", "verdict_reason"]] = pd.DataFrame(
        verdicts, index=frame.index, columns=["verdict", "speedup_ci_low", "speedup_ci_high", "verdict_reason"])
    frame["noise_pct"] = noise.pct if noise else math.nan
    frame["noise_source"] = noise.source if noise else ""
    frame = frame.drop(columns=["baseline_samples"])
    frame = frame.rename(columns={"median": "median_s", "min": "min_s", "max": "max_s"})
    frame["configuration"] = pd.Categorical(frame["configuration"], categories=order, ordered=True)
    return frame.sort_values(keys + ["configuration"], ignore_index=True)


def workload_times(runs: list[Run], noise: statistics.Noise | None = None) -> tuple[pd.DataFrame, list[str]]:
    frame = _with_configuration(runs, [metrics.run_time_by_placement(r.tables["workloads"]) for r in runs])
    order = _configuration_order(frame, runs)
    keys = ["workload", "sweep"]
    return _speedup_table(frame, keys, order, noise), order


def stage_times(runs: list[Run], order: list[str], noise: statistics.Noise | None = None) -> pd.DataFrame:
    frames = [metrics.stage_time_by_cores(r.tables["stages"], r.tables["workloads"]) for r in runs]
    frame = _with_configuration(runs, frames)
    if frame.empty or not order:
        return pd.DataFrame()
    return _speedup_table(frame, ["workload", "sweep", "app", "stage_id", "name"],
                          order + [c for c in _configuration_order(frame, runs) if c not in order], noise)


# ---------------------------------------------------------------- I/O volumes and throughput

def _measured_io(run: Run) -> pd.DataFrame:
    """Per measured workload run: its configuration columns, run-step seconds and what it moved (bytes)."""
    measured = metrics.measured_runs(run.tables["workloads"])
    io = metrics.workload_io_summary(run.tables)
    if measured.empty or io.empty:
        return pd.DataFrame()
    io = io.drop(columns=[c for c in ("status", "duration_s") if c in io])
    joined = measured.merge(io, on="workload_id", how="left")
    for column in ("output_bytes", "mr_hdfs_written_bytes", "shuffle_write_bytes", "mr_shuffle_bytes"):
        if column not in joined:
            joined[column] = np.nan
    spark_output = joined["output_bytes"].where(joined["output_bytes"] > 0)
    joined["result_bytes"] = spark_output.fillna(joined["mr_hdfs_written_bytes"])
    joined["shuffle_bytes"] = joined["shuffle_write_bytes"].where(joined["shuffle_write_bytes"] > 0).fillna(
        joined["mr_shuffle_bytes"])
    workers = worker_nodes(run.manifest) or 1
    joined["nodes"] = workers
    joined["cluster_bytes_per_s"] = joined["result_bytes"] / joined["run_s"]
    joined["node_bytes_per_s"] = joined["cluster_bytes_per_s"] / workers
    return joined


def throughput_table(runs: list[Run], order: list[str]) -> pd.DataFrame:
    """Cluster throughput = result size / run-step time (DataWarp's definition), per node = / worker nodes;
    medians over measured repetitions, with the shuffle volume (Spark shuffle write, else MR shuffle bytes)."""
    frame = _with_configuration(runs, [_measured_io(r) for r in runs])
    if frame.empty:
        return pd.DataFrame()
    keys = ["workload", "sweep", "configuration"]
    table = (frame.groupby(keys, dropna=False, observed=True)
             .agg(result_bytes=("result_bytes", "median"), shuffle_bytes=("shuffle_bytes", "median"),
                  run_s=("run_s", "median"), cluster_bytes_per_s=("cluster_bytes_per_s", "median"),
                  node_bytes_per_s=("node_bytes_per_s", "median"), nodes=("nodes", "first"),
                  runs=("run_s", "count"), run_id=("run_id", "first"))
             .reset_index())
    table["configuration"] = pd.Categorical(table["configuration"], categories=order, ordered=True)
    return table.sort_values(["workload", "sweep", "configuration"], ignore_index=True)


def shuffle_per_application(runs: list[Run]) -> pd.DataFrame:
    """Shuffle bytes per application (Spark app, by its order in the workload run; MR job), medians over
    measured repetitions."""
    frames = []
    for run in runs:
        measured = metrics.measured_runs(run.tables["workloads"])
        parts = []
        stages = run.tables["stages"]
        if not stages.empty and "stage_id" in stages:
            ordered = with_application_order(stages)
            spark = ordered.assign(application="Spark app " + ordered["app"].astype(str)) \
                .groupby(["workload_id", "application"])
            parts.append(spark.agg(shuffle_write_bytes=("shuffle_write_bytes", "sum"),
                                   shuffle_read_bytes=("shuffle_read_bytes", "sum")).reset_index())
        mr = metrics.mr_job_summary(run.tables["mr_jobs"], run.tables["mr_counters"])
        if not mr.empty and "shuffle_bytes" in mr:
            mr = mr.assign(application="MR " + mr["job_name"].fillna("job").astype(str),
                           shuffle_write_bytes=mr.get("map_output_materialized_bytes", np.nan),
                           shuffle_read_bytes=mr["shuffle_bytes"])
            parts.append(mr[["workload_id", "application", "shuffle_write_bytes", "shuffle_read_bytes"]])
        if parts and not measured.empty:
            frames.append(pd.concat(parts, ignore_index=True).merge(
                measured[["workload_id"] + metrics.CONFIG_COLUMNS], on="workload_id"))
        else:
            frames.append(pd.DataFrame())
    frame = _with_configuration(runs, frames)
    if frame.empty:
        return frame
    return (frame.groupby(["workload", "sweep", "application", "configuration"], dropna=False)
            .agg(shuffle_write_bytes=("shuffle_write_bytes", "median"),
                 shuffle_read_bytes=("shuffle_read_bytes", "median"), runs=("workload_id", "count"))
            .reset_index())


# ---------------------------------------------------------------- I/O patterns (Darshan-style views) across runs

IO_PATTERN_KEYS = ["workload", "sweep", "op", "configuration", "run_id", "workload_id", "host", "device"]
_OP_ORDER = {"read": 0, "write": 1, "all": 2}


def _io_pattern_table(runs: list[Run], labelled: pd.DataFrame, order: list[str], pattern) -> pd.DataFrame:
    """`pattern` (an access_patterns view of `block_requests`) of every run's measured workload runs (`labelled`:
    _with_configuration of them), each row with its workload, sweep key, configuration, run and the device's
    storage profile, sorted by workload, direction, configuration in `order`, device (and rank or time bin)."""
    frames = []
    for run in runs:
        frame = pattern(run.tables["block_requests"])
        mine = labelled[labelled["run_id"] == run.run_id] if not labelled.empty else labelled
        if frame.empty or mine.empty:
            continue
        profiles = devices.device_profiles(run.tables["devices"])
        frame = frame.astype({"host": str, "workload_id": str, "device": str, "op": str})
        frame = frame.assign(profile=[profiles.get(key, "") for key in zip(frame["host"], frame["device"])])
        frames.append(frame.merge(mine[["workload_id", "workload", "sweep", "configuration", "run_id"]],
                                  on="workload_id"))
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    extra = [c for c in dict.fromkeys(frame["configuration"]) if c not in order]
    frame["configuration"] = pd.Categorical(frame["configuration"], categories=order + extra, ordered=True)
    by = [c for c in IO_PATTERN_KEYS if c != "op"] + [c for c in ("rank", "bin_start_s") if c in frame]
    frame = frame.assign(_op=frame["op"].map(_OP_ORDER)).sort_values(
        ["workload", "sweep", "_op", *by[2:]], ignore_index=True).drop(columns="_op")
    leading = [*IO_PATTERN_KEYS, "profile"]
    return frame[leading + [c for c in frame.columns if c not in leading]]


def _measured_labelled(runs: list[Run]) -> pd.DataFrame:
    return _with_configuration(runs, [metrics.measured_runs(r.tables["workloads"]) for r in runs])


def io_patterns(runs: list[Run], order: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The report's I/O pattern views of every measured workload run of the compared runs, from its block trace
    (`block_requests`): its common access sizes (access_patterns.common_access_sizes: per device and direction the
    most common request sizes, the others folded into one row) and its sequential shares
    (access_patterns.sequential_share: per device, reads, writes and both). Each row carries its workload run's
    workload and sweep key (like with like), its configuration, labelled as the run-time table labels it, and the
    device's storage profile (`profile`); rows sorted by workload, direction, configuration in `order`, device, so
    that one direction of one workload reads across the runs."""
    labelled = _measured_labelled(runs)
    return (_io_pattern_table(runs, labelled, order, access_patterns.common_access_sizes),
            _io_pattern_table(runs, labelled, order, access_patterns.sequential_share))


def io_heatmap(runs: list[Run], order: list[str]) -> pd.DataFrame:
    """The report's heat map of bytes over time for every measured workload run of the compared runs
    (access_patterns.bytes_heatmap: bytes and requests per time bin, host, device and direction), keyed and sorted
    as io_patterns' tables, then by time bin."""
    return _io_pattern_table(runs, _measured_labelled(runs), order, access_patterns.bytes_heatmap)


# ---------------------------------------------------------------- fio across runs

def fio_series(runs: list[Run]) -> pd.DataFrame:
    """fio curves of every run, one series per (run, backend), hosts averaged; `series` = profile + run label."""
    frames = []
    for run in runs:
        curves = metrics.fio_curves(run.tables["fio"])
        if curves.empty:
            continue
        curves = (curves.groupby(["backend", "rw", "direction", "block_size_bytes"], observed=True)
                  [["bandwidth_bytes_per_s", "iops"]].mean().reset_index())
        curves["profile"] = curves["backend"].map(run.profile)
        curves["run_id"], curves["run_label"] = run.run_id, run.label
        frames.append(curves)
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    one_run = frame["run_id"].nunique() == 1
    frame["series"] = frame["profile"] if one_run else frame["profile"] + " — " + frame["run_label"]
    return frame


def fio_ratios(series: pd.DataFrame, runs: list[Run]) -> tuple[pd.DataFrame, str]:
    """Each series' bandwidth and IOPS over the baseline series' at the same pattern and block size.
    Baseline: the first run's HDFS backend (the data path the baseline configuration read from)."""
    if series.empty:
        return pd.DataFrame(), ""
    first = series[series["run_id"] == series["run_id"].iloc[0]]
    hdfs = ((runs[0].manifest.get("storage") or {}).get("placement") or {}).get("hdfs")
    baseline = first[first["backend"] == hdfs]["series"]
    baseline = baseline.iloc[0] if not baseline.empty else first["series"].iloc[0]
    keys = ["rw", "direction", "block_size_bytes"]
    base = series[series["series"] == baseline][keys + ["bandwidth_bytes_per_s", "iops"]]
    ratios = series[series["series"] != baseline].merge(base, on=keys, how="left", suffixes=("", "_baseline"))
    ratios["bandwidth_ratio"] = ratios["bandwidth_bytes_per_s"] / ratios["bandwidth_bytes_per_s_baseline"]
    ratios["iops_ratio"] = ratios["iops"] / ratios["iops_baseline"]
    return ratios.dropna(subset=["bandwidth_ratio"]).reset_index(drop=True), baseline


# ---------------------------------------------------------------- what differed

def _flat(prefix: str, value, out: dict) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flat(f"{prefix}.{key}" if prefix else str(key), item, out)
    else:
        out[prefix] = json.dumps(value, sort_keys=True) if isinstance(value, (list, bool)) or value is None \
            else str(value)


def manifest_facts(manifest: dict) -> dict[str, str]:
    """The manifest fields a comparison cares about, flattened to `field.path -> value`."""
    facts: dict[str, str] = {}
    inventory = manifest.get("inventory") or {}
    _flat("", {"cluster": manifest.get("cluster"), "status": manifest.get("status"),
               "inventory sha256": inventory.get("sha256"),
               "worker nodes": worker_nodes(manifest),
               "git commit": (manifest.get("git") or {}).get("commit"),
               "git dirty": (manifest.get("git") or {}).get("dirty"),
               "placement": (manifest.get("storage") or {}).get("placement"),
               "backends": (manifest.get("storage") or {}).get("backends"),
               "emulation profiles": (manifest.get("emulation") or {}).get("profiles")}, facts)
    _flat("parameters", {k: v for k, v in (manifest.get("parameters") or {}).items() if k != "workloads"}, facts)
    hosts = manifest.get("hosts") or {}
    for fact in HOST_FACTS:
        values = sorted({str((h or {}).get(fact)) for h in hosts.values()})
        facts[f"hosts {fact}"] = ", ".join(values) if values else "None"
    versions = sorted({k for h in hosts.values() for k in ((h or {}).get("versions") or {})})
    for tool in versions:
        facts[f"hosts versions.{tool}"] = ", ".join(sorted({str(((h or {}).get("versions") or {}).get(tool))
                                                            for h in hosts.values()}))
    facts["workloads run"] = ", ".join(sorted(_workload_scales(manifest)))
    # the releases the workload runs ran on (docs/versions.md): a Spark upgrade is what differed
    releases: dict[str, set[str]] = {}
    for workload in manifest.get("workloads", []) or []:
        for component, release in ((workload or {}).get("versions") or {}).items():
            releases.setdefault(component, set()).add(str(release))
    for component, seen in sorted(releases.items()):
        facts[f"workload runs versions.{component}"] = ", ".join(sorted(seen))
    for workload, params in _workload_parameters(manifest).items():
        for key, values in params.items():
            facts[f"workload {workload}.{key}"] = ", ".join(sorted(values))
    for workload, scales in _workload_scales(manifest).items():
        facts[f"workload {workload} scale"] = ", ".join(sorted(scales))
    return facts


def _workload_parameters(manifest: dict) -> dict[str, dict[str, set[str]]]:
    """Per workload, each parameter's effective values over its runs (effective_parameters)."""
    values: dict[str, dict[str, set[str]]] = {}
    for workload in manifest.get("workloads", []) or []:
        for key, value in effective_parameters(workload).items():
            values.setdefault(str(workload.get("workload")), {}).setdefault(key, set()).add(value)
    return values


def _workload_scales(manifest: dict) -> dict[str, set[str]]:
    scales: dict[str, set[str]] = {}
    for workload in manifest.get("workloads", []) or []:
        scales.setdefault(str(workload.get("workload")), set()).add(str(workload.get("scale")))
    return scales


def differences(runs: list[Run]) -> tuple[pd.DataFrame, int]:
    """Fields whose value differs between the runs (field, then one column per run), and how many agree."""
    facts = [manifest_facts(r.manifest) for r in runs]
    everywhere = set.intersection(*(set(_workload_scales(r.manifest)) for r in runs))
    for fact in facts:
        # the parameters of a workload some run lacks are no difference; `workloads run` says it lacks it
        for field in [k for k in fact if k.startswith("workload ") and k[9:].split(".")[0].split(" ")[0] not in everywhere]:
            del fact[field]
    fields = list(dict.fromkeys(k for f in facts for k in f))
    rows = [{"field": field, **{r.run_id: f.get(field, "(absent)") for r, f in zip(runs, facts)}}
            for field in fields if len({f.get(field, "(absent)") for f in facts}) > 1]
    return pd.DataFrame(rows, columns=["field", *[r.run_id for r in runs]]), len(fields) - len(rows)


def apples_and_oranges(runs: list[Run]) -> list[str]:
    """Warnings when the runs ran a workload at another scale or with other parameter values: their
    times then measure different work, not different storage."""
    warnings = []
    scales = [(r, (r.manifest.get("parameters") or {}).get("scale")) for r in runs]
    if len({str(s) for _, s in scales}) > 1:
        warnings.append("The runs used different scale profiles: " + ", ".join(f"{r.run_id}: {s}" for r, s in scales)
                        + ". Their times measure different amounts of work.")
    per_run = [(r, _workload_parameters(r.manifest), _workload_scales(r.manifest)) for r in runs]
    names = list(dict.fromkeys(w for _, params, scale in per_run for w in [*params, *scale]))
    for name in names:
        present = [(r, p.get(name, {}), s.get(name)) for r, p, s in per_run if name in p or name in s]
        if len(present) < 2:
            continue
        if len({json.dumps(sorted(s or [])) for _, _, s in present}) > 1:
            warnings.append(f"workload {name} ran at different scales: "
                            + "; ".join(f"{r.run_id}: {', '.join(sorted(s or []))}" for r, _, s in present) + ".")
        if not _unmatched(name, [r for r, _, _ in present]):
            continue      # every run has a workload run with the effective parameters of another's: those compare
        keys = sorted({k for _, p, _ in present for k in p})
        # the parameters no value of which all these runs share keep them apart; a sweep's other values do not
        apart = [k for k in keys if not set.intersection(*(p.get(k, {"(absent)"}) for _, p, _ in present))] or keys
        for key in apart:
            seen = [(r, ", ".join(sorted(p.get(key, {"(absent)"})))) for r, p, _ in present]
            if len({v for _, v in seen}) > 1:
                warnings.append(f"workload {name}: parameter {key} differs: "
                                + "; ".join(f"{r.run_id}: {v}" for r, v in seen)
                                + ". Runs with other parameters are not compared.")
    return warnings


def _unmatched(workload: str, runs: list[Run]) -> list[Run]:
    """The runs none of whose runs of `workload` has the effective parameters of a run of it in another run."""
    sets = {r.run_id: {json.dumps(effective_parameters(w), sort_keys=True) for w in r.manifest.get("workloads", []) or []
                       if str(w.get("workload")) == workload} for r in runs}
    return [r for r in runs if not sets[r.run_id] & set().union(*(sets[o.run_id] for o in runs if o is not r))]
