"""Workload manifests: every shipped one is valid, scales resolve, lists sweep, bad values are named."""
import pytest

from spillway import workloads
from spillway.workloads import WorkloadError


@pytest.mark.parametrize("name", workloads.available())
def test_shipped_manifests_validate_and_resolve_every_scale(name):
    wl = workloads.load(name)
    assert "huge" not in wl.manifest["parameters"]  # never a default
    for scale in wl.scales:
        # parameters without a usable default at this scale (real input paths) are given, as an inventory would
        needed = {k: "/data/input" for k, p in wl.manifest["parameters"].items() if scale in p.get("required_for", [])}
        instances = list(wl.instances(scale, needed))
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


def test_params_text_is_read_as_yaml_per_workload_or_for_all():
    parsed = workloads.parse_params("rows=1000 terasort.engine=[spark] queries=1,3,6 name=")
    assert parsed == {None: {"rows": 1000, "queries": "1,3,6", "name": ""}, "terasort": {"engine": ["spark"]}}
    with pytest.raises(WorkloadError, match="not name=value"):
        workloads.parse_params("rows")


def test_scoped_overrides_win_over_global_ones_and_later_sources_over_earlier():
    wl = workloads.load("terasort")
    inventory = {"terasort": {"rows": 5000}}
    command_line = workloads.parse_params("rows=6000 terasort.maps=3")
    assert workloads.overrides_for(wl, inventory, command_line) == {"rows": 6000, "maps": 3}
    assert workloads.overrides_for(wl, {None: {"k": 3}}) == {}  # a parameter terasort does not have


def test_parameter_required_at_a_scale_names_where_to_set_it(tmp_path, monkeypatch):
    manifest = {
        "name": "needs-input", "description": "d", "framework": "spark",
        "parameters": {"reads": {"type": "str", "default": "", "description": "BAM path",
                                 "required_for": ["small"]}},
        "scales": {"tiny": {"data": "synthetic"}, "small": {"data": "yours"}},
        "steps": {"run": [{"hosts": "controller", "command": "true"}]},
    }
    (tmp_path / "needs-input").mkdir()
    import yaml
    (tmp_path / "needs-input" / "workload.yml").write_text(yaml.safe_dump(manifest))
    monkeypatch.setattr(workloads, "WORKLOADS", tmp_path)
    wl = workloads.load("needs-input")
    assert wl.parameters("tiny")["reads"] == ""
    with pytest.raises(WorkloadError, match=r"spillway_workload_parameters: \{needs-input: \{reads: ...\}\}"):
        wl.parameters("small")
    assert wl.parameters("small", {"reads": "/data/x.bam"})["reads"] == "/data/x.bam"


def test_only_the_fio_sweep_runs_a_command_as_root_and_says_why():
    # Every other command runs as the unprivileged workload user (docs/safety.md "Least privilege").
    as_root = {(name, step): command["needs_root"] for name in workloads.available()
               for step, commands in workloads.load(name).manifest["steps"].items()
               for command in commands if "needs_root" in command}
    assert set(as_root) == {("fio-sweep", "run")}
    assert "raw block device" in as_root["fio-sweep", "run"]


@pytest.mark.parametrize("needs_root, message", [(True, "is not of type 'string'"), ("why", "is too short")])
def test_a_command_that_asks_for_root_without_a_reason_is_refused(tmp_path, monkeypatch, needs_root, message):
    import yaml
    manifest = {"name": "rooted", "description": "d", "framework": "spark", "parameters": {},
                "scales": {"tiny": {"data": "none"}},
                "steps": {"run": [{"hosts": "controller", "command": "true", "needs_root": needs_root}]}}
    (tmp_path / "rooted").mkdir()
    (tmp_path / "rooted" / "workload.yml").write_text(yaml.safe_dump(manifest))
    monkeypatch.setattr(workloads, "WORKLOADS", tmp_path)
    with pytest.raises(WorkloadError, match=f"steps.run.0.needs_root: .*{message}"):
        workloads.load("rooted")
