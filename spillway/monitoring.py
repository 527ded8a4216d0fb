"""The bench's side of live monitoring (docs/monitoring-contract: Prometheus + Pushgateway on the controller).

Workload start/end markers go to the Pushgateway, each node exporter is checked before a workload, and
after it the Prometheus series of every dashboard query over the workload's window are archived into
results/<run>/raw/prometheus/<workload-id>.json, so a run directory stays readable offline.

Monitoring never stops a bench: disabled, unreachable or half-up, each problem is said once on the
console and recorded in the workload's manifest entry (`monitoring`: archived, gaps, warnings).
Only urllib: the harness adds no dependency for this.
"""
import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from run_layout import RAW, writing

HTTP_TIMEOUT_S = 5
DEFAULT_SCRAPE_INTERVAL_S = 2
# query_range returns at most 11,000 points per series; 500 keeps archives small and plots smooth.
MAX_POINTS = 500
WORKLOAD_JOB = "spillway_workload"


class MonitoringUnavailable(Exception):
    """Prometheus or the Pushgateway did not answer as expected; the message says which and why."""


def _http(url, data=None, method="GET"):
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "text/plain; version=0.0.4"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            return response.read()
    except urllib.error.HTTPError as err:
        detail = err.read().decode(errors="replace").strip()[:300]
        raise MonitoringUnavailable(f"{method} {url}: HTTP {err.code} {detail}") from None
    except (urllib.error.URLError, OSError) as err:
        raise MonitoringUnavailable(f"{method} {url}: {getattr(err, 'reason', err)}") from None


def grouping_path(job, **labels):
    """/metrics/job/<job>/<label>/<value>...; values with '/' (or empty) use the Pushgateway's base64 form."""
    parts = ["metrics", "job", job]
    for name, value in labels.items():
        value = str(value)
        if "/" in value or not value:
            parts += [f"{name}@base64", base64.urlsafe_b64encode(value.encode()).decode() or "="]
        else:
            parts += [name, urllib.parse.quote(value, safe="")]
    return "/" + "/".join(parts)


def exposition(samples):
    """Prometheus text format of [(metric, {label: value}, number)], every metric a gauge."""
    lines, typed = [], set()
    for metric, labels, value in samples:
        if metric not in typed:
            lines.append(f"# TYPE {metric} gauge")
            typed.add(metric)
        rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
        lines.append(f"{metric}{{{rendered}}} {value!r}")
    return ("\n".join(lines) + "\n").encode()


def _escape(value):
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def archive_path(run_dir, workload_id):
    return Path(run_dir) / RAW / "prometheus" / f"{workload_id}.json"


def panel_queries():
    """(id, expr, unit) of every dashboard panel query, each expr rendered with match-all variables."""
    from dashboards import queries  # the dashboards package is the one place panel queries are written

    found = []
    for query in _query_objects(queries):
        get = query.get if isinstance(query, dict) else lambda name, q=query: getattr(q, name, None)
        found.append((get("id"), queries.render(get("expr")), get("unit") or ""))
    return found


def _query_objects(module):
    for name in ("QUERIES", "PANEL_QUERIES", "queries"):
        value = getattr(module, name, None)
        if value is not None and not callable(value):
            return list(value.values()) if isinstance(value, dict) else list(value)
    if callable(getattr(module, "all_queries", None)):
        return list(module.all_queries())
    raise MonitoringUnavailable("dashboards.queries defines no QUERIES list")


@dataclass
class Monitoring:
    """The cluster's monitoring endpoints (from monitoring.json) and what went wrong with them so far."""
    prometheus_url: str | None = None
    pushgateway_url: str | None = None
    node_exporters: dict = field(default_factory=dict)
    scrape_interval_s: float = DEFAULT_SCRAPE_INTERVAL_S
    disabled_reason: str | None = None
    said: set = field(default_factory=set)  # warnings already printed: one line each per bench

    @classmethod
    def load(cls, inventory, spillway_root, run_dir=None):
        """From the inventory's spillway_monitoring and monitoring.json: the copy the facts playbook fetched
        into raw/<controller>/ when there is one, else the local controller's {spillway_root}/monitoring.json."""
        settings = inventory.variables.get("spillway_monitoring") or {}
        interval = float(settings.get("scrape_interval_s", DEFAULT_SCRAPE_INTERVAL_S))
        if not settings.get("enabled", True):
            return cls(scrape_interval_s=interval, disabled_reason="disabled in the inventory (spillway_monitoring)")
        controller = (inventory.groups.get("controller") or [None])[0]
        candidates = [Path(run_dir) / RAW / str(controller) / "monitoring.json"] if run_dir else []
        if inventory.all_local:
            candidates.append(Path(spillway_root) / "monitoring.json")
        for path in candidates:
            if path.exists():
                try:
                    endpoints = json.loads(path.read_text())
                except ValueError as err:
                    return cls(scrape_interval_s=interval, disabled_reason=f"{path} is unreadable: {err}")
                return cls(prometheus_url=(endpoints.get("prometheus_url") or "").rstrip("/") or None,
                           pushgateway_url=(endpoints.get("pushgateway_url") or "").rstrip("/") or None,
                           node_exporters=endpoints.get("node_exporters") or {},
                           scrape_interval_s=float(endpoints.get("scrape_interval_s", interval)))
        return cls(scrape_interval_s=interval, disabled_reason=(
            f"no monitoring.json ({', '.join(map(str, candidates)) or 'remote controller, not fetched'}): "
            f"the monitoring role has not run"))

    @property
    def enabled(self):
        return self.disabled_reason is None

    def describe(self):
        """One line for the bench's start: where to watch it live, or why monitoring is off."""
        if not self.enabled:
            self.said.add("off")  # said here once; workloads only record it
            return f"off: {self.disabled_reason}"
        return f"Prometheus {self.prometheus_url}, Pushgateway {self.pushgateway_url}"

    def warn(self, kind, message, record):
        """Record a warning for the workload; print one line per kind of problem in the whole bench."""
        record.setdefault("warnings", []).append(message)
        if kind not in self.said:
            self.said.add(kind)
            print(f"   monitoring: {message} (the bench goes on)", flush=True)

    # -- markers ---------------------------------------------------------------------------------
    def workload_markers(self, run_id, workload_id, workload, start, end=None, status=None):
        """PUT the workload's group: start and running=1, or at the end start, end(status) and running=0.
        A PUT replaces the group, so the end push repeats the start."""
        labels = {"workload": workload}
        samples = [("spillway_workload_start_timestamp_seconds", labels, float(start)),
                   ("spillway_workload_running", labels, 0 if end is not None else 1)]
        if end is not None:
            samples.append(("spillway_workload_end_timestamp_seconds", {**labels, "status": status}, float(end)))
        path = grouping_path(WORKLOAD_JOB, run_id=run_id, workload_id=workload_id)
        _http(self.pushgateway_url + path, data=exposition(samples), method="PUT")

    # -- exporters -------------------------------------------------------------------------------
    def exporter_gaps(self):
        """[{node, url, error}] of the node exporters that do not answer /metrics."""
        gaps = []
        for node, url in sorted(self.node_exporters.items()):
            try:
                _http(url.rstrip("/") + "/metrics")
            except MonitoringUnavailable as err:
                gaps.append({"node": node, "url": url, "error": str(err)})
        return gaps

    # -- archive ---------------------------------------------------------------------------------
    def query_range(self, expr, start, end, step):
        query = urllib.parse.urlencode({"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                        "step": f"{step:g}"})
        answer = json.loads(_http(f"{self.prometheus_url}/api/v1/query_range?{query}"))
        if answer.get("status") != "success":
            raise MonitoringUnavailable(f"query {expr!r}: {answer.get('errorType')}: {answer.get('error')}")
        return answer["data"]["result"]

    def step_s(self, start, end):
        return max(self.scrape_interval_s, (end - start) / MAX_POINTS)

    def archive(self, run_dir, workload_id, start, end, queries):
        """Write raw/prometheus/<workload-id>.json: each (id, expr, unit) of `queries` (panel_queries())
        over [start, end]; returns its path and the queries that failed ([] when all answered)."""
        step = self.step_s(start, end)
        out = {"start": start, "end": end, "step_s": step, "prometheus_url": self.prometheus_url, "queries": {}}
        failed = []
        for query_id, expr, unit in queries:
            entry = out["queries"][query_id] = {"expr": expr, "unit": unit, "result": []}
            try:
                entry["result"] = self.query_range(expr, start, end, step)
            except MonitoringUnavailable as err:
                entry["error"] = str(err)
                failed.append(f"{query_id}: {err}")
        path = archive_path(run_dir, workload_id)
        writing.write_text(path, json.dumps(out, indent=1) + "\n", run_dir)
        return path, failed


class WorkloadMonitor:
    """What the runner does around one workload; every call is safe whatever state monitoring is in."""

    def __init__(self, monitoring, run_id, run_dir, record, queries=panel_queries):
        self.monitoring, self.run_id, self.run_dir = monitoring, run_id, run_dir
        self.record, self.queries = record, queries  # queries: () -> [(id, expr, unit)]
        self.state = record["monitoring"] = {"archived": False, "gaps": [], "warnings": []}
        self.start = None
        self.ended = False  # end() is called once the steps went well, and again by a runner interrupted after that

    def begin(self):
        self.start = time.time()
        if not self.monitoring.enabled:
            self.monitoring.warn("off", f"off: {self.monitoring.disabled_reason}", self.state)
            return
        self.state["gaps"] = self.monitoring.exporter_gaps()
        for gap in self.state["gaps"]:
            self.monitoring.warn(f"exporter {gap['node']}", f"node exporter of {gap['node']} is down: {gap['error']}",
                                    self.state)
        self._push()

    def end(self, status):
        end = time.time()
        if not self.monitoring.enabled or self.start is None or self.ended:
            return
        self.ended = True
        self._push(end, status)
        try:
            queries = self.queries()
            path, failed = self.monitoring.archive(self.run_dir, self.record["id"], self.start, end, queries)
        except Exception as err:  # noqa: BLE001 - an archive problem (even a missing dashboards package) is a warning
            self.monitoring.warn("archive", f"no Prometheus archive: {type(err).__name__}: {err}", self.state)
            return
        # archived: the file holds series of at least one query (all failing means Prometheus is down)
        self.state["archived"] = len(failed) < len(queries)
        self.state["archive"] = str(path.relative_to(self.run_dir))
        if failed:
            self.monitoring.warn("archive", f"{len(failed)} of {len(queries)} archive queries failed, first: "
                                 f"{failed[0]}", self.state)

    def _push(self, end=None, status=None):
        try:
            self.monitoring.workload_markers(self.run_id, self.record["id"], self.record["workload"],
                                             self.start, end, status)
        except MonitoringUnavailable as err:
            self.monitoring.warn("push", f"workload marker not pushed: {err}", self.state)
