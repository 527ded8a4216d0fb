"""What a run's manifest records of its emulation (spillway/bench/manifest.py): the disk profiles used, the node
budgets, the settings that change what a run measures, and what emulated hosts share, each with its limitation."""
import dataclasses

import pytest

from spillway import inventory
from spillway.bench.manifest import emulation_record


def test_a_run_on_emulated_hosts_records_what_they_share_and_their_niceness():
    emu = inventory.load("emu")
    record = emulation_record(emu, inventory.storage_profiles(), emu.emulated_profiles())
    assert sorted(record["profiles"]) == ["hdd", "ssd"]
    assert record["nodes"]["hosts"] == ["master", "worker1", "worker2", "worker3"] and record["nodes"]["nice"] == 10
    assert any("network namespaces on one machine" in text for text in record["limitations"])
    local = inventory.load("local")
    assert "nodes" not in emulation_record(local, inventory.storage_profiles(), local.emulated_profiles())


def test_a_node_budget_is_recorded_with_what_it_imitates_and_what_not():
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


def test_a_scale_model_node_records_the_profiles_as_its_disks_were_built_and_what_it_stands_for():
    local = inventory.load("local")
    node = {"memory_gib": 5, "cores": 2, "reference": {"name": "a 36-core node", "source": "a datasheet", "cores": 36,
                                                       "disks": {"hdd": 1, "ssd": 2}}}
    scaled = dataclasses.replace(local, variables={**local.variables, "spillway_node": node})
    record = emulation_record(scaled, inventory.storage_profiles(), scaled.emulated_profiles())
    assert record["scale_model"]["k"] == 18 and record["scale_model"]["disk_shares"]["ssd"] == pytest.approx(1 / 9)
    shipped = inventory.storage_profiles()["profiles"]
    assert record["profiles"]["ssd"]["read_bps"] == round(shipped["ssd"]["read_bps"] / 9)
    assert record["profiles"]["hdd"]["model"]["options"]["outer-rate"] == pytest.approx(
        shipped["hdd"]["model"]["options"]["outer-rate"] / 18, rel=1e-5)
    (notice,) = [text for text in record["limitations"] if "scale model" in text.lower()]
    assert "a 36-core node (a datasheet): 36 cores there, 2 here, k = 18" in notice and "hdd: 0.0555556 of one" in notice
    assert "scale_model" not in emulation_record(local, inventory.storage_profiles(), local.emulated_profiles())


# Settings of the local inventory that make its runs differ from a real node's: each recorded and said while set,
# neither once the variable is left out (then the attribute takes its default).
RECORDED_SETTINGS = {
    "jvm_jit": ("spillway_jvm", "c1", "tiered", ("client compiler alone", "long run's CPU-bound phases")),
    "hdfs_page_cache": ("spillway_hdfs_page_cache", "dropped", "kept",
                        ("one to two seconds after it was cached", "held the block open", "read-ahead")),
}


@pytest.mark.parametrize("attribute", sorted(RECORDED_SETTINGS))
def test_a_setting_that_departs_from_a_real_node_is_recorded_and_said_while_set(attribute):
    variable, value, default, phrases = RECORDED_SETTINGS[attribute]
    local = inventory.load("local")
    assert getattr(local, attribute) == value
    record = emulation_record(local, inventory.storage_profiles(), local.emulated_profiles())
    assert record[attribute] == value
    (notice,) = [text for text in record["limitations"] if variable in text]
    assert all(phrase in notice for phrase in phrases), notice
    left_out = dataclasses.replace(local, variables={k: v for k, v in local.variables.items() if k != variable})
    assert getattr(left_out, attribute) == default
    record = emulation_record(left_out, inventory.storage_profiles(), local.emulated_profiles())
    assert attribute not in record and not any(variable in text for text in record["limitations"])


def test_a_real_node_inventory_runs_tiered_jvms():
    assert inventory.load("hdd").jvm_jit == "tiered"


def test_a_glusterfs_backend_on_emulated_hosts_is_named_as_emulated():
    pfs = inventory.load("pfs")
    record = emulation_record(pfs, inventory.storage_profiles(), pfs.emulated_profiles())
    # the bricks are emulated disks (glusterfs.brick, the storage role's default profile ssd): their throttle is listed
    assert list(record["profiles"]) == ["ssd"] and record["profiles"]["ssd"]["read_bps"] > 0
    (gluster,) = [text for text in record["limitations"] if "GlusterFS" in text]
    assert "st1, st2" in gluster and "bricks are emulated disks" in gluster and "iostat" in gluster
