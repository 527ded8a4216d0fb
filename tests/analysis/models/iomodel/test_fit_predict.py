"""Fitting the I/O-aware model on recorded runs of the emulated cluster and predicting other recorded runs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.models import bottleneck
from analysis.models.iomodel.bandwidths import Bandwidths
from analysis.models.iomodel.evaluation import error_summary, measured_stage_times, with_errors
from analysis.models.iomodel.fit_predict import Target, fit, predict, predict_stage
from analysis.predict import configurations_in

RUNS = Path(__file__).resolve().parents[3] / "fixtures" / "runs"


def _predict(profile, measured, bandwidths):
    target = Target(measured[0].hdfs, measured[0].local, measured[0].cores, measured[0].nodes)
    models = fit(profile, bandwidths)
    joined = with_errors(predict(models, target, bandwidths),
                                 measured_stage_times(measured, target))
    return models, joined, error_summary(joined)


def test_configurations_of_a_placement_matrix():
    configs = configurations_in(RUNS / "terasort-matrix")
    assert sorted((c.hdfs, c.local) for c in configs) == [("hdd", "hdd"), ("hdd", "ssd"), ("ssd", "hdd"), ("ssd", "ssd")]
    # the cluster's default sizing: 2 one-core executors on the one worker
    assert {(c.cores, c.nodes) for c in configs} == {(2, 1)}
    assert all(c.traced for c in configs)
    assert [list(c.stages["stage_id"]) for c in configs] == [[0, 1, 2]] * 4


def test_device_request_size_is_the_traced_mean(bandwidths):
    """The request size the model looks BW up at is the mean of the reads the block trace saw on the HDFS
    device while the stage ran (computed here straight from the trace)."""
    run = RUNS / "terasort-matrix"
    config = next(c for c in configurations_in(run) if (c.hdfs, c.local) == ("hdd", "ssd"))
    model = fit([config], bandwidths)[config.key][0]   # stage 0 reads the input from HDFS
    stages = pd.read_parquet(run / "tables" / "stages.parquet")
    stage = stages[(stages["workload_id"] == config.workload_id) & (stages["stage_id"] == 0)].iloc[0]
    trace = pd.read_parquet(run / "tables" / "block_requests.parquet")
    reads = trace[(trace["workload_id"] == config.workload_id) & (trace["device"] == "loop1") & (trace["op"] == "read")
                  & (trace["bytes"] > 0) & (trace["issue_time_s"] >= stage["submission_time_ms"] / 1e3)
                  & (trace["issue_time_s"] <= stage["completion_time_ms"] / 1e3)]
    assert len(reads) > 100
    assert model.request_bytes["hdfs_read"] == pytest.approx(reads["bytes"].mean())
    # what reached the device: the traced bytes, not the 50 MB Spark read (part came from the page cache)
    assert model.data_bytes["hdfs_read"] == pytest.approx(min(reads["bytes"].sum(), stage["input_bytes"]), rel=0.01)


def test_two_core_counts_give_t_avg_and_delta(bandwidths):
    """§VI sample runs 1 and 2: with M = 2 tasks on one node, P = 1 is two waves and P = 2 one, so
    t_avg = t(P=1) - t(P=2) and delta_scale = 2 t(P=2) - t(P=1), unless P = 2 was slower (this 2-core host
    also runs the driver): then the stage does not scale and t_scale is the mean."""
    configs = configurations_in(RUNS / "kmeans-cores")
    assert sorted(c.cores for c in configs) == [1, 2]
    models = fit(configs, bandwidths)[("kmeans", "")]
    one, two = (next(c for c in configs if c.cores == p).stages.set_index("stage_id")["duration_s"] for p in (1, 2))
    scaled = 0
    for model in models:
        t1, t2 = one[model.stage_id], two[model.stage_id]
        if t1 > t2:
            scaled += 1
            assert model.t_avg_s == pytest.approx(t1 - t2) and model.delta_scale_s == pytest.approx(2 * t2 - t1)
        else:
            assert model.t_avg_s == 0 and model.delta_scale_s == pytest.approx((t1 + t2) / 2)
    assert len(models) == 14 and scaled == 0   # on this host no K-means stage got faster with P = 2


def test_hdd_run_predicts_the_nvme_run(bandwidths):
    """Profile: TeraSort with HDFS and local dirs on the emulated HDD; predict and compare the NVMe cluster's run."""
    profile = configurations_in(RUNS / "terasort-hdd")
    measured = configurations_in(RUNS / "terasort-nvme")
    _, joined, summary = _predict(profile, measured, bandwidths)
    assert summary["stages_compared"] == 3
    assert summary["median_abs_error_pct"] < 10
    assert abs(summary["worst_stage_error_pct"]) < 20
    assert (joined["bound"] == "scale (CPU, P)").all()
    nvme_path = [p for paths in joined["io_paths"] for p in paths if p["backend"] == "nvme"]
    assert nvme_path and all(p["bandwidth_source"].startswith("storage profile caps") for p in nvme_path)


def test_matrix_leave_one_out(bandwidths):
    """Each placement of the matrix predicted from the three others (the paper's hybrid configurations)."""
    configs = configurations_in(RUNS / "terasort-matrix")
    errors = {}
    for config in configs:
        _, _, summary = _predict([c for c in configs if c is not config], [config], bandwidths)
        errors[(config.hdfs, config.local)] = summary["median_abs_error_pct"]
    assert errors[("ssd", "hdd")] < 15 and errors[("ssd", "ssd")] < 15
    assert np.median(list(errors.values())) < 15


def test_io_bound_stage_on_the_slow_backend(bandwidths):
    """Stage 0 (the sampling read of the input) ran I/O-bound on the HDD under HDFS: fitted with the slow run,
    delta_read makes the model's read limit reproduce that run, and the read limit drops on the SSD."""
    configs = configurations_in(RUNS / "terasort-matrix")
    slow = next(c for c in configs if (c.hdfs, c.local) == ("hdd", "ssd"))
    fast = [c for c in configs if c.hdfs == "ssd"]
    model = fit(fast + [slow], bandwidths)[slow.key][0]
    assert model.delta_read_s > 0 and "delta_read" in model.io_fit
    on_hdd = predict_stage(model, Target("hdd", "ssd", 2, 1), bandwidths)
    on_ssd = predict_stage(model, Target("ssd", "ssd", 2, 1), bandwidths)
    assert on_hdd["bound"] == "read"
    assert on_hdd["predicted_s"] == pytest.approx(slow.stages.iloc[0]["duration_s"], rel=1e-6)
    assert on_ssd["t_read_limit_s"] < on_hdd["t_read_limit_s"]


def test_more_nodes_and_cores_shrink_the_parallel_part(bandwidths):
    configs = configurations_in(RUNS / "terasort-hdd")
    models = fit(configs, bandwidths)
    base = predict(models, Target("hdd", "hdd", 1, 1), bandwidths)
    wider = predict(models, Target("hdd", "hdd", 1, 2), bandwidths)
    assert (wider["t_scale_s"] < base["t_scale_s"]).all()
    # two tasks per stage: more than two slots add nothing (one wave)
    four = predict(models, Target("hdd", "hdd", 4, 1), bandwidths)
    two = predict(models, Target("hdd", "hdd", 2, 1), bandwidths)
    assert four["t_scale_s"].tolist() == pytest.approx(two["t_scale_s"].tolist())


def test_bottleneck_per_stage(bandwidths):
    configs = configurations_in(RUNS / "terasort-matrix")
    config = next(c for c in configs if (c.hdfs, c.local) == ("hdd", "hdd"))
    models = fit(configs, bandwidths)[config.key]
    table = bottleneck.stage_bottlenecks(config, models, bandwidths).set_index("stage_id")
    cpu = config.stages.set_index("stage_id")["executor_cpu_time_s"]
    assert table["ideal_cpu_s"].tolist() == pytest.approx((cpu / 2).tolist())
    assert table.loc[0, "bottleneck"] == "disk" and table.loc[2, "bottleneck"] == "cpu"
    assert (table["ideal_network_s"] == 0).all()   # one node: nothing crosses the network
    # removing the bottleneck helps, removing another resource does not
    assert table.loc[0, "disk_infinite_s"] < table.loc[0, "measured_s"] == table.loc[0, "network_infinite_s"]


def test_a_modelled_profile_without_a_sweep_gets_its_datasheet_figures():
    """hdd (a drive model, no caps) with no fio sweep: 4 KiB random reads pay overhead + average seek + half a
    revolution (0.1 + 7.4 + 4.17 ms and the transfer: about 86 requests/s); sequential reads the mean media
    rate, (255 + 127.5) / 2 MB/s. Figures worked out by hand from the HC310 datasheet values in the profile."""
    bandwidths = Bandwidths()
    random, source = bandwidths.at("hdd", "randread", 4096)
    transfer_s = 4096 / 191.25e6
    assert random == pytest.approx(4096 / (0.0001 + 0.0074 + 60 / 7200 / 2 + transfer_s), rel=1e-9)
    assert 80 < random / 4096 < 90
    assert source == "storage profile's drive datasheet (inventories/storage-profiles.yml)"
    assert bandwidths.at("hdd", "read", 65536)[0] == pytest.approx(191.25e6)
    assert bandwidths.at("hdd", "randwrite", 4096)[0] < random  # the write seek (8.2 ms) is longer
