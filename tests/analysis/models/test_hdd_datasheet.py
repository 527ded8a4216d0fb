"""The datasheet's expectation beside each point of a run's hdd sweep (analysis/models/hdd_datasheet.py): the
file's own region on the stroke, the point's queue depth and block size. Recorded points on the HDD model
(tests/fixtures/tools/README.md, fio-sweep-media/)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from analysis import metrics
from analysis.models.hdd_datasheet import (Drive, Region, destage_iops, point_expectation, random_write_seconds,
                                           sweep_expectations)
from analysis.parsers.fio import parse_fio_json
from analysis.parsers.fio_extents import parse_extents

TOOLS = Path(__file__).resolve().parents[2] / "fixtures" / "tools" / "fio-sweep-media"
PROFILES = yaml.safe_load((Path(__file__).resolve().parents[3] / "inventories/storage-profiles.yml").read_text())[
    "profiles"]
DRIVE = Drive.from_options(PROFILES["hdd"]["model"]["options"])


def recorded(*names: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    fio = pd.DataFrame([row for name in names for row in parse_fio_json(TOOLS / name)]).assign(host="localhost")
    extents = pd.DataFrame(parse_extents(TOOLS / "extents-hdd.json")).assign(host="localhost")
    return metrics.fio_curves(fio), extents


def test_a_region_maps_the_file_onto_its_extents_in_order():
    region = Region.of_extents([(600, 200), (100, 100)], 1000)
    assert region.width == pytest.approx(0.3)
    assert region.position(0) == pytest.approx(0.6) and region.position(0.5) == pytest.approx(0.75)
    assert region.position(0.9) == pytest.approx(0.17)
    # the outer extent streams faster than the inner one: the whole lies between
    inner, outer = DRIVE.streaming_rate(0.6, 0.8), DRIVE.streaming_rate(0.1, 0.2)
    assert inner < region.streaming_rate(DRIVE) < outer


def test_streaming_is_slower_further_in_and_random_reads_gain_from_a_short_region():
    outer, inner = Region(((0.0, 0.25),)), Region(((0.75, 1.0),))
    assert point_expectation(DRIVE, "read", 1 << 20, 16, outer)[0] > point_expectation(DRIVE, "read", 1 << 20, 16,
                                                                                      inner)[0]
    whole = point_expectation(DRIVE, "randread", 4096, 16, Region())[0]
    assert point_expectation(DRIVE, "randread", 4096, 16, outer)[0] > whole


def test_the_recorded_sweep_points_are_within_a_quarter_of_their_expectation():
    curves, extents = recorded("fio-hdd-read-1m.json", "fio-hdd-randread-4k.json")
    expected = sweep_expectations(curves, extents, {"hdd": "hdd"}, PROFILES).merge(curves)
    assert len(expected) == 2
    for point in expected.itertuples():
        assert DRIVE.inner_rate <= point.expected_bytes_per_s <= DRIVE.outer_rate or point.rw == "randread"
        assert point.bandwidth_bytes_per_s == pytest.approx(point.expected_bytes_per_s, rel=0.25), point.rw


def test_sequential_4k_is_shown_path_bound_not_held_to_the_model():
    curves, extents = recorded("fio-hdd-read-4k.json")
    [point] = sweep_expectations(curves, extents, {"hdd": "hdd"}, PROFILES).itertuples()
    assert point.expected_bytes_per_s != point.expected_bytes_per_s and point.expectation.startswith("path-bound")


def test_a_point_without_recorded_extents_or_on_a_capped_profile_gets_no_figure():
    curves, extents = recorded("fio-hdd-read-1m.json")
    [point] = sweep_expectations(curves, extents.iloc[0:0], {"hdd": "hdd"}, PROFILES).itertuples()
    assert point.expected_bytes_per_s != point.expected_bytes_per_s and "not recorded" in point.expectation
    assert sweep_expectations(curves, extents, {"hdd": "ssd"}, PROFILES).empty


BENCH = Path(__file__).resolve().parents[2] / "fixtures" / "tools" / "fio-sweep-bench"
REQUIRED = {("read", 64 * 1024), ("read", 1 << 20), ("write", 64 * 1024), ("write", 1 << 20), ("randread", 4096),
            ("randwrite", 4096)}


def test_every_required_point_of_a_default_bench_sweep_is_within_a_quarter_of_its_expectation():
    """Issue 42's criterion on a real default bench's hdd sweep: every point but the path-bound 4 KiB sequential
    ones within 25 % of the datasheet's expectation for its region, depth and size; the random writes held to the
    fill and drain of the write cache with the writes the host got in (with a full cache each, as before, 4 KiB
    random writes came out 25-32 % over)."""
    fio = pd.DataFrame([row for path in sorted(BENCH.glob("fio-hdd-*.json")) for row in parse_fio_json(path)])
    curves = metrics.fio_curves(fio.assign(host="localhost"))
    extents = pd.DataFrame(parse_extents(BENCH / "extents-hdd.json")).assign(host="localhost")
    expected = sweep_expectations(curves, extents, {"hdd": "hdd"}, PROFILES).merge(curves)
    assert len(expected) == 12 and REQUIRED <= set(zip(expected["rw"], expected["block_size_bytes"]))
    held = expected[expected["expected_bytes_per_s"].notna()]
    assert set(zip(held["rw"], held["block_size_bytes"])) == \
        set(zip(expected["rw"], expected["block_size_bytes"])) - {("read", 4096), ("write", 4096)}
    for point in held.itertuples():
        assert point.bandwidth_bytes_per_s == pytest.approx(point.expected_bytes_per_s, rel=0.25), \
            (point.rw, point.block_size_bytes, point.expectation)
    writes = held[held["rw"] == "randwrite"]
    assert writes["expectation"].str.contains("taken into the write cache over 3 s").all()


def test_the_head_stays_on_its_track_and_the_next_track_costs_the_single_track_seek():
    drive = Drive.from_options({**PROFILES["hdd"]["model"]["options"], "capacity": 8 * 1024 ** 3})
    one_track = 1 / drive.tracks
    assert drive.seek_s(0.4 * one_track, write=True) == 0
    assert drive.seek_s(one_track, write=True) == pytest.approx(drive.write_seek_track_ms / 1e3)
    assert drive.seek_s(1.0, write=True) == pytest.approx(drive.full_stroke_ms(write=True) / 1e3)
    # without a capacity, a continuum: the single-track seek at the smallest distance, the full stroke at 1
    continuum = Drive.from_options(PROFILES["hdd"]["model"]["options"])
    assert continuum.seek_s(1e-12) == pytest.approx(continuum.read_seek_track_ms / 1e3, rel=1e-3)


def test_random_writes_drain_longer_than_they_came_in_and_a_full_cache_waits():
    region = Region(((0.0, 0.25),))
    drive = Drive.from_options({**PROFILES["hdd"]["model"]["options"], "capacity": 8 * 1024 ** 3})
    few = random_write_seconds(drive, 4096, region, 200, 3.0)
    assert few == pytest.approx(3.0, abs=0.5)         # 200 writes destage within the 3 s they came in over
    many = random_write_seconds(drive, 4096, region, 20_000, 3.0)
    # more than a full cache: the drain of 16,384 extents at no more than the full cache's destage rate
    assert many > 3.0 + 16_384 / destage_iops(drive, 4096, region)
