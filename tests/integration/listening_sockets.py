"""The TCP sockets the bench's processes listen on, read from /proc while a bench runs (docs/safety.md, "Least
privilege": every daemon listens on the cluster's addresses, but for the ports Hadoop binds to every address with no
setting to change it)."""
from __future__ import annotations

import ipaddress
import json
import os
import pwd
from dataclasses import dataclass
from pathlib import Path

from spillway import REPO
from periodic_sampler import PeriodicSampler

# What marks a process as the bench's: its user is one of the harness's, or its command line names the harness's
# folders (the root-run exporters, the supervisor).
BENCH_PATHS = ("/var/lib/spillway/", "/opt/spillway/")
LISTEN = "0A"


@dataclass(frozen=True)
class Listener:
    address: str
    port: int
    pid: int
    user: str
    command: str

    @property
    def on_every_address(self) -> bool:
        return ipaddress.ip_address(self.address).is_unspecified


def _address(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    # /proc/net/tcp{,6} print each 32-bit word in the host's (little-endian) order.
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def _listening_inodes() -> dict[str, tuple[str, int]]:
    inodes = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == LISTEN:
                address, port = fields[1].split(":")
                inodes[fields[9]] = (_address(address), int(port, 16))
    return inodes


def listeners() -> list[Listener]:
    """Every listening TCP socket of this network namespace with the process holding it."""
    inodes = _listening_inodes()
    found = []
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            sockets = {os.readlink(fd)[8:-1] for fd in (pid_dir / "fd").iterdir()
                       if os.readlink(fd).startswith("socket:[")}
            command = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            user = pwd.getpwuid(pid_dir.stat().st_uid).pw_name
        except (FileNotFoundError, ProcessLookupError, PermissionError, KeyError):
            continue
        for inode in sockets & inodes.keys():
            found.append(Listener(*inodes[inode], int(pid_dir.name), user, command[:300]))
    return found


def is_the_bench(listener: Listener, users: set[str]) -> bool:
    return listener.user in users or any(path in listener.command for path in BENCH_PATHS)


def allowed_on_every_address() -> dict[int, str]:
    """The ports Hadoop binds to every address with no setting to change it, each with that reason."""
    ports = json.loads((REPO / "playbooks/roles/common/defaults/main/ports.json").read_text())["hadoop_ports"]
    allowed = {ports["shuffle"]: "the NodeManager's MapReduce shuffle handler (ShuffleHandler binds every address)"}
    defaults = (REPO / "playbooks/roles/hadoop/defaults/main.yml").read_text()
    for line in defaults.splitlines():
        if line.startswith(("mapreduce_am_rpc_port_range:", "mapreduce_am_webapp_port_range:")):
            low, high = line.split(":", 1)[1].strip().split("-")
            for port in range(int(low), int(high) + 1):
                allowed[port] = "the MapReduce ApplicationMaster's pinned range (its RPC and web servers bind every address)"
    return allowed


class Sampler(PeriodicSampler):
    """Samples the bench's listeners every `interval_s` in a thread until stopped."""

    def __init__(self, users: set[str], interval_s: float = 2.0):
        super().__init__(interval_s)
        self.users = users
        self.seen: dict[tuple, Listener] = {}

    def sample(self, now: float) -> None:
        for listener in listeners():
            if is_the_bench(listener, self.users):
                self.seen.setdefault((listener.address, listener.port, listener.command.split(" ")[0]), listener)
