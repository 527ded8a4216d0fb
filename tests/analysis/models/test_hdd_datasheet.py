"""The datasheet's expectation beside each point of a run's hdd sweep (analysis/models/hdd_datasheet.py): the
file's own region on the stroke, the point's queue depth and block size. Recorded points on the HDD model
(tests/fixtures/tools/README.md, fio-sweep-media/)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from analysis import metrics
from analysis.models.hdd_datasheet import Drive, Region, point_expectation, sweep_expectations
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
