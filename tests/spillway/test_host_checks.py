"""spillway.host_checks for real: the preflight playbook on this host with throwaway inventories, the table and
preflight.json. The inventories come from the playbook's tests (same folder layout, state under tmp_path)."""
import importlib.util
import json
import os
import socket

import pytest
import yaml

from spillway import REPO
from spillway.host_checks import check_hosts, summary_table

_spec = importlib.util.spec_from_file_location(
    "preflight_inventories", REPO / "tests" / "playbooks" / "test_preflight_playbook.py")
inventories = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(inventories)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the checks expect to run as root, as the harness does")


def test_all_ok_writes_preflight_json(tmp_path, capsys):
    inventory = inventories.ok_inventory(tmp_path / "inv")
    ok, rows = check_hosts(inventory, run_dir=tmp_path / "run")
    out = capsys.readouterr().out
    assert ok, out
    assert json.loads((tmp_path / "run" / "preflight.json").read_text()) == rows
    assert (tmp_path / "run" / "logs" / "preflight.log").is_file()
    assert "preflight of cluster 'inv': ok" in out
    header, localhost = out.splitlines()[1:3]
    assert header.split()[0] == "host" and {"ssh", "ports", "clock", "space:emulated"} <= set(header.split())
    assert localhost.split() == ["localhost"] + ["ok"] * (len(header.split()) - 1)


def test_failures_are_named_with_host_check_and_fix(tmp_path, capsys):
    """An unreachable worker and a port of this cluster held by another program: not ok, and the table says
    which host, which check and what to do."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        inventory = inventories.ok_inventory(tmp_path / "inv", inventories.unreachable_worker())
        vars_file = inventory / "group_vars" / "all.yml"
        settings = yaml.safe_load(vars_file.read_text())
        free = inventories.free_ports(7)
        settings["spillway_monitoring"] = {
            "enabled": True, "node_exporter_port": port, "prometheus_port": free[0], "pushgateway_port": free[1],
            "jmx_exporter_ports": dict(zip(["namenode", "datanode", "resourcemanager", "nodemanager",
                                            "historyserver"], free[2:]))}
        vars_file.write_text(yaml.safe_dump(settings))
        ok, rows = check_hosts(inventory, run_dir=tmp_path / "run")
    finally:
        listener.close()
    out = capsys.readouterr().out
    assert not ok
    assert "FAILED" in out.splitlines()[0]
    failed = {(row["host"], row["check"]) for row in rows if row["status"] == "FAIL"}
    assert failed == {("ghost", "ssh"), ("localhost", "ports")}, rows
    ghost_line = next(line for line in out.splitlines() if line.startswith("ghost "))
    assert ghost_line.split()[1] == "FAIL" and set(ghost_line.split()[2:]) == {"-"}
    assert f"FAIL  localhost  ports: port {port} (spillway_monitoring.node_exporter_port)" in out
    assert "fix: stop that process, or set spillway_monitoring.node_exporter_port" in out
    assert "FAIL  ghost  ssh:" in out and "fix: check ansible_host" in out
    assert json.loads((tmp_path / "run" / "preflight.json").read_text()) == rows


def test_a_playbook_that_cannot_run_is_a_failed_row(tmp_path, capsys):
    """A broken inventory leaves no rows from the play: one FAIL row points at the log."""
    broken = tmp_path / "inv"
    broken.mkdir()
    (broken / "hosts.yml").write_text("all: [not, an, inventory\n")
    ok, rows = check_hosts(broken, run_dir=tmp_path / "run")
    assert not ok
    assert [(row["check"], row["status"]) for row in rows] == [("playbook", "FAIL")]
    assert str(tmp_path / "run" / "logs" / "preflight.log") in rows[0]["fix"]


def test_summary_table_lists_failures_before_warnings():
    rows = [{"host": "a", "check": "java", "status": "warn", "detail": "installable", "fix": "make setup"},
            {"host": "b", "check": "java", "status": "ok", "detail": "17", "fix": ""},
            {"host": "b", "check": "clock", "status": "FAIL", "detail": "off by 9 s", "fix": "chrony"}]
    lines = summary_table(rows).splitlines()
    assert lines[0].split() == ["host", "java", "clock"]
    assert lines[1].split() == ["a", "warn", "-"] and lines[2].split() == ["b", "ok", "FAIL"]
    assert lines[3:] == ["FAIL  b  clock: off by 9 s", "      fix: chrony",
                         "warn  a  java: installable", "      fix: make setup"]
