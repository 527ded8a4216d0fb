"""Role monitoring: the scrape configuration generated from an inventory and the device attribution metric pass
Prometheus' own checker (promtool, from the Debian package); the inventory schema names bad settings; and, on
the provisioned local cluster, every exporter is scraped and the emulated disks' statistics join their backend."""
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from spillway import INVENTORIES, REPO, inventory

PROMTOOL = "/usr/bin/promtool"
needs_promtool = pytest.mark.skipif(not os.path.exists(PROMTOOL),
                                    reason="promtool comes with the prometheus package (make setup)")

# The role's config and textfile tasks, run against a scratch state root: nothing starts, no port is bound. Under
# Mitogen's linear strategy, as provision.yml runs these roles (in half the time of Ansible's own strategy).
RENDER_PLAYBOOK = """
- name: Render the monitoring configuration into a scratch root
  hosts: all
  gather_facts: false
  strategy: mitogen_linear
  roles: [common]
  tasks:
    - name: The service users (Prometheus' data folders are the collect user's)
      ansible.builtin.import_role: {name: common, tasks_from: users}
    - name: Hadoop daemons of each host
      ansible.builtin.import_role: {name: hadoop, tasks_from: daemons}
    - name: Scrape configuration and monitoring.json
      ansible.builtin.import_role: {name: monitoring, tasks_from: config}
    - name: Device attribution metric
      ansible.builtin.import_role: {name: monitoring, tasks_from: textfile}
      when: "'workers' in group_names"
"""

# storage.json as role storage writes it: two emulated disks and a real mount (one without a block device).
STORAGE = {"backends": {
    "hdd": {"kind": "emulated", "profile": "hdd", "device": "loop5", "mount": "/var/lib/spillway/t/mnt/hdd"},
    "ssd": {"kind": "emulated", "profile": "ssd", "device": "loop7", "mount": "/var/lib/spillway/t/mnt/ssd"},
    "nvme0": {"kind": "mount", "profile": None, "device": "nvme0n1", "mount": "/var/lib/spillway/t/mnt/nvme0",
              "path": "/mnt/nvme0"},
    "nfs": {"kind": "mount", "profile": None, "device": None, "mount": "/var/lib/spillway/t/mnt/nfs",
            "path": "/mnt/nfs"}}}

# Three hosts over the local connection: a controller that is also NameNode and ResourceManager, two workers.
MULTI_HOST_INVENTORY = {"all": {
    "children": {
        "namenode": {"hosts": {"ctl": None}},
        "resourcemanager": {"hosts": {"ctl": None}},
        "controller": {"hosts": {"ctl": None}},
        "workers": {"hosts": {"w1": {"ansible_host": "10.0.0.11"}, "w2": {"ansible_host": "10.0.0.12"}}}},
    "hosts": {"ctl": {"ansible_host": "10.0.0.10"}},
    "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}


def render(tmp_path, inventory_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "storage.json").write_text(json.dumps(STORAGE))
    playbook = tmp_path / "render.yml"
    playbook.write_text(RENDER_PLAYBOOK)
    proc = subprocess.run([str(REPO / ".venv/bin/ansible-playbook"), "-i", str(inventory_path), str(playbook),
                           "-e", f"spillway_root={root}"], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
    assert proc.returncode == 0, proc.stdout[-4000:]
    return root


def targets_by_job(config):
    jobs = {}
    for job in config["scrape_configs"]:
        for group in job["static_configs"]:
            for target in group["targets"]:
                jobs.setdefault(job["job_name"], []).append((target, group["labels"]))
    return jobs


@pytest.fixture(scope="module")
def local_render(tmp_path_factory):
    return render(tmp_path_factory.mktemp("local"), INVENTORIES / "local")


@needs_promtool
def test_local_scrape_configuration_passes_promtool(local_render):
    config_file = local_render / "monitoring" / "prometheus.yml"
    proc = subprocess.run([PROMTOOL, "check", "config", str(config_file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs = targets_by_job(yaml.safe_load(config_file.read_text()))
    assert set(jobs) == {"prometheus", "node", "pushgateway", "hadoop", "spark"}
    assert all(labels["cluster"] == "local" and labels["node"] == "localhost"
               for targets in jobs.values() for _, labels in targets)
    assert all(target.startswith("127.0.0.1:") for targets in jobs.values() for target, _ in targets)
    assert sorted((labels["daemon"], target) for target, labels in jobs["hadoop"]) == [
        ("datanode", "127.0.0.1:9405"), ("historyserver", "127.0.0.1:9408"), ("namenode", "127.0.0.1:9404"),
        ("nodemanager", "127.0.0.1:9407"), ("resourcemanager", "127.0.0.1:9406")]
    # Spark's UI redirects the paths without a trailing slash (302) to these.
    assert sorted((target, labels["__metrics_path__"]) for target, labels in jobs["spark"]) == [
        ("127.0.0.1:4040", "/metrics/executors/prometheus/"), ("127.0.0.1:4040", "/metrics/prometheus/")]
    pushgateway = next(job for job in yaml.safe_load(config_file.read_text())["scrape_configs"]
                       if job["job_name"] == "pushgateway")
    assert pushgateway["honor_labels"] is True


def test_monitoring_json_has_the_urls_of_the_contract(local_render):
    state = json.loads((local_render / "monitoring.json").read_text())
    assert state["prometheus_url"] == "http://127.0.0.1:9090"
    assert state["pushgateway_url"] == "http://127.0.0.1:9091"
    assert state["grafana_url"] is None
    assert state["node_exporters"] == {"localhost": "http://127.0.0.1:9100"}


@needs_promtool
def test_device_attribution_metric_passes_promtool_and_names_each_backend(local_render):
    metric = local_render / "monitoring" / "textfile" / "spillway_disk_info.prom"
    with metric.open() as text:
        proc = subprocess.run([PROMTOOL, "check", "metrics"], stdin=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    samples = [line for line in metric.read_text().splitlines() if not line.startswith("#")]
    assert samples == [  # the NFS mount has no block device to watch
        'spillway_disk_info{backend="hdd",profile="hdd",kind="emulated",device="loop5",'
        'mountpoint="/var/lib/spillway/t/mnt/hdd"} 1',
        'spillway_disk_info{backend="nvme0",profile="mount",kind="mount",device="nvme0n1",'
        'mountpoint="/var/lib/spillway/t/mnt/nvme0"} 1',
        'spillway_disk_info{backend="ssd",profile="ssd",kind="emulated",device="loop7",'
        'mountpoint="/var/lib/spillway/t/mnt/ssd"} 1']


@needs_promtool
def test_multi_host_targets_follow_the_inventory(tmp_path):
    hosts = tmp_path / "inventory" / "hosts.yml"
    (hosts.parent / "group_vars").mkdir(parents=True)
    hosts.write_text(yaml.safe_dump(MULTI_HOST_INVENTORY))
    group_vars = yaml.safe_load((INVENTORIES / "local" / "group_vars" / "all.yml").read_text())
    # spark_ui_port is role spark's (spark.ui.port in spark-defaults.conf): the scrape configuration follows it.
    group_vars.update(spillway_cluster="multi", spillway_monitoring={"prometheus_port": 19999}, spark_ui_port=4141)
    (hosts.parent / "group_vars" / "all.yml").write_text(yaml.safe_dump(group_vars))
    config_file = render(tmp_path, hosts.parent) / "monitoring" / "prometheus.yml"
    proc = subprocess.run([PROMTOOL, "check", "config", str(config_file)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs = targets_by_job(yaml.safe_load(config_file.read_text()))
    as_pairs = {job: sorted((labels["node"], target) for target, labels in targets) for job, targets in jobs.items()}
    assert as_pairs["node"] == [("ctl", "10.0.0.10:9100"), ("w1", "10.0.0.11:9100"), ("w2", "10.0.0.12:9100")]
    assert as_pairs["prometheus"] == [("ctl", "10.0.0.10:19999")]  # the one setting changed, the rest kept
    assert as_pairs["pushgateway"] == [("ctl", "10.0.0.10:9091")]
    assert as_pairs["spark"] == [("ctl", "10.0.0.10:4141")] * 2
    daemons = sorted((labels["daemon"], labels["node"], target) for target, labels in jobs["hadoop"])
    assert daemons == [
        ("datanode", "w1", "10.0.0.11:9405"), ("datanode", "w2", "10.0.0.12:9405"),
        ("historyserver", "ctl", "10.0.0.10:9408"), ("namenode", "ctl", "10.0.0.10:9404"),
        ("nodemanager", "w1", "10.0.0.11:9407"), ("nodemanager", "w2", "10.0.0.12:9407"),
        ("resourcemanager", "ctl", "10.0.0.10:9406")]
    assert {labels["cluster"] for targets in jobs.values() for _, labels in targets} == {"multi"}


@pytest.mark.parametrize("setting, field", [
    ({"prometheus_port": 70000}, "spillway_monitoring.prometheus_port"),
    ({"jmx_exporter_ports": {"namenode": "9404"}}, "spillway_monitoring.jmx_exporter_ports.namenode"),
    ({"retention": "two weeks"}, "spillway_monitoring.retention"),
    ({"grafana": {"enabled": True, "password": "x"}}, "spillway_monitoring.grafana"),
])
def test_schema_names_a_bad_monitoring_setting(tmp_path, monkeypatch, setting, field):
    root = tmp_path / "inventories"
    (root / "local" / "group_vars").mkdir(parents=True)
    for name in ("schema.yml", "storage-profiles.yml", "local/hosts.yml"):
        (root / name).write_text((INVENTORIES / name).read_text())
    group_vars = yaml.safe_load((INVENTORIES / "local" / "group_vars" / "all.yml").read_text())
    (root / "local" / "group_vars" / "all.yml").write_text(yaml.safe_dump({**group_vars,
                                                                            "spillway_monitoring": setting}))
    monkeypatch.setattr(inventory, "INVENTORIES", root)
    with pytest.raises(inventory.InventoryError) as error:
        inventory.load("local")
    assert any(f"all.yml: {field}" in problem for problem in error.value.problems), error.value.problems


# --- Live, on the local default cluster ---------------------------------------------------------------------

LOCAL_ROOT = Path("/var/lib/spillway/local")


def prometheus_get(url, path, **params):
    with urllib.request.urlopen(f"{url}{path}?{urllib.parse.urlencode(params)}", timeout=10) as response:
        return json.load(response)["data"]


@pytest.fixture(scope="module")
def provisioned(tmp_path_factory, provision_as_a_bench):
    result = provision_as_a_bench("local", tmp_path_factory.mktemp("provision"))
    assert result.ok, result.failures
    return json.loads((LOCAL_ROOT / "monitoring.json").read_text())


@pytest.mark.integration
def test_every_exporter_is_scraped_and_up(provisioned):
    url = provisioned["prometheus_url"]
    deadline = time.monotonic() + 60
    while True:
        targets = prometheus_get(url, "/api/v1/targets", state="active")["activeTargets"]
        health = {(t["labels"]["job"], t["labels"].get("daemon", ""), t["scrapeUrl"]): (t["health"], t["lastError"])
                  for t in targets if t["labels"]["job"] in {"node", "pushgateway", "prometheus", "hadoop"}}
        if all(up == "up" for up, _ in health.values()) or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert {job for job, _, _ in health} == {"node", "pushgateway", "prometheus", "hadoop"}
    assert sorted(daemon for job, daemon, _ in health if job == "hadoop") == [
        "datanode", "historyserver", "namenode", "nodemanager", "resourcemanager"]
    assert {key: value for key, value in health.items() if value[0] != "up"} == {}


@pytest.mark.integration
def test_emulated_disks_statistics_join_their_backend(provisioned):
    storage = json.loads((LOCAL_ROOT / "storage.json").read_text())
    expected = {(name, b["profile"], b["device"]) for name, b in storage["backends"].items() if b["kind"] == "emulated"}
    query = ("node_disk_read_bytes_total * on(node, device) group_left(backend, profile) spillway_disk_info")
    deadline = time.monotonic() + 30
    while True:
        result = prometheus_get(provisioned["prometheus_url"], "/api/v1/query", query=query)["result"]
        found = {(r["metric"]["backend"], r["metric"]["profile"], r["metric"]["device"]) for r in result}
        if found >= expected or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert expected and found >= expected
    assert all(r["metric"]["cluster"] == "local" and r["metric"]["node"] == "localhost" for r in result)


@pytest.mark.integration
def test_a_pushed_marker_keeps_its_job_and_labels(provisioned):
    group = "/metrics/job/spillway_monitoring_test/run_id/pytest"
    body = f"spillway_test_marker_timestamp_seconds {time.time():.3f}\n".encode()
    urllib.request.urlopen(urllib.request.Request(provisioned["pushgateway_url"] + group, data=body, method="PUT"))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            result = prometheus_get(provisioned["prometheus_url"], "/api/v1/query",
                                    query="spillway_test_marker_timestamp_seconds")["result"]
            if result:
                break
            time.sleep(1)
        (series,) = result
        assert series["metric"]["job"] == "spillway_monitoring_test" and series["metric"]["run_id"] == "pytest"
    finally:
        urllib.request.urlopen(urllib.request.Request(provisioned["pushgateway_url"] + group, method="DELETE"))
