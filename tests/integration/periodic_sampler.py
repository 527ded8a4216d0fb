"""What the live samplers of the default bench share: a daemon thread calling `sample(now)` every `interval_s` until
the `with` block ends (listening_sockets.py, collector_processes.py)."""
from __future__ import annotations

import threading
import time


class PeriodicSampler:
    def __init__(self, interval_s: float):
        self.interval_s = interval_s
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self, now: float) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample(time.monotonic())
            self.samples += 1
            self._stop.wait(self.interval_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
