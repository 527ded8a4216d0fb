"""The model fitted per stage on measured configurations (StageModel: t_avg and delta_scale from the runs where the
stage's I/O limit is least, delta_io from the others) and evaluated for a target placement, P and N."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...stages import STAGE_IDENTITY
from .bandwidths import Bandwidths
from .configurations import Configuration
from .formulas import DIRECTIONS, PATHS, io_limit_s, scale_time_s, shuffle_read_request_bytes, waves

# Request size assumed when a stage's device requests were not traced: the block layer's large-request
# regime for HDFS blocks; shuffle/spill use the paper's per-reducer / map-outputs estimate instead.
UNTRACED_HDFS_REQUEST_BYTES = 1 << 20
# A profiling run counts as I/O-bound (and fixes delta_io) when its stage took this much longer than t_scale.
IO_BOUND_MARGIN = 0.10


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
