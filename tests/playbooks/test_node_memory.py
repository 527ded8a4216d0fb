"""Role common's memory plan (filter_plugins/node_memory.py): how a node budget is shared out between the Hadoop
daemons' heaps, the Spark driver, YARN's containers and, what they leave, the page cache. Checked against the
settings the playbooks really use (role common's defaults) and YARN's own rounding of a Spark container."""
import importlib.util

import pytest
import yaml

from spillway import PLAYBOOKS

COMMON = PLAYBOOKS / "roles" / "common"
SINGLE_HOST = ["namenode", "resourcemanager", "workers", "controller"]


def plugin():
    spec = importlib.util.spec_from_file_location("node_memory", COMMON / "filter_plugins" / "node_memory.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


@pytest.fixture(scope="module")
def plan():
    defaults = yaml.safe_load((COMMON / "defaults" / "main" / "main.yml").read_text())
    memory = yaml.safe_load((COMMON / "defaults" / "main" / "memory.yml").read_text())
    daemons = [{**d, "java_opts": []} for d in defaults["hadoop_daemons"]]
    settings = {name: memory[name] for name in ("yarn_nodemanager_memory_mb", "yarn_scheduler_min_allocation_mb",
                                                "spark_driver_memory", "spark_executor_memory", "spark_yarn_am_memory",
                                                "spark_executor_instances")}
    settings.update(daemons_share=memory["node_memory_daemons_share"], min_heap_mb=memory["node_memory_min_heap_mb"],
                    min_executor_mb=memory["node_memory_min_executor_mb"])
    memory_plan = plugin().spillway_node_memory

    def of(memory_gib, groups=SINGLE_HOST):
        return memory_plan({"memory_gib": memory_gib} if memory_gib else {}, daemons, groups, settings)
    of.daemons, of.settings = daemons, settings
    return of


def test_without_a_budget_every_size_is_the_configured_one(plan):
    unbudgeted = plan(0)
    assert unbudgeted["heap_mb"] == {d["name"]: d["heap_mb"] for d in plan.daemons}
    assert unbudgeted["nodemanager_offer_mb"] == plan.settings["yarn_nodemanager_memory_mb"]
    assert unbudgeted["spark_driver_memory_mb"] == 1024 and unbudgeted["spark_executor_memory_mb"] == 1024
    assert unbudgeted["floor_mb"] == 0 and "needs_mb" not in unbudgeted


@pytest.mark.parametrize("memory_gib", [3.5, 4, 5, 6, 8, 12])
def test_a_budget_is_shared_out_without_overbooking_it(plan, memory_gib):
    budgeted, budget = plan(memory_gib), int(memory_gib * 1024)
    configured = {d["name"]: d["heap_mb"] for d in plan.daemons}
    assert budgeted["heaps_mb"] <= max(budget // 4, 128 * len(configured)) + len(configured)
    assert all(128 <= heap <= configured[name] for name, heap in budgeted["heap_mb"].items())
    # the NodeManager offers what the heaps and the driver leave, and one AM and one executor always fit in it
    assert budgeted["nodemanager_offer_mb"] == min(6144, budget - budgeted["heaps_mb"] - budgeted["spark_driver_memory_mb"])
    assert budgeted["am_container_mb"] + budgeted["executor_container_mb"] <= budgeted["nodemanager_offer_mb"]
    assert 512 <= budgeted["spark_executor_memory_mb"] <= 1024 and 512 <= budgeted["spark_driver_memory_mb"] <= 1024
    assert sum(budgeted["needs_mb"].values()) <= budget


def test_executors_shrink_until_the_configured_count_fits_then_fewer_fit(plan):
    # 5 GiB: AM (512m + 384m -> 1024 in 256 MiB units) and two executors of 640m (+384m -> 1024) in a 3204 MiB offer
    five = plan(5)
    assert five["spark_executor_memory_mb"] == 640 and five["executor_container_mb"] == 1024
    assert five["am_container_mb"] + 2 * five["executor_container_mb"] <= five["nodemanager_offer_mb"]
    # 4 GiB: two executors of even 512m do not fit (2562 MiB offer): the smallest size, and YARN starts one
    four = plan(4)
    assert four["spark_executor_memory_mb"] == 512
    assert four["am_container_mb"] + 2 * four["executor_container_mb"] > four["nodemanager_offer_mb"]
    # a big budget gives back the configured sizes (the heaps from 4 x their 3584 MiB on)
    assert plan(12)["spark_executor_memory_mb"] == 1024 and plan(16)["heap_mb"]["namenode"] == 1024


def test_the_floor_is_the_smallest_budget_that_runs_a_spark_application(plan):
    floor = plan(1)["floor_mb"]
    at_floor, below = plan(floor / 1024), plan((floor - 128) / 1024)
    assert sum(at_floor["needs_mb"].values()) <= floor
    assert sum(below["needs_mb"].values()) > floor - 128
    assert at_floor["needs_mb"]["a Spark AM and one executor (YARN)"] == 2048


def test_each_host_counts_what_runs_there(plan):
    worker, master = plan(4, ["workers"]), plan(4, ["namenode", "resourcemanager", "controller"])
    assert set(worker["heap_mb"]) == {"datanode", "nodemanager"} and "the Spark driver" not in worker["needs_mb"]
    assert worker["nodemanager_offer_mb"] == 4096 - worker["heaps_mb"]
    assert set(master["heap_mb"]) == {"namenode", "resourcemanager", "historyserver"}
    assert "a Spark AM and one executor (YARN)" not in master["needs_mb"] and master["floor_mb"] < worker["floor_mb"]


@pytest.mark.parametrize("size,mib", [("512m", 512), ("1g", 1024), ("1.5g", 1536), ("2048k", 2), (str(3 << 20), 3)])
def test_jvm_sizes_are_read_as_java_reads_them(size, mib):
    assert plugin().mebibytes(size) == mib
