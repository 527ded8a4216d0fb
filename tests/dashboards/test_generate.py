"""The generated dashboards: committed files equal a regeneration, they conform to the Grafana 11.6 dashboard
models of the pinned grafana-foundation-sdk, and every query comes from dashboards/queries.py.

No JSON Schema of Grafana's dashboard is published on a package registry (the PyPI and npm SDKs ship typed
models, @grafana/schema TypeScript types), so the schema check uses the SDK's models, which are generated from
Grafana 11.6's own schema: the JSON is decoded into them, every value is checked against the type the model
declares, and re-encoding must give the same JSON back (an unknown or misspelt key would be dropped).
"""
import enum
import json
import typing

import pytest
from grafana_foundation_sdk.cog import plugins
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import Dashboard

from dashboards import generate, queries

plugins.register_default_plugins()
GRAFANA_11_6_SCHEMA_VERSION = 41
KINDS = list(generate.DASHBOARDS)


def committed(kind):
    return json.loads((generate.GENERATED_DIR / generate.file_name(kind)).read_text())


def test_committed_dashboards_equal_a_regeneration(tmp_path):
    written = generate.write_all(tmp_path)
    assert [p.name for p in written] == ["spillway-io.json", "spillway-cluster.json"]
    for path in written:
        assert path.read_text() == (generate.GENERATED_DIR / path.name).read_text(), \
            f"{path.name} is stale: run .venv/bin/python -m dashboards and commit dashboards/generated/"


def test_generation_is_deterministic():
    assert generate.serialize(generate.build(queries.IO)) == generate.serialize(generate.build(queries.IO))


def _type_problems(value, hint, where):
    """Where `value` (a decoded model or a JSON value) does not have the type the model declares."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, typing.ForwardRef):
        return []
    if hint is typing.Any or hint is object:
        return []
    if origin is typing.Union:
        if value is None and type(None) in args:
            return []
        candidates = [a for a in args if a is not type(None)]
        results = [_type_problems(value, a, where) for a in candidates]
        return [] if any(not r for r in results) else results[0]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list"]
        return [p for i, item in enumerate(value) for p in _type_problems(item, args[0], f"{where}[{i}]")]
    if origin is dict:
        return [] if isinstance(value, dict) else [f"{where}: {value!r} is not an object"]
    if origin is typing.Literal:
        return [] if value in args else [f"{where}: {value!r} not one of {args}"]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return [] if value in {m.value for m in hint} or isinstance(value, hint) else \
            [f"{where}: {value!r} not one of {[m.value for m in hint]}"]
    if hint is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{where}: {value!r} not a number"]
    if hint is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{where}: {value!r} not an integer"]
    if hint in (str, bool):
        return [] if isinstance(value, hint) else [f"{where}: {value!r} is not {hint.__name__}"]
    if isinstance(hint, type):
        if not isinstance(value, hint):
            return [f"{where}: {type(value).__name__} is not {hint.__name__}"]
        return _model_problems(value, where)
    return []


def _model_problems(model, where):
    module = __import__(type(model).__module__, fromlist=["_"])
    hints = typing.get_type_hints(type(model), vars(module))
    return [p for name, hint in hints.items()
            for p in _type_problems(getattr(model, name, None), hint, f"{where}.{name}")]


def validate(document):
    """Problems of a dashboard JSON document against the SDK's Grafana 11.6 models."""
    model = Dashboard.from_json(document)
    problems = _model_problems(model, "dashboard")
    reencoded = json.loads(json.dumps(model, cls=JSONEncoder))
    # The Prometheus annotation options belong to the datasource plugin, not to the core schema.
    stripped = json.loads(json.dumps(document))
    for entry in stripped.get("annotations", {}).get("list", []):
        for key in generate.ANNOTATION_PLUGIN_KEYS:
            entry.pop(key, None)
    if reencoded != stripped:
        problems.append("re-encoding through the models changes the JSON (keys unknown to Grafana 11.6's schema?): "
                        + _first_difference(stripped, reencoded))
    if document.get("schemaVersion") != GRAFANA_11_6_SCHEMA_VERSION:
        problems.append(f"schemaVersion {document.get('schemaVersion')} is not Grafana 11.6's")
    return problems


def _first_difference(expected, actual, where="$"):
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            if expected.get(key, "<missing>") != actual.get(key, "<missing>"):
                return _first_difference(expected.get(key, "<missing>"), actual.get(key, "<missing>"), f"{where}.{key}")
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for i, (e, a) in enumerate(zip(expected, actual)):
            if e != a:
                return _first_difference(e, a, f"{where}[{i}]")
    return f"{where}: {expected!r} != {actual!r}"


@pytest.mark.parametrize("kind", KINDS)
def test_dashboard_conforms_to_grafana_11_6_models(kind):
    assert validate(committed(kind)) == []


def test_validation_flags_an_unknown_key_and_a_wrong_type():
    document = committed(queries.IO)
    document["panels"][1]["gridPos"]["widht"] = 12
    document["refresh"] = 10
    problems = validate(document)
    assert any("widht" in p for p in problems), problems
    assert any("dashboard.refresh" in p for p in problems), problems


def _targets(document):
    return [t for p in document["panels"] for t in p.get("targets", [])]


@pytest.mark.parametrize("kind", KINDS)
def test_every_panel_query_is_defined_once_in_queries(kind):
    document = committed(kind)
    expected = {q.expr: q for q in queries.for_dashboard(kind)}
    exprs = [t["expr"] for t in _targets(document)]
    assert sorted(exprs) == sorted(expected)
    units = {p["title"]: p["fieldConfig"]["defaults"]["unit"] for p in document["panels"] if p["type"] != "row"}
    assert units == {q.title: q.unit for q in expected.values()}
    assert [a["expr"] for a in document["annotations"]["list"]] == [a.expr for a in queries.ANNOTATIONS]
    assert all(a["useValueForTime"] for a in document["annotations"]["list"])


def test_dashboards_are_templated_by_cluster_node_device_and_backend_profile():
    for kind in KINDS:
        names = [v["name"] for v in committed(kind)["templating"]["list"]]
        assert set(names) == {"cluster", "node", "device", "backend", "profile"}
    io_exprs = " ".join(q.expr for q in queries.for_dashboard(queries.IO))
    for variable in queries.VARIABLES:
        assert f"${variable}" in io_exprs


def test_query_ids_are_unique_and_the_io_dashboard_has_the_issue_panels():
    ids = [q.id for q in queries.QUERIES] + [a.id for a in queries.ANNOTATIONS]
    assert len(ids) == len(set(ids))
    assert {"disk_read_bytes", "disk_write_bytes", "disk_read_iops", "disk_write_iops", "disk_read_request_size",
            "disk_read_await", "disk_queue_depth", "disk_utilization", "cpu_iowait",
            "network_receive_bytes"} <= set(queries.by_id())


def test_render_substitutes_variables_and_matches_everything_by_default():
    expr = 'x{cluster=~"$cluster", node=~"$node", device=~"$device"}'
    assert queries.render(expr) == 'x{cluster=~".*", node=~".*", device=~".*"}'
    assert queries.render(expr, node="w1", device="loop5") == 'x{cluster=~".*", node=~"w1", device=~"loop5"}'
    with pytest.raises(ValueError, match="nodes"):
        queries.render(expr, nodes="w1")
    assert "$" not in " ".join(queries.render(q.expr) for q in queries.QUERIES)
