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
                                 with_storage_probe)
from spillway.workloads import WorkloadError


def plan(**kwargs):
    args = {"cluster": "local", "workload_names": ["terasort"], "scale": "tiny", "repeat": 1, **kwargs}
    return new_plan(**args)


def test_default_plan_is_one_run_per_sweep_point_under_the_inventory_placement():
    bench = plan()
    assert [i.id for i in bench.instances] == ["terasort-mapreduce", "terasort-spark"]
    assert {tuple(i.placement.items()) for i in bench.instances} == {(("hdfs", "hdd"), ("local", "ssd"))}
    assert all(i.executor_cores is None and not i.warmup for i in bench.instances)
    # provision + facts, per run begin + prepare/run/validate + end, the report
    assert count_steps(bench.instances) == 2 + 2 * 5 + 1


def test_placement_matrix_is_every_hdfs_backend_by_every_local_backend_the_inventorys_first():
    # local's own placement is hdfs=hdd, local=ssd: the cluster usually stands on it, no switch before the first runs
    bench = plan(params="engine=spark", placement="matrix", backends="hdd,ssd")
    assert [(i.placement["hdfs"], i.placement["local"]) for i in bench.instances] == [
        ("hdd", "ssd"), ("hdd", "hdd"), ("ssd", "hdd"), ("ssd", "ssd")]
    assert bench.instances[0].id == "terasort-hdfs_hdd-local_ssd"  # a scalar engine is no sweep
    assert count_steps(bench.instances) == 2 * 4 + 1 + 4 * 5


def test_one_explicit_placement():
    bench = plan(params="engine=spark", placement="hdfs=ssd,local=hdd")
    assert bench.instances[0].placement == {"hdfs": "ssd", "local": "hdd"}
    assert bench.instances[0].id == "terasort"


def test_a_list_of_placements_runs_in_the_order_given():
    bench = plan(params="engine=spark", placement="hdfs=hdd,local=ssd; hdfs=hdd,local=hdd;hdfs=ssd,local=hdd")
    assert [(i.placement["hdfs"], i.placement["local"]) for i in bench.instances] == [
        ("hdd", "ssd"), ("hdd", "hdd"), ("ssd", "hdd")]
    assert bench.instances[1].id == "terasort-hdfs_hdd-local_hdd"
    assert count_steps(bench.instances) == 2 * 3 + 1 + 3 * 5


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


def test_cores_sweep_and_repetitions_with_a_discarded_warmup():
    bench = plan(params="engine=spark", cores="1,2", repeat=2)
    assert [(i.id, i.executor_cores, i.repetition) for i in bench.instances] == [
        ("terasort-p1-warmup", 1, 0), ("terasort-p1-r1", 1, 1), ("terasort-p1-r2", 1, 2),
        ("terasort-p2-warmup", 2, 0), ("terasort-p2-r1", 2, 1), ("terasort-p2-r2", 2, 2)]
    assert bench.instances[0].warmup and not bench.instances[1].warmup


def test_warmup_can_be_turned_off_or_on():
    assert [i.id for i in plan(params="engine=spark", repeat=2, warmup=False).instances] == [
        "terasort-r1", "terasort-r2"]
    assert [i.id for i in plan(params="engine=spark", warmup=True).instances] == [
        "terasort-warmup", "terasort"]


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


def test_repeat_must_be_positive():
    with pytest.raises(WorkloadError, match="REPEAT must be 1 or more"):
        plan(repeat=0)


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


def test_the_default_bench_adds_the_storage_probe_on_the_swapped_placement_then_again_on_its_own():
    bench = plan(storage_probe=True)
    assert [(i.id, i.placement["hdfs"], i.placement["local"], i.repetition, i.storage_probe)
            for i in bench.instances] == [
        ("terasort-mapreduce", "hdd", "ssd", 1, False),
        ("terasort-spark", "hdd", "ssd", 1, False),
        ("terasort-spark-hdfs_ssd-local_hdd", "ssd", "hdd", 1, True),
        ("terasort-spark-r2", "hdd", "ssd", 2, True)]
    assert bench.instances[1].params == bench.instances[2].params == bench.instances[3].params
    # three placement steps (provision + facts each: own, other, own again), four runs of begin +
    # prepare/run/validate + end, the report
    assert count_steps(bench.instances) == 3 * 2 + 4 * 5 + 1


def test_the_storage_probe_needs_its_workload_in_the_plan():
    assert [i.id for i in plan(workload_names=["kmeans"], storage_probe=True).instances] == ["kmeans"]
    # a scalar engine is no sweep point: the run is plain `terasort`, and it is the probe
    ids = [i.id for i in plan(params="engine=spark", storage_probe=True).instances]
    assert ids == ["terasort", "terasort-hdfs_ssd-local_hdd", "terasort-r2"]
    assert [i.id for i in plan(params="engine=mapreduce", storage_probe=True).instances] == ["terasort"]


@pytest.mark.parametrize("own, backends, other", [
    ({"hdfs": "hdd", "local": "ssd"}, ["hdd", "ssd"], {"hdfs": "ssd", "local": "hdd"}),
    ({"hdfs": "ssd", "local": "ssd"}, ["hdd", "ssd", "nvme"], {"hdfs": "nvme", "local": "nvme"}),
    ({"hdfs": "nvme", "local": "nvme"}, ["hdd", "ssd", "nvme"], {"hdfs": "hdd", "local": "hdd"}),
    ({"hdfs": "pfs", "local": "pfs"}, ["pfs"], None),
])
def test_the_probes_other_placement_moves_each_path_to_another_backend(own, backends, other):
    inventory = SimpleNamespace(placement=own, backends={name: {} for name in backends})
    assert other_placement(inventory) == other


def test_a_one_backend_cluster_gets_the_second_run_alone():
    runs = plan().instances
    inventory = SimpleNamespace(placement={"hdfs": "hdd", "local": "ssd"}, backends={"hdd": {}})
    assert [i.id for i in with_storage_probe(runs, inventory)] == ["terasort-mapreduce", "terasort-spark",
                                                                    "terasort-spark-r2"]


def sweep(name, count):
    return f"terasort.{name}=[{','.join(str(n) for n in range(1, count + 1))}]"


@pytest.mark.parametrize("options", [
    ["--params", f"{sweep('maps', 3000)} {sweep('reducers', 3000)}"],  # 18 million runs from two lists
    ["--params", sweep("maps", 3000), "--cores", ",".join(str(n) for n in range(1, 1001))],
    ["--repeat", str(10**20)],
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
        with pytest.raises(WorkloadError, match="REPEAT must be 1 or more"):
            plan(repeat=repeat)
