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


def test_discards_and_flushes():
    """Around `dd bs=1M count=16 oflag=direct conv=fsync` then `blkdiscard` on a 64 MiB loop device."""
    device = "loop4"
    totals = window_totals(TOOLS / "iostat" / "diskstats-discard.start",
                           TOOLS / "iostat" / "diskstats-discard.stop").set_index("device")
    row = totals.loc[device]
    assert row["write_bytes"] == 16 << 20 and row["discard_bytes"] == 64 << 20
    assert row["discards"] >= 1 and row["flushes"] >= 1
    quiet = totals.drop(index=device)
    assert (quiet["discard_bytes"] >= 0).all()
