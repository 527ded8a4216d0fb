"""The emulation's plan from an inventory: validation, names, rendered files, link shaping. No root, no state."""
import subprocess

import pytest

from emulation.config import (EmulationError, etc_hosts, from_settings, is_own_loop_backing, known_hosts_line, load,
                              node_command, node_environment, rate_bits, sshd_config, sys_mounts, tbf_args,
                              tbf_burst_bytes)
from spillway.inventory import load as load_inventory

SETTINGS = {"prefix": "spw-t", "state_dir": "/var/lib/spillway-emulation/t", "subnet": "10.99.0.0/24",
            "gateway": "10.99.0.1", "link_rate": "1gbit", "link_rates": {"b": "100mbit"}}
HOSTS = ["a", "b"]
HOST_VARS = {"a": {"ansible_host": "10.99.0.10", "spillway_root": "/var/lib/spillway/t-a"},
             "b": {"ansible_host": "10.99.0.11", "spillway_root": "/var/lib/spillway/t-b"}}


def emulation(settings=None, host_vars=None):
    return from_settings("t", {**SETTINGS, **(settings or {})}, HOSTS, host_vars or HOST_VARS)


def test_emu_inventory_describes_four_nodes_reached_through_the_bridge_namespace():
    emu = load("emu")
    assert [(n.name, n.address) for n in emu.nodes] == [
        ("master", "10.77.0.10"), ("worker1", "10.77.0.11"), ("worker2", "10.77.0.12"), ("worker3", "10.77.0.13")]
    assert emu.namespaces == ["spw-emu-net", "spw-emu-master", "spw-emu-worker1", "spw-emu-worker2",
                              "spw-emu-worker3"]
    assert {n.link_rate for n in emu.nodes} == {"1gbit"}
    # What Ansible uses must be what the emulation creates: the key, the known hosts and the proxy namespace.
    host_vars = load_inventory("emu").host_vars["worker1"]
    assert host_vars["ansible_ssh_private_key_file"] == str(emu.key_file)
    assert f"UserKnownHostsFile={emu.known_hosts_file}" in host_vars["ansible_ssh_common_args"]
    assert f"ip netns exec {emu.bridge_namespace} nc %h %p" in host_vars["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in host_vars["ansible_ssh_common_args"]


def test_the_machine_gets_an_address_on_the_bridge_only_when_asked():
    assert load("emu").machine_address == "10.77.0.254"
    assert load("emu").machine_link == "spw-emu-m"
    assert emulation().machine_address is None
    # an interface name has at most 15 characters, whatever the prefix
    assert len(emulation({"prefix": "spw-a-very-long-prefix", "machine_address": "10.99.0.254"}).machine_link) <= 15


def test_non_emulated_cluster_is_refused():
    with pytest.raises(EmulationError, match="not an emulated cluster"):
        load("local")


def test_per_host_link_rate_overrides_the_default():
    rates = {n.name: n.link_rate for n in emulation().nodes}
    assert rates == {"a": "1gbit", "b": "100mbit"}


@pytest.mark.parametrize("settings, host_vars, message", [
    ({"prefix": "emu"}, None, "must start with 'spw-'"),
    ({"state_dir": "/var/lib/spillway/emu"}, None, "outside /var/lib/spillway"),
    ({"subnet": "8.8.8.0/24", "gateway": "8.8.8.1"}, None, "private IPv4"),
    ({"gateway": "10.98.0.1"}, None, "gateway 10.98.0.1 is not in 10.99.0.0/24"),
    ({"link_rates": {"c": "1gbit"}}, None, "link_rates.c: no such host"),
    ({"link_rate": "fast"}, None, "not a tc rate"),
    ({"nice": 20}, None, "nice 20"),
    (None, {**HOST_VARS, "b": {**HOST_VARS["b"], "ansible_host": "10.99.0.10"}}, "is also a"),
    ({"machine_address": "10.98.0.254"}, None, "machine_address 10.98.0.254 is not in"),
    ({"machine_address": "10.99.0.1"}, None, "is also the gateway"),
    ({"machine_address": "10.99.0.10"}, None, "10.99.0.10 is also the machine"),
    (None, {**HOST_VARS, "b": {**HOST_VARS["b"], "ansible_host": "10.99.0.1"}}, "is also the gateway"),
    (None, {**HOST_VARS, "b": {**HOST_VARS["b"], "ansible_host": "192.168.0.5"}}, "not in 10.99.0.0/24"),
    (None, {**HOST_VARS, "b": {**HOST_VARS["b"], "spillway_root": "/var/lib/spillway/t-a"}}, "each node needs its own"),
    (None, {**HOST_VARS, "b": {**HOST_VARS["b"], "spillway_root": "/srv/t-b"}}, "directly below /var/lib/spillway"),
])
def test_invalid_settings_are_refused_with_the_field(settings, host_vars, message):
    with pytest.raises(EmulationError, match=message):
        emulation(settings, host_vars)


def test_host_name_longer_than_an_interface_name_is_refused():
    with pytest.raises(EmulationError, match="at most 15 characters"):
        from_settings("t", SETTINGS, ["averyveryverylongname"],
                      {"averyveryverylongname": HOST_VARS["a"]})


@pytest.mark.parametrize("rate, bits", [("1gbit", 10**9), ("100mbit", 10**8), ("125mbps", 10**9),
                                        ("2.5gbit", 25 * 10**8), ("64kbit", 64000)])
def test_rate_bits(rate, bits):
    assert rate_bits(rate) == bits


def test_tbf_bucket_holds_10_ms_of_traffic_and_at_least_64_kib():
    assert tbf_burst_bytes("1gbit") == 1_250_000
    assert tbf_burst_bytes("1mbit") == 64 * 1024
    assert tbf_args("eth0", "1gbit") == ["qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "1gbit",
                                         "burst", "1250000", "latency", "20ms"]


def test_etc_hosts_names_every_node():
    text = etc_hosts(emulation())
    assert "10.99.0.10\ta\n" in text and "10.99.0.11\tb\n" in text and text.startswith("127.0.0.1\tlocalhost")


def test_sshd_listens_on_the_node_address_with_keys_only():
    emu = emulation()
    config = sshd_config(emu, emu.nodes[1])
    assert "ListenAddress 10.99.0.11\n" in config
    assert f"HostKey {emu.state_dir}/nodes/b/ssh_host_ed25519_key\n" in config
    assert "PasswordAuthentication no\n" in config and "UsePAM no\n" in config


def test_sshd_config_is_accepted_by_sshd(tmp_path):
    sshd = "/usr/sbin/sshd"
    emu = emulation({"state_dir": str(tmp_path)})
    node = emu.nodes[0]
    emu.node_dir(node).mkdir(parents=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                    str(emu.node_dir(node) / "ssh_host_ed25519_key")], check=True)
    (tmp_path / "sshd_config").write_text(sshd_config(emu, node))
    # sshd -t wants its privilege separation directory, which the nodes have in their own /run: so does this check.
    check = f'mount -t tmpfs spw-test-run /run && mkdir /run/sshd && exec {sshd} -t -f "$1"'
    result = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", check, "sh",
                             str(tmp_path / "sshd_config")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_known_hosts_line_names_address_and_host():
    node = emulation().nodes[0]
    assert known_hosts_line(node, "ssh-ed25519 AAAAC3Nz a\n") == "10.99.0.10,a ssh-ed25519 AAAAC3Nz"


def test_node_starts_in_its_namespaces_at_the_niceness():
    emu = emulation({"nice": 7})
    argv = node_command(emu, emu.nodes[0])
    assert argv[:7] == ["nice", "-n", "7", "ip", "netns", "exec", "spw-t-a"]
    assert argv[7:12] == ["unshare", "--uts", "--mount", "--propagation", "private"]
    assert argv[-1].rstrip().endswith('exec /usr/sbin/sshd -D -e -f "$NODE_DIR/sshd_config"')


def test_node_script_is_valid_shell_and_binds_the_private_directories():
    emu = emulation()
    script = node_command(emu, emu.nodes[0])[-1]
    assert subprocess.run(["sh", "-n", "-c", script]).returncode == 0
    for target in ("/var/lib/spillway", "/root", "/tmp", "/srv", "/etc/hosts", "/etc/hostname"):
        assert f'" {target}\n' in script
    env = node_environment(emu, emu.nodes[0], "")
    assert env["NODE_DIR"] == "/var/lib/spillway-emulation/t/nodes/a" and env["NODE_NAME"] == "a"


def test_sys_mounts_keeps_the_mounts_below_sys_in_order():
    proc_mounts = ("sysfs /sys sysfs rw 0 0\n"
                   "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n"
                   "cgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0\n"
                   "/dev/vda / ext4 rw 0 0\n"
                   "tracefs /sys/kernel/tracing tracefs rw,relatime 0 0\n")
    assert sys_mounts(proc_mounts).splitlines() == [
        "tmpfs tmpfs /sys/fs/cgroup rw,relatime,mode=755",
        "cgroup cgroup /sys/fs/cgroup/blkio rw,relatime,blkio",
        "tracefs tracefs /sys/kernel/tracing rw,relatime"]


@pytest.mark.parametrize("backing, own", [
    ("/var/lib/spillway/t-a/disks/hdd.img", True),        # the node is alive
    ("/t-b/disks/ssd.img", True),                          # the node's mount namespace is gone
    ("/t-b/disks/ssd.img (deleted)", True),
    ("/var/lib/spillway/local/disks/hdd.img", False),      # another cluster's
    ("/var/lib/spillway/t-a/disks/sub/hdd.img", False),
    ("/var/lib/spillway/t-c/disks/hdd.img", False),
    ("/dev/loop3", False),
])
def test_own_loop_backing(backing, own):
    assert is_own_loop_backing(backing, emulation()) is own
