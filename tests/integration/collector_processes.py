"""The users the collectors' processes run as, read from /proc while a bench runs (docs/safety.md, "Least privilege":
the collectors that declare `needs_root` in their collector.yml run as root, the others as the collect user, with
no_new_privs). A collector's processes are its start and stop programs, whose command line names
`<spillway_root>/collectors/<name>/start|stop` (role collectors' module runs them, the unprivileged ones through
setpriv, which is root until it executes the program and is left out), and the background process its start leaves,
named by its pid file `<spillway_root>/runs/<run>/<name>/<workload>/.pid` (collectors/lib/spillway_collector.py).

A start or stop program lives a tenth of a second or more (a Python start-up and the collector's module), so /proc is
listed every 50 ms and only new or young processes are read: a process first seen before it executed its program
(still the module's fork, or setpriv) is read again until it is a second old."""
from __future__ import annotations

import os
import pwd
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from spillway import REPO
from periodic_sampler import PeriodicSampler

PROGRAM = re.compile(r"/collectors/([A-Za-z0-9_-]+)/(start|stop)$")
YOUNG_S = 1.0


@dataclass(frozen=True)
class CollectorProcess:
    collector: str
    what: str                     # start, stop, or background (the process its pid file names)
    users: tuple[str, ...]        # real, effective, saved and file-system user
    no_new_privs: bool
    command: str


def collector_program(argv: list[str], roots: list[Path] | None = None) -> tuple[str, str] | None:
    """(collector, start or stop) when the command line runs a collector's program (itself, or through its
    interpreter), below one of `roots` when given (another checkout's collectors, a test's toy one, are not the
    cluster's: make test of 2026-11-29 saw a toy collector of a test run beside it), None otherwise and for setpriv,
    which runs as root until it executes the program."""
    if not argv or Path(argv[0]).name == "setpriv":
        return None
    for arg in argv:
        found = PROGRAM.search(arg)
        if found and (roots is None or any(arg.startswith(f"{root}/") for root in roots)):
            return found.group(1), found.group(2)
    return None


def status_of(text: str) -> tuple[tuple[str, ...], bool]:
    """(the users of the Uid line, NoNewPrivs) of a /proc/<pid>/status text."""
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    users = tuple(_user(int(uid)) for uid in fields["Uid"].split())
    return users, fields.get("NoNewPrivs", "0").strip() == "1"


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _read(pid: str) -> tuple[list[str], str] | None:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        return [arg for arg in argv if arg], Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def pid_files(roots: list[Path]) -> dict[str, str]:
    """pid -> collector, of every background process a collector's pid file names below the roots."""
    found = {}
    for root in roots:
        for pid_file in root.glob("runs/*/*/*/.pid"):
            try:
                found[pid_file.read_text().split()[0]] = pid_file.parts[-3]
            except (OSError, IndexError):
                continue
    return found


def declared_users(collect_user: str) -> dict[str, str]:
    """collector -> the user its collector.yml says it runs as: root with `needs_root`, else the collect user."""
    return {manifest["name"]: "root" if manifest.get("needs_root") is not None else collect_user
            for path in sorted((REPO / "collectors").glob("*/collector.yml"))
            for manifest in [yaml.safe_load(path.read_text())]}


class CollectorSampler(PeriodicSampler):
    """Records the collectors' processes below `roots` (the hosts' spillway_root on this machine) in a thread."""

    def __init__(self, roots: list[Path], interval_s: float = 0.05):
        super().__init__(interval_s)
        self.roots = roots
        self.seen: dict[tuple, CollectorProcess] = {}
        self._first_seen: dict[str, float] = {}

    def sample(self, now: float) -> None:
        pids = {name for name in os.listdir("/proc") if name.isdigit()}
        self._first_seen = {pid: self._first_seen.get(pid, now) for pid in pids}
        background = pid_files(self.roots) if self.samples % 20 == 0 else {}
        for pid, first in self._first_seen.items():
            if now - first > YOUNG_S and pid not in background:
                continue
            read = _read(pid)
            if read is None:
                continue
            argv, status = read
            program = collector_program(argv, self.roots)
            if program is None and pid in background:
                program = background[pid], "background"
            if program is not None:
                users, no_new_privs = status_of(status)
                record = CollectorProcess(*program, users, no_new_privs, " ".join(argv)[:300])
                self.seen.setdefault((record.collector, record.what, users, no_new_privs), record)
