"""A bench started with SIGINT ignored (a background job of a shell without job control) still stops on SIGINT as on
Ctrl-C, and the disposition it was started with comes back afterwards."""
import subprocess
import sys

from spillway import REPO

PROBE = """
import os, signal
from spillway.stopping import stop_signals_interrupt
signal.signal(signal.SIGINT, signal.SIG_IGN)
try:
    with stop_signals_interrupt() as stops:
        os.kill(os.getpid(), signal.SIGINT)
        signal.pause()
except KeyboardInterrupt:
    print("interrupted", stops.name)
print("after", signal.getsignal(signal.SIGINT) == signal.SIG_IGN)
"""


def test_sigint_stops_a_bench_started_with_it_ignored_and_is_ignored_again_after():
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=10)
    assert result.stdout.split("\n")[:2] == ["interrupted SIGINT", "after True"], result.stdout + result.stderr
