"""The report's throughput-per-backend figure from the real Prometheus archive (tests/fixtures/tools/prometheus)."""
import json
import shutil

import pandas as pd

from analysis.monitoring import backend_throughput, backend_throughput_figure
from analysis.tables import build_tables
from conftest import TOOLS

ARCHIVE = TOOLS / "prometheus" / "fio-vda.json"


def tables_of(tmp_path, statuses):
    """A run whose workloads each have the recorded archive, bounded as the runner records them."""
    archive = json.loads(ARCHIVE.read_text())
    run = tmp_path / "run"
    (run / "raw" / "prometheus").mkdir(parents=True)
    workloads = []
    for index, (workload_id, status) in enumerate(statuses.items()):
        shutil.copy(ARCHIVE, run / "raw" / "prometheus" / f"{workload_id}.json")
        workloads.append({"id": workload_id, "workload": "fio", "status": status, "steps": [],
                          "started_at": pd.Timestamp(archive["start"] + index, unit="s", tz="UTC").isoformat(),
                          "ended_at": pd.Timestamp(archive["end"], unit="s", tz="UTC").isoformat()})
    (run / "manifest.json").write_text(json.dumps({"run_id": "run", "workloads": workloads}))
    return build_tables(run)


def test_throughput_is_summed_per_backend_and_direction(tmp_path):
    tables = tables_of(tmp_path, {"fio-vda": "ok"})
    throughput = backend_throughput(tables["prometheus_series"])
    series = tables["prometheus_series"]
    reads = series[series["query_id"] == "disk_read_bytes"].groupby("time_s")["value"].sum()
    per_backend = throughput[throughput["direction"] == "read"].set_index("time_s")["bytes_per_s"]
    pd.testing.assert_series_equal(per_backend, reads, check_names=False)
    assert set(throughput["backend"]) == {"root"} and set(throughput["direction"]) == {"read", "write"}


def test_figure_draws_each_backend_and_direction_and_shades_each_workload(tmp_path):
    tables = tables_of(tmp_path, {"fio-vda": "ok", "fio-vda-again": "invalid"})
    fig = backend_throughput_figure(tables["prometheus_series"], tables["workloads"], "run")
    ax = fig.axes[0]
    assert sorted(line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")) == [
        "root read", "root write"]
    assert len(ax.get_lines()) == 4  # read and write of each workload's archive, not joined across windows
    assert [t.get_text().strip() for t in ax.texts] == ["fio-vda", "fio-vda-again"]
    assert len(ax.patches) == 2
    peak = max(line.get_ydata().max() for line in ax.get_lines())
    assert peak > 100  # MB/s: the recorded fio run
    assert "run run" in ax.get_title()


def test_no_archive_no_figure(tmp_path):
    (tmp_path / "run" / "raw").mkdir(parents=True)
    tables = build_tables(tmp_path / "run")
    assert backend_throughput_figure(tables["prometheus_series"], tables["workloads"], "run") is None


def test_report_shows_the_archived_throughput_and_says_when_there_is_none(tmp_path):
    from analysis.report import write_report
    tables_of(tmp_path, {"fio-vda": "ok"})
    html = write_report(tmp_path / "run").read_text()
    section = html[html.index('id="monitoring"'):html.index('id="model"')]
    assert '<img alt="Prometheus throughput per backend, run run"' in section
    (tmp_path / "run" / "raw" / "prometheus" / "fio-vda.json").unlink()
    shutil.rmtree(tmp_path / "run" / "tables")
    html = write_report(tmp_path / "run").read_text()
    section = html[html.index('id="monitoring"'):html.index('id="model"')]
    assert "<img" not in section and "No Prometheus archive in this run" in section
