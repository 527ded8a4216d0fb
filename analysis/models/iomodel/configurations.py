"""The measured configurations the model is fitted on and compared with, from a run's manifest and tables: per
workload run its placement as storage profiles, P, N and its stages with the bytes they moved (logical per I/O
path, at the device per role and direction), and whether other users loaded its host."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ... import devices, metrics
from ...parsers.manifest import workloads_table
from ...stages import STAGE_IDENTITY, STAGE_KEY, with_application_order, with_identity
from .formulas import DIRECTIONS, PATHS, ROLES

# Other users of a host run their work niced (the harness's helpers: `nice -n 10`); the workload's own JVMs
# do not. A run whose host gave niced processes this share of its CPU (iostat's avg-cpu `nice`, mean over the
# workload's samples) was measured under contention: on the 2-core tiers host such runs took up to 2x longer
# in stages that do no I/O (docs/models.md, Accuracy), so they are left out of fits when quiet runs exist.
LOADED_FOREIGN_CPU_PCT = 10.0


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



def configurations_of(run_id: str, manifest: dict, tables: dict[str, pd.DataFrame]) -> list[Configuration]:
    """Every measured workload run with Spark stages (ok, not a warm-up) of a run, from its manifest and its tables
    (MODEL_TABLES at least)."""
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
