"""The benchmarks run end to end on tiny inputs and print their figures (speed is not checked here)."""
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_eventlog_benchmark_prints_throughput_memory_and_speedup():
    out = run("experiments.benchmarks.eventlog_parsing", "--size-mb", "3")
    for build in ("parser", "baseline"):
        assert re.search(rf"{build}: +[\d.]+ s \( *[\d.]+ s CPU\) +[\d.]+ MB/s +peak RSS +\d+ MB", out), out
    assert re.search(r"speedup: [\d.]+x", out) and "same stage sums: yes" in out, out


def test_blocktrace_benchmark_prints_requests_per_second():
    out = run("experiments.benchmarks.blocktrace_parsing", "--events", "20000", "--text-events", "20000")
    assert len(re.findall(r"[\d,]+ requests/s", out)) == 4 and re.search(r"peak RSS +\d+ MB", out), out
    assert "blk tracer text:" in out, out
