"""The bench's monitoring calls against a real Prometheus, Pushgateway and node_exporter (started here on
free loopback ports): markers pushed and queried back, a dead exporter reported as a gap, the archive of a
workload window written, and every failure a warning, never an exception."""
import json
import time
from types import SimpleNamespace

import pytest

import prometheus_servers
from spillway.monitoring import Monitoring, WorkloadMonitor, archive_path, grouping_path

pytestmark = pytest.mark.skipif(not prometheus_servers.binaries_present(),
                                reason="needs prometheus, prometheus-pushgateway, prometheus-node-exporter (Debian)")

QUERIES = [("workload_running", "spillway_workload_running", "none"),
           ("disk_read", "sum by (node, device) (rate(node_disk_read_bytes_total[5s]))", "Bps"),
           ("broken", "rate(node_disk_read_bytes_total[", "Bps")]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    with prometheus_servers.running(tmp_path_factory.mktemp("prometheus")) as running:
        yield running


def monitoring_of(servers, **changes):
    values = {"prometheus_url": servers.prometheus_url, "pushgateway_url": servers.pushgateway_url,
              "node_exporters": {"node1": servers.node_exporter_url},
              "scrape_interval_s": prometheus_servers.SCRAPE_INTERVAL_S, **changes}
    return Monitoring(**values)


def record_of(workload_id):
    return {"id": workload_id, "workload": "tiny-job"}


def test_workload_markers_reach_prometheus_and_the_window_is_archived(servers, tmp_path, capsys):
    record = record_of("tiny-job-r1")
    monitor = WorkloadMonitor(monitoring_of(servers), "run-a", tmp_path, record, queries=lambda: QUERIES)
    monitor.begin()
    running = servers.wait_for('spillway_workload_running{workload_id="tiny-job-r1"} == 1')
    assert running[0]["metric"]["run_id"] == "run-a" and running[0]["metric"]["workload"] == "tiny-job"
    start = float(servers.query('spillway_workload_start_timestamp_seconds{workload_id="tiny-job-r1"}')[0]["value"][1])
    assert start == pytest.approx(monitor.start, abs=1e-3)
    time.sleep(3 * prometheus_servers.SCRAPE_INTERVAL_S)
    monitor.end("invalid")

    ended = servers.wait_for('spillway_workload_end_timestamp_seconds{workload_id="tiny-job-r1"}')
    assert ended[0]["metric"]["status"] == "invalid"
    assert monitor.start < float(ended[0]["value"][1]) <= time.time()
    # the end push replaced the group: the start is still there, running is 0
    servers.wait_for('spillway_workload_running{workload_id="tiny-job-r1"} == 0')
    assert servers.query('spillway_workload_start_timestamp_seconds{workload_id="tiny-job-r1"}')

    archive = json.loads(archive_path(tmp_path, "tiny-job-r1").read_text())
    assert record["monitoring"]["archived"] and record["monitoring"]["archive"] == "raw/prometheus/tiny-job-r1.json"
    assert archive["step_s"] == prometheus_servers.SCRAPE_INTERVAL_S
    assert archive["end"] - archive["start"] >= 3 * prometheus_servers.SCRAPE_INTERVAL_S
    series = [s for s in archive["queries"]["workload_running"]["result"] if s["metric"]["workload_id"] == "tiny-job-r1"]
    assert series and {value for _t, value in series[0]["values"]} == {"1"}  # 0 was pushed after the window
    assert archive["queries"]["disk_read"]["unit"] == "Bps"
    assert {s["metric"]["node"] for s in archive["queries"]["disk_read"]["result"]} == {"node1"}
    # the broken query is recorded with Prometheus' error and does not hide the others
    assert "bad_data" in archive["queries"]["broken"]["error"] and archive["queries"]["broken"]["result"] == []
    assert any("1 of 3 archive queries failed" in w for w in record["monitoring"]["warnings"])
    assert capsys.readouterr().out.count("monitoring:") == 1


def test_step_grows_with_the_window_to_at_most_500_points(servers):
    monitoring = monitoring_of(servers)
    assert monitoring.step_s(0, 60) == prometheus_servers.SCRAPE_INTERVAL_S
    assert monitoring.step_s(0, 5000) == 10


def test_a_dead_node_exporter_is_a_gap_and_the_workload_goes_on(servers, tmp_path, capsys):
    dead = f"http://127.0.0.1:{prometheus_servers.free_port()}"
    monitoring = monitoring_of(servers, node_exporters={"node1": servers.node_exporter_url, "node2": dead})
    record = record_of("gap-job")
    monitor = WorkloadMonitor(monitoring, "run-a", tmp_path, record, queries=lambda: QUERIES[:1])
    monitor.begin()
    gaps = record["monitoring"]["gaps"]
    assert [g["node"] for g in gaps] == ["node2"] and gaps[0]["url"] == dead
    assert "Connection refused" in gaps[0]["error"]
    monitor.end("ok")
    assert record["monitoring"]["archived"]
    # a second workload with the same gap records it again but says it only once
    again = record_of("gap-job-2")
    WorkloadMonitor(monitoring, "run-a", tmp_path, again, queries=lambda: QUERIES[:1]).begin()
    assert again["monitoring"]["gaps"][0]["node"] == "node2"
    assert capsys.readouterr().out.count("node exporter of node2 is down") == 1


def test_monitoring_down_is_one_warning_per_kind_and_nothing_archived(tmp_path, capsys):
    closed = f"http://127.0.0.1:{prometheus_servers.free_port()}"
    monitoring = Monitoring(prometheus_url=closed, pushgateway_url=closed, node_exporters={})
    for workload_id in ("a", "b"):
        record = record_of(workload_id)
        monitor = WorkloadMonitor(monitoring, "run-a", tmp_path, record, queries=lambda: QUERIES)
        monitor.begin()
        monitor.end("failed")
        assert not record["monitoring"]["archived"]
        assert any("workload marker not pushed" in w for w in record["monitoring"]["warnings"])
        assert any("3 of 3 archive queries failed" in w for w in record["monitoring"]["warnings"])
    out = capsys.readouterr().out
    assert out.count("workload marker not pushed") == 1 and out.count("archive queries failed") == 1


def test_archive_without_the_dashboards_package_or_queries_is_a_warning(servers, tmp_path):
    def no_queries():
        raise ModuleNotFoundError("No module named 'dashboards'")
    record = record_of("c")
    monitor = WorkloadMonitor(monitoring_of(servers), "run-a", tmp_path, record, queries=no_queries)
    monitor.begin()
    monitor.end("ok")
    assert not record["monitoring"]["archived"] and not archive_path(tmp_path, "c").exists()
    assert any("No module named 'dashboards'" in w for w in record["monitoring"]["warnings"])


def test_label_values_with_slashes_use_the_pushgateways_base64_form(servers):
    monitoring = monitoring_of(servers)
    monitoring.workload_markers("run/with/slash", "w 1", "tiny", start=1.5)
    assert grouping_path("j", run_id="a/b", workload_id="w 1") == "/metrics/job/j/run_id@base64/YS9i/workload_id/w%201"
    found = servers.wait_for('spillway_workload_start_timestamp_seconds{run_id="run/with/slash"}')
    assert found[0]["metric"]["workload_id"] == "w 1" and found[0]["value"][1] == "1.5"


def inventory(all_local=True, **variables):
    return SimpleNamespace(variables=variables, groups={"controller": ["ctl"]}, all_local=all_local)


def test_load_reads_monitoring_json_fetched_into_the_run_then_the_local_one(tmp_path):
    root, run_dir = tmp_path / "root", tmp_path / "run"
    root.mkdir()
    (root / "monitoring.json").write_text(json.dumps({
        "prometheus_url": "http://127.0.0.1:9090/", "pushgateway_url": "http://127.0.0.1:9091",
        "grafana_url": None, "node_exporters": {"ctl": "http://127.0.0.1:9100"}}))
    local = Monitoring.load(inventory(spillway_monitoring={"scrape_interval_s": 5}), root, run_dir)
    assert local.enabled and local.prometheus_url == "http://127.0.0.1:9090" and local.scrape_interval_s == 5
    assert local.node_exporters == {"ctl": "http://127.0.0.1:9100"}
    assert "Prometheus http://127.0.0.1:9090," in local.describe()

    remote = Monitoring.load(inventory(all_local=False), root, run_dir)
    assert not remote.enabled and "monitoring role has not run" in remote.disabled_reason
    (run_dir / "raw" / "ctl").mkdir(parents=True)
    (run_dir / "raw" / "ctl" / "monitoring.json").write_text(json.dumps({"prometheus_url": "http://10.0.0.1:9090"}))
    assert Monitoring.load(inventory(all_local=False), root, run_dir).prometheus_url == "http://10.0.0.1:9090"


def test_disabled_monitoring_is_said_at_start_and_recorded_per_workload(tmp_path, capsys):
    monitoring = Monitoring.load(inventory(spillway_monitoring={"enabled": False}), tmp_path, tmp_path)
    assert monitoring.describe().startswith("off: disabled in the inventory")
    record = record_of("d")
    monitor = WorkloadMonitor(monitoring, "run-a", tmp_path, record)
    monitor.begin()
    monitor.end("ok")
    assert record["monitoring"] == {"archived": False, "gaps": [],
                                    "warnings": ["off: disabled in the inventory (spillway_monitoring)"]}
    assert capsys.readouterr().out == ""  # describe() said it already


def test_every_dashboard_panel_query_is_archived_without_error(servers, tmp_path):
    from dashboards import queries as dashboards_queries
    from spillway.monitoring import panel_queries

    found = panel_queries()
    assert [query_id for query_id, _expr, _unit in found] == [q.id for q in dashboards_queries.QUERIES]
    assert not any("$" in expr for _id, expr, _unit in found)  # every template variable rendered
    # a rate needs two scrapes: on a loaded machine this test can come before the fresh Prometheus has them
    servers.wait_for({query_id: expr for query_id, expr, _unit in found}["cpu_busy"])
    now = time.time()
    path, failed = monitoring_of(servers).archive(tmp_path, "all-panels", now - 20, now, found)
    assert failed == []
    archive = json.loads(path.read_text())
    assert archive["queries"]["cpu_busy"]["result"][0]["metric"]["node"] == "node1"
