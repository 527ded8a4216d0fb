"""Every panel, annotation and template-variable query of the dashboards against the local cluster's real
Prometheus, over the window of the tiny bench that test_bench.py ran just before (this module is collected after
it): each returns data as a range query and as an instant query, with the variables matching everything and set
to the cluster's real node, backend, profile and device. A misspelt metric returns nothing and is flagged."""
import json
from datetime import datetime
from pathlib import Path

import pytest

from dashboards import live, queries
from spillway import REPO

pytestmark = pytest.mark.integration
SPILLWAY_ROOT = Path("/var/lib/spillway/local")
STEP_S = 10


@pytest.fixture(scope="module")
def prometheus():
    url = live.prometheus_url(SPILLWAY_ROOT)
    if url is None:
        pytest.skip(f"monitoring is not provisioned on the local cluster (no {SPILLWAY_ROOT}/monitoring.json)")
    return url


@pytest.fixture(scope="module")
def bench_window():
    manifest = json.loads((REPO / "results/latest/manifest.json").read_text())
    assert manifest["cluster"] == "local" and manifest["status"] == "completed", "the tiny bench must run first"
    seconds = [datetime.fromisoformat(manifest[k]).timestamp() for k in ("started_at", "ended_at")]
    return seconds[0], seconds[1]


def real_values():
    storage = json.loads((SPILLWAY_ROOT / "storage.json").read_text())
    backend = storage["placement"]["hdfs"] if "placement" in storage else sorted(storage["backends"])[0]
    info = storage["backends"][backend]
    return {"cluster": "local", "node": "localhost", "backend": backend, "profile": info.get("profile", backend),
            "device": info["device"]}


@pytest.mark.parametrize("values", [{}, "real"], ids=["match-all", "local-values"])
def test_every_dashboard_query_returns_data_during_the_bench(prometheus, bench_window, values):
    values = real_values() if values == "real" else values
    problems = live.empty_queries(prometheus, *bench_window, STEP_S, values)
    assert problems == [], "\n".join(problems)


def test_a_misspelt_metric_is_flagged(prometheus, bench_window):
    good = queries.by_id()["disk_read_bytes"].expr
    typo = good.replace("node_disk_read_bytes_total", "node_disk_read_byte_total")
    problems = live.empty_queries(prometheus, *bench_window, STEP_S,
                                  expressions=[("good", queries.render(good)), ("typo", queries.render(typo))])
    assert [p.split(":")[0] for p in problems] == ["typo"]
