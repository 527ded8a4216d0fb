"""Kernel block tracing back ends: blktrace (needs debugfs, fails under lockdown) and a private
tracefs instance with the block_rq_issue/block_rq_complete tracepoints."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
DEBUGFS = Path("/sys/kernel/debug")
EVENTS = ("block_rq_issue", "block_rq_complete")
# Per-CPU ring buffer: ~16 MiB holds a few hundred thousand events, enough to ride out the
# reader being descheduled for a second at the highest rates it can sustain.
DEFAULT_BUFFER_KB = 16384
PROBE_TIMEOUT_S = 4


def _is_mounted(path: Path, fstype: str) -> bool:
    with open("/proc/self/mounts") as mounts:
        return any(line.split()[1] == str(path) and line.split()[2] == fstype for line in mounts)


def _mount(fstype: str, path: Path) -> None:
    result = subprocess.run(["mount", "-t", fstype, fstype, str(path)], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"cannot mount {fstype} at {path}: {result.stderr.strip()} (needs root)")


# --- blktrace ----------------------------------------------------------------------------------

def probe_blktrace(devices: list[str]) -> str | None:
    """None if blktrace can trace these devices, else why not. blktrace exits 0 even when it
    cannot open its per-CPU relay files, so its error output is what tells."""
    blktrace = shutil.which("blktrace")
    if blktrace is None:
        return "blktrace not installed"
    mounted_here = False
    if not _is_mounted(DEBUGFS, "debugfs"):
        try:
            _mount("debugfs", DEBUGFS)
            mounted_here = True
        except RuntimeError as exc:
            return str(exc)
    args = [blktrace, "-w", "1", "-o", "-"] + [a for d in devices for a in ("-d", f"/dev/{d}")]
    # When its per-CPU threads fail, blktrace ignores -w and hangs. End it with SIGTERM, on which
    # it tears its kernel trace down (after SIGKILL the device stays "busy" for any later blktrace).
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, error = proc.communicate(timeout=PROBE_TIMEOUT_S)
        status = f"exit {proc.returncode}"
        ok = proc.returncode == 0 and not any(w in error.lower() for w in ("fail", "not permitted", "error"))
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            _, error = proc.communicate(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, error = proc.communicate()
        status, ok = f"no exit within {PROBE_TIMEOUT_S} s", False
    if ok:
        return None
    for dev in devices:  # belt and braces: no half set-up trace may stay on the device
        subprocess.run([blktrace, "-k", "-d", f"/dev/{dev}"], capture_output=True)
    error = error.strip()
    if mounted_here:  # leave the host as we found it
        subprocess.run(["umount", str(DEBUGFS)], capture_output=True)
    return f"blktrace failed: {error.splitlines()[0] if error else status}"


def blktrace_command(devices: list[str], raw_dir: Path) -> list[str]:
    return ["blktrace", "-D", str(raw_dir), "-o", "trace"] + [a for d in devices for a in ("-d", f"/dev/{d}")]


def blkparse_to_text(raw_dir: Path, dest: Path, fmt: str) -> None:
    with open(dest, "w") as out:
        subprocess.run(["blkparse", "-q", "-D", str(raw_dir), "-i", "trace", "-a", "issue", "-a", "complete",
                        "-f", fmt], stdout=out, stderr=subprocess.PIPE, check=True, text=True)


# --- tracefs instance --------------------------------------------------------------------------

def ensure_tracefs() -> Path:
    """tracefs is not mounted on a fresh machine; mounting it is harmless and stays."""
    if not (TRACEFS / "instances").is_dir():
        _mount("tracefs", TRACEFS)
    return TRACEFS


def device_filter(dev_numbers: list[tuple[int, int]]) -> str:
    """Tracepoint filter on the kernel dev_t layout (MAJOR << 20 | MINOR)."""
    return " || ".join(f"dev == {(major << 20) | minor}" for major, minor in dev_numbers)


def create_instance(name: str, dev_numbers: list[tuple[int, int]], buffer_kb: int) -> Path:
    instance = ensure_tracefs() / "instances" / name
    if instance.exists():  # left over by a crashed stop of the same name: start clean
        remove_instance(instance)
    instance.mkdir()
    try:
        (instance / "tracing_on").write_text("0")
        # CLOCK_MONOTONIC, so one offset converts to wall-clock (time.time() - time.monotonic()).
        (instance / "trace_clock").write_text("mono")
        (instance / "buffer_size_kb").write_text(str(buffer_kb))
        flt = device_filter(dev_numbers)
        for event in EVENTS:
            (instance / "events/block" / event / "filter").write_text(flt)
            (instance / "events/block" / event / "enable").write_text("1")
        (instance / "tracing_on").write_text("1")
    except OSError:
        remove_instance(instance)
        raise
    return instance


def clock_offset(instance: Path | None = None, tries: int = 5) -> dict[str, float]:
    """wall - monotonic seconds, from the tightest of a few bracketed readings. With an
    instance, also writes a trace_marker carrying both clocks, so the raw trace can be checked."""
    best = None
    for _ in range(tries):
        wall0 = time.time()
        mono = time.monotonic()
        wall1 = time.time()
        if best is None or wall1 - wall0 < best[2]:
            best = ((wall0 + wall1) / 2, mono, wall1 - wall0)
    wall, mono, spread = best
    if instance is not None:
        (instance / "trace_marker").write_text(f"spillway-clock wall={wall:.6f} mono={mono:.6f}\n")
    return {"wall": wall, "mono": mono, "wall_minus_mono_s": wall - mono, "uncertainty_s": spread}


def instance_stats(instance: Path) -> dict[str, dict[str, float]]:
    """Per-CPU ring buffer counters (overrun = events overwritten before they were read)."""
    stats = {}
    for cpu_dir in sorted((instance / "per_cpu").glob("cpu*")):
        values = {}
        for line in (cpu_dir / "stats").read_text().splitlines():
            key, _, value = line.partition(":")
            try:
                values[key.strip().replace(" ", "_")] = float(value.split()[0])
            except (ValueError, IndexError):
                continue
        stats[cpu_dir.name] = values
    return stats


def wait_drained(instance: Path, timeout: float) -> bool:
    """True once no CPU buffer holds unread events (the reader took them all)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(cpu.get("entries", 0) for cpu in instance_stats(instance).values()) == 0:
            return True
        time.sleep(0.05)
    return False


def disable_instance(instance: Path) -> None:
    """Stop recording; trace_pipe readers then get EOF once the buffer is drained."""
    (instance / "tracing_on").write_text("0")


def remove_instance(instance: Path) -> None:
    if not instance.exists():
        return
    (instance / "tracing_on").write_text("0")
    for event in EVENTS:
        enable = instance / "events/block" / event / "enable"
        if enable.exists():
            enable.write_text("0")
    os.rmdir(instance)  # fails with EBUSY while a reader still holds trace_pipe open
