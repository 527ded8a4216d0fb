"""The fio resource model of the storage sensitivity (analysis/models/sensitivity.py, docs/models.md "Storage
sensitivity"): a workload measured on ONE placement predicted on the others from each stage's device bytes at fio's
throughput, and that model's error measured on the recorded placement matrix.

Fixtures: tests/fixtures/runs/terasort-matrix (TeraSort on Spark, tiny, HDFS and the local dirs each on the local
cluster's emulated hdd or ssd, one run each) has no fio table; the fio table is the recorded fio-sweep run of the
same inventory and profiles (tests/fixtures/runs/fio-sweep, 20261121-195701-local). bench-tiny, the default bench's
recording, holds its manifest and logs only (no tables), so the one-placement run is the matrix's run on the default
bench's placement (HDFS on the hdd, local dirs on the ssd) taken alone."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from analysis.models import sensitivity
from analysis.models.iomodel.configurations import Configuration
from analysis.predict import bandwidths_in, configurations_in
from analysis.presentation import findings_export
from conftest import FIXTURES

MATRIX, FIO = FIXTURES / "runs" / "terasort-matrix", FIXTURES / "runs" / "fio-sweep"
PROFILES = ["hdd", "ssd"]


@pytest.fixture(scope="module")
def matrix():
    return configurations_in(MATRIX), bandwidths_in([MATRIX, FIO])


@pytest.fixture(scope="module")
def default_placement(matrix):
    configs, bandwidths = matrix
    [one] = [c for c in configs if (c.hdfs, c.local) == ("hdd", "ssd")]
    return one, bandwidths


def test_the_matrix_has_no_fio_table_so_the_fio_sweep_of_the_same_inventory_is_used():
    assert pd.read_parquet(MATRIX / "tables" / "fio.parquet").empty
    import json
    manifests = [json.loads((run / "manifest.json").read_text()) for run in (MATRIX, FIO)]
    assert manifests[0]["inventory"]["sha256"] == manifests[1]["inventory"]["sha256"]
    assert manifests[0]["emulation"]["profiles"] == manifests[1]["emulation"]["profiles"]


def _fio_bandwidth(fio: pd.DataFrame, backend: str, rw: str, size: float) -> float:
    """fio's bandwidth at a request size: log-log between the two swept block sizes around it."""
    curve = fio[(fio["backend"] == backend) & (fio["rw"] == rw)].sort_values("block_size_bytes")
    sizes, bws = curve["block_size_bytes"].to_numpy(float), curve["bandwidth_bytes_per_s"].to_numpy(float)
    if size < sizes[0]:
        return bws[0] * size / sizes[0]
    i = min(np.searchsorted(sizes, size), len(sizes) - 1)
    x = (np.log(size) - np.log(sizes[i - 1])) / (np.log(sizes[i]) - np.log(sizes[i - 1]))
    return float(np.exp(np.log(bws[i - 1]) + x * (np.log(bws[i]) - np.log(bws[i - 1]))))


def _by_hand(workload_id: str, target: dict[str, str]) -> tuple[list[dict], float]:
    """Per stage of the run: CPU = executor CPU / (N x P), disk = per backend the sum over paths of D / fio BW,
    predicted = measured x max(target) / max(own), from the tables alone; and the predicted run step."""
    stages = pd.read_parquet(MATRIX / "tables" / "stages.parquet")
    stages = stages[stages["workload_id"] == workload_id].sort_values("submission_time_ms")
    requests = pd.read_parquet(MATRIX / "tables" / "block_requests.parquet")
    requests = requests[(requests["workload_id"] == workload_id) & requests["op"].isin(["read", "write"])]
    fio = pd.read_parquet(FIO / "tables" / "fio.parquet")
    device = dict(zip(*pd.read_parquet(MATRIX / "tables" / "devices.parquet")[["backend", "device"]].T.values))
    [run] = pd.read_parquet(MATRIX / "tables" / "workloads.parquet").query("workload_id == @workload_id").to_dict("records")
    own = {"hdfs": run["placement_hdfs"], "local": run["placement_local"]}
    paths = {("hdfs", "read"): [("input_bytes", "read")], ("hdfs", "write"): [("output_bytes", "write")],
             ("local", "read"): [("shuffle_read_bytes", "randread"), ("disk_spilled_bytes", "randread")],
             ("local", "write"): [("shuffle_write_bytes", "randwrite"), ("disk_spilled_bytes", "randwrite")]}
    nodes, cores = 1, 2
    rows = []
    for stage in stages.to_dict("records"):
        window = requests[(requests["issue_time_s"] >= stage["submission_time_ms"] / 1e3)
                          & (requests["issue_time_s"] <= stage["completion_time_ms"] / 1e3)]
        disk = {"own": {}, "target": {}}
        for (role, direction), columns in paths.items():
            hit = window[(window["device"] == device[own[role]]) & (window["op"] == direction)]
            logical = sum(stage[c] for c, _ in columns)
            fraction = min(1.0, hit["bytes"].sum() / logical) if logical else 1.0
            for column, rw in columns:
                data = stage[column] * fraction
                if data <= 0:
                    continue
                size = hit["bytes"].sum() / len(hit)
                for side, placement in (("own", own), ("target", target)):
                    backend = placement[role]
                    disk[side][backend] = disk[side].get(backend, 0.0) + data / (nodes * _fio_bandwidth(fio, backend, rw, size))
        cpu = stage["executor_cpu_time_s"] / (nodes * cores)
        old, new = max(cpu, *disk["own"].values()), max(cpu, *disk["target"].values())
        rows.append({"stage_id": stage["stage_id"], "cpu_s": cpu, "disk_s": max(disk["target"].values(), default=0.0),
                     "disk_measured_s": max(disk["own"].values(), default=0.0),
                     "predicted_s": stage["duration_s"] * new / old})
    outside = run["run_s"] - stages["duration_s"].sum()
    return rows, sum(r["predicted_s"] for r in rows) + outside


def test_terasort_on_the_default_placement_alone_is_predicted_faster_with_hdfs_on_the_ssd(default_placement):
    config, bandwidths = default_placement
    table = sensitivity.storage_sensitivity([config], PROFILES, bandwidths).set_index(["hdfs", "local"])
    assert (table["model"] == sensitivity.FIO).all()
    measured = table.loc[("hdd", "ssd")]
    assert measured["how"] == sensitivity.MEASURED and measured["run_s"] == pytest.approx(31.612)
    stages = sensitivity.fio_stage_times(config, "ssd", "ssd", bandwidths)
    # the disk share is not trivial: the input scan's disk time on the hdd exceeds its CPU time
    assert stages["disk_measured_s"].sum() > stages["cpu_measured_s"].sum()
    for local in PROFILES:   # HDFS on the ssd: faster, as fio says the ssd is (472 against 5.9 MiB/s at 40 KiB)
        predicted = table.loc[("ssd", local)]
        assert predicted["how"] == sensitivity.PREDICTED and predicted["run_s"] < measured["run_s"] - 5
    # the shuffle never reached a device in this run (page cache), so the local dirs' backend changes nothing
    assert table.loc[("hdd", "hdd"), "run_s"] == pytest.approx(measured["run_s"])
    assert table.loc[("ssd", "hdd"), "run_s"] == pytest.approx(table.loc[("ssd", "ssd"), "run_s"])
    inputs = table.loc[("ssd", "ssd"), "inputs"]
    assert "fio (fio sweep of run fio-sweep)" in inputs
    assert "HDFS read 32.6 MiB in 40.3 KiB requests: hdd read 5.9 MiB/s -> ssd read 472.5 MiB/s" in inputs
    assert "CPU 2.0 s" in inputs and "terasort-hdfs_hdd-local_ssd" in inputs


def test_the_predictions_components_recomputed_by_hand_from_the_tables(default_placement):
    config, bandwidths = default_placement
    for hdfs, local in itertools.product(PROFILES, repeat=2):
        rows, run_s = _by_hand(config.workload_id, {"hdfs": hdfs, "local": local})
        model = sensitivity.fio_stage_times(config, hdfs, local, bandwidths).sort_values("stage_id")
        assert list(model["stage_id"]) == [r["stage_id"] for r in rows]
        for column in ("cpu_s", "disk_s", "disk_measured_s", "predicted_s"):
            assert list(model[column]) == pytest.approx([r[column] for r in rows], rel=1e-6), column
        assert sensitivity.fio_run_s([config], hdfs, local, bandwidths) == pytest.approx(run_s, rel=1e-6)


def test_the_fio_models_error_on_the_matrix_is_computed_from_the_measured_times(matrix):
    configs, bandwidths = matrix
    errors = sensitivity.fio_errors(configs, bandwidths)
    measured = pd.read_parquet(MATRIX / "tables" / "workloads.parquet")
    run_s = {(r.placement_hdfs, r.placement_local): r.run_s for r in measured.itertuples()}
    assert len(errors) == 12 and {(e["source"], e["target"]) for e in errors} == set(itertools.permutations(run_s, 2))
    by_placement = {(c.hdfs, c.local): c for c in configs}
    for e in errors:   # each from ONE other placement, against the measured run step of the target
        assert e["measured_s"] == run_s[e["target"]]
        assert e["predicted_s"] == pytest.approx(sensitivity.fio_run_s([by_placement[e["source"]]], *e["target"], bandwidths))
        assert e["error_pct"] == pytest.approx(100 * (e["predicted_s"] - run_s[e["target"]]) / run_s[e["target"]])
    absolute = sorted(abs(100 * (e["predicted_s"] - run_s[e["target"]]) / run_s[e["target"]]) for e in errors)
    median, worst = (absolute[5] + absolute[6]) / 2, absolute[-1]
    assert (round(median, 1), round(worst, 1)) == (11.8, 45.3)
    # the figure the sensitivity carries where the runs at hand measured nothing on two placements
    assert (sensitivity.RECORDED_FIO_ERROR["median_pct"], sensitivity.RECORDED_FIO_ERROR["worst_pct"]) == \
        (round(median, 1), round(worst, 1))
    worst_pair = max(errors, key=lambda e: abs(e["error_pct"]))
    assert (worst_pair["source"], worst_pair["target"]) == (("ssd", "ssd"), ("hdd", "ssd"))


def test_each_number_is_labelled_with_its_model_and_a_one_placement_workload_takes_the_fio_error(matrix):
    configs, bandwidths = matrix
    one = [c for c in configs if (c.hdfs, c.local) == ("hdd", "ssd")]
    both = sensitivity.storage_sensitivity(configs + [_as_other_workload(one[0])], PROFILES, bandwidths)
    fitted, alone = both[both["workload"] == "terasort"], both[both["workload"] == "terasort-alone"]
    assert (fitted["model"] == sensitivity.FIT).all() and (alone["model"] == sensitivity.FIO).all()
    absolute = [abs(e["error_pct"]) for e in sensitivity.fio_errors(configs, bandwidths)]
    assert alone["error_median_pct"].iloc[0] == pytest.approx(float(np.median(absolute)))
    assert alone["error_basis"].iloc[0].startswith("fio model: each measured placement of terasort (runs "
                                                   "20261121-201144-local) predicted from each other one alone (12")
    records = {r["workload"]: r for r in findings_export.sensitivity_records(both)}
    assert records["terasort"]["model"] == "io-aware-fit" and records["terasort-alone"]["model"] == "fio-resources"
    placements = {(p["hdfs"], p["local"]): p for p in records["terasort-alone"]["placements"]}
    assert placements[("hdd", "ssd")]["model"] is None and placements[("hdd", "ssd")]["how"] == "measured"
    assert placements[("ssd", "ssd")]["model"] == "fio-resources" and "ssd read" in placements[("ssd", "ssd")]["inputs"]
    # alone, with no multi-placement workload at hand: the recorded figure, named as such
    recorded = sensitivity.storage_sensitivity(one, PROFILES, bandwidths)
    assert recorded["error_median_pct"].iloc[0] == sensitivity.RECORDED_FIO_ERROR["median_pct"]
    assert "not measured on these runs; measured on the recorded matrix" in recorded["error_basis"].iloc[0]


def _as_other_workload(config: Configuration) -> Configuration:
    """The same recorded run, under another workload name: a workload measured on one placement next to one measured
    on four, in the same runs (what the default bench's report of several workloads looks like)."""
    from dataclasses import replace
    return replace(config, workload="terasort-alone", workload_id=config.workload_id + "-alone")
