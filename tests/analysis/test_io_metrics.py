"""I/O metrics of the single-run report: block requests against Spark stages, the shuffle request-size
model, request offsets and the application's I/O rate, on the tables of the recorded fixture run.

The recorded block trace (fio-sweep) and the recorded Spark application (spark-tiny) ran at different
times, so the tests move the real stage rows onto the trace's timeline (a time shift and the trace's
workload id and host; their bytes, tasks and ids stay as recorded) and check every figure against a
plain recount of the trace's requests."""
import base64
import json
import re
import struct

import numpy as np
import pandas as pd
import pytest

from analysis import metrics
from analysis import devices
from analysis.report_page import write_report
from analysis.tables import build_tables


@pytest.fixture
def tables(run_dir):
    return build_tables(run_dir)


def _trace(tables) -> pd.DataFrame:
    requests = tables["block_requests"]
    assert not requests.empty, "the recorded block trace gave no requests"
    return requests


def _on_trace(stages: pd.DataFrame, requests: pd.DataFrame, windows: list[tuple[float, float]]) -> pd.DataFrame:
    """The recorded stages, in submission order, given the trace's workload/host and these (start, end)
    windows as fractions of the trace's span."""
    first, last = requests["issue_time_s"].min(), requests["issue_time_s"].max()
    moved = stages.sort_values(["submission_time_ms", "stage_id"]).head(len(windows)).copy()
    moved["workload_id"], moved["host"] = requests["workload_id"].iloc[0], requests["host"].iloc[0]
    moved["submission_time_ms"] = [1e3 * (first + a * (last - first)) for a, _ in windows]
    moved["completion_time_ms"] = [1e3 * (first + b * (last - first)) for _, b in windows]
    return moved


def _data(requests: pd.DataFrame) -> pd.DataFrame:
    return requests[requests["op"].astype(str).isin(["read", "write"]) & (requests["bytes"] > 0)]


def test_a_stage_named_by_the_drivers_log_owns_the_requests_of_every_worker(tables):
    # a multi-host cluster: the event log is fetched from the driver's host, the traces from each worker's
    requests = _trace(tables)
    stages = _on_trace(tables["stages"], requests, [(-0.01, 1.01)]).assign(host="master")
    workers = requests.assign(host=np.where(np.arange(len(requests)) % 2 == 0, "worker1", "worker2"))
    attributed = metrics.attribute_requests_to_stages(workers, stages)
    assert len(attributed) == len(_data(requests))
    assert set(attributed["stage_index"]) == {stages.index[0]}
    assert set(attributed["host"]) == {"worker1", "worker2"}


def test_requests_go_to_the_newest_running_stage(tables):
    requests = _trace(tables)
    stages = _on_trace(tables["stages"], requests, [(0.1, 0.6), (0.4, 0.8)])   # overlapping on 0.4-0.6
    assert len(stages) == 2
    older, newer = stages.index
    attributed = metrics.attribute_requests_to_stages(requests, stages)
    data = _data(requests)
    assert len(attributed) == len(data)
    # plain recount: newer wins inside its window, older only where it runs alone
    owners = []
    for t in data["issue_time_s"]:
        if stages.at[newer, "submission_time_ms"] / 1e3 <= t <= stages.at[newer, "completion_time_ms"] / 1e3:
            owners.append(newer)
        elif stages.at[older, "submission_time_ms"] / 1e3 <= t <= stages.at[older, "completion_time_ms"] / 1e3:
            owners.append(older)
        else:
            owners.append(-1)
    assert attributed["stage_index"].tolist() == owners
    assert {-1, older, newer} <= set(owners)     # the windows really cut the trace in three

    sizes = metrics.stage_request_sizes(requests, stages, {("vm", d): "hdd" for d in data["device"].unique()})
    assert sizes["requests"].sum() == len(data) and sizes["bytes"].sum() == data["bytes"].sum()
    expected = data.assign(owner=owners)
    for row in sizes.itertuples():
        mine = expected[(expected["owner"] == row.stage_index) & (expected["device"].astype(str) == row.device)]
        assert row.requests == len(mine) and row.bytes == mine["bytes"].sum()
        assert row.mean_bytes == pytest.approx(mine["bytes"].mean())
        assert row.median_bytes == pytest.approx(mine["bytes"].median())
        assert row.read_pct == pytest.approx(100 * (mine["op"].astype(str) == "read").mean())
        assert row.backend == "hdd"
    # stages in submission order, the unattributed remainder last
    labels = list(dict.fromkeys(sizes["stage"]))
    assert labels == [metrics.stage_label(stages.loc[older]), metrics.stage_label(stages.loc[newer]),
                      metrics.OUTSIDE_STAGES]


def test_shuffle_request_size_model(tables):
    requests = _trace(tables)
    recorded = tables["stages"]
    writers, readers = recorded[recorded["shuffle_write_bytes"] > 0], recorded[recorded["shuffle_read_bytes"] > 0]
    assert len(writers) and len(readers), "spark-tiny's recording has a shuffle"
    reader = readers.iloc[0]
    # writer on the first tenth of the trace, reader on the rest
    stages = _on_trace(recorded, requests, [(0.0, 0.1), (0.1, 1.0)])
    assert stages.iloc[1]["stage_id"] == reader["stage_id"]
    device = _data(requests).groupby("device", observed=True).size().idxmax()
    model = metrics.shuffle_request_size_model(requests, stages, {("vm", "fio-sweep"): str(device)})
    assert len(model) == 1
    row = model.iloc[0]
    parent = writers[writers["completion_time_ms"] <= reader["submission_time_ms"]]
    assert row["map_outputs"] == parent["num_tasks"].sum()
    assert row["expected_bytes"] == pytest.approx(reader["shuffle_read_bytes"] / reader["num_tasks"]
                                                  / parent["num_tasks"].sum())
    start, end = stages.iloc[1][["submission_time_ms", "completion_time_ms"]] / 1e3
    reads = [b for t, b, op, d in zip(requests["issue_time_s"], requests["bytes"], requests["op"], requests["device"])
             if op == "read" and b > 0 and d == device and start <= t <= end]
    assert reads, "the recorded trace has reads in the reader's window"
    assert row["measured_reads"] == len(reads)
    assert row["measured_bytes"] == pytest.approx(np.mean(reads))
    assert row["ratio"] == pytest.approx(np.mean(reads) / row["expected_bytes"])
    assert row["device_read_bytes"] == sum(reads)


def test_parents_by_bytes_then_job():
    """GATK's MarkDuplicates (recorded in the suite run): s5 reads what s3 and s4 wrote together, so no
    single earlier stage matches its bytes and the stages of its job count."""
    stages = pd.DataFrame({
        "workload_id": "gatk4", "host": "vm", "app_id": "application_1_0007", "attempt": 0,
        "stage_id": [0, 1, 3, 4, 5], "job_id": [0, 0, 1, 1, 1], "num_tasks": [1, 1, 1, 1, 1],
        "submission_time_ms": [0, 10, 20, 30, 40], "completion_time_ms": [9, 19, 29, 39, 49],
        "shuffle_write_bytes": [12680241, 0, 1746924, 1757500, 117],
        "shuffle_read_bytes": [0, 12680241, 12680241, 1746924, 14437741]})
    by_id = stages.set_index("stage_id", drop=False)
    parents, rule = metrics.shuffle_parent_stages(stages, next(by_id.loc[[1]].itertuples()))
    assert rule == "same bytes" and parents["stage_id"].tolist() == [0]
    parents, rule = metrics.shuffle_parent_stages(stages, next(by_id.loc[[5]].itertuples()))
    assert rule == "same job" and sorted(parents["stage_id"]) == [3, 4]


def test_request_offsets_sample_per_device(tables):
    requests = _trace(tables)
    data = _data(requests[requests["sector"] >= 0])
    offsets = metrics.request_offsets(requests, max_points=50)
    per_device = offsets.groupby("device", observed=True).size()
    counts = data.groupby("device", observed=True).size()
    assert (per_device == counts.clip(upper=50).loc[per_device.index]).all()
    assert (offsets["offset_bytes"] == offsets["sector"] * 512).all()
    assert offsets["issue_time_s"].is_monotonic_increasing
    everything = metrics.request_offsets(requests, max_points=len(data))
    assert len(everything) == len(data)
    assert metrics.request_offsets(requests, max_points=50).equals(offsets)     # the same figure on a re-render


def test_stage_io_rate_keeps_the_bytes(tables):
    stages = tables["stages"]
    rate = metrics.stage_io_rate(stages)
    assert not rate.empty
    for column in metrics.STAGE_IO_COLUMNS:
        assert rate[column.replace("_bytes", "_bytes_per_s")].sum() * 1.0 == pytest.approx(stages[column].sum())
    # one second-bin of a lone stage holds its share of the stage's duration
    lone = stages[stages["shuffle_write_bytes"] > 0].iloc[[0]]
    begin, end = lone["submission_time_ms"].iloc[0] / 1e3, lone["completion_time_ms"].iloc[0] / 1e3
    one = metrics.stage_io_rate(lone)
    first = one.iloc[0]
    share = (min(np.floor(begin) + 1, end) - begin) / (end - begin)
    assert first["shuffle_write_bytes_per_s"] == pytest.approx(share * lone["shuffle_write_bytes"].iloc[0])


def test_backends_from_storage_json_then_manifest(run_dir):
    """A host's raw storage.json wins over the manifest's copy; a host without one takes the manifest's."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["hosts"] = {"vm": {"storage": {"backends": {"ssd": {"device": "loop3"}}}},
                         "other": {"storage": {"backends": {"hdd": {"device": "loop1"}}}}}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    (run_dir / "raw" / "vm" / "storage.json").write_text(json.dumps({"backends": {"hdd": {"device": "vda"}}}))
    table = build_tables(run_dir)["devices"]
    assert devices.device_backends(table) == {("vm", "vda"): "hdd", ("other", "loop1"): "hdd"}
    workloads = pd.DataFrame({"workload_id": ["w1", "w2"], "placement_local": ["hdd", "ssd"]})
    assert devices.local_devices(workloads, table) == {("vm", "w1"): "vda", ("other", "w1"): "loop1"}
    assert devices.device_labels(table)[("vm", "vda")] == "vda (hdd)"   # the manifest's storage: profile hdd


def test_report_shows_the_io_sections(run_dir):
    trace = _data(build_tables(run_dir)["block_requests"])
    device = trace.groupby("device", observed=True).size().idxmax()
    (run_dir / "raw" / "vm" / "storage.json").write_text(json.dumps({"backends": {"hdd": {"device": str(device)}}}))
    html = write_report(run_dir).read_text()
    assert 'alt="request offsets during fio-sweep' in html
    assert f"<td>{device} (hdd)</td>" in html
    assert "<strong>fio-sweep</strong>: no\nSpark stages with traced requests" in html
    # the fio-sweep trace lies outside every Spark stage: all of it is in that one row per device
    assert f'<td class="num">{(trace["device"] == device).sum():,}</td>' in html
    assert "shuffle-request-model" in html and "No Spark stage read shuffle data" not in html
    # spark-tiny ran Spark stages: its throughput figure carries the application-rate panel under it
    heights = {}
    for alt, data in re.findall(r'<img alt="throughput during (\S+)[^"]*" src="data:image/png;base64,([^"]+)"', html):
        heights[alt] = struct.unpack(">I", base64.b64decode(data)[20:24])[0]     # PNG IHDR height
    assert heights["spark-tiny,"] > 1.4 * heights["fio-sweep,"]
