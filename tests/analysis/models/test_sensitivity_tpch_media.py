"""The what-if table (the report's storage sensitivity, analysis/models/sensitivity.py) on a real default bench: TPC-H,
measured with HDFS on the hdd and the local dirs on the ssd, predicted with HDFS on the ssd (local dirs fixed). The
predicted difference must be the one the fio table's media figures imply (issue 42), recomputed here from the fio
table alone, and the table must show the model's measured error beside it.

Fixture: tests/fixtures/runs/default-bench-tpch-probe (run 20261129-010505-local on a loaded 2-core machine; TPC-H
and the storage probe's TeraSort runs, its README says how it was filtered). TPC-H is measured on one placement, so
its what-if is the fio resource model: per stage, time = measured x max(CPU, disk there) / max(CPU, disk as
measured), disk = per device the sum over the stage's I/O paths of D / (N x BW), BW = fio at the path's request size.
On this machine the TPC-H stages are CPU-bound, so the implied difference is about 0 s: that is the honest answer and
what is asserted, next to the read limits themselves, which are not 0."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from analysis import devices, fio_limits
from analysis.models import sensitivity
from analysis.parsers.manifest import workloads_table
from analysis.predict import bandwidths_in, configurations_in, prediction, render_json
from analysis.presentation.rows.sensitivity import sensitivity_context
from conftest import FIXTURES, copy_recorded_run

RUN = FIXTURES / "runs" / "default-bench-tpch-probe"
MEASURED, WHAT_IF = ("hdd", "ssd"), ("ssd", "ssd")   # (HDFS, local dirs)
# I/O path -> (placement role, direction, the fio pattern it is read at): HDFS moves whole blocks in sequence,
# shuffle and spill files are read in pieces (docs/models.md).
PATHS = {"hdfs_read": ("hdfs", "read", "read"), "hdfs_write": ("hdfs", "write", "write"),
         "shuffle_read": ("local", "read", "randread"), "shuffle_write": ("local", "write", "randwrite"),
         "spill_read": ("local", "read", "randread"), "spill_write": ("local", "write", "randwrite")}


def _media_rate(fio: pd.DataFrame, backend: str, rw: str, request_bytes: float) -> float:
    """Bytes/s of `backend` at a request size from the fio points not flagged over their device class: log-log
    interpolation between the swept block sizes, held at the largest; below the smallest, IOPS-bound (rate
    proportional to the size)."""
    points = fio[(fio["backend"] == backend) & (fio["rw"] == rw) & (fio["error"] == 0)
                 & (fio["bandwidth_bytes_per_s"] > 0) & (fio["over_class_limit"].fillna("") == "")]
    curve = points.groupby("block_size_bytes")["bandwidth_bytes_per_s"].mean().sort_index()
    sizes, rates = curve.index.to_numpy(np.float64), curve.to_numpy(np.float64)
    if request_bytes <= sizes[0]:
        return rates[0] * request_bytes / sizes[0]
    if request_bytes >= sizes[-1]:
        return rates[-1]
    upper = int(np.searchsorted(sizes, request_bytes))
    share = math.log(request_bytes / sizes[upper - 1]) / math.log(sizes[upper] / sizes[upper - 1])
    return rates[upper - 1] * (rates[upper] / rates[upper - 1]) ** share


def _exported(run) -> dict:
    """`python -m analysis predict <run> --to hdfs=ssd,local=ssd --json`, read back."""
    return json.loads(render_json(prediction(str(run), "hdfs=ssd,local=ssd")))


def _by_hand(run, exported: dict) -> dict:
    """Per TPC-H stage (by stage id) and placement: the read and write limits and the disk time (the busiest device)
    from the I/O-limit equation t = D / (N x BW) on the fio table's unflagged points, with D and the request sizes
    the model fitted (as the prediction exports them); CPU = executor CPU / (N x P); and the what-if's time at
    WHAT_IF = measured x max(CPU, disk there) / max(CPU, disk as measured)."""
    fio = pd.read_parquet(run / "tables" / "fio.parquet")
    stages = pd.read_parquet(run / "tables" / "stages.parquet").query("workload_id == 'tpch'").set_index("stage_id")
    nodes, cores = exported["target"]["nodes"], exported["target"]["executor_cores_per_node"]
    fitted = [m for m in exported["fitted"] if m["workload"] == "tpch"]
    assert len(fitted) == len(stages) == 148   # one application, one attempt per stage
    out = {}
    for model in fitted:
        stage = stages.loc[model["stage_id"]]
        row = {"measured_s": float(stage["duration_s"]), "cpu_s": stage["executor_cpu_time_s"] / (nodes * cores),
               "delta_read_s": model["delta_read_s"], "hdfs_read_request_bytes": model["request_bytes"]["hdfs_read"]}
        for placement in (MEASURED, WHAT_IF):
            where = dict(zip(("hdfs", "local"), placement))
            seconds = {}   # (direction, backend) -> s
            for path, (role, direction, rw) in PATHS.items():
                data = model["data_bytes"][path]
                if data > 0:
                    rate = _media_rate(fio, where[role], rw, model["request_bytes"][path])
                    key = (direction, where[role])
                    seconds[key] = seconds.get(key, 0.0) + data / (nodes * rate)
                    row[(placement, path)] = data / (nodes * rate)
            row[(placement, "read")] = max([s for (d, _), s in seconds.items() if d == "read"], default=0.0)
            per_backend = {}
            for (_, backend), s in seconds.items():
                per_backend[backend] = per_backend.get(backend, 0.0) + s
            row[(placement, "disk")] = max(per_backend.values(), default=0.0)
        old = max(row["cpu_s"], row[(MEASURED, "disk")])
        row["what_if_s"] = row["measured_s"] * max(row["cpu_s"], row[(WHAT_IF, "disk")]) / old if old > 0 \
            else row["measured_s"]
        out[model["stage_id"]] = row
    return out


@pytest.fixture(scope="module")
def recorded():
    configs = configurations_in(RUN)
    bandwidths = bandwidths_in([RUN])
    profiles = sorted(set(devices.backend_profiles(pd.read_parquet(RUN / "tables" / "devices.parquet")).values()))
    table = sensitivity.storage_sensitivity(configs, profiles, bandwidths)   # as the report builds it
    exported = _exported(RUN)
    return configs, bandwidths, table, exported, _by_hand(RUN, exported)


def _tpch(configs):
    [config] = [c for c in configs if c.workload == "tpch"]
    return config


def test_the_what_if_difference_is_the_one_the_media_figures_imply(recorded):
    configs, _bandwidths, table, _exported, by_hand = recorded
    # the one-node run fetched nothing over the network, so CPU and disk are the resources that matter
    stages = pd.read_parquet(RUN / "tables" / "stages.parquet").query("workload_id == 'tpch'")
    assert stages["shuffle_remote_bytes_read"].fillna(0).sum() == 0
    tpch = table[table["workload"] == "tpch"].set_index(["hdfs", "local"])
    assert tpch.loc[MEASURED, "how"] == sensitivity.MEASURED and tpch.loc[WHAT_IF, "how"] == sensitivity.PREDICTED
    assert tpch.loc[MEASURED, "run_s"] == pytest.approx(85.383)   # the run step as the manifest recorded it
    difference = tpch.loc[WHAT_IF, "run_s"] - tpch.loc[MEASURED, "run_s"]
    implied = sum(r["what_if_s"] - r["measured_s"] for r in by_hand.values())
    assert difference == pytest.approx(implied, abs=1e-6)
    # CPU-bound on this 2-core machine even with HDFS on the hdd: the media imply no difference
    assert implied == pytest.approx(0.0, abs=1e-9)
    assert all(r["cpu_s"] >= r[(MEASURED, "disk")] for r in by_hand.values())


def test_the_read_limits_are_not_zero_where_hdfs_bytes_are_read_and_the_hdd_is_slower(recorded):
    configs, bandwidths, _table, exported, by_hand = recorded
    config = _tpch(configs)
    reading = {i: r for i, r in by_hand.items() if (MEASURED, "hdfs_read") in r}
    assert len(reading) >= 40   # 45 stages of TPC-H read HDFS bytes at the device
    model = {placement: sensitivity.fio_stage_times(config, *placement, bandwidths).set_index("stage_id")
             for placement in (MEASURED, WHAT_IF)}
    for stage_id, r in reading.items():
        assert r[(MEASURED, "hdfs_read")] > 0 and r[(WHAT_IF, "hdfs_read")] > 0
        if r["hdfs_read_request_bytes"] >= 65536:
            # the hdd reads slower than the ssd; below 64 KiB the sweep's 4 KiB sequential points are path-bound
            # through loop and FUSE (docs/storage.md: 144 MB/s on the hdd, 85 MB/s on the ssd here)
            assert r[(MEASURED, "hdfs_read")] > r[(WHAT_IF, "hdfs_read")]
        for placement in (MEASURED, WHAT_IF):
            [path] = [p for p in model[placement].loc[stage_id, "paths"] if p["path"] == "hdfs_read"]
            assert path["time_s"] == pytest.approx(r[(placement, "hdfs_read")], rel=1e-9)
    assert sum(r[(MEASURED, "hdfs_read")] for r in reading.values()) > 0.1   # seconds, summed over the stages
    # the prediction's own export: its read limits at WHAT_IF are the same equation on the same fio points
    for stage in (s for s in exported["stages"] if s["workload"] == "tpch"):
        r = by_hand[stage["stage_id"]]
        expected = r[(WHAT_IF, "read")] + r["delta_read_s"] if r[(WHAT_IF, "read")] > 0 else 0.0
        assert stage["t_read_limit_s"] == pytest.approx(expected, abs=1e-9)   # the export rounds to 10 decimals


def test_the_what_if_shows_the_models_measured_error_beside_it(recorded):
    configs, bandwidths, table, _exported, _by_hand = recorded
    tpch = table[table["workload"] == "tpch"].set_index(["hdfs", "local"])
    errors = sensitivity.fio_errors(configs, bandwidths)
    # measured on the storage probe: each TeraSort placement predicted from the other one, against its measured
    # median run step (the manifest's runs)
    workloads = workloads_table(json.loads((RUN / "manifest.json").read_text()))
    probe = {}
    for w in workloads.itertuples():
        if w.workload == "terasort" and w.sweep == "engine=spark" and not w.warmup:
            probe.setdefault((w.placement_hdfs, w.placement_local), []).append(w.run_s)
    assert sorted(map(len, probe.values())) == [3, 3]
    assert sorted((e["source"], e["target"]) for e in errors) == [(("hdd", "ssd"), ("ssd", "hdd")),
                                                                   (("ssd", "hdd"), ("hdd", "ssd"))]
    absolute = []
    for e in errors:
        measured = float(np.median(probe[e["target"]]))
        assert e["measured_s"] == pytest.approx(measured)
        # CPU-bound on both placements, the probe's TeraSort too is predicted unchanged: the error is the difference
        # between the placements' measured medians (docs/models.md)
        assert e["predicted_s"] == pytest.approx(float(np.median(probe[e["source"]])))
        absolute.append(abs(100 * (e["predicted_s"] - measured) / measured))
    assert tpch.loc[WHAT_IF, "error_median_pct"] == pytest.approx(np.median(absolute))
    assert tpch.loc[WHAT_IF, "error_worst_pct"] == pytest.approx(max(absolute))
    # on the page: the predicted cell carries ± the median error, the row the median, worst and what it was measured on
    [row] = [r for r in sensitivity_context(table)["rows"] if r["workload"] == "tpch"]
    placements = sensitivity_context(table)["placements"]
    cell = row["cells"][placements.index("HDFS ssd, local ssd")]
    assert cell["text"] == f"{tpch.loc[WHAT_IF, 'run_s']:.1f} s ± {np.median(absolute):.0f} %"
    assert cell["how"] == "predicted (fio-resources)"
    assert row["error"] == f"median {np.median(absolute):.1f} %, worst {max(absolute):.1f} %"
    assert "terasort engine=spark" in row["basis"] and "20261129-010505-local" in row["basis"]


def _with_planted_point(tmp_path, flagged: bool):
    """A copy of the run whose fio table has one more hdd point: sequential 256 KiB reads at 600 MB/s, a cache's
    speed (the drive model streams at most 255 MB/s). PLANTED: no such point was measured. The table's class limits
    recomputed as the table builder does (fio_limits.with_class_limits); `flagged=False` clears the flag, as the code
    before the flags had none."""
    run = copy_recorded_run(RUN.name, tmp_path)
    fio = pd.read_parquet(run / "tables" / "fio.parquet").drop(columns=fio_limits.LIMIT_COLUMNS)
    template = fio[(fio["backend"] == "hdd") & (fio["rw"] == "read") & (fio["block_size_bytes"] == 65536)]
    planted = template.assign(block_size_bytes=262144, bandwidth_bytes_per_s=600e6, iops=600e6 / 262144)
    fio = pd.concat([fio, planted], ignore_index=True)
    manifest = json.loads((run / "manifest.json").read_text())
    fio = fio_limits.with_class_limits(fio, devices.backend_profiles(pd.read_parquet(run / "tables" / "devices.parquet")),
                                       fio_limits.recorded_profiles(manifest))
    if not flagged:
        fio["over_class_limit"] = ""
    fio.to_parquet(run / "tables" / "fio.parquet", index=False)
    return run


def _hdfs_read_times(config, bandwidths, placement) -> dict:
    stages = sensitivity.fio_stage_times(config, *placement, bandwidths)
    return {s: p["time_s"] for s, paths in zip(stages["stage_id"], stages["paths"]) for p in paths
            if p["path"] == "hdfs_read"}


def test_a_planted_cache_speed_hdd_point_is_flagged_and_moves_no_prediction(recorded, tmp_path):
    configs, _bandwidths, table, _exported, by_hand = recorded
    run = _with_planted_point(tmp_path / "flagged", flagged=True)   # the stage tables are the recorded ones
    fio = pd.read_parquet(run / "tables" / "fio.parquet")
    [cause] = fio.loc[fio["bandwidth_bytes_per_s"] == 600e6, "over_class_limit"]
    assert "over the drive model's media rate at the outer edge, 255 MB/s" in cause
    bandwidths = bandwidths_in([run])
    assert [(p["profile"], p["rw"], p["block_size_bytes"]) for p in bandwidths.left_out] == [("hdd", "read", 262144)]
    after = sensitivity.storage_sensitivity(configs, ["hdd", "ssd"], bandwidths)
    pd.testing.assert_series_equal(after["run_s"], table["run_s"])
    assert _hdfs_read_times(_tpch(configs), bandwidths, MEASURED) == pytest.approx({s: r[(MEASURED, "hdfs_read")] for s, r in by_hand.items()
                                                             if (MEASURED, "hdfs_read") in r}, rel=1e-9)


def test_the_planted_point_unflagged_would_move_the_hdd_read_limits(recorded, tmp_path):
    """What the test above guards against: taken as the hdd's bandwidth, the cache's speed shortens the read limits
    of the stages whose HDFS requests fall between 64 KiB and 1 MiB."""
    configs, _bandwidths, _table, _exported, by_hand = recorded
    run = _with_planted_point(tmp_path / "unflagged", flagged=False)
    moved = _hdfs_read_times(_tpch(configs), bandwidths_in([run]), MEASURED)
    faster = [s for s, t in moved.items() if t < 0.8 * by_hand[s][(MEASURED, "hdfs_read")]]
    assert len(faster) >= 10
