"""playbooks/preflight.yml for real on this host, with throwaway inventories under tmp_path.

Nothing under /var/lib/spillway is touched: the inventories set spillway_root under tmp_path, their own free
ports and no monitoring. Each check that can be provoked safely is refused once: a missing mount path, a plain
directory and a device given as mount points, free space (a huge size_gib and a huge preflight_min_free_gib), a
port held by this test's socket, Java (no java_home, no package), the clock threshold, root (tasks become
nobody), and an unreachable SSH host (127.0.0.2 on a port where nothing listens).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml

from spillway import INVENTORIES, PLAYBOOKS, REPO

HADOOP_PORT_NAMES = list(json.loads((PLAYBOOKS / "roles/common/defaults/main/ports.json").read_text())["hadoop_ports"])

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the checks expect to run as root, as the harness does")


def free_ports(count):
    """Ports nothing listens on right now (bound to 0 and released)."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def write_inventory(folder, backends, placement, extra_vars=None, workers=None):
    """inventories/local's hosts (workers: more workers or host vars of localhost) with the given storage."""
    (folder / "group_vars").mkdir(parents=True)
    hosts = yaml.safe_load((INVENTORIES / "local" / "hosts.yml").read_text())
    hosts["all"]["children"]["workers"]["hosts"].update(workers or {})
    (folder / "hosts.yml").write_text(yaml.safe_dump(hosts))
    group_vars = {"spillway_cluster": "pftest", "spillway_root": str(folder / "state" / "pftest"),
                  "spillway_backends": backends, "spillway_placement": placement,
                  "spillway_monitoring": {"enabled": False},
                  "hadoop_ports": dict(zip(HADOOP_PORT_NAMES, free_ports(len(HADOOP_PORT_NAMES)))),
                  "preflight_min_free_gib": 1, **(extra_vars or {})}
    (folder / "group_vars" / "all.yml").write_text(yaml.safe_dump(group_vars))
    return folder


def ok_inventory(folder, workers=None):
    """A 1 GiB emulated disk and the root file system as a mount-kind backend: every check passes here."""
    return write_inventory(folder, {"disk": {"kind": "emulated", "profile": "hdd", "size_gib": 1},
                                    "root": {"kind": "mount", "path": "/"}}, {"hdfs": "disk", "local": "root"},
                           workers=workers)


def become_nobody(**more):
    """Host vars of localhost: the tasks become nobody (su, root needs no password); the system python, which
    nobody may run."""
    return {"localhost": {"ansible_become": True, "ansible_become_user": "nobody", "ansible_become_method": "su",
                          "ansible_python_interpreter": "/usr/bin/python3", **more}}


def unreachable_worker():
    """A worker over SSH at 127.0.0.2 on a port where nothing listens: refused at once."""
    return {"ghost": {"ansible_host": "127.0.0.2", "ansible_connection": "ssh", "ansible_port": free_ports(1)[0],
                      "ansible_timeout": 3, "ansible_python_interpreter": "/usr/bin/python3"}}


def play(inventory, report, *args):
    """Run the playbook; (returncode, rows by (host, check), output)."""
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           "playbooks/preflight.yml", "-e", f"preflight_report={report}", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")})
    rows = json.loads(report.read_text()) if report.is_file() else []
    return proc.returncode, {(row["host"], row["check"]): row for row in rows}, proc.stdout + proc.stderr


def changed(output):
    return sum(int(n) for n in re.findall(r"changed=(\d+)", output))


def test_all_checks_pass_and_nothing_changes(tmp_path):
    inventory = ok_inventory(tmp_path / "inv")
    code, rows, output = play(inventory, tmp_path / "rows.json")
    assert code == 0, output[-3000:]
    assert changed(output) == 0
    assert {check for _, check in rows} == {"ssh", "privileges", "java", "diskstats", "storage:disk",
                                            "storage:root", "space:root", "space:emulated", "ports", "clock",
                                            "budget", "accounts"}
    assert all(row["status"] == "ok" for row in rows.values()), rows
    assert "1.0 GiB" in rows["localhost", "space:emulated"]["detail"]
    assert "spillway_node not set" in rows["localhost", "budget"]["detail"]
    assert "mount point" in rows["localhost", "storage:root"]["detail"]
    assert not (tmp_path / "inv" / "state").exists(), "preflight created the cluster root"


def test_check_mode_changes_nothing_and_java_is_installable(tmp_path):
    """--check gives the same rows with changed=0; a missing java_home with an apt candidate is a warning."""
    inventory = ok_inventory(tmp_path / "inv")
    code, rows, output = play(inventory, tmp_path / "rows.json", "--check", "-e", f"java_home={tmp_path}/nojava")
    assert code == 0, output[-3000:]
    assert changed(output) == 0
    java = rows["localhost", "java"]
    assert java["status"] == "warn" and "openjdk-17-jdk-headless" in java["detail"] and "make setup" in java["fix"]
    assert all(row["status"] == "ok" for key, row in rows.items() if key[1] != "java")


@pytest.fixture
def held_port():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    yield listener.getsockname()[1]
    listener.close()


def test_each_check_refuses(tmp_path, held_port):
    plain = tmp_path / "plain"
    plain.mkdir()
    backends = {"missing": {"kind": "mount", "path": str(tmp_path / "no-such-mount")},
                "plain": {"kind": "mount", "path": str(plain)},
                "device": {"kind": "mount", "path": "/dev/null"},
                "root": {"kind": "mount", "path": "/"},
                "huge": {"kind": "emulated", "profile": "hdd", "size_gib": 4096},
                "allowed": {"kind": "mount", "path": str(plain), "destructive_ok": True},
                "nodevice": {"kind": "device", "device": str(tmp_path / "no-such-device"), "fstype": "ext4"},
                "pfsplain": {"kind": "pfs", "mount": str(plain)},
                "pfsbuilt": {"kind": "pfs", "glusterfs": {"shard_block_size": "4MB"}}}
    inventory = write_inventory(tmp_path / "inv", backends, {"hdfs": "huge", "local": "root"},
                                {"preflight_min_free_gib": 1 << 30, "preflight_max_clock_skew_s": -1,
                                 "java_home": str(tmp_path / "nojava"),
                                 "preflight_java_package": "spillway-no-such-package",
                                 "spillway_node": {"memory_gib": 1 << 16, "cores": 1 << 12}},
                                workers=unreachable_worker())
    ports = yaml.safe_load((inventory / "group_vars" / "all.yml").read_text())
    ports["hadoop_ports"]["nm_webapp"] = held_port
    (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump(ports))

    code, rows, output = play(inventory, tmp_path / "rows.json")
    assert code != 0 and "preflight failed" in output
    assert changed(output) == 0

    def failed(check, *words, host="localhost"):
        row = rows[host, check]
        assert row["status"] == "FAIL", row
        text = row["detail"] + " " + row["fix"]
        assert all(word in text for word in words), row
        assert row["fix"], row

    failed("ssh", "127.0.0.2", "ansible_port", host="ghost")
    assert [check for host, check in rows if host == "ghost"] == ["ssh"]
    failed("storage:missing", "does not exist")
    failed("storage:plain", "not a mount point", str(plain))
    failed("storage:device", "is a device", "never formats")
    failed("space:root", "preflight_min_free_gib")
    if shutil.disk_usage(tmp_path).free < 4096 * 2**30:
        failed("space:emulated", "4096 GiB", "size_gib")
    failed("ports", f"port {held_port} (hadoop_ports.nm_webapp)", f"pid {os.getpid()}")
    failed("java", "spillway-no-such-package", "java_home")
    failed("clock", "preflight_max_clock_skew_s", "synchronise")
    failed("budget", "spillway_node.memory_gib is 65536 GiB, the host has", "spillway_node.cores is 4096",
           f"set spillway_node.cores to at most {len(os.sched_getaffinity(0))}")
    failed("storage:nodevice", "is no block device")
    failed("storage:pfsplain", "not a mount point", str(plain), "spillway_backends.pfsplain.mount")
    assert rows["localhost", "storage:pfsbuilt"]["status"] == "ok"
    assert rows["localhost", "storage:huge"]["status"] == "ok"
    assert rows["localhost", "storage:allowed"]["status"] == "ok"


def test_a_node_budget_too_small_for_the_daemons_is_refused_with_what_needs_the_memory(tmp_path):
    inventory = write_inventory(tmp_path / "inv", {"disk": {"kind": "emulated", "profile": "hdd", "size_gib": 1}},
                                {"hdfs": "disk", "local": "disk"}, {"spillway_node": {"memory_gib": 2, "cores": 1}})
    code, rows, output = play(inventory, tmp_path / "rows.json")
    assert code != 0 and changed(output) == 0
    row = rows["localhost", "budget"]
    assert row["status"] == "FAIL", row
    # the single host runs every daemon, the driver and YARN's containers, each sized from the 2 GiB (role common's
    # memory plan): the daemons' heaps a quarter of it (namenode 1024 x 512/3584 = 146 MiB, none below 128), the
    # driver 512 MiB, an AM and one executor of 512m as YARN rounds them (1024 + 1024): 3.16 GiB in all. The fix is
    # the smallest budget that holds them at its own sizes (3456 MiB).
    assert "spillway_node.memory_gib is 2 GiB, less than the 3.16 GiB" in row["detail"], row
    assert "namenode heap 146 MiB" in row["detail"] and "the Spark driver 512 MiB" in row["detail"], row
    assert "a Spark AM and one executor (YARN) 2048 MiB" in row["detail"], row
    assert "at least 3.38" in row["fix"], row
    assert all(r["status"] == "ok" for (host, check), r in rows.items() if check != "budget"), rows


def test_a_service_user_that_is_an_existing_account_not_the_harnesss_is_a_failed_row(tmp_path):
    """docs/safety.md "Accounts": preflight reads the host's accounts (validation touches no host) and names the
    account; nothing is changed."""
    inventory = ok_inventory(tmp_path / "inv")
    passwd = Path("/etc/passwd").read_bytes()
    users = {service: f"spillway-{service}" for service in ("hdfs", "yarn", "mapred", "collect")}
    code, rows, output = play(inventory, tmp_path / "rows.json", "-e",
                              json.dumps({"spillway_service_users": {**users, "workload": "daemon"}}))
    assert code != 0 and changed(output) == 0
    row = rows["localhost", "accounts"]
    assert row["status"] == "FAIL" and "spillway_service_users.workload: account 'daemon' (uid 1)" in row["detail"]
    assert "spillway_service_users" in row["fix"]
    assert Path("/etc/passwd").read_bytes() == passwd


def test_tasks_not_running_as_root_are_refused(tmp_path):
    """become nobody: the checks run as uid 65534; privileges FAIL, and become to root works, so turn it to root."""
    inventory = ok_inventory(tmp_path / "inv", become_nobody(ansible_become_flags="-s /bin/sh"))
    code, rows, output = play(inventory, tmp_path / "rows.json")
    assert code != 0, output[-3000:]
    assert rows["localhost", "ssh"]["status"] == "ok"
    assert rows["localhost", "privileges"]["status"] == "FAIL"
    assert "uid 65534" in rows["localhost", "privileges"]["detail"]
    become = rows["localhost", "become"]
    assert become["status"] == "warn" and "uid 65534" in become["detail"] and "ansible_become_user" in become["fix"]


def test_broken_become_is_a_failed_row(tmp_path):
    """su to an account without a shell cannot even start the checks: one privileges row says so."""
    inventory = ok_inventory(tmp_path / "inv", become_nobody())
    code, rows, output = play(inventory, tmp_path / "rows.json")
    assert code != 0
    assert rows["localhost", "ssh"]["status"] == "ok"
    row = rows["localhost", "privileges"]
    assert row["status"] == "FAIL" and "could not run" in row["detail"] and "ansible_become" in row["fix"], row
