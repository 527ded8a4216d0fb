"""The Prometheus archive parser on a real archive (tests/fixtures/tools/prometheus/README.md: the bench's
archive of a fio write-then-read run on vda, every dashboard query), and the table built from a run directory."""
import json
import math
import shutil

import pandas as pd
import pytest

from analysis.parsers.prometheus import parse_archive
from analysis.tables import build_tables
from conftest import TOOLS

ARCHIVE = TOOLS / "prometheus" / "fio-vda.json"


@pytest.fixture(scope="module")
def raw():
    return json.loads(ARCHIVE.read_text())


def test_one_row_per_series_and_step_with_its_labels_as_columns(raw):
    frame, failed = parse_archive(ARCHIVE)
    assert failed == []
    expected_rows = sum(len(s["values"]) for q in raw["queries"].values() for s in q["result"])
    assert len(frame) == expected_rows > 0
    labels = {k for q in raw["queries"].values() for s in q["result"] for k in s["metric"]}
    assert list(frame.columns) == ["query_id", "unit", *sorted(labels), "time_s", "value"]
    assert {"backend", "node", "device"} <= labels
    # every query that returned series is there, with the unit of the dashboard panel
    returned = {qid for qid, q in raw["queries"].items() if q["result"]}
    assert set(frame["query_id"]) == returned
    units = frame.drop_duplicates("query_id").set_index("query_id")["unit"].to_dict()
    assert units == {qid: raw["queries"][qid]["unit"] for qid in returned}
    # values are Prometheus' strings as floats, times its epoch seconds
    first = raw["queries"]["disk_write_bytes"]["result"][0]["values"][5]
    row = frame[(frame["query_id"] == "disk_write_bytes") & (frame["time_s"] == first[0])]
    assert row["value"].item() == float(first[1]) and row["backend"].item() == "root"
    assert frame["time_s"].between(raw["start"], raw["end"] + raw["step_s"]).all()


def test_the_recorded_run_shows_the_write_then_the_read(raw):
    frame, _ = parse_archive(ARCHIVE)
    by_query = {q: f.set_index("time_s")["value"] for q, f in frame[frame["device"] == "vda"].groupby("query_id")}
    write, read = by_query["disk_write_bytes"], by_query["disk_read_bytes"]
    # fio wrote 15 s then read 15 s (1 MiB direct I/O): each direction peaks at more than 100 MB/s, the
    # write peak comes first
    assert write.max() > 100e6 and read.max() > 100e6
    assert write.idxmax() < read.idxmax()
    size = by_query["disk_read_request_size"]
    assert size.loc[read.idxmax()] > 256 * 1024  # 1 MiB requests, split by the virtio queue


def test_failed_queries_are_reported_and_nan_samples_kept(tmp_path, raw):
    broken = dict(raw)
    broken["queries"] = {**raw["queries"], "bad": {"expr": "rate(x[", "unit": "Bps", "result": [],
                                                   "error": "HTTP 400 bad_data"}}
    idle = json.loads(json.dumps(raw["queries"]["disk_read_request_size"]))
    idle["result"][0]["values"][0][1] = "NaN"  # what Prometheus writes for 0/0 on an idle device
    broken["queries"]["disk_read_request_size"] = idle
    path = tmp_path / "w.json"
    path.write_text(json.dumps(broken))
    frame, failed = parse_archive(path)
    assert failed == ["bad: HTTP 400 bad_data"]
    sizes = frame[frame["query_id"] == "disk_read_request_size"]["value"]
    assert math.isnan(sizes.iloc[0]) and sizes.iloc[1:].notna().all()


def test_prometheus_series_table_of_a_run_directory(tmp_path):
    run = tmp_path / "run"
    (run / "raw" / "prometheus").mkdir(parents=True)
    shutil.copy(ARCHIVE, run / "raw" / "prometheus" / "fio-vda.json")
    shutil.copy(ARCHIVE, run / "raw" / "prometheus" / "fio-vda-r2.json")
    tables = build_tables(run)
    series = tables["prometheus_series"]
    assert "host" not in series.columns and list(series.columns[:3]) == ["workload_id", "query_id", "unit"]
    assert series.groupby("workload_id").size().to_dict() == {"fio-vda": len(series) // 2,
                                                              "fio-vda-r2": len(series) // 2}
    sources = tables["sources"][tables["sources"]["source"] == "prometheus"]
    assert sorted(sources[["host", "workload_id", "file", "status"]].itertuples(index=False)) == [
        ("", "fio-vda", "raw/prometheus/fio-vda.json", "ok"),
        ("", "fio-vda-r2", "raw/prometheus/fio-vda-r2.json", "ok")]
    assert (sources["rows"] == len(series) // 2).all()


def test_a_run_without_archive_has_an_empty_table(tmp_path):
    (tmp_path / "run" / "raw").mkdir(parents=True)
    series = build_tables(tmp_path / "run")["prometheus_series"]
    assert series.empty and isinstance(series, pd.DataFrame)
