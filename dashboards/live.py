"""Sends the dashboards' queries to a real Prometheus (the live query test; usable by hand against a cluster)."""
import json
import urllib.parse
import urllib.request
from pathlib import Path

from dashboards import queries


def prometheus_url(spillway_root):
    """The cluster's Prometheus from the monitoring role's state file, or None when monitoring is not provisioned."""
    state = Path(spillway_root) / "monitoring.json"
    return json.loads(state.read_text())["prometheus_url"] if state.is_file() else None


def api(url, endpoint, **params):
    request = urllib.request.Request(f"{url}/api/v1/{endpoint}", data=urllib.parse.urlencode(params).encode())
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.load(response)
    if body["status"] != "success":
        raise RuntimeError(f"{endpoint} {params}: {body}")
    return body["data"]["result"]


def every_query(values=None):
    """(id, rendered expression) of every panel, annotation and template-variable query."""
    values = values or {}
    rendered = [(q.id, queries.render(q.expr, **values)) for q in queries.QUERIES]
    rendered += [(a.id, queries.render(a.expr, **values)) for a in queries.ANNOTATIONS]
    # label_values(metric, label) in Grafana: the label must be present on the metric's series.
    rendered += [(f"variable_{v.name}", f"group by ({v.name}) ({queries.render(v.metric, **values)})")
                 for v in queries.TEMPLATE_VARIABLES]
    return rendered


def empty_queries(url, start, end, step_s, values=None, expressions=None):
    """Queries whose range query over [start, end] or whose instant query (at the last point the range query
    returned) gives no data; a query that Prometheus rejects raises."""
    problems = []
    for query_id, expr in expressions if expressions is not None else every_query(values):
        series = api(url, "query_range", query=expr, start=start, end=end, step=step_s)
        if not series:
            problems.append(f"{query_id}: range query returned nothing: {expr}")
            continue
        last = max(float(point[0]) for s in series for point in s["values"])
        if not api(url, "query", query=expr, time=last):
            problems.append(f"{query_id}: instant query at {last} returned nothing: {expr}")
    return problems
