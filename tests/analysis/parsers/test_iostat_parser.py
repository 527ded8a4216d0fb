"""iostat -x -o JSON recordings: complete, killed mid-stream (locale and ISO timestamps)."""
import json
import re

import pytest

from analysis.parsers.iostat import parse_iostat_json, parse_timestamp, read_samples
from conftest import TOOLS


def test_complete_report():
    frame, info = parse_iostat_json(TOOLS / "iostat" / "iostat-complete.json")
    assert info == {"nodename": "vm", "truncated": False, "samples": 2}
    assert list(frame["device"]) == ["vda", "vda"]
    first = frame.iloc[0]
    # 16145.57 kB/s in the recording, sysstat kB = 1024 bytes
    assert first["read_bytes_per_s"] == pytest.approx(16145.57 * 1024)
    assert first["r_await_ms"] == pytest.approx(0.19) and first["util_pct"] == pytest.approx(8.05)
    assert first["rareq_sz_bytes"] == pytest.approx(27.36 * 1024)
    assert frame["time"].diff().iloc[1] == pytest.approx(1.0)


def test_killed_report_keeps_every_complete_sample():
    text = (TOOLS / "iostat" / "iostat-killed.json").read_text()
    with pytest.raises(ValueError):
        json.loads(text)
    frame, info = parse_iostat_json(TOOLS / "iostat" / "iostat-killed.json")
    assert info["truncated"] and info["samples"] == text.count('"timestamp"')
    assert (frame["write_bytes_per_s"] > 100e6).any()   # the fio write points ran meanwhile


def test_iso_timestamps_with_two_devices():
    path = TOOLS / "iostat" / "iostat-iso-killed.json"
    frame, info = parse_iostat_json(path)
    assert info["truncated"] and set(frame["device"]) == {"vda", "zram0"}
    first_stamp = re.search(r'"timestamp": "([^"]+)"', path.read_text()).group(1)
    assert "T" in first_stamp and frame["time"].min() == parse_timestamp(first_stamp)
    assert len(frame) == 2 * info["samples"]


def test_timestamp_forms():
    assert parse_timestamp("2026-11-21T16:50:48+0100") == parse_timestamp("11/21/26 15:50:48")
    with pytest.raises(ValueError, match="S_TIME_FORMAT=ISO"):
        parse_timestamp("yesterday")


def test_cut_inside_header_gives_no_samples():
    text = (TOOLS / "iostat" / "iostat-complete.json").read_text()
    assert read_samples(text[:40])[1] == []
