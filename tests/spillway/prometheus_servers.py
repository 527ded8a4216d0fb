"""Real Prometheus, Pushgateway and node_exporter (Debian packages) as plain processes on free loopback
ports with their data in a temporary folder: what the monitoring role runs on the controller, for tests."""
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

SCRAPE_INTERVAL_S = 1
BINARIES = ("prometheus", "prometheus-pushgateway", "prometheus-node-exporter")


def binaries_present():
    return all(shutil.which(b) for b in BINARIES)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def wait_until(check, timeout_s=30, what="the condition"):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            result = check()
            if result:
                return result
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout_s} s waiting for {what}")
        time.sleep(0.3)


@contextmanager
def _process(command, log: Path, ready_url):
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: proc.poll() is None and get(ready_url), 30, f"{command[0]} ({log})")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Servers:
    prometheus_url: str
    pushgateway_url: str
    node_exporter_url: str

    def query(self, expr):
        answer = json.loads(get(f"{self.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def wait_for(self, expr, timeout_s=30):
        """The instant result of `expr` once it is not empty (the next scrapes need a moment)."""
        return wait_until(lambda: self.query(expr), timeout_s, f"Prometheus to return {expr}")


@contextmanager
def running(work: Path, node="node1", cluster="test", textfile_dir: Path | None = None):
    """Pushgateway, node_exporter (reading *.prom files in `textfile_dir`, as the monitoring role's
    spillway_disk_info) and a Prometheus scraping both every second with the contract's labels."""
    work.mkdir(parents=True, exist_ok=True)
    textfile_dir = textfile_dir or work / "textfile"
    textfile_dir.mkdir(exist_ok=True)
    ports = {name: free_port() for name in ("prometheus", "pushgateway", "node")}
    config = {
        "global": {"scrape_interval": f"{SCRAPE_INTERVAL_S}s", "evaluation_interval": f"{SCRAPE_INTERVAL_S}s"},
        "scrape_configs": [
            {"job_name": "pushgateway", "honor_labels": True,
             "static_configs": [{"targets": [f"127.0.0.1:{ports['pushgateway']}"],
                                 "labels": {"cluster": cluster, "node": node}}]},
            {"job_name": "node",
             "static_configs": [{"targets": [f"127.0.0.1:{ports['node']}"],
                                 "labels": {"cluster": cluster, "node": node}}]},
        ]}
    (work / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    with ExitStack() as stack:
        stack.enter_context(_process(
            # Debian's build persists to /var/lib/prometheus/pushgateway.data by default: every test's pushes
            # would come back in the next test's Pushgateway
            ["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{ports['pushgateway']}",
             f"--persistence.file={work / 'pushgateway.data'}"],
            work / "pushgateway.log", f"http://127.0.0.1:{ports['pushgateway']}/-/ready"))
        stack.enter_context(_process(
            ["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{ports['node']}",
             "--collector.diskstats.device-exclude=^(ram|fd|zram)[0-9]+$",
             f"--collector.textfile.directory={textfile_dir}"],
            work / "node_exporter.log", f"http://127.0.0.1:{ports['node']}/metrics"))
        stack.enter_context(_process(
            ["prometheus", f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'data'}",
             f"--web.listen-address=127.0.0.1:{ports['prometheus']}"],
            work / "prometheus.log", f"http://127.0.0.1:{ports['prometheus']}/-/ready"))
        yield Servers(f"http://127.0.0.1:{ports['prometheus']}", f"http://127.0.0.1:{ports['pushgateway']}",
                      f"http://127.0.0.1:{ports['node']}")
