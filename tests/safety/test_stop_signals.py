"""Any stop is a clean stop: SIGTERM and SIGHUP take the Ctrl-C path once, and a second one cannot cut the clean-up
short (spillway/stopping.py). The live bench stopped by SIGTERM is in tests/integration/test_faults.py."""
import subprocess
import sys

import pytest

from spillway import REPO

PROGRAM = """
import os, signal, sys, time
from spillway.stopping import stop_signals_interrupt
with stop_signals_interrupt() as stops:
    try:
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
        time.sleep(5)
        print("not interrupted")
    except KeyboardInterrupt:
        # the clean-up: a second stop signal (make passing on timeout's) must not interrupt it
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.2)
        print(f"stopped by {stops.name}, clean-up finished")
print("handler restored:", signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
"""


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_interrupts_once_and_the_clean_up_finishes(signal_name):
    result = subprocess.run([sys.executable, "-c", PROGRAM, signal_name], cwd=REPO, capture_output=True, text=True,
                            timeout=30)
    assert result.stdout.splitlines() == [f"stopped by {signal_name}, clean-up finished", "handler restored: True"], \
        result.stdout + result.stderr
