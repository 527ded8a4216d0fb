"""The I/O-aware Spark stage model (Doppio, `../shared/papers/doppio-io-aware-spark-model-gatk4.txt`, §IV-C):

    t_stage = max(t_scale, t_read_limit, t_write_limit)
    t_scale = M / (N * P) * t_avg + delta_scale
    t_io_limit = D / (N * BW(request size)) + delta_io        (one for reads, one for writes)
    t_app = sum of t_stage

fitted per stage from profiling configurations (the paper's four sample runs: P=1 and P=2 on the fast
backend, then the slow backend under the local dirs and under HDFS), and evaluated for another placement,
core count or node count. BW comes from the fio sweep of the target backend at the stage's measured mean
request size (block trace), or from the emulation profile's caps when no sweep of that backend exists.
What is fitted from what, and the limits: docs/models.md.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .. import devices, metrics, safeio
from ..parsers.manifest import load_manifest, workloads_table
from ..stages import STAGE_IDENTITY, STAGE_KEY, with_application_order, with_identity
from ..tables import run_tables

PROFILES_FILE = Path(__file__).resolve().parents[2] / "inventories" / "storage-profiles.yml"

# I/O path -> (stage table column, placement role, direction, fio pattern that resembles it). HDFS moves
# whole blocks sequentially; shuffle and spill files are read in pieces scattered over many map outputs.
# Spark's disk spill is written and read back once, so it counts in both directions.
PATHS = {
    "hdfs_read": ("input_bytes", "hdfs", "read", "read"),
    "hdfs_write": ("output_bytes", "hdfs", "write", "write"),
    "shuffle_read": ("shuffle_read_bytes", "local", "read", "randread"),
    "shuffle_write": ("shuffle_write_bytes", "local", "write", "randwrite"),
    "spill_read": ("disk_spilled_bytes", "local", "read", "randread"),
    "spill_write": ("disk_spilled_bytes", "local", "write", "randwrite"),
}
ROLES = ("hdfs", "local")
DIRECTIONS = ("read", "write")
# Below this measured time a stage is mostly scheduling and JVM warm-up (TPC-H SF 0.1: 40-300 ms stages whose
# jitter alone is tens of percent); the error figures are also given over the stages at or above it.
MIN_STAGE_S = 1.0
# Request size assumed when a stage's device requests were not traced: the block layer's large-request
# regime for HDFS blocks; shuffle/spill use the paper's per-reducer / map-outputs estimate instead.
UNTRACED_HDFS_REQUEST_BYTES = 1 << 20
# A profiling run counts as I/O-bound (and fixes delta_io) when its stage took this much longer than t_scale.
IO_BOUND_MARGIN = 0.10
# Other users of a host run their work niced (the harness's helpers: `nice -n 10`); the workload's own JVMs
# do not. A run whose host gave niced processes this share of its CPU (iostat's avg-cpu `nice`, mean over the
# workload's samples) was measured under contention: on the 2-core tiers host such runs took up to 2x longer
# in stages that do no I/O (docs/models.md, Accuracy), so they are left out of fits when quiet runs exist.
LOADED_FOREIGN_CPU_PCT = 10.0


# ---------------------------------------------------------------- the paper's formulas

def shuffle_read_request_bytes(per_reducer_bytes: float, map_outputs: int) -> float:
    """Bytes one reducer fetches from one map output (§III-C2: 27 MB per reducer / 973 map outputs ≈ 30 KB)."""
    return per_reducer_bytes / map_outputs


def io_limit_s(data_bytes: float, nodes: int, bandwidth_bytes_per_s: float, delta_s: float = 0.0) -> float:
    """t_io_limit = D / (N * BW) + delta (Eq. 1)."""
    return data_bytes / (nodes * bandwidth_bytes_per_s) + delta_s


def waves(tasks: int, nodes: int, cores: int) -> float:
    """M / (N * P), at least one wave: with fewer tasks than slots a stage still takes one task time."""
    return tasks / min(nodes * cores, tasks) if tasks else 0.0


def scale_time_s(tasks: int, nodes: int, cores: int, t_avg_s: float, delta_scale_s: float) -> float:
    """t_scale = M / (N * P) * t_avg + delta_scale (Eq. 1)."""
    return waves(tasks, nodes, cores) * t_avg_s + delta_scale_s


# ---------------------------------------------------------------- device bandwidth against request size

def _profile_caps() -> dict:
    try:
        return (yaml.safe_load(PROFILES_FILE.read_text()) or {}).get("profiles") or {}
    except OSError:
        return {}


def _drive_datasheet_rate(options: dict, direction: str, random: bool, request_bytes: float) -> float:
    """Bytes/s of a modelled drive (a profile with `model`, e.g. hdd) from its datasheet figures alone, for a
    profile that has no fio sweep: a random request pays the command overhead, the average seek and half a
    revolution before its transfer; a sequential stream runs at the mean of the outer and inner media rates. The
    write cache and queue reordering are left out (a conservative figure; docs/storage.md)."""
    media_rate = (options["outer-rate"] + options["inner-rate"]) / 2
    if not random:
        return float(media_rate)
    seconds = (options["overhead-ms"] + options[f"{direction}-seek-avg-ms"]) / 1e3 + 30.0 / options["rpm"] \
        + request_bytes / media_rate
    return float(request_bytes / seconds)


@dataclass
class Bandwidths:
    """Effective bandwidth of a backend profile at a request size: the fio sweep (log-log interpolation between
    block sizes; below the smallest, IOPS-bound: bandwidth proportional to size), else the profile's caps
    min(bytes/s, IOPS x size)."""

    curves: dict = field(default_factory=dict)   # (profile, fio rw) -> (sizes, bandwidths), sorted
    sources: dict = field(default_factory=dict)  # (profile, fio rw) -> "fio sweep of run X"
    caps: dict = field(default_factory=_profile_caps)

    def add_fio(self, fio: pd.DataFrame, profile_of: dict, label: str) -> None:
        """Curves of a run's fio table; `profile_of` maps its backend names to profiles. A profile already
        known keeps its first sweep (callers add the most relevant run first)."""
        if fio.empty or "block_size_bytes" not in fio:
            return
        ok = fio[(fio["error"] == 0) & (fio["bandwidth_bytes_per_s"] > 0)] if "error" in fio else fio
        for (backend, rw), points in ok.groupby(["backend", "rw"]):
            key = (profile_of.get(backend, backend), rw)
            if key in self.curves:
                continue
            mean = points.groupby("block_size_bytes")["bandwidth_bytes_per_s"].mean().sort_index()
            self.curves[key] = (mean.index.to_numpy(np.float64), mean.to_numpy(np.float64))
            self.sources[key] = label

    def at(self, profile: str, pattern: str, request_bytes: float) -> tuple[float, str]:
        """(bytes/s, where the figure comes from)."""
        curve = self.curves.get((profile, pattern))
        if curve is not None:
            sizes, bandwidths = curve
            if request_bytes < sizes[0]:
                return bandwidths[0] * request_bytes / sizes[0], self.sources[(profile, pattern)]
            value = np.exp(np.interp(np.log(request_bytes), np.log(sizes), np.log(bandwidths)))
            return float(value), self.sources[(profile, pattern)]
        caps = self.caps.get(profile)
        if not caps:
            raise KeyError(f"no fio sweep and no storage profile for backend profile {profile!r}")
        direction = "read" if "read" in pattern else "write"
        if caps.get("model"):
            return _drive_datasheet_rate(caps["model"]["options"], direction, "rand" in pattern, request_bytes), \
                "storage profile's drive datasheet (inventories/storage-profiles.yml)"
        bps, iops = caps.get(f"{direction}_bps") or math.inf, caps.get(f"{direction}_iops") or math.inf
        return float(min(bps, iops * request_bytes)), "storage profile caps (inventories/storage-profiles.yml)"

    def speed(self, profile: str) -> float:
        """One figure to rank backends: random-read bandwidth at 64 KiB."""
        return self.at(profile, "randread", 65536)[0]


# ---------------------------------------------------------------- configurations of a run

@dataclass
class Configuration:
    """One measured workload run: where HDFS and the local dirs were (as storage profiles), P, N, and its
    stages with what they moved (logical bytes per path, device bytes and requests per role and direction)."""

    run_id: str
    workload_id: str
    workload: str
    sweep: str
    hdfs: str
    local: str
    cores: int
    nodes: int
    run_s: float
    stages: pd.DataFrame
    traced: bool
    foreign_cpu_pct: float = float("nan")   # host CPU share of niced (other users') processes; NaN: unknown

    @property
    def key(self) -> tuple[str, str]:
        return self.workload, self.sweep

    @property
    def loaded(self) -> bool:
        return bool(self.foreign_cpu_pct >= LOADED_FOREIGN_CPU_PCT)

    @property
    def label(self) -> str:
        return f"hdfs={self.hdfs} local={self.local} P={self.cores} N={self.nodes}"


MODEL_TABLES = ("stages", "spark_executors", "block_requests", "devices", "host_cpu")


def _nodes(manifest: dict, executors: pd.DataFrame) -> int:
    workers = ((manifest.get("inventory") or {}).get("groups") or {}).get("workers")
    if workers:
        return len(workers)
    if not executors.empty and "executor_host" in executors:
        return max(1, executors.loc[executors["executor_id"] != "driver", "executor_host"].nunique())
    return 1


def _cores(declared, executors: pd.DataFrame, workload_id: str, nodes: int) -> int:
    """P: the CORES value of the run, else the executors' cores of its largest application / nodes."""
    if declared is not None and not pd.isna(declared):
        return int(declared)
    mine = executors[(executors["workload_id"] == workload_id) & (executors["executor_id"] != "driver")] \
        if not executors.empty and "executor_id" in executors else executors.iloc[0:0]
    if mine.empty:
        return 1
    return max(1, int(mine.groupby("app_id")["total_cores"].sum().max()) // nodes)


def stage_rows(stages: pd.DataFrame) -> pd.DataFrame:
    """Per stage of one workload run (attempts summed), keyed by application order, stage id and name as in
    metrics.stage_time_by_cores, with its identity across runs (STAGE_IDENTITY); `rows` lists the stage
    table's row indexes of its attempts."""
    if stages.empty:
        return pd.DataFrame(columns=STAGE_KEY + STAGE_IDENTITY)
    groups = stages["job_group"].fillna("") if "job_group" in stages else ""
    frame = with_application_order(stages.assign(row=stages.index, job_group=groups))
    sums = {c: (c, "sum") for c in ("duration_s", "executor_run_time_s", "executor_cpu_time_s",
                                   "shuffle_remote_bytes_read", *{p[0] for p in PATHS.values()})}
    grouped = frame.groupby(STAGE_KEY, dropna=False).agg(num_tasks=("num_tasks", "max"),
                                                          job_group=("job_group", "first"),
                                                          submitted_ms=("submission_time_ms", "min"),
                                                          rows=("row", list), **sums)
    return with_identity(grouped.reset_index()).sort_values(["app", "submitted_ms"], ignore_index=True)


def _device_io(rows: pd.DataFrame, attributed: pd.DataFrame, devices: dict[tuple[str, str], str]) -> pd.DataFrame:
    """Per stage row: device bytes and requests per role and direction, summed over hosts
    ((host, role) -> that host's device of the role's backend in `devices`)."""
    out = rows.copy()
    for role in ROLES:
        for direction in DIRECTIONS:
            out[f"{role}_{direction}_device_bytes"] = 0.0
            out[f"{role}_{direction}_device_requests"] = 0.0
    if attributed.empty:
        return out
    on_role = {role: pd.Series(False, index=attributed.index) for role in ROLES}
    for (host, role), device in devices.items():
        on_role[role] |= (attributed["host"] == host) & (attributed["device"] == device)
    for index, stage in out.iterrows():
        mine = attributed["stage_index"].isin(stage["rows"])
        for role in ROLES:
            for direction in DIRECTIONS:
                hit = attributed.loc[mine & on_role[role] & (attributed["op"] == direction), "bytes"]
                out.at[index, f"{role}_{direction}_device_bytes"] = float(hit.sum())
                out.at[index, f"{role}_{direction}_device_requests"] = float(len(hit))
    return out


def foreign_cpu_pct(host_cpu: pd.DataFrame, workload_id: str, manifest: dict) -> float:
    """Mean share (%) of the hosts' CPU that niced processes took while the workload ran (iostat's avg-cpu
    `nice`, every sample of every host: the host_cpu table); NaN when no host recorded it."""
    if ((manifest.get("emulation") or {}).get("nodes") or {}).get("nice"):
        return float("nan")  # an emulated cluster niced its own processes: the niced share is the workload's
    if host_cpu.empty or "nice_pct" not in host_cpu:
        return float("nan")
    shares = host_cpu.loc[host_cpu["workload_id"] == workload_id, "nice_pct"].dropna()
    return float(shares.mean()) if not shares.empty else float("nan")


def configurations(run_dir: Path) -> list[Configuration]:
    """Every measured workload run with Spark stages (ok, not a warm-up) of a run directory."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    return configurations_of(manifest.get("run_id") or run_dir.name, manifest, run_tables(run_dir, MODEL_TABLES))


def configurations_of(run_id: str, manifest: dict, tables: dict[str, pd.DataFrame]) -> list[Configuration]:
    """configurations() of a run whose manifest and tables (MODEL_TABLES at least) the caller holds already: a page
    that has read them does not parse the run again."""
    workloads = metrics.measured_runs(workloads_table(manifest))
    stages, executors, requests = tables["stages"], tables["spark_executors"], tables["block_requests"]
    if stages.empty or workloads.empty:
        return []
    profiles = devices.backend_profiles(tables["devices"])
    nodes = _nodes(manifest, executors)
    configs = []
    for w in workloads.itertuples():
        mine = stages[(stages["workload_id"] == w.workload_id) & (stages["status"] == "succeeded")]
        if mine.empty:
            continue
        traced = not requests.empty and (requests["workload_id"] == w.workload_id).any()
        attributed = metrics.attribute_requests_to_stages(requests[requests["workload_id"] == w.workload_id], mine) \
            if traced else pd.DataFrame()
        on_role = {(host, role): device for role in ROLES
                   for host, device in devices.role_devices(tables["devices"], getattr(w, f"placement_{role}")).items()}
        rows = _device_io(stage_rows(mine), attributed, on_role)
        configs.append(Configuration(
            run_id=run_id, workload_id=w.workload_id, workload=w.workload, sweep=w.sweep or "",
            hdfs=profiles.get(w.placement_hdfs, w.placement_hdfs), local=profiles.get(w.placement_local, w.placement_local),
            cores=_cores(w.executor_cores, executors, w.workload_id, nodes), nodes=nodes,
            run_s=float(w.run_s) if pd.notna(w.run_s) else float("nan"), stages=rows, traced=bool(traced),
            foreign_cpu_pct=foreign_cpu_pct(tables["host_cpu"], w.workload_id, manifest)))
    return configs


def left_out_under_load(configs: list[Configuration]) -> list[Configuration]:
    """The configurations `fit` leaves out: measured under load while the same workload has quiet ones."""
    quiet = {c.key for c in configs if not c.loaded}
    return [c for c in configs if c.loaded and c.key in quiet]


def load_notes(profile: list[Configuration], measured: list[Configuration] = ()) -> list[str]:
    """One line per configuration measured under load: which, how loaded, and what the model did with it."""
    left, notes, seen = left_out_under_load(profile), [], []
    for role, configs in (("profile", profile), ("measured", measured)):
        for c in configs:
            if not c.loaded or any(c is s for s in seen):
                continue
            seen.append(c)
            action = ("left out of the fit" if any(c is x for x in left) else
                      "fitted: the workload has no quiet run" if role == "profile" else "compared as measured")
            notes.append(f"measured under load: {c.run_id} {c.workload_id} ({c.label}): niced processes took "
                         f"{c.foreign_cpu_pct:.0f} % of the host CPU; {action}")
    return notes


def bandwidths_for(run_dirs: list[Path]) -> Bandwidths:
    """fio curves from the given runs, the first run that swept a profile first; for the others the storage
    profiles as the first run that used each recorded it (else as inventories/storage-profiles.yml has it). Only the runs named: a prediction is a function of its inputs, never of what else lies in results/."""
    sources = []
    for run_dir in map(Path, run_dirs):
        try:
            tables = run_tables(run_dir, ("fio", "devices"))
        except (safeio.Refused, OSError, ValueError):    # a damaged run: not a source of curves
            continue
        try:
            manifest = load_manifest(run_dir)
        except (safeio.Refused, OSError, ValueError):
            manifest = {}
        sources.append((run_dir.name, manifest, tables))
    return bandwidths_of(sources)


def bandwidths_of(runs: list[tuple[str, dict, dict[str, pd.DataFrame]]]) -> Bandwidths:
    """bandwidths_for() of runs whose (name, manifest, tables with `fio` and `devices`) the caller holds already."""
    bandwidths = Bandwidths()
    recorded = {}
    for name, manifest, tables in runs:
        bandwidths.add_fio(tables["fio"], devices.backend_profiles(tables["devices"]), f"fio sweep of run {name}")
        for profile_name, profile in ((manifest.get("emulation") or {}).get("profiles") or {}).items():
            recorded.setdefault(profile_name, profile)
    # A profile as the runs recorded it: their disks were what they measured (the hdd profile was a blkio cap
    # before it became a drive model, issue 21); today's file only for profiles no run recorded.
    bandwidths.caps = {**bandwidths.caps, **{name: p for name, p in recorded.items() if isinstance(p, dict)}}
    return bandwidths


# ---------------------------------------------------------------- fitting

@dataclass
class StageModel:
    """The fitted constants of one stage and what it moves on each path at the device."""

    workload: str
    sweep: str
    app: int
    stage_id: int              # in the first profiling run; other runs may number the same stage otherwise
    name: str
    tasks: int
    job_group: str
    ordinal: int
    t_avg_s: float
    delta_scale_s: float
    delta_read_s: float
    delta_write_s: float
    data_bytes: dict           # path -> bytes reaching the device
    request_bytes: dict        # path -> mean request size at the device
    scale_fit: str             # how t_avg and delta_scale were obtained
    io_fit: str
    io_bound_in_scale_runs: bool = False

    @property
    def identity(self) -> tuple:
        return self.app, self.job_group, self.name, self.tasks, self.ordinal

    def as_dict(self) -> dict:
        return {"workload": self.workload, "sweep": self.sweep, "app": self.app, "stage_id": self.stage_id,
                "name": self.name, "tasks": self.tasks, "job_group": self.job_group, "ordinal": self.ordinal, "t_avg_s": self.t_avg_s, "delta_scale_s": self.delta_scale_s,
                "delta_read_s": self.delta_read_s, "delta_write_s": self.delta_write_s,
                "data_bytes": self.data_bytes, "request_bytes": self.request_bytes,
                "scale_fit": self.scale_fit, "io_fit": self.io_fit}


def _role_fraction_and_size(points: list[tuple[Configuration, pd.Series]], role: str, direction: str,
                            default_size: float) -> tuple[float, float]:
    """Of the logical bytes of a role and direction, the fraction that reached the device (the rest came from
    or stayed in the page cache), and the mean device request size; pooled over the traced configurations.
    Where HDFS and the local dirs shared a device its bytes are apportioned by the roles' logical bytes."""
    reached = logical = device_bytes = requests = 0.0
    for config, row in points:
        if not config.traced:
            continue
        mine = _logical(row, role, direction)
        shared = config.hdfs == config.local
        total = mine + (_logical(row, _other(role), direction) if shared else 0.0)
        on_device = row[f"{role}_{direction}_device_bytes"]
        if total > 0:
            reached += on_device * mine / total
            logical += mine
        device_bytes += on_device
        requests += row[f"{role}_{direction}_device_requests"]
    fraction = min(1.0, reached / logical) if logical > 0 else 1.0
    size = device_bytes / requests if requests else default_size
    return fraction, size


def _other(role: str) -> str:
    return "local" if role == "hdfs" else "hdfs"


def _logical(row: pd.Series, role: str, direction: str) -> float:
    return float(sum(row[column] or 0 for column, r, d, _ in PATHS.values() if r == role and d == direction))


def _shuffle_default_size(row: pd.Series, map_outputs: int) -> float:
    per_reducer = (row["shuffle_read_bytes"] or 0) / max(1, row["num_tasks"])
    return shuffle_read_request_bytes(per_reducer, max(1, map_outputs)) or UNTRACED_HDFS_REQUEST_BYTES


def io_terms(model: StageModel, hdfs: str, local: str, nodes: int, bandwidths: Bandwidths) -> dict:
    """Per path: D, request size, BW on the target's backend and D / (N * BW); per direction the limit (paths
    on the same device add up, separate devices run in parallel; blk-throttle and the paper both keep
    reads and writes apart)."""
    paths, limits = [], {}
    placement = {"hdfs": hdfs, "local": local}
    for path, (_column, role, direction, pattern) in PATHS.items():
        data = model.data_bytes.get(path, 0.0)
        if data <= 0:
            continue
        size = model.request_bytes[path]
        bandwidth, source = bandwidths.at(placement[role], pattern, size)
        seconds = io_limit_s(data, nodes, bandwidth)
        # one device per backend name: hdfs=a,local=a share it
        device = placement[role]
        limits.setdefault(direction, {}).setdefault(device, 0.0)
        limits[direction][device] += seconds
        paths.append({"path": path, "backend": placement[role], "data_bytes": data, "request_bytes": size,
                      "bandwidth_bytes_per_s": bandwidth, "time_s": seconds, "bandwidth_source": source})
    return {"paths": paths, **{d: max(limits.get(d, {0: 0.0}).values()) for d in DIRECTIONS}}


def _scale_points(points: list[tuple[Configuration, pd.Series]], io_limits: list[float]) -> list[int]:
    """Which runs fit t_scale: those where this stage's I/O limit is the least (within IO_BOUND_MARGIN of its
    median time). With the paper's four sample runs these are runs 1-2 (P=1, P=2 on the fast backend) for a
    stage that does I/O, and all four for one that does none (the slow backend cannot have slowed it).
    Without runs on the fast backend for both roles, each stage still gets the runs whose placement put its
    own I/O on the faster device (a scan: HDFS on ssd; a shuffle: local dirs on ssd)."""
    tolerance = IO_BOUND_MARGIN * float(np.median([r["duration_s"] for _, r in points]))
    least = min(io_limits)
    return [i for i, limit in enumerate(io_limits) if limit <= least + tolerance]


def _fit_scale(scale_points: list[tuple[Configuration, pd.Series]]) -> tuple[float, float, str]:
    """(t_avg, delta_scale, how) from the scale runs."""
    w = np.array([waves(int(r["num_tasks"]), c.nodes, c.cores) for c, r in scale_points])
    t = np.array([r["duration_s"] for _, r in scale_points], dtype=np.float64)
    if len(set(np.round(w, 9))) >= 2:
        t_avg, delta = np.polyfit(w, t, 1)
        fit = f"least squares over {len(w)} runs with {len(set(w))} values of M/(N*P)"
        if t_avg < 0:  # more cores made it slower (a contended host): no scaling, the mean time
            t_avg, delta = 0.0, float(t.mean())
            fit += "; slope < 0, so t_scale = mean time (does not scale with P)"
        return float(t_avg), float(delta), fit
    per_task = np.array([r["executor_run_time_s"] / max(1, r["num_tasks"]) for _, r in scale_points])
    t_avg = float(per_task.mean())
    return t_avg, float((t - w * t_avg).mean()), f"one value of P: t_avg = mean task run time, delta_scale = rest ({len(w)} runs)"


def _fit_stage(key: tuple, points: list[tuple[Configuration, pd.Series]], bandwidths: Bandwidths,
               map_outputs: int) -> StageModel:
    app, job_group, name, _tasks, ordinal = key
    stage_id = points[0][1]["stage_id"]
    tasks = int(max(r["num_tasks"] for _, r in points))
    data, sizes = {}, {}
    for path, (column, role, direction, _) in PATHS.items():
        default = _shuffle_default_size(points[0][1], map_outputs) if role == "local" else UNTRACED_HDFS_REQUEST_BYTES
        fraction, size = _role_fraction_and_size(points, role, direction, default)
        logical = float(np.mean([r[column] or 0 for _, r in points]))
        data[path], sizes[path] = logical * fraction, size
    model = StageModel(workload=points[0][0].workload, sweep=points[0][0].sweep, app=int(app), stage_id=int(stage_id),
                       name=str(name), tasks=tasks, job_group=str(job_group), ordinal=int(ordinal), t_avg_s=0.0,
                       delta_scale_s=0.0, delta_read_s=0.0, delta_write_s=0.0, data_bytes=data, request_bytes=sizes,
                       scale_fit="", io_fit="no profiling run was I/O-bound: delta_io = 0")
    terms = [io_terms(model, c.hdfs, c.local, c.nodes, bandwidths) for c, _ in points]
    io_limits = [max(t[d] for d in DIRECTIONS) for t in terms]
    chosen = _scale_points(points, io_limits)
    model.t_avg_s, model.delta_scale_s, model.scale_fit = _fit_scale([points[i] for i in chosen])

    # delta_io from the runs whose slower placement the stage's time shows (§VI sample runs 3 and 4)
    deltas = {d: [] for d in DIRECTIONS}
    for index, (config, row) in enumerate(points):
        scale = scale_time_s(int(row["num_tasks"]), config.nodes, config.cores, model.t_avg_s, model.delta_scale_s)
        if index in chosen:
            model.io_bound_in_scale_runs |= io_limits[index] > scale
            continue
        if row["duration_s"] > scale * (1 + IO_BOUND_MARGIN):
            direction = max(DIRECTIONS, key=lambda d: terms[index][d])
            if terms[index][direction] > 0:
                deltas[direction].append(row["duration_s"] - terms[index][direction])
    for direction, values in deltas.items():
        if values:
            setattr(model, f"delta_{direction}_s", float(np.mean(values)))
    fitted = [f"delta_{d} from {len(v)} I/O-bound run(s)" for d, v in deltas.items() if v]
    if fitted:
        model.io_fit = "; ".join(fitted)
    return model


def _map_outputs(rows: pd.DataFrame) -> dict:
    """Per shuffle-reading stage: tasks of the latest earlier stage of its application that wrote shuffle data."""
    outputs = {}
    for index, row in rows.iterrows():
        if (row["shuffle_read_bytes"] or 0) <= 0:
            continue
        earlier = rows[(rows["app"] == row["app"]) & (rows["shuffle_write_bytes"] > 0)
                       & (rows["submitted_ms"] < row["submitted_ms"])]
        outputs[tuple(row[STAGE_IDENTITY])] = int(earlier["num_tasks"].iloc[-1]) if not earlier.empty else 1
    return outputs


def fit(configs: list[Configuration], bandwidths: Bandwidths) -> dict[tuple[str, str], list[StageModel]]:
    """Per workload (workload, sweep): one StageModel per stage seen in its configurations. Configurations
    measured under load are left out when the workload has quiet ones (`left_out_under_load`). Per stage the
    scale term is fitted on the runs where its I/O limit is least (`_scale_points`), delta_io on the others."""
    models = {}
    by_workload: dict[tuple, list[Configuration]] = {}
    for config in configs:
        by_workload.setdefault(config.key, []).append(config)
    for key, group in by_workload.items():
        group = [c for c in group if not c.loaded] or group
        points: dict[tuple, list] = {}
        map_outputs = {}
        for config in group:
            map_outputs.update(_map_outputs(config.stages))
            for _, row in config.stages.iterrows():
                points.setdefault(tuple(row[STAGE_IDENTITY]), []).append((config, row))
        order = sorted(points, key=lambda k: (k[0], min(r["submitted_ms"] for _, r in points[k]) - min(
            c.stages["submitted_ms"].min() for c, _ in points[k])))
        models[key] = [_fit_stage(k, points[k], bandwidths, map_outputs.get(k, 1)) for k in order]
    return models


# ---------------------------------------------------------------- prediction and errors

@dataclass(frozen=True)
class Target:
    hdfs: str
    local: str
    cores: int
    nodes: int

    @property
    def label(self) -> str:
        return f"hdfs={self.hdfs} local={self.local} P={self.cores} N={self.nodes}"


def parse_target(text: str, profiles: dict[str, str]) -> tuple[str, str]:
    """`nvme` (HDFS and local dirs on it) or `hdfs=a,local=b`; backend names of the run become profiles."""
    if "=" not in text:
        backend = profiles.get(text, text)
        return backend, backend
    parts = dict(item.split("=", 1) for item in text.replace(" ", ",").split(",") if "=" in item)
    if set(parts) != {"hdfs", "local"}:
        raise ValueError(f"--to {text!r}: give a backend (`nvme`) or `hdfs=<backend>,local=<backend>`")
    return profiles.get(parts["hdfs"], parts["hdfs"]), profiles.get(parts["local"], parts["local"])


def predict_stage(model: StageModel, target: Target, bandwidths: Bandwidths) -> dict:
    t_scale = scale_time_s(model.tasks, target.nodes, target.cores, model.t_avg_s, model.delta_scale_s)
    terms = io_terms(model, target.hdfs, target.local, target.nodes, bandwidths)
    t_read = terms["read"] + model.delta_read_s if terms["read"] > 0 else 0.0
    t_write = terms["write"] + model.delta_write_s if terms["write"] > 0 else 0.0
    candidates = {"scale (CPU, P)": max(t_scale, 0.0), "read": max(t_read, 0.0), "write": max(t_write, 0.0)}
    bound = max(candidates, key=candidates.get)
    return {"workload": model.workload, "sweep": model.sweep, "app": model.app, "stage_id": model.stage_id,
            "name": model.name, "tasks": model.tasks, "job_group": model.job_group, "ordinal": model.ordinal,
            "num_tasks": model.tasks, "t_scale_s": candidates["scale (CPU, P)"],
            "t_read_limit_s": candidates["read"], "t_write_limit_s": candidates["write"],
            "predicted_s": candidates[bound], "bound": bound, "io_paths": terms["paths"]}


def predict(models: dict, target: Target, bandwidths: Bandwidths) -> pd.DataFrame:
    rows = [predict_stage(m, target, bandwidths) for stage_models in models.values() for m in stage_models]
    return pd.DataFrame(rows)


def measured_stage_times(configs: list[Configuration], target: Target) -> pd.DataFrame:
    """Median stage seconds of the configurations that ran exactly the target (same profiles, P and N), per
    stage identity; `measured_stage_id` is the stage's id in the first of them."""
    frames = [c.stages[STAGE_IDENTITY + ["stage_id", "duration_s"]].assign(workload=c.workload, sweep=c.sweep)
              for c in configs if (c.hdfs, c.local, c.cores, c.nodes) ==
              (target.hdfs, target.local, target.cores, target.nodes)]
    if not frames:
        return pd.DataFrame(columns=["workload", "sweep", *STAGE_IDENTITY, "measured_stage_id", "measured_s",
                                     "measured_runs"])
    joined = pd.concat(frames, ignore_index=True)
    return (joined.groupby(["workload", "sweep", *STAGE_IDENTITY], dropna=False)
            .agg(measured_stage_id=("stage_id", "first"), measured_s=("duration_s", "median"),
                 measured_runs=("duration_s", "size")).reset_index())


def with_errors(predicted: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """Predicted joined with measured by stage identity; error_pct = (predicted - measured) / measured x 100."""
    if predicted.empty:
        return predicted
    joined = predicted.merge(measured, on=["workload", "sweep", *STAGE_IDENTITY], how="left") \
        if not measured.empty else predicted.assign(measured_stage_id=np.nan, measured_s=np.nan, measured_runs=0)
    joined["error_pct"] = 100.0 * (joined["predicted_s"] - joined["measured_s"]) / joined["measured_s"]
    return joined


def stage_label(row) -> str:
    """`app 1 s16`, with the measured run's stage id when there is one (the one to look up in its report)."""
    measured = row.get("measured_stage_id")
    stage_id = row["stage_id"] if measured is None or pd.isna(measured) else measured
    return f"app {int(row['app'])} s{int(stage_id)}"


def error_figures(group: pd.DataFrame) -> dict:
    """Over the stages of `group` that have a measurement: how many, the median and worst absolute stage error
    and the time-weighted error sum |predicted - measured| / sum measured (%); None where there are none."""
    have = group.dropna(subset=["measured_s"])
    if have.empty:
        return {"stages": 0, "median_abs_error_pct": None, "worst_abs_error_pct": None, "weighted_error_pct": None}
    absolute = have["error_pct"].abs()
    return {"stages": int(len(have)), "median_abs_error_pct": float(absolute.median()),
            "worst_abs_error_pct": float(absolute.max()),
            "weighted_error_pct": float(100 * (have["predicted_s"] - have["measured_s"]).abs().sum()
                                        / have["measured_s"].sum())}


def error_summary(joined: pd.DataFrame, min_stage_s: float = MIN_STAGE_S) -> dict:
    """Median absolute stage error and the worst stage (%), per workload and over all; app = sum of stages.
    Per workload the figures over every stage (`all`) and over the stages measured at `min_stage_s` or longer
    (`long`), each with the number of stages it covers."""
    have = joined.dropna(subset=["measured_s"]) if "measured_s" in joined else joined.iloc[0:0]
    summary = {"stages_compared": int(len(have)), "min_stage_s": min_stage_s}
    if have.empty:
        return summary
    absolute = have["error_pct"].abs()
    worst = have.loc[absolute.idxmax()]
    summary.update(median_abs_error_pct=float(absolute.median()), worst_stage_error_pct=float(worst["error_pct"]),
                   worst_stage=f"{worst['workload']} {stage_label(worst)} {worst['name']}")
    apps = []
    for (workload, sweep), group in have.groupby(["workload", "sweep"], dropna=False):
        predicted, measured = group["predicted_s"].sum(), group["measured_s"].sum()
        apps.append({"workload": workload, "sweep": sweep, "predicted_s": float(predicted),
                     "measured_s": float(measured), "error_pct": float(100 * (predicted - measured) / measured),
                     "median_abs_stage_error_pct": float(group["error_pct"].abs().median()),
                     "all": error_figures(group), "long": error_figures(group[group["measured_s"] >= min_stage_s])})
    summary["workloads"] = apps
    return summary


@dataclass
class Evaluation:
    """The model fitted on `profile`, its prediction of one target and how far off it was."""

    models: dict             # (workload, sweep) -> [StageModel]
    stages: pd.DataFrame     # predict() joined with the measured stage times (with_errors)
    summary: dict            # error_summary


def evaluate(profile: list[Configuration], target: Target, bandwidths: Bandwidths,
             measured: list[Configuration] = (), min_stage_s: float = MIN_STAGE_S,
             models: dict | None = None) -> Evaluation:
    """Fit on `profile` (or take `models` fitted already), predict `target`, compare with the `measured`
    configurations of exactly that target: the one fit -> predict -> errors -> summary of every caller (the
    report's model section, `predict`, experiments/validate_model)."""
    models = fit(profile, bandwidths) if models is None else models
    joined = with_errors(predict(models, target, bandwidths), measured_stage_times(list(measured), target))
    return Evaluation(models, joined, error_summary(joined, min_stage_s))


def to_json(predicted: pd.DataFrame, summary: dict, target: Target, models: dict, profile_runs: list[str]) -> str:
    """JSON with units in every key (`_s` seconds, `_bytes` bytes, `_bytes_per_s` bytes/s, `_pct` percent)."""
    stages = json.loads(predicted.to_json(orient="records"))
    return json.dumps({"target": {"hdfs": target.hdfs, "local": target.local, "executor_cores_per_node": target.cores,
                                  "nodes": target.nodes},
                       "profile_runs": profile_runs,
                       "units": {"_s": "seconds", "_bytes": "bytes", "_bytes_per_s": "bytes per second",
                                 "_pct": "percent", "tasks": "tasks"},
                       "stages": stages,
                       "application": {"predicted_s": float(predicted["predicted_s"].sum()) if len(predicted) else 0.0},
                       "errors": summary,
                       "fitted": [m.as_dict() for stage_models in models.values() for m in stage_models]}, indent=1)
