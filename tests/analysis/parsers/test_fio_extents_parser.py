"""The fio sweep's extents record (workloads/fio-sweep/run-sweep: filefrag's extents in bytes, the device's size),
recorded on the HDD model (tests/fixtures/tools/README.md, fio-sweep-media/)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.parsers.fio_extents import parse_extents

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "tools" / "fio-sweep-media" / "extents-hdd.json"


def test_the_extents_cover_the_file_on_the_device():
    rows = parse_extents(RECORDED)
    assert {r["backend"] for r in rows} == {"hdd"} and {r["device_bytes"] for r in rows} == {8 * 1024 ** 3}
    assert sum(r["length_bytes"] for r in rows) == rows[0]["file_bytes"] == 2 * 1024 ** 3
    assert all(r["physical_bytes"] + r["length_bytes"] <= r["device_bytes"] for r in rows)
    assert sorted(r["logical_bytes"] for r in rows) == [r["logical_bytes"] for r in rows]


@pytest.mark.parametrize("change, message", [
    (lambda d: d["extents"][0].update(physical_bytes=d["device_bytes"]), "past the device"),
    (lambda d: d.update(device_bytes="8g"), "device_bytes is '8g'"),
    (lambda d: d["extents"][0].update(length_bytes=-1), "length_bytes is -1"),
    (lambda d: d.pop("extents"), "not a fio-sweep extents record")])
def test_a_record_that_does_not_place_the_file_on_the_device_is_refused(tmp_path, change, message):
    document = json.loads(RECORDED.read_text())
    change(document)
    bad = tmp_path / "extents-hdd.json"
    bad.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=message):
        parse_extents(bad)
