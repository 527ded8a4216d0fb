"""iostat -x recordings, JSON and text: complete, killed mid-stream (locale and ISO timestamps)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import safeio

from analysis.parsers.iostat import (COLUMNS as IOSTAT_COLUMNS, parse_iostat_json, parse_iostat_text, parse_timestamp,
                                     read_samples)
from conftest import TOOLS

REPO = Path(__file__).resolve().parents[3]


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


# --- the text report (`iostat -x` without -o JSON)


def test_text_reports_with_timestamps_during_a_direct_write():
    frame, info = parse_iostat_text(TOOLS / "iostat" / "iostat-x-y-t.txt")
    assert info == {"nodename": "vm", "reports": 3} and list(frame.columns) == IOSTAT_COLUMNS
    assert frame.groupby("time")["device"].count().tolist() == [10, 10, 10]
    vda = frame[frame["device"] == "vda"].reset_index(drop=True)
    # Locale timestamps one second apart, taken as UTC like the JSON ones.
    assert vda["time"].diff().dropna().tolist() == [1.0, 1.0] and vda["time"][0] > 1.7e9
    # dd wrote 1 MiB direct writes during the first second: iostat's own rounding aside, bytes/s
    # over writes/s is the mean write size it prints.
    busy = vda.iloc[0]
    assert busy["write_bytes_per_s"] > 100 * 2**20 and busy["util_pct"] > 0
    writing = vda[vda["w_per_s"] > 0]
    assert ((writing["write_bytes_per_s"] / writing["w_per_s"] - writing["wareq_sz_bytes"]).abs()
            <= 0.01 * writing["wareq_sz_bytes"] + 1024).all()


def test_text_iso_timestamps_and_killed_iostat():
    iso, _ = parse_iostat_text(TOOLS / "iostat" / "iostat-x-y-t-iso.txt")
    assert list(iso["device"]) == ["vda", "vda"] and iso["time"].diff().iloc[1] == 1.0
    killed, info = parse_iostat_text(TOOLS / "iostat" / "iostat-x-y-t-killed.txt")
    assert info["reports"] == len(killed) >= 2 and set(killed["device"]) == {"vda"}


def test_text_report_since_boot_without_timestamps():
    frame, info = parse_iostat_text(TOOLS / "iostat" / "iostat-x-k.txt")
    assert info["reports"] == 1 and frame["time"].isna().all() and "vda" in set(frame["device"])
    assert (frame["read_bytes_per_s"] >= 0).all() and frame["util_pct"].between(0, 100).all()


def test_text_parser_refuses_json():
    with pytest.raises(ValueError, match="not an iostat text report"):
        parse_iostat_text(TOOLS / "iostat" / "iostat-complete.json")


def test_memory_follows_the_samples_kept_not_the_file(tmp_path):
    """A recorded killed report padded to the iostat cap with a sparse hole (2 GiB of NUL bytes, no disk space): read
    whole it took 4.2 GB; decoded as it is read, the parse keeps its samples within 800 MB of address space."""
    path = tmp_path / "iostat.json"
    path.write_bytes((TOOLS / "iostat" / "iostat-killed.json").read_bytes())
    os.truncate(path, safeio.SIZE_CAPS["iostat"])
    probe = ("import sys; from pathlib import Path; from analysis.parsers.iostat import parse_iostat_json; "
             "frame, info = parse_iostat_json(Path(sys.argv[1])); print(info['samples'], info['truncated'], len(frame))")
    proc = subprocess.run(["bash", "-c", 'ulimit -v 800000 && exec "$0" -c "$1" "$2"', sys.executable, probe, str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    expected = read_samples((TOOLS / "iostat" / "iostat-killed.json").read_text())[1]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [str(len(expected)), "True", str(len(expected))]
