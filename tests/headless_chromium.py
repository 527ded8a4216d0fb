"""Debian's headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages
ended by NUL on the browser's fds 3 and 4), standard library only: the pages' browser tests need no websocket
client and no driver. No network: the page is opened offline, proxied to a closed port and resolving no name."""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path


class BrowserError(RuntimeError):
    pass


def chromium_path() -> str:
    found = shutil.which("chromium")
    if found is None:
        raise BrowserError("chromium is not installed: `make test` installs it (apt-get install chromium); "
                           "by hand: apt-get install -y chromium")
    return found


class HeadlessChromium:
    """One browser, one tab; `evaluate` runs JavaScript in the page, `events` collects what the page reported."""

    def __init__(self, profile_dir: Path, width: int = 1280, height: int = 800):
        # The shell gives Chromium the pipe ends as fds 3 (commands in) and 4 (answers out), as the flag asks.
        self.process = subprocess.Popen(
            ["sh", "-c", 'exec "$@" 3<&0 4>&1 0</dev/null 1>/dev/null', "sh", chromium_path(), "--headless",
             "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
             f"--user-data-dir={profile_dir}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict] = []
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=True)
        self.send("Network.emulateNetworkConditions", session=True, offline=True, latency=0,
                  downloadThroughput=-1, uploadThroughput=-1)
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.process.stdout], [], [], left)[0]:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            if not chunk:
                raise BrowserError(f"chromium closed the pipe (exit {self.process.poll()})")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, session: bool = False, timeout: float = 20, **params) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self.process.stdin.write(json.dumps(message).encode() + b"\0")
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            if "method" in answer:
                self.events.append(answer)

    def wait_for(self, method: str, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event["method"] == method:
                    return event
            seen = len(self.events)
            message = self._read_message(deadline)
            if "method" in message:
                self.events.append(message)

    def open(self, path: Path) -> None:
        """Load the page; `events` then holds what it reported from its first request on."""
        self.events.clear()
        self.send("Page.navigate", session=True, url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str):
        result = self.send("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads the page reported since it was opened."""
        self.evaluate("0")          # flush the events that arrived before now
        found = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails']}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"log: {params['entry'].get('text')} {params['entry'].get('url', '')}")
            elif method == "Network.loadingFailed":
                found.append(f"load failed: {params}")
        return found

    def requested_urls(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e["method"] == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except BrowserError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
