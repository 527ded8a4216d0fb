"""/proc/diskstats snapshots as the iostat collector writes them (`# epoch=` line first)."""
from analysis.parsers.diskstats import parse_diskstats, window_totals
from conftest import TOOLS


def test_snapshot_and_window():
    epoch, frame = parse_diskstats(TOOLS / "iostat" / "diskstats.start")
    assert epoch > 1.7e9 and "vda" in set(frame["device"])
    totals = window_totals(TOOLS / "iostat" / "diskstats.start", TOOLS / "iostat" / "diskstats.stop").set_index("device")
    # four 1 s fio points (read and randwrite, 4 KiB and 1 MiB) ran between the snapshots
    assert totals.loc["vda", "read_bytes"] > 100e6 and totals.loc["vda", "write_bytes"] > 100e6
    assert 3 < totals.loc["vda", "window_s"] < 60
    assert totals.loc["vda", "read_bytes"] % 512 == 0
