"""Workload manifests: every shipped one is valid, scales resolve, lists sweep, bad values are named."""
import pytest

from spillway import workloads
from spillway.workloads import WorkloadError


@pytest.mark.parametrize("name", workloads.available())
def test_shipped_manifests_validate_and_resolve_every_scale(name):
    wl = workloads.load(name)
    assert "huge" not in wl.manifest["parameters"]  # never a default
    for scale in wl.scales:
        instances = list(wl.instances(scale))
        assert instances
        for _, params in instances:
            assert not any(isinstance(v, list) for v in params.values())
            assert any(wl.commands(step, params) for step in workloads.STEPS)


def test_list_valued_parameter_is_a_sweep():
    wl = workloads.load("terasort")
    ids = [wid for wid, _ in wl.instances("tiny")]
    assert ids == ["terasort-mapreduce", "terasort-spark"]
    assert [p["engine"] for _, p in wl.instances("tiny", {"engine": "spark"})] == ["spark"]


def test_scale_overrides_defaults():
    wl = workloads.load("terasort")
    assert wl.parameters("tiny")["rows"] == 2_000_000
    assert wl.parameters("small")["rows"] == 100_000_000


def test_unknown_workload_lists_valid_names():
    with pytest.raises(WorkloadError, match="unknown workload 'nope'.*terasort"):
        workloads.load("nope")


def test_unknown_scale_lists_the_profiles():
    with pytest.raises(WorkloadError, match="no scale 'huge'.*tiny, small, large"):
        workloads.load("fio-sweep").parameters("huge")


@pytest.mark.parametrize("override, message", [
    ({"rows": 10}, "below the minimum"),
    ({"rows": "many"}, "not of type int"),
    ({"engine": "flink"}, "not one of"),
])
def test_bad_parameter_values_are_refused(override, message):
    with pytest.raises(WorkloadError, match=message):
        workloads.load("terasort").parameters("tiny", override)


def test_parse_list_defaults_when_empty():
    assert workloads.parse_list("", ("a", "b")) == ["a", "b"]
    assert workloads.parse_list(" tpch, kmeans ", ()) == ["tpch", "kmeans"]
