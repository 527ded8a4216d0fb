"""How a bench expands into workload runs (spillway/bench/plan.py): placements, core counts, warm-up and
repetitions, parameter overrides, the default bench's storage probe. Only the plan is built here (nothing is
provisioned); the integration tests run it for real."""
import resource
import subprocess
import sys
from types import SimpleNamespace

import pytest

from spillway import REPO
from spillway.__main__ import main
from spillway.bench.plan import (MAX_PLAN_STEPS, count_steps, new_plan, other_placement, parse_cores,
                                 placement_groups, with_storage_probe)
from spillway.workloads import WorkloadError


def plan(**kwargs):
    args = {"cluster": "local", "workload_names": ["terasort"], "scale": "tiny", "repeat": 1, **kwargs}
    return new_plan(**args)


def measured(bench):
    return [i for i in bench.instances if not i.warmup]


def test_default_plan_is_a_warm_up_then_one_run_per_sweep_point_under_the_inventory_placement():
    bench = plan()
    # the warm-up: a copy of the first Spark application, before every measured run (issue 42)
    assert [i.id for i in bench.instances] == ["terasort-spark-warmup", "terasort-mapreduce", "terasort-spark"]
    assert bench.instances[0].warmup and bench.instances[0].params == bench.instances[2].params
    assert {tuple(i.placement.items()) for i in bench.instances} == {(("hdfs", "hdd"), ("local", "ssd"))}
    assert all(i.executor_cores is None and not i.warmup for i in measured(bench))
    # provision + facts, per run begin + prepare/run/validate + end, the report
    assert count_steps(bench.instances) == 2 + 3 * 5 + 1


def test_placement_matrix_is_every_hdfs_backend_by_every_local_backend_the_inventorys_first():
    # local's own placement is hdfs=hdd, local=ssd: the cluster usually stands on it, no switch before the first runs
    bench = plan(params="engine=spark", placement="matrix", backends="hdd,ssd")
    assert [(i.placement["hdfs"], i.placement["local"]) for i in measured(bench)] == [
        ("hdd", "ssd"), ("hdd", "hdd"), ("ssd", "hdd"), ("ssd", "ssd")]
    assert measured(bench)[0].id == "terasort-hdfs_hdd-local_ssd"  # a scalar engine is no sweep
    # every placement's run after its own warm-up
    assert [i.id for i in bench.instances[:2]] == ["terasort-hdfs_hdd-local_ssd-warmup", "terasort-hdfs_hdd-local_ssd"]
    assert count_steps(bench.instances) == 2 * 4 + 1 + 8 * 5


def test_one_explicit_placement():
    bench = plan(params="engine=spark", placement="hdfs=ssd,local=hdd")
    assert bench.instances[1].placement == {"hdfs": "ssd", "local": "hdd"}
    assert [i.id for i in bench.instances] == ["terasort-warmup", "terasort"]


def test_a_list_of_placements_runs_in_the_order_given():
    bench = plan(params="engine=spark", placement="hdfs=hdd,local=ssd; hdfs=hdd,local=hdd;hdfs=ssd,local=hdd")
    assert [(i.placement["hdfs"], i.placement["local"]) for i in measured(bench)] == [
        ("hdd", "ssd"), ("hdd", "hdd"), ("ssd", "hdd")]
    assert measured(bench)[1].id == "terasort-hdfs_hdd-local_hdd"
    assert count_steps(bench.instances) == 2 * 3 + 1 + 6 * 5


@pytest.mark.parametrize("placement, backends, message", [
    ("hdfs=hdd,local=ssd;hdfs=hdd,local=ssd", "", "names a placement more than once"),
    ("hdfs=hdd,local=ssd;hdfs=tape,local=ssd", "", "'hdfs=tape,local=ssd' is not 'matrix'"),
    ("matrix", "hdd,nvme", "nvme not defined in inventory 'local'"),
    ("hdfs=hdd", "", "is not 'matrix' or 'hdfs=<backend>,local=<backend>'"),
    ("hdfs=hdd,local=tape", "", "is not 'matrix'"),
    # shell text never reaches a play (the placement switch's shell task among them): refused at planning
    ("hdfs=$(touch /tmp/spillway-pwned),local=ssd", "", "is not 'matrix'"),
    ("hdfs=hdd,local=ssd;hdfs=ssd;reboot", "", "is not 'matrix'"),
])
def test_bad_placements_are_refused_naming_the_backends(placement, backends, message):
    with pytest.raises(WorkloadError, match=message):
        plan(placement=placement, backends=backends)


def test_cores_sweep_and_repetitions_interleaved_with_a_discarded_warmup():
    bench = plan(params="engine=spark", cores="1,2", repeat=2)
    # round 1: p1 then p2, each warmed first; round 2 in the reverse order (A B B A): no block of one core count
    assert [(i.id, i.executor_cores, i.repetition) for i in bench.instances] == [
        ("terasort-p1-warmup", 1, 0), ("terasort-p1-r1", 1, 1), ("terasort-p2-warmup", 2, 0),
        ("terasort-p2-r1", 2, 1), ("terasort-p2-r2", 2, 2), ("terasort-p1-r2", 1, 2)]
    assert bench.instances[0].warmup and not bench.instances[1].warmup


def test_placements_run_in_interleaved_rounds_each_switch_followed_by_a_warm_up():
    bench = plan(params="engine=spark", placement="hdfs=hdd,local=ssd;hdfs=ssd,local=hdd", repeat=3)
    sides = [(i.placement["hdfs"], i.warmup) for i in bench.instances]
    assert sides == [("hdd", True), ("hdd", False), ("ssd", True), ("ssd", False), ("ssd", False),
                     ("hdd", True), ("hdd", False), ("hdd", False), ("ssd", True), ("ssd", False)]
    # round 1's groups open with each point's own warm-up (REPEAT > 1), the later ones with the switch's
    assert [g[0].warms for g in placement_groups(bench.instances)] == [
        "", "", "the placement switch", "the placement switch"]
    assert [i.repetition for i in measured(bench)] == [1, 1, 2, 2, 3, 3]


def test_warmup_can_be_turned_off_or_on():
    # WARMUP=0: no warm-up at all, not even after the provisioning (to measure the cold start itself)
    assert [i.id for i in plan(params="engine=spark", repeat=2, warmup=False).instances] == [
        "terasort-r1", "terasort-r2"]
    assert [i.id for i in plan(params="engine=spark", warmup=True).instances] == [
        "terasort-warmup", "terasort"]
    assert [i.id for i in plan(params="engine=spark").instances] == ["terasort-warmup", "terasort"]


def test_fio_alone_gets_no_warm_up_and_a_group_with_a_cluster_workload_warms_that_one():
    # fio reads and writes the device directly: no JVM, YARN or HDFS state a warm-up would warm
    assert [i.id for i in plan(workload_names=["fio-sweep"]).instances] == ["fio-sweep"]
    # fio first, then MapReduce alone: the warm-up copies the first run on the cluster, not the sweep
    assert [i.id for i in plan(workload_names=["fio-sweep", "terasort"], params="engine=mapreduce").instances] == [
        "terasort-warmup", "fio-sweep", "terasort"]


@pytest.mark.parametrize("text, message", [("1,x", "not a comma-separated list"), ("0", "1 or more")])
def test_bad_cores_are_refused(text, message):
    with pytest.raises(WorkloadError, match=message):
        parse_cores(text)


def test_command_line_parameters_reach_the_runs_and_typos_are_refused():
    bench = plan(params="terasort.rows=5000 reducers=3")
    assert {(i.params["rows"], i.params["reducers"]) for i in bench.instances} == {(5000, 3)}
    with pytest.raises(WorkloadError, match="PARAMS: parameter 'rowz' belongs to none"):
        plan(params="rowz=5")
    with pytest.raises(WorkloadError, match="workload 'terasort' has no parameter 'k'"):
        plan(params="terasort.k=5")
    with pytest.raises(WorkloadError, match="parameters for 'fio-sweep', which is not among"):
        plan(params="fio-sweep.runtime_s=2")
    with pytest.raises(WorkloadError, match="below the minimum"):
        plan(params="rows=1")


def test_repeat_must_be_positive_and_bounded():
    for repeat in (0, 101):
        with pytest.raises(WorkloadError, match="REPEAT must be a whole number from 1 to 100"):
            plan(repeat=repeat)


def test_monitoring_switch_overrides_the_inventory_for_every_playbook_and_keeps_its_other_settings():
    default = plan()
    assert default.monitoring_override is None
    off = plan(monitoring=False)
    assert off.monitoring_override["enabled"] is False
    # what the bench's own Prometheus client reads is what the playbooks get as an extra var
    assert off.inventory.variables["spillway_monitoring"] is off.monitoring_override
    on = plan(monitoring=True)
    assert on.monitoring_override["enabled"] is True


def test_monitoring_switch_takes_0_or_1_only(capsys):
    assert main(["bench", "--cluster", "local", "--workloads", "terasort", "--monitoring", "yes"]) == 2
    assert "MONITORING take 0 or 1" in capsys.readouterr().err


def test_the_default_bench_adds_the_storage_probe_interleaved_three_warm_runs_a_side():
    bench = plan(storage_probe=True)
    assert [(i.id, i.placement["hdfs"], i.repetition, i.storage_probe) for i in bench.instances] == [
        ("terasort-spark-warmup", "hdd", 0, False),
        ("terasort-mapreduce", "hdd", 1, False),
        ("terasort-spark", "hdd", 1, False),
        ("terasort-spark-hdfs_ssd-local_hdd-warmup", "ssd", 0, True),
        ("terasort-spark-hdfs_ssd-local_hdd", "ssd", 1, True),
        ("terasort-spark-hdfs_ssd-local_hdd-r2", "ssd", 2, True),
        ("terasort-spark-warmup2", "hdd", 0, True),
        ("terasort-spark-r2", "hdd", 2, True),
        ("terasort-spark-r3", "hdd", 3, True),
        ("terasort-spark-hdfs_ssd-local_hdd-warmup2", "ssd", 0, True),
        ("terasort-spark-hdfs_ssd-local_hdd-r3", "ssd", 3, True)]
    probe = [i for i in bench.instances if i.id.startswith("terasort-spark")]
    assert all(i.params == probe[0].params for i in probe)
    # the measured probe runs in the order A B B A A B, every placement group opened by a warm-up
    assert "".join("A" if i.placement["hdfs"] == "hdd" else "B" for i in probe if not i.warmup) == "ABBAAB"
    assert all(group[0].warmup for group in placement_groups(bench.instances))
    # four placement groups and the switch back (provision + facts each), eleven runs of begin +
    # prepare/run/validate + end, the report
    assert bench.returns_to == {"hdfs": "hdd", "local": "ssd"}
    assert count_steps(bench.instances, bench.returns_to) == 5 * 2 + 11 * 5 + 1


def test_the_storage_probe_needs_its_workload_in_the_plan():
    assert [i.id for i in measured(plan(workload_names=["kmeans"], storage_probe=True))] == ["kmeans"]
    # a scalar engine is no sweep point: the run is plain `terasort`, and it is the probe
    ids = [i.id for i in measured(plan(params="engine=spark", storage_probe=True))]
    assert ids == ["terasort", "terasort-hdfs_ssd-local_hdd", "terasort-hdfs_ssd-local_hdd-r2", "terasort-r2",
                   "terasort-r3", "terasort-hdfs_ssd-local_hdd-r3"]
    assert [i.id for i in plan(params="engine=mapreduce", storage_probe=True).instances] == [
        "terasort-warmup", "terasort"]


@pytest.mark.parametrize("own, backends, other", [
    ({"hdfs": "hdd", "local": "ssd"}, ["hdd", "ssd"], {"hdfs": "ssd", "local": "hdd"}),
    ({"hdfs": "ssd", "local": "ssd"}, ["hdd", "ssd", "nvme"], {"hdfs": "nvme", "local": "nvme"}),
    ({"hdfs": "nvme", "local": "nvme"}, ["hdd", "ssd", "nvme"], {"hdfs": "hdd", "local": "hdd"}),
    ({"hdfs": "pfs", "local": "pfs"}, ["pfs"], None),
])
def test_the_probes_other_placement_moves_each_path_to_another_backend(own, backends, other):
    inventory = SimpleNamespace(placement=own, backends={name: {} for name in backends})
    assert other_placement(inventory) == other


def test_a_one_backend_cluster_gets_the_repetitions_alone():
    runs = measured(plan())
    inventory = SimpleNamespace(placement={"hdfs": "hdd", "local": "ssd"}, backends={"hdd": {}})
    assert [i.id for i in with_storage_probe(runs, inventory)] == ["terasort-mapreduce", "terasort-spark",
                                                                    "terasort-spark-r2", "terasort-spark-r3"]


def sweep(name, count):
    return f"terasort.{name}=[{','.join(str(n) for n in range(1, count + 1))}]"


@pytest.mark.parametrize("options", [
    ["--params", f"{sweep('maps', 3000)} {sweep('reducers', 3000)}"],  # 18 million runs from two lists
    ["--params", sweep("maps", 3000), "--cores", ",".join(str(n) for n in range(1, 1001))],
    ["--repeat", "100", "--cores", ",".join(str(n) for n in range(1, 1001))],
])
def test_a_plan_of_millions_of_runs_is_refused_with_the_limit_before_it_is_built(options):
    """Under a memory limit (as `ulimit -v`) in which building the plan's runs could not succeed."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1536 * 2**20, 1536 * 2**20))
    result = subprocess.run([sys.executable, "-m", "spillway", "bench", "--dry-run", "--cluster", "local",
                             "--workloads", "terasort", *options], capture_output=True, text=True, timeout=120,
                            preexec_fn=limit, cwd=REPO)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    assert f"over the limit of {MAX_PLAN_STEPS} steps" in result.stderr


def test_repeat_must_be_a_whole_number():
    for repeat in (1.5, "2", True):
        with pytest.raises(WorkloadError, match="REPEAT must be a whole number"):
            plan(repeat=repeat)
