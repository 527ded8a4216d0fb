"""Device throughput per storage backend from the real Prometheus archive (tests/fixtures/tools/prometheus): the
metric, and the report section that shows it."""
import shutil

import pandas as pd

from analysis.metrics import backend_throughput
from analysis.report_page import write_report
from analysis.tables import build_tables


def test_throughput_is_summed_per_backend_and_direction(archived_run):
    tables = build_tables(archived_run({"fio-vda": "ok"}))
    throughput = backend_throughput(tables["prometheus_series"])
    series = tables["prometheus_series"]
    reads = series[series["query_id"] == "disk_read_bytes"].groupby("time_s")["value"].sum()
    per_backend = throughput[throughput["direction"] == "read"].set_index("time_s")["bytes_per_s"]
    pd.testing.assert_series_equal(per_backend, reads, check_names=False)
    assert set(throughput["backend"]) == {"root"} and set(throughput["direction"]) == {"read", "write"}


def test_no_archive_no_throughput(tmp_path):
    (tmp_path / "run" / "raw").mkdir(parents=True)
    assert backend_throughput(build_tables(tmp_path / "run")["prometheus_series"]).empty


def test_report_shows_the_archived_throughput_and_says_when_there_is_none(archived_run):
    run = archived_run({"fio-vda": "ok"})
    html = write_report(run).read_text()
    section = html[html.index('id="monitoring"'):html.index('id="model"')]
    assert '<img alt="Prometheus throughput per backend, run run"' in section
    (run / "raw" / "prometheus" / "fio-vda.json").unlink()
    shutil.rmtree(run / "tables")
    html = write_report(run).read_text()
    section = html[html.index('id="monitoring"'):html.index('id="model"')]
    assert "<img" not in section and "No Prometheus archive in this run" in section
