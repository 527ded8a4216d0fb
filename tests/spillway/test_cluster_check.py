"""The first check of make bench: answers at once, before anything is installed or touched."""
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest
import yaml

from spillway import INVENTORIES, PLAYBOOKS, REPO, cluster_check


def test_unknown_cluster_exits_nonzero_quickly_listing_clusters():
    start = time.monotonic()
    proc = subprocess.run(["make", "-s", "bench", "CLUSTER=nope"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode != 0
    assert time.monotonic() - start < 5
    assert "unknown cluster 'nope'" in proc.stderr and "local" in proc.stderr


def test_unknown_workload_and_scale_are_named():
    problems = cluster_check.check("local", "terasort,nope", "big")
    assert any("unknown workload 'nope'" in p and "fio-sweep" in p for p in problems)
    assert any("unknown scale 'big'" in p for p in problems)


def test_emulated_storage_without_root_says_so():
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           sys.executable, "-m", "spillway.cluster_check", "--cluster", "local"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "needs root" in proc.stderr


@pytest.fixture
def cluster_with_busy_port(tmp_path, monkeypatch):
    """A copy of the local inventory whose Prometheus port is held by a listening socket of this test."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    inventory = tmp_path / "inventories" / "busy"
    (inventory / "group_vars").mkdir(parents=True)
    shutil.copy(INVENTORIES / "local" / "hosts.yml", inventory / "hosts.yml")
    group_vars = (INVENTORIES / "local" / "group_vars" / "all.yml").read_text()
    (inventory / "group_vars" / "all.yml").write_text(
        group_vars.replace("spillway_cluster: local", "spillway_cluster: busy")
        + f"spillway_monitoring:\n  prometheus_port: {port}  # held\n")
    monkeypatch.setattr(cluster_check, "INVENTORIES", inventory.parent)
    yield port
    listener.close()


def test_port_held_by_another_program_names_pid_and_setting(cluster_with_busy_port, tmp_path):
    port = cluster_with_busy_port
    problems = cluster_check.check_ports("busy", state_parent=tmp_path / "state")
    # (Other lines name the running local cluster's daemons: this state_parent does not list them.)
    assert [p for p in problems if f"port {port} " in p] == [f"port {port} is in use by pid {os.getpid()} ({cluster_check.process_name(os.getpid())}): "
                        "set spillway_monitoring.prometheus_port in inventories/busy/group_vars/all.yml, "
                        "or stop that process."]


def test_port_held_by_a_spillway_daemon_is_no_problem(cluster_with_busy_port, tmp_path):
    run_dir = tmp_path / "state" / "other-cluster" / "run"
    run_dir.mkdir(parents=True)
    (run_dir / "prometheus.pid").write_text(f"{os.getpid()}\n--storage.tsdb.path=x\n")
    problems = cluster_check.check_ports("busy", state_parent=tmp_path / "state")
    assert not [p for p in problems if f"port {cluster_with_busy_port} " in p]


def test_ports_are_checked_only_when_asked(cluster_with_busy_port, capsys):
    assert cluster_check.main(["--cluster", "busy"]) == 0  # setup, teardown: nothing binds
    assert cluster_check.main(["--cluster", "busy", "--workloads", "", "--scale", "tiny"]) == 0
    assert cluster_check.main(["--cluster", "busy", "--workloads", "", "--scale", "tiny", "--ports"]) == 2
    assert f"error: port {cluster_with_busy_port} is in use" in capsys.readouterr().err


def test_make_bench_checks_the_ports():
    """What make would run for a bench (make -n): the cluster check before anything else, with the port check."""
    planned = subprocess.run(["make", "-n", "--no-print-directory", "bench"], cwd=REPO, capture_output=True,
                             text=True, timeout=120).stdout.splitlines()
    assert "spillway.cluster_check" in planned[0] and planned[0].endswith(" --ports"), planned


def test_grafana_port_held_by_grafana_is_no_problem(tmp_path, monkeypatch):
    """Role grafana runs Grafana as a system service: on its own port that is no conflict, on another it is."""
    holder = subprocess.Popen([sys.executable, "-c", (
        "import socket, sys; open('/proc/self/comm', 'w').write('grafana'); s = socket.socket(); "
        "s.bind(('127.0.0.1', 0)); s.listen(); print(s.getsockname()[1], flush=True); sys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(holder.stdout.readline())
        inventory = tmp_path / "inventories" / "graf"
        (inventory / "group_vars").mkdir(parents=True)
        shutil.copy(INVENTORIES / "local" / "hosts.yml", inventory / "hosts.yml")
        group_vars = (INVENTORIES / "local" / "group_vars" / "all.yml").read_text()
        monkeypatch.setattr(cluster_check, "INVENTORIES", inventory.parent)
        for setting, conflict in ((f"grafana: {{enabled: true, port: {port}}}", False),
                                  (f"prometheus_port: {port}", True)):
            (inventory / "group_vars" / "all.yml").write_text(group_vars + f"spillway_monitoring:\n  {setting}\n")
            problems = [p for p in cluster_check.check_ports("graf", state_parent=tmp_path / "state")
                        if f"port {port} " in p]
            assert problems == ([f"port {port} is in use by pid {holder.pid} (grafana): set "
                                 "spillway_monitoring.prometheus_port in inventories/graf/group_vars/all.yml, "
                                 "or stop that process."] if conflict else [])
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


def test_monitoring_off_needs_none_of_its_ports(cluster_with_busy_port):
    group_vars = cluster_check.INVENTORIES / "busy" / "group_vars" / "all.yml"
    group_vars.write_text(group_vars.read_text() + "  enabled: false\n")
    assert cluster_with_busy_port not in cluster_check.cluster_ports("busy")
    assert 9404 not in cluster_check.cluster_ports("busy") and 8020 in cluster_check.cluster_ports("busy")


@pytest.mark.parametrize("path", sorted(str(p.relative_to(REPO)) for p in INVENTORIES.glob("*/group_vars/all.yml")))
def test_stdlib_yaml_subset_reads_the_ports_and_switches_as_pyyaml_does(path):
    """Without PyYAML (a bare system python3) the cluster check reads the same inventory settings."""
    text = (REPO / path).read_text()
    simple, full = cluster_check.parse_simple_yaml(text), yaml.safe_load(text)
    for key in ("spillway_cluster", "spillway_placement", "spillway_monitoring", "hadoop_ports", "spillway_backends"):
        if key in full and not str(full[key]).startswith("{{"):
            assert simple[key] == full[key], key


def load_filter(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_port_map_for_the_harness_and_the_host_preflight(cluster_with_busy_port):
    """spillway.cluster_check and role preflight's filter read the same map (role common's ports.json): on a host that
    plays every role, the filter names exactly the ports and settings the harness checks, overrides included."""
    assert cluster_check.PORT_MAP == PLAYBOOKS / "roles/common/defaults/main/ports.json"
    port_map = json.loads(cluster_check.PORT_MAP.read_text())
    common = yaml.safe_load((PLAYBOOKS / "roles/common/defaults/main/main.yml").read_text())
    filters = load_filter(PLAYBOOKS / "roles/preflight/filter_plugins/preflight_ports.py")
    group_vars = yaml.safe_load((cluster_check.INVENTORIES / "busy/group_vars/all.yml").read_text())
    monitoring = cluster_check.merge(port_map["monitoring_defaults"], group_vars["spillway_monitoring"])
    host_ports = filters.spillway_host_ports(port_map["hadoop_ports"], port_map["hadoop_port_daemons"],
                                             common["hadoop_daemons"], monitoring,
                                             ["namenode", "resourcemanager", "controller", "workers"], True)
    assert host_ports == cluster_check.cluster_ports("busy")
    assert host_ports[cluster_with_busy_port] == "spillway_monitoring.prometheus_port"
    assert {name.split("_")[0] for name in port_map["hadoop_ports"]} == set(port_map["hadoop_port_daemons"])
    assert not list(PLAYBOOKS.glob("roles/*/tasks/settings.yml")), "shared values live in role common's defaults"
