"""How the analysis parsers' throughput benchmarks (eventlog_parsing, blocktrace_parsing) measure: they print figures,
they assert nothing.

Each measured build runs in a child process of its own, so peak RSS figures do not mix.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

MB = 1 << 20
REPO = Path(__file__).resolve().parents[2]


def measure_here(build: Callable[[], int]) -> None:
    """Run `build` (returns a row count) and print {seconds, cpu_seconds, peak_rss_bytes, rows} as JSON."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    rows = build()
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "peak_rss_bytes": after.ru_maxrss * 1024,  # KiB
                      "rows": rows}))


def measure_in_child(module: str, *args: str) -> dict:
    """Run `python -m <module> --measure <args>` and return its figures."""
    proc = subprocess.run([sys.executable, "-m", module, "--measure", *args], capture_output=True, text=True,
                          cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"{module} --measure {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def scratch_dir() -> str | None:
    """Where to build benchmark inputs: RAM-backed /dev/shm when there is one, so the figures are the
    parser's and not the disk's (this machine's disks may be throttled by a running bench)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() else None
