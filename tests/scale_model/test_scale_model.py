"""Scale-model nodes (scale_model/): k, each disk profile's share and the scaled profiles; the HDD model's dilation
checked against the datasheet formulas of analysis/models/hdd_datasheet.py, which must then give every figure
times the share."""
from __future__ import annotations

import pytest
import yaml

import scale_model
from analysis.models.hdd_datasheet import Drive, Region, random_read_service_s, sptf_iops
from spillway.inventory import INVENTORIES

PROFILES = yaml.safe_load((INVENTORIES / "storage-profiles.yml").read_text())["profiles"]
NODE = {"cores": 2, "reference": {"name": "n", "source": "s", "cores": 36, "disks": {"hdd": 1, "ssd": 2}}}


def test_k_and_the_shares_of_one_disk():
    assert scale_model.scale_factor(36, 2) == 18
    assert scale_model.disk_shares({"hdd": 1, "ssd": 2}, 18) == {"hdd": pytest.approx(1 / 18),
                                                                 "ssd": pytest.approx(1 / 9)}
    assert scale_model.description(NODE)["k"] == 18 and scale_model.description({"cores": 2}) is None


@pytest.mark.parametrize("reference, emulated, message", [
    (1, 2, "k = 0.5, outside 1-1024"), (4096, 2, "k = 2.05e+03, outside"),
    ("36", 2, "spillway_node.reference.cores must be a number"), (36, float("nan"), "spillway_node.cores must be")])
def test_a_factor_out_of_range_is_refused_naming_the_field(reference, emulated, message):
    with pytest.raises(scale_model.ScaleModelError, match=message.replace("(", r"\(").replace("+", r"\+")):
        scale_model.scale_factor(reference, emulated)


def test_a_capped_profile_has_each_cap_times_the_share_and_names_what_no_share_can_scale():
    ssd = scale_model.scaled_profile(PROFILES["ssd"], 0.25)
    assert ssd["read_bps"] == PROFILES["ssd"]["read_bps"] // 4 and ssd["write_iops"] == PROFILES["ssd"]["write_iops"] // 4
    assert ssd["scale_model"] == {"share": 0.25, "unscaled": []}
    nvme = scale_model.scaled_profile(PROFILES["nvme"], 0.5)
    assert nvme["read_bps"] == PROFILES["nvme"]["read_bps"] // 2
    assert nvme["scale_model"]["unscaled"] == ["read_iops", "write_iops"]   # 0: no cap, as fast as the host allows
    assert PROFILES["ssd"]["read_bps"] == 500_000_000                        # the shipped profile is left as it was


def test_the_dilated_hdd_model_serves_every_request_in_one_over_the_share_of_the_time():
    share = 1 / 18
    scaled = scale_model.scaled_profile(PROFILES["hdd"], share)
    drive, slow = Drive.from_profile(), Drive.from_options(scaled["model"]["options"])
    region = Region(((0.0, 0.25),))
    assert slow.streaming_rate(0, 0.25) == pytest.approx(drive.streaming_rate(0, 0.25) * share, rel=1e-4)
    assert random_read_service_s(slow, 4096) == pytest.approx(random_read_service_s(drive, 4096) / share, rel=1e-4)
    assert sptf_iops(slow, 65536, 16, steps=500, region=region) == pytest.approx(
        sptf_iops(drive, 65536, 16, steps=500, region=region) * share, rel=1e-3)
    assert slow.write_cache == pytest.approx(drive.write_cache * share, abs=1)
    # request sizes and the host path's calibration are not the disk's time
    for name in ("readahead", "segments", "min-prefetch"):
        assert scaled["model"]["options"][name] == PROFILES["hdd"]["model"]["options"][name]
    assert scaled["model"]["host_path"] == PROFILES["hdd"]["model"]["host_path"]


def test_the_profiles_of_a_node_without_a_reference_are_the_shipped_ones_and_a_profile_in_use_must_be_named():
    assert scale_model.scaled_profiles(PROFILES, {"memory_gib": 5}, ["hdd"]) is PROFILES
    scaled = scale_model.scaled_profiles(PROFILES, NODE, ["hdd", "ssd"])
    assert scaled["nvme"] is PROFILES["nvme"] and scaled["ssd"]["scale_model"]["share"] == pytest.approx(1 / 9)
    with pytest.raises(scale_model.ScaleModelError, match=r"names no nvme disk.*reference.disks.nvme\)"):
        scale_model.scaled_profiles(PROFILES, NODE, ["nvme"])


def test_the_storage_role_loads_the_same_filter():
    link = INVENTORIES.parent / "playbooks/roles/storage/filter_plugins/scale_model.py"
    assert link.is_symlink() and link.resolve() == (INVENTORIES.parent / "scale_model/__init__.py").resolve()
    assert scale_model.FilterModule().filters()["spillway_scaled_profiles"] is scale_model.scaled_profiles


def test_the_memory_a_scale_model_does_not_scale_yet_is_stated_against_a_reference_cores_share():
    gatk4 = {"memory_gib": 5, "cores": 2, "reference": "gatk4-io-model"}     # 128 GiB over k = 18: 7.11 GiB
    [memory] = scale_model.description(gatk4)["unscaled_ratios"]
    assert memory["share"] == pytest.approx(128 / 18, rel=1e-5) and memory["ratio"] == pytest.approx(5 / (128 / 18),
                                                                                                     rel=1e-3)
    assert memory["says"] == ("memory: this node's budget is 5 GiB, a 2-core share of the reference's 128 GiB is "
                              "7.11 GiB (0.70x: a workload's data is 1.42x as large against memory as on the reference)")
    unbudgeted = scale_model.description({"cores": 2, "reference": "gatk4-io-model"})["unscaled_ratios"][0]
    assert unbudgeted["ratio"] is None and "no budget" in unbudgeted["says"]
    assert scale_model.description(NODE)["unscaled_ratios"] == []         # a reference without a memory figure
