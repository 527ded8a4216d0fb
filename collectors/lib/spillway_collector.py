"""Shared plumbing of the Spillway collectors (stdlib only: runs with the hosts' system python3).

Every collector follows docs/architecture.md "Collector contract": `start` returns at once and
leaves one background process whose pid is in `$SPILLWAY_OUT/.pid`; `stop` is idempotent and
finishes the output files. A collector must never fail the bench, so `guarded()` turns any
exception into `$SPILLWAY_OUT/collector-error.txt` and exit status 0.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import traceback
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

PID_FILE = ".pid"
STARTED_AT_FILE = ".started_at"
ERROR_FILE = "collector-error.txt"
NOTES_FILE = "collector-notes.txt"
# Written instead of data when the collector has nothing to observe on this host; analysis counts it as "none",
# not as missing data.
NOTHING_HERE_FILE = "nothing-here.txt"


class NothingHere(Exception):
    """The collector has nothing to observe on this host (e.g. no block device under its data paths)."""


@dataclass
class Context:
    """The contract's environment, read once."""

    root: Path
    run_id: str
    workload_id: str
    out: Path
    devices: list[str] = field(default_factory=list)
    # backends of this host with no block device of their own (pfs: a file system mounted over the network)
    deviceless_backends: list[str] = field(default_factory=list)
    window_start: float | None = None

    @classmethod
    def from_env(cls) -> "Context":
        missing = [k for k in ("SPILLWAY_ROOT", "SPILLWAY_OUT") if not os.environ.get(k)]
        if missing:
            raise SystemExit(
                f"missing environment {', '.join(missing)}: run collectors through "
                "playbooks/collectors.yml (or export the variables of docs/architecture.md)"
            )
        out = Path(os.environ["SPILLWAY_OUT"])
        out.mkdir(parents=True, exist_ok=True)
        window = os.environ.get("SPILLWAY_WINDOW_START", "").strip()
        return cls(
            root=Path(os.environ["SPILLWAY_ROOT"]),
            run_id=os.environ.get("SPILLWAY_RUN_ID", ""),
            workload_id=os.environ.get("SPILLWAY_WORKLOAD_ID", ""),
            out=out,
            devices=os.environ.get("SPILLWAY_DEVICES", "").split(),
            deviceless_backends=os.environ.get("SPILLWAY_DEVICELESS_BACKENDS", "").split(),
            window_start=float(window) if window else None,
        )

    def require_devices(self) -> list[str]:
        if not self.devices and self.deviceless_backends:
            raise NothingHere(
                f"no block device under this host's data paths: backends {', '.join(self.deviceless_backends)} have "
                "none of their own (a network or parallel file system: its servers' disks are where its I/O is seen)")
        if not self.devices:
            raise RuntimeError(
                "SPILLWAY_DEVICES is empty: the host has no storage.json with backends.<b>.device; "
                "provision the storage first or pass -e collector_devices=loopN to playbooks/collectors.yml"
            )
        for dev in self.devices:
            if not Path("/sys/class/block", dev).exists():
                raise RuntimeError(f"device {dev!r} from SPILLWAY_DEVICES does not exist (/sys/class/block/{dev})")
        return self.devices

    def effective_window_start(self) -> float:
        """SPILLWAY_WINDOW_START if given, else the time `start` ran, else 0 (everything)."""
        if self.window_start is not None:
            return self.window_start
        marker = self.out / STARTED_AT_FILE
        return float(marker.read_text()) if marker.exists() else 0.0

    def mark_started(self) -> None:
        (self.out / STARTED_AT_FILE).write_text(f"{time.time():.6f}\n")

    def note(self, text: str) -> None:
        """A non-fatal remark the analysis should show (e.g. 'HDFS down, nothing copied')."""
        with open(self.out / NOTES_FILE, "a") as notes:
            notes.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {text.rstrip()}\n")


def guarded(main: Callable[[Context], None]) -> None:
    """Run a start/stop body; any failure is written down and the exit status stays 0."""
    try:
        ctx = Context.from_env()
    except SystemExit as exc:  # no SPILLWAY_OUT: nowhere to write the error, so say it loudly
        print(exc, file=sys.stderr)
        sys.exit(2)
    try:
        main(ctx)
    except NothingHere as nothing:
        (ctx.out / NOTHING_HERE_FILE).write_text(f"{nothing}\n")
    except Exception as exc:  # noqa: BLE001 - a collector must never fail the bench
        step = Path(sys.argv[0]).name
        with open(ctx.out / ERROR_FILE, "a") as err:
            err.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {step}: {exc}\n")
            traceback.print_exc(file=err)
        print(f"collector {step} failed (recorded in {ctx.out / ERROR_FILE}): {exc}", file=sys.stderr)
    sys.exit(0)


# --- background process with a pid file -----------------------------------------------------

def _proc_start_time(pid: int) -> str | None:
    """Start time of a process in clock ticks since boot: tells a live pid from a recycled one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def spawn_background(ctx: Context, argv: Sequence[str], stdout: Path, stderr: Path,
                     env: dict[str, str] | None = None) -> int:
    """Start argv detached from our session (survives Ansible's task end), record it in .pid."""
    existing = read_pid(ctx)
    if existing is not None:
        raise RuntimeError(f"already running as pid {existing} ({ctx.out / PID_FILE}): run stop first")
    with open(stdout, "ab") as out, open(stderr, "ab") as err:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True, env=env, close_fds=True)
    (ctx.out / PID_FILE).write_text(f"{proc.pid} {_proc_start_time(proc.pid)}\n")
    return proc.pid


def read_pid(ctx: Context) -> int | None:
    """The recorded pid if that very process still runs, else None (and the stale file goes)."""
    pid_file = ctx.out / PID_FILE
    if not pid_file.exists():
        return None
    fields = pid_file.read_text().split()
    pid, start = int(fields[0]), fields[1] if len(fields) > 1 else None
    running_since = _proc_start_time(pid)
    if running_since is None or _is_zombie(pid) or (start not in (None, "None") and running_since != start):
        pid_file.unlink()
        return None
    return pid


def wait_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _proc_start_time(pid) is None or _is_zombie(pid):
            return True
        time.sleep(0.05)
    return False


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def stop_background(ctx: Context, first_signal: int = signal.SIGTERM, grace: float = 10.0) -> bool:
    """Signal the recorded process, escalate to SIGKILL after `grace` s. Returns whether it
    ended on the first signal (False also when nothing was running). Idempotent."""
    pid = read_pid(ctx)
    if pid is None:
        return False
    clean = True
    os.kill(pid, first_signal)
    if not wait_exit(pid, grace):
        clean = False
        os.kill(pid, signal.SIGKILL)
        wait_exit(pid, 5.0)
    (ctx.out / PID_FILE).unlink(missing_ok=True)
    return clean


# --- small shared helpers ---------------------------------------------------------------------

def snapshot_diskstats(dest: Path) -> None:
    """/proc/diskstats verbatim, preceded by one '# epoch=<seconds>' line."""
    now = time.time()
    content = Path("/proc/diskstats").read_text()
    dest.write_text(f"# epoch={now:.6f}\n{content}")


def device_numbers(name: str) -> tuple[int, int]:
    major, minor = Path("/sys/class/block", name, "dev").read_text().split(":")
    return int(major), int(minor)


def write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def hadoop_site_property(ctx: Context, site: str, name: str) -> str | None:
    """A property of the cluster's Hadoop configuration ($SPILLWAY_ROOT/etc/hadoop/<site>), None where unset."""
    path = ctx.root / "etc" / "hadoop" / site
    if path.exists():
        for prop in ET.parse(path).getroot().iter("property"):
            if prop.findtext("name") == name and prop.findtext("value"):
                return prop.findtext("value").strip()
    return None
