"""How a bench expands into workload runs: placements, core counts, warm-up and repetitions, parameter
overrides. Only the plan is built here (nothing is provisioned); the integration tests run it for real. And what a
provisioning step records of the daemons it started."""
import re
from types import SimpleNamespace

import pytest
import yaml

from spillway.__main__ import main
from spillway.plan import other_placement, parse_cores, with_storage_probe
from spillway.runner import Bench
from spillway.workloads import WorkloadError


def plan(**kwargs):
    args = {"cluster": "local", "workload_names": ["terasort"], "scale": "tiny", "repeat": 1, **kwargs}
    return Bench(**args)


def test_default_plan_is_one_run_per_sweep_point_under_the_inventory_placement():
    bench = plan()
    assert [i.id for i in bench.instances] == ["terasort-mapreduce", "terasort-spark"]
    assert {tuple(i.placement.items()) for i in bench.instances} == {(("hdfs", "hdd"), ("local", "ssd"))}
    assert all(i.executor_cores is None and not i.warmup for i in bench.instances)
    # provision + facts, per run begin + prepare/run/validate + end, the report
    assert bench.total_steps == 2 + 2 * 5 + 1


def test_placement_matrix_is_every_hdfs_backend_by_every_local_backend_the_inventorys_first():
    # local's own placement is hdfs=hdd, local=ssd: the cluster usually stands on it, no switch before the first runs
    bench = plan(params="engine=spark", placement="matrix", backends="hdd,ssd")
    assert [(i.placement["hdfs"], i.placement["local"]) for i in bench.instances] == [
        ("hdd", "ssd"), ("hdd", "hdd"), ("ssd", "hdd"), ("ssd", "ssd")]
    assert bench.instances[0].id == "terasort-hdfs_hdd-local_ssd"  # a scalar engine is no sweep
    assert bench.total_steps == 2 * 4 + 1 + 4 * 5


def test_one_explicit_placement():
    bench = plan(params="engine=spark", placement="hdfs=ssd,local=hdd")
    assert bench.instances[0].placement == {"hdfs": "ssd", "local": "hdd"}
    assert bench.instances[0].id == "terasort"


def test_a_list_of_placements_runs_in_the_order_given():
    bench = plan(params="engine=spark", placement="hdfs=hdd,local=ssd; hdfs=hdd,local=hdd;hdfs=ssd,local=hdd")
    assert [(i.placement["hdfs"], i.placement["local"]) for i in bench.instances] == [
        ("hdd", "ssd"), ("hdd", "hdd"), ("ssd", "hdd")]
    assert bench.instances[1].id == "terasort-hdfs_hdd-local_hdd"
    assert bench.total_steps == 2 * 3 + 1 + 3 * 5


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
    from spillway.__main__ import main
    assert main(["bench", "--cluster", "local", "--workloads", "terasort", "--monitoring", "yes"]) == 2
    assert "MONITORING take 0 or 1" in capsys.readouterr().err


def test_a_run_on_emulated_hosts_records_what_they_share_and_their_niceness():
    from spillway import inventory
    from spillway.notices import emulation_record
    emu = inventory.load("emu")
    record = emulation_record(emu, inventory.storage_profiles(), emu.emulated_profiles())
    assert sorted(record["profiles"]) == ["hdd", "ssd"]
    assert record["nodes"]["hosts"] == ["master", "worker1", "worker2", "worker3"] and record["nodes"]["nice"] == 10
    assert any("network namespaces on one machine" in text for text in record["limitations"])
    local = inventory.load("local")
    assert "nodes" not in emulation_record(local, inventory.storage_profiles(), local.emulated_profiles())


def test_a_node_budget_is_recorded_with_what_it_imitates_and_what_not():
    import dataclasses

    from spillway import inventory
    from spillway.notices import emulation_record
    local = inventory.load("local")
    unbudgeted = dataclasses.replace(local, variables={k: v for k, v in local.variables.items() if k != "spillway_node"})
    assert "node_budget" not in emulation_record(unbudgeted, inventory.storage_profiles(), local.emulated_profiles())
    assert emulation_record(local, inventory.storage_profiles(), local.emulated_profiles())["node_budget"] == {"memory_gib": 5}
    budgeted = dataclasses.replace(local, variables={**local.variables, "spillway_node": {"memory_gib": 2.5, "cores": 1}})
    record = emulation_record(budgeted, inventory.storage_profiles(), budgeted.emulated_profiles())
    assert record["node_budget"] == {"memory_gib": 2.5, "cores": 1}
    (notice,) = [text for text in record["limitations"] if "spillway_node" in text]
    assert "within 2.5 GiB of memory, page cache included and 1 cores of CPU time" in notice
    assert "not that node's memory bandwidth" in notice and "page cache emptied" in notice


def test_the_client_compiler_for_the_workloads_jvms_is_recorded_and_said():
    import dataclasses

    from spillway import inventory
    from spillway.notices import emulation_record
    local = inventory.load("local")
    assert local.jvm_jit == "c1"
    record = emulation_record(local, inventory.storage_profiles(), local.emulated_profiles())
    assert record["jvm_jit"] == "c1"
    (notice,) = [text for text in record["limitations"] if "spillway_jvm" in text]
    assert "client compiler alone" in notice and "long run's CPU-bound phases" in notice
    tiered = dataclasses.replace(local, variables={k: v for k, v in local.variables.items() if k != "spillway_jvm"})
    assert tiered.jvm_jit == "tiered"
    record = emulation_record(tiered, inventory.storage_profiles(), local.emulated_profiles())
    assert "jvm_jit" not in record and not any("spillway_jvm" in text for text in record["limitations"])
    assert inventory.load("hdd").jvm_jit == "tiered"


def test_hdfs_blocks_dropped_from_the_page_cache_are_recorded_and_said():
    import dataclasses

    from spillway import inventory
    from spillway.notices import emulation_record
    local = inventory.load("local")
    assert local.hdfs_page_cache == "dropped"
    record = emulation_record(local, inventory.storage_profiles(), local.emulated_profiles())
    assert record["hdfs_page_cache"] == "dropped"
    (notice,) = [text for text in record["limitations"] if "spillway_hdfs_page_cache" in text]
    assert "one to two seconds after it was cached" in notice and "held the block open" in notice
    assert "read-ahead" in notice
    kept = dataclasses.replace(local, variables={k: v for k, v in local.variables.items()
                                                 if k != "spillway_hdfs_page_cache"})
    assert kept.hdfs_page_cache == "kept"
    record = emulation_record(kept, inventory.storage_profiles(), local.emulated_profiles())
    assert "hdfs_page_cache" not in record
    assert not any("spillway_hdfs_page_cache" in text for text in record["limitations"])


def test_a_glusterfs_backend_on_emulated_hosts_is_named_as_emulated():
    from spillway import inventory
    from spillway.notices import emulation_record
    pfs = inventory.load("pfs")
    record = emulation_record(pfs, inventory.storage_profiles(), pfs.emulated_profiles())
    # the bricks are emulated disks (glusterfs.brick, the storage role's default profile ssd): their throttle is listed
    assert list(record["profiles"]) == ["ssd"] and record["profiles"]["ssd"]["read_bps"] > 0
    (gluster,) = [text for text in record["limitations"] if "GlusterFS" in text]
    assert "st1, st2" in gluster and "bricks are emulated disks" in gluster and "iostat" in gluster



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
    assert bench.total_steps == 3 * 2 + 4 * 5 + 1


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


@pytest.mark.parametrize("argv, probe", [
    ([], True),
    (["--params", "terasort.rows=1000"], True),
    (["--workloads", "fio-sweep,terasort,tpch,kmeans,gatk4"], False),
    (["--placement", "hdfs=hdd,local=ssd"], False),
    (["--repeat", "3"], False),
    (["--cores", "1"], False),
])
def test_make_bench_without_workloads_placements_cores_or_repetitions_runs_the_probe(argv, probe, capsys):
    assert main(["bench", "--dry-run", *argv]) == 0
    out = capsys.readouterr().out
    assert ("storage probe of the default bench: terasort-spark-hdfs_ssd-local_hdd" in out) is probe, out
    assert ("terasort-spark-hdfs_ssd-local_hdd: prepare, run, validate (hdfs=ssd, local=hdd)" in out) is probe


def test_a_workload_runs_plays_are_its_begin_then_one_per_step_in_the_order_steps_run():
    # the bench splits workload-run.yml's output by play names (runner._part_of_play): a step missing from the
    # playbook, or a renamed play, would leave its output in the part before it
    from spillway import PLAYBOOKS
    from spillway.runner import _part_of_play
    from spillway.workloads import STEPS
    imports = yaml.safe_load((PLAYBOOKS / "workload-run.yml").read_text())
    assert [i["ansible.builtin.import_playbook"] for i in imports] == [
        "workload-begin.yml", *["workload-step.yml"] * 3, "workload-end.yml"]
    assert [i.get("vars", {}).get("step") for i in imports[1:4]] == list(STEPS)
    # the end within the run comes only after steps that went well
    assert imports[4]["vars"] == {"workload_status": "ok"}
    (begin,) = yaml.safe_load((PLAYBOOKS / "workload-begin.yml").read_text())
    (step,) = yaml.safe_load((PLAYBOOKS / "workload-step.yml").read_text())
    (end,) = yaml.safe_load((PLAYBOOKS / "workload-end.yml").read_text())
    assert (_part_of_play(begin["name"]), _part_of_play(end["name"])) == ("begin", "end")
    assert [_part_of_play(re.sub(r"\{\{.*\}\}", s, step["name"])) for s in STEPS] == list(STEPS)
    assert _part_of_play("Workload step: other") is None and _part_of_play("Record host facts") is None


def test_a_provisioning_step_keeps_the_daemons_it_started_and_not_those_that_ran_before_it():
    from datetime import datetime

    def epoch(text):
        return datetime.fromisoformat(f"2026-11-28T{text}+00:00").timestamp()

    manifest = {"steps": [{"name": "provision", "started_at": "2026-11-28T06:00:00.000+00:00"},
                          {"name": "provision (hdfs=ssd, local=hdd)", "started_at": "2026-11-28T06:05:00.000+00:00"}],
                "hosts": {"w1": {"daemon_cpu": {"namenode": {"cpu_s": 5.7, "started_epoch_s": epoch("06:05:10")},
                                                "datanode": {"cpu_s": 4.9, "started_epoch_s": epoch("06:04:59.5")},
                                                "resourcemanager": {"cpu_s": 9.0, "started_epoch_s": epoch("06:00:20")}}},
                          "master": {}}}
    saved = []
    bench = SimpleNamespace(run=SimpleNamespace(manifest=manifest, save=lambda: saved.append(True)))
    Bench._record_daemon_starts(bench, "provision (hdfs=ssd, local=hdd)")
    # the ResourceManager ran from the first provisioning on; a start half a second early is the clocks' tick
    assert manifest["steps"][1]["daemon_starts"] == [{"host": "w1", "daemon": "datanode", "cpu_s": 4.9},
                                                     {"host": "w1", "daemon": "namenode", "cpu_s": 5.7}]
    assert "daemon_starts" not in manifest["steps"][0] and saved
