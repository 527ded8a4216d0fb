"""The emulated cluster `emu` for real: make cluster-up, Ansible over SSH on all four nodes, their identity and
links, a second cluster-up that changes nothing, then make teardown and nothing of it left on the machine.

Root, about a minute. Brings `emu` down at the end: do not run it while someone uses that cluster.
"""
import json
import time

from pathlib import Path

import pytest

from emulation import cluster
from emulation.config import rate_bits
from live_emu import CLUSTER, sh
from spillway import REPO
from spillway.inventory import load as load_inventory
from spillway.console import Tail

pytestmark = pytest.mark.integration


def ansible(pattern, module, args=None):
    argv = [str(REPO / ".venv/bin/ansible"), "-i", f"inventories/{CLUSTER}", pattern, "-m", module, "-o"]
    return sh(*argv, *(["-a", args] if args else []), timeout=180)


def test_every_node_answers_ansible_over_ssh(emu):
    lines = ansible("all", "ping").stdout.splitlines()
    assert sorted(line.split()[0] for line in lines if '"ping": "pong"' in line) == \
        ["master", "worker1", "worker2", "worker3"]


def test_each_node_has_its_hostname_address_hosts_and_private_dirs(emu):
    script = ('echo "$(hostname) $(ip -4 -o addr show dev eth0 | awk \'{print $4}\') '
              '$(ip route show default | awk \'{print $3}\') $(getent hosts worker3 | awk \'{print $1}\') '
              'roots=$(ls -A /var/lib/spillway | tr "\\n" , ) $(findmnt -n -o SOURCE /tmp)"')
    seen = {}
    for line in ansible("all", "shell", script).stdout.splitlines():
        host, _, out = line.partition(" | CHANGED | rc=0 | (stdout) ")
        seen[host] = out.split()
    for node in emu.nodes:
        name, address, gateway, worker3, roots, tmp = seen[node.name]
        assert (name, address, gateway) == (node.name, f"{node.address}/24", emu.gateway)
        assert worker3 == "10.77.0.13"  # every node resolves the others by name
        # None of the machine's cluster roots in the node's /var/lib/spillway: at most its own (once provisioned).
        assert roots in ("roots=", f"roots={node.spillway_root.rsplit('/', 1)[1]},")
        assert tmp.endswith(f"[{emu.node_dir(node)}/tmp]")


def test_links_are_shaped_at_the_configured_rate_on_both_ends(emu):
    state = cluster.status(emu)
    for node in emu.nodes:
        assert state["nodes"][node.name]["link_rate_bits"] == rate_bits(node.link_rate)
        out = sh("tc", "-j", "-n", emu.bridge_namespace, "qdisc", "show", "dev", node.name).stdout
        assert [q["options"]["rate"] * 8 for q in json.loads(out) if q["kind"] == "tbf"] == [rate_bits(node.link_rate)]


def test_the_machine_is_on_the_subnet_only_through_its_own_link(emu):
    # as a controller host in a real cluster's network: one address, one route, both on the machine link
    assert [line.split()[1] for line in sh("ip", "-4", "-o", "addr").stdout.splitlines() if "10.77.0." in line] \
        == [emu.machine_link]
    assert [line.split()[:3] for line in sh("ip", "route").stdout.splitlines() if "10.77.0." in line] \
        == [["10.77.0.0/24", "dev", emu.machine_link]]
    for node in emu.nodes:
        sh("nc", "-z", "-w", "2", node.address, "22")


def test_a_log_growing_on_a_node_is_echoed_over_ssh_and_its_reader_ends_with_it(emu, capsys):
    # how the bench shows a workload step's progress on a remote host
    ssh = load_inventory(CLUSTER).ssh_command("worker1")
    log = "/tmp/spillway-test-tail.log"
    sh(*ssh, f"rm -f {log}")
    tail = Tail(log, "test step", ssh)
    tail.start()
    try:
        sh(*ssh, f"echo first line >> {log}; sleep 1; echo second line >> {log}")
        shown, deadline = "", time.monotonic() + 20
        while "second line" not in shown and time.monotonic() < deadline:
            time.sleep(0.5)
            shown += capsys.readouterr().out
    finally:
        tail.stop()
    assert "first line" in shown and "second line" in shown
    assert tail.remote.returncode is not None
    assert not [p for p in sh("ps", "-eo", "args").stdout.splitlines() if log in p]


def test_second_cluster_up_changes_nothing(emu):
    pids = {n.name: cluster.node_pid(emu, n) for n in emu.nodes}
    assert "already up" in sh("make", "cluster-up", f"CLUSTER={CLUSTER}").stdout
    assert {n.name: cluster.node_pid(emu, n) for n in emu.nodes} == pids


def test_teardown_leaves_nothing_behind(emu):
    sh("make", "teardown", f"CLUSTER={CLUSTER}", timeout=900)
    assert cluster.leftovers(emu) == []
    namespaces = sh("ip", "netns", "list").stdout
    assert "spw-emu" not in namespaces and "spw-emu" not in sh("ip", "link").stdout
    assert not [p for p in sh("ps", "-eo", "args").stdout.splitlines() if str(emu.state_dir) in p]
    assert not list(Path("/sys/fs/cgroup/memory").glob("spillway.emu.*")), "a node budget's group was left"
    # The fixture's own teardown then runs on nothing, as `make teardown` must.
