"""Which runs the I/O-aware model fits t_scale on, and runs measured under foreign CPU load."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.models.iomodel.configurations import (LOADED_FOREIGN_CPU_PCT, Configuration, foreign_cpu_pct,
                                                   left_out_under_load, load_notes)
from analysis.models.iomodel.fit_predict import Target, _scale_points, fit, predict_stage
from analysis.predict import configurations_in
from analysis.tables import build_tables

REPO = Path(__file__).resolve().parents[4]
RUNS = REPO / "tests" / "fixtures" / "runs"


def _iostat(path: Path, nice: list[float]) -> None:
    """An iostat -o JSON document (the collector's format) with one sample per `nice` value."""
    samples = [{"timestamp": f"2026-11-21T22:30:{49 + i:02d}+0000",
                "avg-cpu": {"user": 40.0, "nice": value, "system": 10.0, "iowait": 0.0, "steal": 0.0,
                            "idle": 50.0 - value},
                "disk": [{"disk_device": "loop1", "r/s": 1.0, "w/s": 0.0, "rkB/s": 4.0, "wkB/s": 0.0}]}
               for i, value in enumerate(nice)]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"sysstat": {"hosts": [{"nodename": "vm", "statistics": samples}]}}))


def test_foreign_cpu_share_is_the_mean_nice_share_over_every_host_sample(tmp_path):
    _iostat(tmp_path / "raw" / "w1" / "iostat" / "tpch-p2" / "iostat.json", [30.0, 10.0])
    _iostat(tmp_path / "raw" / "w2" / "iostat" / "tpch-p2" / "iostat.json", [2.0])
    _iostat(tmp_path / "raw" / "w1" / "iostat" / "terasort-p2" / "iostat.json", [90.0])
    host_cpu = build_tables(tmp_path)["host_cpu"]
    assert foreign_cpu_pct(host_cpu, "tpch-p2", {}) == pytest.approx(14.0)
    assert np.isnan(foreign_cpu_pct(host_cpu, "kmeans-p2", {}))



def test_on_a_cluster_of_niced_emulated_nodes_the_niced_share_is_not_load(tmp_path):
    _iostat(tmp_path / "raw" / "worker1" / "iostat" / "terasort" / "iostat.json", [80.0])
    host_cpu = build_tables(tmp_path)["host_cpu"]
    niced = {"emulation": {"nodes": {"hosts": ["worker1"], "nice": 10}}}
    assert np.isnan(foreign_cpu_pct(host_cpu, "terasort", niced))
    not_niced = {"emulation": {"nodes": {"hosts": ["worker1"], "nice": 0}}}
    assert foreign_cpu_pct(host_cpu, "terasort", not_niced) == pytest.approx(80.0)


def _loaded_copy(config: Configuration, factor: float, share: float) -> Configuration:
    stages = config.stages.assign(duration_s=config.stages["duration_s"] * factor)
    return dataclasses.replace(config, run_id="loaded", stages=stages, foreign_cpu_pct=share)


def _constants(models: dict) -> list[tuple]:
    return [(m.identity, m.t_avg_s, m.delta_scale_s, m.delta_read_s, m.delta_write_s)
            for stage_models in models.values() for m in stage_models]


def test_a_run_measured_under_load_is_left_out_while_quiet_runs_exist(bandwidths):
    configs = configurations_in(RUNS / "terasort-matrix")
    quiet = next(c for c in configs if (c.hdfs, c.local) == ("ssd", "ssd"))
    loaded = _loaded_copy(quiet, 2.0, LOADED_FOREIGN_CPU_PCT + 20)
    assert loaded.loaded and not quiet.loaded   # the fixture has no iostat: unknown load is not load
    assert left_out_under_load([*configs, loaded]) == [loaded]
    assert _constants(fit([*configs, loaded], bandwidths)) == _constants(fit(configs, bandwidths))
    # just below the threshold it counts (and, twice as slow, moves the fit)
    below = _loaded_copy(quiet, 2.0, LOADED_FOREIGN_CPU_PCT - 1)
    assert left_out_under_load([*configs, below]) == []
    assert _constants(fit([*configs, below], bandwidths)) != _constants(fit(configs, bandwidths))


def test_with_only_loaded_runs_the_fit_uses_them(bandwidths):
    configs = [_loaded_copy(c, 1.0, 50.0) for c in configurations_in(RUNS / "terasort-hdd")]
    assert left_out_under_load(configs) == []
    assert len(fit(configs, bandwidths)[configs[0].key]) == 3


def test_scale_runs_are_those_with_the_least_io_limit():
    points = [(None, pd.Series({"duration_s": d})) for d in (2.0, 2.2, 6.0, 2.1)]
    # within 10 % of the median stage time (0.215 s) of the least limit: the backend could not have slowed it
    assert _scale_points(points, [0.0, 0.2, 3.5, 0.3]) == [0, 1]
    # a stage without device I/O: every run shows its scale time
    assert _scale_points(points, [0.0, 0.0, 0.0, 0.0]) == [0, 1, 2, 3]


def test_an_hdfs_scan_takes_t_scale_from_the_runs_with_hdfs_on_the_fast_backend(bandwidths):
    """Matrix without a run on ssd for both roles: stage 0 (the input scan) gets t_scale from the hdfs=ssd
    runs and its read limit on hdd from the hdfs=hdd runs, whatever the local dirs were on."""
    configs = [c for c in configurations_in(RUNS / "terasort-matrix") if (c.hdfs, c.local) != ("ssd", "ssd")]
    model = next(m for m in fit(configs, bandwidths)[configs[0].key] if m.stage_id == 0)
    scan = {(c.hdfs, c.local): c.stages.set_index("stage_id").loc[0, "duration_s"] for c in configs}
    on_ssd = predict_stage(model, Target("ssd", "ssd", 2, 1), bandwidths)
    assert on_ssd["t_scale_s"] == pytest.approx(scan[("ssd", "hdd")])
    assert on_ssd["bound"] == "scale (CPU, P)"
    on_hdd = predict_stage(model, Target("hdd", "hdd", 2, 1), bandwidths)
    assert on_hdd["bound"] == "read"
    assert on_hdd["predicted_s"] > on_ssd["predicted_s"]


def test_load_notes_say_what_the_model_did_with_each_loaded_run():
    configs = configurations_in(RUNS / "terasort-matrix")
    loaded = _loaded_copy(configs[0], 1.0, 40.0)
    notes = load_notes([*configs, loaded], [loaded])
    assert len(notes) == 1 and "40 % of the host CPU" in notes[0] and notes[0].endswith("left out of the fit")
    alone = _loaded_copy(configs[1], 1.0, 40.0)
    measured = _loaded_copy(configs[2], 1.0, 25.0)
    notes = load_notes([alone], [measured])
    assert [n.rsplit("; ", 1)[1] for n in notes] == ["fitted: the workload has no quiet run", "compared as measured"]
    assert load_notes(configs, configs) == []
