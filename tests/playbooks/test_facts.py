"""playbooks/facts.yml, run for real over a controller and a worker (both this machine, local connection) into a
scratch run directory: the controller's monitoring.json where the bench reads it, and each supervised daemon's user,
CPU seconds and start as read from its running process."""
import json
import os
import subprocess
import sys
import time

import yaml

from spillway import PLAYBOOKS, REPO

SUPERVISOR = PLAYBOOKS / "roles/hadoop/files/spillway-daemon"


def run_facts(tmp_path, root):
    """playbooks/facts.yml over a controller and a worker (both this machine) into a scratch run directory."""
    hosts = tmp_path / "inventory" / "hosts.yml"
    hosts.parent.mkdir()
    hosts.write_text(yaml.safe_dump({"all": {
        "children": {"controller": {"hosts": {"ctl": None}}, "workers": {"hosts": {"w1": None}}},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "spillway_cluster": "factstest"}}}))
    run_dir = tmp_path / "run"
    proc = subprocess.run([str(REPO / ".venv/bin/ansible-playbook"), "-i", str(hosts.parent), "playbooks/facts.yml",
                           "-e", f"spillway_root={root}", "-e", f"run_dir={run_dir}"], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
    assert proc.returncode == 0, proc.stdout[-4000:]
    return run_dir


def test_facts_copy_the_controllers_monitoring_json_where_the_bench_reads_it(tmp_path):
    from types import SimpleNamespace

    from spillway.monitoring import Monitoring

    root = tmp_path / "root"
    root.mkdir()
    urls = {"prometheus_url": "http://10.0.0.10:19090", "pushgateway_url": "http://10.0.0.10:19091",
            "grafana_url": None, "node_exporters": {"ctl": "http://10.0.0.10:9100", "w1": "http://10.0.0.11:9100"}}
    (root / "monitoring.json").write_text(json.dumps(urls))
    run_dir = run_facts(tmp_path, root)
    assert json.loads((run_dir / "raw/ctl/monitoring.json").read_text()) == urls
    assert not (run_dir / "raw/w1/monitoring.json").exists()  # the controller's only
    # a remote controller: the bench finds the URLs only in the run directory's copy
    remote = SimpleNamespace(variables={}, groups={"controller": ["ctl"]}, all_local=False)
    monitoring = Monitoring.load(remote, "/nonexistent", run_dir)
    assert monitoring.enabled and monitoring.prometheus_url == "http://10.0.0.10:19090"
    assert monitoring.pushgateway_url == "http://10.0.0.10:19091"


def test_facts_without_monitoring_json_go_on(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    run_dir = run_facts(tmp_path, root)
    assert (run_dir / "raw/ctl/facts.json").exists() and not (run_dir / "raw/ctl/monitoring.json").exists()
    assert json.loads((run_dir / "raw/ctl/facts.json").read_text())["daemon_cpu"] == {}  # no supervised daemon


def test_facts_read_each_supervised_daemons_cpu_seconds_and_start_from_its_process(tmp_path):
    # A daemon of the real supervisor (a private state root) that spends about half a second of CPU, with spaces and
    # a parenthesis in its command name, then waits: what a Hadoop daemon's start-up costs, as facts.yml reads it.
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "spillway-daemon").write_bytes(SUPERVISOR.read_bytes())  # installed as provisioning does
    (root / "bin" / "spillway-daemon").chmod(0o755)
    busy = root / "bin" / "busy (daemon) x"
    busy.write_text("#!/usr/bin/env python3\nimport time\nend = time.process_time() + 0.5\n"
                    "while time.process_time() < end:\n    pass\ntime.sleep(120)\n")
    busy.chmod(0o755)
    before = time.time()
    supervisor = [str(root / "bin" / "spillway-daemon")]
    started = subprocess.run([*supervisor, "start", "busy", "--settle", "0", "--", str(busy)], capture_output=True,
                             text=True, timeout=60)
    assert started.returncode == 0, started.stdout
    # a name the supervisor takes with a backslash in it: read as it is, not as an escape (awk -v would make it a tab)
    odd = "idle\\t1"
    started = subprocess.run([*supervisor, "start", odd, "--settle", "0", "--", "sleep", "120"], capture_output=True,
                             text=True, timeout=60)
    assert started.returncode == 0, started.stdout
    try:
        time.sleep(1.0)  # its half second of CPU spent
        run_dir = run_facts(tmp_path, root)
    finally:
        for name in ("busy", odd):
            subprocess.run([*supervisor, "stop", name, "--timeout", "5"], capture_output=True, timeout=60)
    for host in ("ctl", "w1"):  # the same machine twice: both read the one daemon
        facts = json.loads((run_dir / "raw" / host / "facts.json").read_text())
        read = facts["daemon_cpu"]["busy"]
        assert 0.4 <= read["cpu_s"] <= 5, read
        assert before - 1 <= read["started_epoch_s"] <= before + 5, (read, before)
        assert facts["daemon_users"] == {"busy": "root", odd: "root"}
        assert set(facts["daemon_cpu"]) == {"busy", odd} and facts["daemon_cpu"][odd]["cpu_s"] < 0.4
