"""What a bench prints while it runs: progress lines, and each step's log echoed from the host running it."""
import queue
import re
import shlex
import subprocess
import threading
import time
from pathlib import Path

HEARTBEAT_S = 30
# Lines of a step log worth echoing while it runs: not the JVMs' log4j chatter, but job progress.
LOG4J_LINE = re.compile(r"^\d{2,4}[-/]\d\d[-/]\d\d \d\d:\d\d:\d\d")
JOB_PROGRESS = re.compile(r"map \d+% reduce \d+%|Job \S+ completed")


def say(message):
    print(message, flush=True)


def indent(text):
    return "\n".join("    " + line for line in text.splitlines())


class Tail(threading.Thread):
    """Echo the new lines of a step log as the step writes them, and a heartbeat while nothing is said. The log is
    read where it is written: a file on this machine, or over SSH (`ssh_argv`) on the host running the step."""

    def __init__(self, path, label, ssh_argv=None):
        super().__init__(daemon=True)
        self.path, self.label, self.ssh_argv = Path(path) if path else None, label, ssh_argv
        self.stopped = threading.Event()
        self.remote = None

    def run(self):
        start = last = time.monotonic()
        new_lines = self._remote_lines() if self.ssh_argv and self.path else self._local_lines()
        while not self.stopped.wait(1.0):
            for line in new_lines():
                # skip JVM log lines (but not job progress) and indented detail such as counter dumps
                if line.strip() and not line[0].isspace() and (
                        not LOG4J_LINE.match(line) or JOB_PROGRESS.search(line)):
                    say(f"      {line.strip()[:160]}")
                    last = time.monotonic()
            if time.monotonic() - last >= HEARTBEAT_S:
                say(f"      ... {self.label}: still running, {time.monotonic() - start:.0f} s")
                last = time.monotonic()

    def _local_lines(self):
        offset = 0

        def read():
            nonlocal offset
            if not (self.path and self.path.exists()):
                return []
            with open(self.path, errors="replace") as f:
                f.seek(offset)
                chunk = f.read()
                offset = f.tell()
            return chunk.splitlines()
        return read

    def _remote_lines(self):
        # The remote tail ends when our end of the connection closes (its stdin reaches EOF): a remote `tail -F`
        # would otherwise outlive the step on the host, since without a terminal it gets no hangup.
        follow = f"tail -n +1 -F -- {shlex.quote(str(self.path))} 2>/dev/null & read -r _; kill $!"
        self.remote = subprocess.Popen([*self.ssh_argv, follow], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True, errors="replace")
        lines = queue.SimpleQueue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.remote.stdout], daemon=True).start()

        def read():
            found = []
            while not lines.empty():
                found.append(lines.get())
            return found
        return read

    def stop(self):
        self.stopped.set()
        self.join()
        if self.remote:
            try:
                self.remote.stdin.close()
                self.remote.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.remote.kill()
                self.remote.wait()
