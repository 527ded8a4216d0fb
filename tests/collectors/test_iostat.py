import json

import pytest
from iostat_json import repair_iostat_json


def test_repair_keeps_the_complete_samples_of_a_killed_iostat(fixtures):
    text = (fixtures / "iostat" / "iostat-killed-sigterm.json").read_text()
    with pytest.raises(ValueError):
        json.loads(text)  # recorded as iostat left it: cut off by SIGTERM
    fixed, kept = repair_iostat_json(text)
    samples = json.loads(fixed)["sysstat"]["hosts"][0]["statistics"]
    assert kept == len(samples) == 3
    assert samples[-1]["disk"][0]["disk_device"] == "loop0"


def test_repair_drops_a_sample_cut_in_the_middle(fixtures):
    text = (fixtures / "iostat" / "iostat.json").read_text()
    complete = json.loads(text)["sysstat"]["hosts"][0]["statistics"]
    cut = text[: text.index('"timestamp"', text.index('"timestamp"') + 1) + 40]
    fixed, kept = repair_iostat_json(cut)
    assert kept == 1
    assert json.loads(fixed)["sysstat"]["hosts"][0]["statistics"] == complete[:1]


def test_stop_leaves_valid_json_recorded_through_the_playbook(fixtures):
    report = json.loads((fixtures / "iostat" / "iostat.json").read_text())
    samples = report["sysstat"]["hosts"][0]["statistics"]
    assert samples and all("+" in s["timestamp"] or "-" in s["timestamp"][10:] for s in samples)


def test_diskstats_snapshots_start_with_their_epoch(fixtures):
    for name in ("diskstats.start", "diskstats.stop"):
        first, *rest = (fixtures / "iostat" / name).read_text().splitlines()
        assert first.startswith("# epoch=") and float(first.split("=")[1]) > 1.6e9
        assert any(line.split()[2] == "loop0" for line in rest)
