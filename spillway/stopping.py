"""Any stop is a clean stop: SIGTERM and SIGHUP end a bench the way Ctrl-C does.

A CI job's time limit, `timeout`, a scheduler or a closed terminal send SIGTERM or SIGHUP, often to the whole process
group and then again through `make`. The first one becomes a KeyboardInterrupt in the bench's main thread, so it
takes the Ctrl-C path (collectors stopped and fetched, run marked interrupted, report written, resumable); later ones
are ignored, so that the clean-up they would interrupt can finish (a SIGKILL still ends everything).
"""
import signal
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class StopSignals:
    """Which signal stopped the bench: `received` is its name (SIGINT for Ctrl-C), None while none has."""

    def __init__(self):
        self.received = None

    def _stop(self, signum, _frame):
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        self.received = signal.Signals(signum).name
        raise KeyboardInterrupt(self.received)

    @property
    def name(self):
        """The signal behind a KeyboardInterrupt: one of ours, else Ctrl-C's."""
        return self.received or "SIGINT"


@contextmanager
def stop_signals_interrupt():
    """Within: SIGTERM and SIGHUP raise KeyboardInterrupt once, and so does SIGINT even when the bench was started
    with it ignored (a background job of a shell without job control is: `kill -INT` would not stop it); the handlers
    before are restored after."""
    stops = StopSignals()
    before = {sig: signal.getsignal(sig) for sig in (*STOP_SIGNALS, signal.SIGINT)}
    for sig in STOP_SIGNALS:
        signal.signal(sig, stops._stop)
    if before[signal.SIGINT] == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield stops
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
