"""Versions as an experiment variable (spillway/versions.py): the releases a cluster installs, a bench's VERSIONS
sweep over them, the manifest's record of each run's versions and the refusal of a workload on a Spark line it does
not support. Only plans are built (nothing provisioned); the inventory is `local`'s, given a second Spark release."""
import dataclasses

import pytest
import yaml

from spillway import inventory, versions
from spillway import workloads as workloads_mod
from spillway.__main__ import main
from spillway.bench.plan import DEFAULT_WORKLOADS, new_plan
from spillway.bench.workload_run import versions_of
from spillway.workloads import WorkloadError, load as load_workload

ROLE_DEFAULTS = versions.VERSIONS_FILE
# What versions_of reads of a run's manifest: the controller's facts.
MANIFEST = {"hosts": {"localhost": {"versions": {"java": 'openjdk version "17.0.15" 2025-04-15'}}}}


@pytest.fixture
def two_lines(monkeypatch):
    """`local` with Spark 3.5.6 (its default line) and 4.2.0 installed, for every bench built in the test."""
    local = inventory.load("local")
    both = dataclasses.replace(local, variables={**local.variables,
                                                 "spillway_versions": {"spark": ["3.5.6", "4.2.0"], "hadoop": "3.4.2"}})
    monkeypatch.setattr(inventory, "load", lambda name: both)
    return both


@pytest.fixture
def one_line(monkeypatch):
    """`local` as an inventory without spillway_versions: role common's default, Spark 3.5.6 alone."""
    local = inventory.load("local")
    alone = dataclasses.replace(local, variables={k: v for k, v in local.variables.items() if k != "spillway_versions"})
    monkeypatch.setattr(inventory, "load", lambda name: alone)
    return alone


def bench(**kwargs):
    args = {"cluster": "local", "workload_names": ["terasort"], "scale": "tiny", "repeat": 1,
            "params": "engine=spark", **kwargs}
    return new_plan(**args)


def measured(plan):
    """The plan's measured runs: the warm-up after the provisioning (docs/compare.md) is not what these tests are about."""
    return [i for i in plan.instances if not i.warmup]


def test_the_releases_spillway_installs_are_the_roles_and_every_spark_release_says_what_it_needs():
    defaults = yaml.safe_load(ROLE_DEFAULTS.read_text())
    assert list(versions.spark_releases()) == list(defaults["spark_releases"]) == ["3.5.6", "4.2.0"]
    for release, needs in versions.spark_releases().items():
        assert needs["scala"] == "2.13" and needs["java_min"] >= 17, release
        assert "spark-core" in needs["modules"] and "spark-yarn" in needs["modules"], release
    # the default: the 3.5 line alone, as every inventory had before spillway_versions
    assert defaults["spillway_versions"] == {"spark": ["3.5.6"], "hadoop": "3.4.2"}


def test_the_default_cluster_installs_spark_4_beside_its_default_line():
    assert versions.installed(inventory.load("local")) == {"spark": ["3.5.6", "4.2.0"], "hadoop": "3.4.2"}


def test_an_inventory_without_spillway_versions_installs_the_defaults(one_line):
    assert versions.installed(one_line) == {"spark": ["3.5.6"], "hadoop": "3.4.2"}


def test_versions_sweeps_spark_each_run_named_by_its_release_in_turn_within_a_repetition(two_lines):
    plan = bench(versions="spark=3.5.6,4.2.0", repeat=2)
    # each repetition runs every release in turn: a drift of the host over the bench falls on both
    assert [(i.id, i.spark_version, i.repetition) for i in plan.instances] == [
        ("terasort-spark3.5.6-warmup", "3.5.6", 0), ("terasort-spark4.2.0-warmup", "4.2.0", 0),
        ("terasort-spark3.5.6-r1", "3.5.6", 1), ("terasort-spark4.2.0-r1", "4.2.0", 1),
        ("terasort-spark3.5.6-r2", "3.5.6", 2), ("terasort-spark4.2.0-r2", "4.2.0", 2)]
    assert plan.spark_versions == ["3.5.6", "4.2.0"]


def test_without_versions_each_run_takes_the_default_line_and_keeps_its_id(two_lines):
    plan = bench()
    assert [(i.id, i.spark_version) for i in measured(plan)] == [("terasort", None)]
    assert versions_of(two_lines, MANIFEST, measured(plan)[0]) == {
        "spark": "3.5.6", "scala": "2.13", "hadoop": "3.4.2", "hadoop_examples": "3.4.2",
        "java": 'openjdk version "17.0.15" 2025-04-15'}


def test_a_runs_manifest_record_names_its_own_spark_release(two_lines):
    plan = bench(versions="spark=4.2.0")
    record = versions_of(two_lines, MANIFEST, plan.instances[0])
    assert record["spark"] == "4.2.0" and record["hadoop"] == "3.4.2" and record["scala"] == "2.13"


@pytest.mark.parametrize("text, message", [
    ("spark=4.2.0", r"Spark 4.2.0 is not installed on cluster 'local' \(it installs 3.5.6\): add 4.2.0 to "
                    r"spillway_versions.spark in inventories/local/group_vars/all.yml"),
    ("spark=3.5.6,9.9.9", r"Spark 9.9.9 is not installed .* Spillway installs Spark 3.5.6, 4.2.0"),
    ("hadoop=3.5.0", r"hadoop is one release per cluster .* set spillway_versions.hadoop in the inventory"),
    ("scala=2.13", r"'scala' is no component a bench sweeps; it sweeps spark"),
    ("3.5.6,4.2.0", r"is not 'spark=<version>,<version>'"),
    ("spark=3.5.6,3.5.6", r"names a release more than once"),
])
def test_bad_versions_are_refused_naming_the_fix(text, message, one_line):
    with pytest.raises(WorkloadError, match=message):
        bench(versions=text)


def test_a_workload_on_a_spark_line_it_does_not_support_is_refused_naming_the_ones_it_does(two_lines):
    assert versions.supported_lines(load_workload("gatk4")) == ["3.5"]
    assert versions.supported_lines(load_workload("terasort")) is None
    with pytest.raises(WorkloadError, match=r"gatk4 does not run on Spark 4.2.0: it supports Spark 3.5 only "
                                            r"\(GATK 4.6.2.0 is built on spark-mllib_2.13 3.5.0.*leave gatk4 out"):
        bench(workload_names=["terasort", "gatk4"], params="", versions="spark=3.5.6,4.2.0")
    assert {i.workload.name for i in bench(workload_names=["gatk4"], params="", versions="spark=3.5.6").instances} \
        == {"gatk4"}


def test_a_default_line_a_workload_does_not_support_refuses_it_too(monkeypatch):
    local = inventory.load("local")
    spark4_first = dataclasses.replace(local, variables={
        **local.variables, "spillway_versions": {"spark": ["4.2.0", "3.5.6"], "hadoop": "3.4.2"}})
    monkeypatch.setattr(inventory, "load", lambda name: spark4_first)
    with pytest.raises(WorkloadError, match="gatk4 does not run on Spark 4.2.0"):
        new_plan("local", list(DEFAULT_WORKLOADS), "tiny", 1)


def test_the_dry_run_shows_the_installed_releases_and_each_runs_own(two_lines, capsys):
    assert main(["bench", "--dry-run", "--workloads", "terasort", "--params", "engine=spark",
                 "--versions", "spark=3.5.6,4.2.0"]) == 0
    out = capsys.readouterr().out
    assert "versions: Spark 3.5.6, 4.2.0 installed (default line 3.5.6), Hadoop 3.4.2" in out
    assert "terasort-spark4.2.0: prepare, run, validate (hdfs=hdd, local=ssd, Spark 4.2.0)" in out
    # naming the releases is naming what to run: no storage probe added
    assert "storage probe" not in out


def test_a_refused_sweep_exits_2_with_the_message(capsys, one_line):
    assert main(["bench", "--dry-run", "--versions", "spark=4.2.0"]) == 2
    assert "error: VERSIONS: Spark 4.2.0 is not installed on cluster 'local'" in capsys.readouterr().err


def test_the_inventory_schema_names_the_releases_spillway_installs(tmp_path, monkeypatch):
    problems = inventory_problems({"spark": ["3.5.6", "4.1.1"], "hadoop": "3.4.2"})
    assert any("spillway_versions.spark.1: '4.1.1' is not one of ['3.5.6', '4.2.0']" in p for p in problems), problems
    problems = inventory_problems({"spark": ["3.5.6"]})
    assert any("spillway_versions: 'hadoop' is a required property" in p for p in problems), problems
    problems = inventory_problems({"spark": ["3.5.6"], "hadoop": "3.3.6"})
    assert any("spillway_versions.hadoop: '3.3.6' is not one of ['3.4.2', '3.5.0']" in p for p in problems), problems
    assert inventory_problems({"spark": ["3.5.6"], "hadoop": "3.5.0"}) == []


def inventory_problems(spillway_versions):
    import jsonschema
    local = inventory.load("local")
    validator = jsonschema.Draft202012Validator(inventory._schema())
    variables = {**local.variables, "spillway_versions": spillway_versions}
    return [f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in validator.iter_errors(variables)]


def test_a_versions_sweep_runs_a_point_without_spark_once_and_each_spark_point_per_release(two_lines):
    """TeraSort on MapReduce, DFSIO and fio run no Spark (their workload.yml's runs_spark): another Spark release
    would measure them again, so VERSIONS runs them once per repetition (a round of the suite), under their plain
    id."""
    plan = bench(workload_names=["terasort", "dfsio", "fio-sweep"], params="", versions="spark=3.5.6,4.2.0", repeat=2,
                 warmup=False)
    assert [(i.id, i.spark_version, i.runs_spark) for i in plan.instances] == [
        ("terasort-mapreduce-r1", None, False),
        ("terasort-spark-spark3.5.6-r1", "3.5.6", True), ("terasort-spark-spark4.2.0-r1", "4.2.0", True),
        ("dfsio-write-r1", None, False), ("dfsio-read-r1", None, False), ("fio-sweep-r1", None, False),
        ("terasort-mapreduce-r2", None, False),
        ("terasort-spark-spark3.5.6-r2", "3.5.6", True), ("terasort-spark-spark4.2.0-r2", "4.2.0", True),
        ("dfsio-write-r2", None, False), ("dfsio-read-r2", None, False), ("fio-sweep-r2", None, False)]


def test_a_run_without_spark_records_no_spark_release_and_the_clusters_hadoop(two_lines):
    plan = bench(params="engine=mapreduce", versions="spark=3.5.6,4.2.0")
    assert [i.id for i in measured(plan)] == ["terasort"]
    assert versions_of(two_lines, MANIFEST, measured(plan)[0]) == {
        "spark": None, "scala": None, "hadoop": "3.4.2", "hadoop_examples": "3.4.2",
        "java": 'openjdk version "17.0.15" 2025-04-15'}


def test_the_dry_run_shows_a_point_without_spark_once_and_without_a_release(two_lines, capsys):
    assert main(["bench", "--dry-run", "--workloads", "terasort", "--versions", "spark=3.5.6,4.2.0"]) == 0
    out = capsys.readouterr().out
    assert "  - terasort-mapreduce: prepare, run, validate (hdfs=hdd, local=ssd, no Spark)\n" in out
    assert "terasort-mapreduce-spark" not in out
    assert "terasort-spark-spark4.2.0: prepare, run, validate (hdfs=hdd, local=ssd, Spark 4.2.0)" in out


def test_a_workload_only_on_one_line_is_not_refused_for_its_points_without_spark(two_lines, monkeypatch):
    """The refusal names Spark points only: a point that runs no Spark runs on no line."""
    terasort = load_workload("terasort")
    only_35 = dataclasses.replace(terasort, manifest={**terasort.manifest,
                                                      "spark_lines": {"supported": ["3.5"], "why": "a test's line"}})
    monkeypatch.setattr(workloads_mod, "load", lambda name: only_35)
    assert [i.id for i in measured(bench(params="engine=mapreduce", versions="spark=4.2.0"))] == ["terasort"]
    with pytest.raises(WorkloadError, match="terasort does not run on Spark 4.2.0"):
        bench(params="engine=spark", versions="spark=4.2.0")


@pytest.mark.parametrize("runs_spark, message", [
    ({"when": {"engin": "spark"}}, r"runs_spark.when.engin: not a parameter"),
    ({"when": {"engine": "sprak"}}, r"runs_spark.when.engine: 'sprak' is not one of its choices"),
    ({"when": {}}, r"runs_spark"),
    ("yes", r"runs_spark"),
])
def test_a_runs_spark_that_matches_no_point_is_refused_at_load(runs_spark, message, tmp_path, monkeypatch):
    manifest = yaml.safe_load((load_workload("terasort").path / "workload.yml").read_text())
    (tmp_path / "terasort").mkdir()
    (tmp_path / "terasort" / "workload.yml").write_text(yaml.safe_dump({**manifest, "runs_spark": runs_spark}))
    monkeypatch.setattr(workloads_mod, "WORKLOADS", tmp_path)
    with pytest.raises(WorkloadError, match=message):
        workloads_mod.load("terasort")


def test_a_cluster_on_hadoop_3_5_0_records_it_and_the_examples_jar_it_carries(monkeypatch, capsys):
    """Hadoop 3.5.0's install carries hadoop-mapreduce-examples 3.4.2 (Maven Central here has no 3.5.0): each run's
    record and the dry run say so."""
    local = inventory.load("local")
    on_350 = dataclasses.replace(local, variables={
        **local.variables, "spillway_versions": {"spark": ["3.5.6"], "hadoop": "3.5.0"}})
    monkeypatch.setattr(inventory, "load", lambda name: on_350)
    plan = bench(params="engine=mapreduce")
    record = versions_of(on_350, MANIFEST, plan.instances[0])
    assert (record["hadoop"], record["hadoop_examples"], record["spark"]) == ("3.5.0", "3.4.2", None)
    assert main(["bench", "--dry-run", "--workloads", "terasort"]) == 0
    assert ("versions: Spark 3.5.6 installed (default line 3.5.6), Hadoop 3.5.0 (its MapReduce examples, TeraSort's, "
            "are 3.4.2's)") in capsys.readouterr().out
