"""Each fio point against what its device class can deliver (analysis/fio_limits.py, issue 42): a point faster
than the drive's media rate or a profile's cap measured a cache; the fio table says so and the model's bandwidths
leave it out, with the reason. Recorded on the HDD model (tests/fixtures/tools/README.md, fio-sweep-media/)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from analysis.fio_limits import class_limit
from analysis.models.iomodel.bandwidths import bandwidths_of
from analysis.presentation.model_section import left_out_inputs
from analysis.tables import build_tables

TOOLS = Path(__file__).resolve().parents[1] / "fixtures" / "tools" / "fio-sweep-media"
PROFILES = yaml.safe_load((Path(__file__).resolve().parents[2] / "inventories/storage-profiles.yml").read_text())[
    "profiles"]


def sweep_run(folder: Path) -> Path:
    """A run directory with the recorded hdd points: the tiny sweep's 1 MiB read and the old sweep's 64 KiB write
    (256 MiB file, 1 s: the drive's buffer)."""
    run = folder / "20261129-004500-local"
    points = run / "raw" / "localhost" / "workload" / "fio-sweep"
    points.mkdir(parents=True)
    shutil.copy(TOOLS / "fio-hdd-read-1m.json", points)
    shutil.copy(TOOLS / "fio-hdd-write-64k-cache.json", points / "fio-hdd-write-64k.json")
    shutil.copy(TOOLS / "extents-hdd.json", points)
    (run / "raw" / "localhost" / "storage.json").write_text(json.dumps(
        {"backends": {"hdd": {"kind": "emulated", "profile": "hdd", "device": "loop1", "mount": "/mnt/hdd"}}}))
    (run / "manifest.json").write_text(json.dumps({"run_id": run.name, "emulation": {"profiles": PROFILES}}))
    return run


def test_a_cache_speed_point_is_flagged_with_its_cause_and_a_media_one_is_not(tmp_path):
    fio = build_tables(sweep_run(tmp_path))["fio"].set_index("rw")
    assert fio.loc["write", "bandwidth_bytes_per_s"] > 400e6            # the buffer: 416 MB/s
    assert "over the drive model's media rate at the outer edge, 255 MB/s" in fio.loc["write", "over_class_limit"]
    assert fio.loc["read", "bandwidth_bytes_per_s"] < 255e6 and fio.loc["read", "over_class_limit"] == ""
    assert (fio["class_limit_bytes_per_s"] == 255e6).all()


def test_the_model_leaves_a_cache_speed_point_out_and_says_why(tmp_path):
    run = sweep_run(tmp_path)
    tables = build_tables(run)
    bandwidths = bandwidths_of([(run.name, {}, tables)])
    assert ("hdd", "write") not in bandwidths.curves and ("hdd", "read") in bandwidths.curves
    [left] = bandwidths.left_out
    assert (left["profile"], left["rw"], left["block_size_bytes"]) == ("hdd", "write", 65536)
    # the model's write bandwidth then comes from the datasheet, not from the cache
    assert bandwidths.at("hdd", "write", 65536)[0] <= 255e6
    [line] = left_out_inputs(bandwidths)
    assert "hdd write 64 KiB" in line and "a cache, not the device" in line and run.name in line


@pytest.mark.parametrize("profile, direction, size, limit", [
    ("ssd", "read", 4096, 50000 * 4096), ("ssd", "read", 1 << 20, 500e6), ("ssd", "write", 1 << 20, 450e6),
    ("hdd", "write", 4096, 255e6)])
def test_the_class_limit_is_the_media_rate_or_the_tighter_cap(profile, direction, size, limit):
    assert class_limit(PROFILES[profile], direction, size)[0] == pytest.approx(limit)


def test_a_profile_without_limits_flags_nothing():
    value, what = class_limit({"read_iops": 0, "read_bps": 0}, "read", 4096)
    assert value != value and what == ""
