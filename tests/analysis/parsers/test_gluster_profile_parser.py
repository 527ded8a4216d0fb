"""The gluster-profile parser on a profile recorded from the emulated volume (tests/fixtures/gluster-profile/README.md):
96 MiB written through worker1's mount and 64 MiB read back, spread by the shards over st1's and st2's bricks."""
import re
from pathlib import Path

import pytest

from analysis.parsers.gluster_profile import parse_gluster_profile

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "gluster-profile"
MIB = 2**20


@pytest.fixture(scope="module")
def tables():
    return parse_gluster_profile(FIXTURES / "profile-pfs.xml")


def test_bricks_carry_the_bytes_of_the_window(tables):
    bricks = tables["gluster_bricks"].set_index("brick_host")
    assert list(bricks.index) == ["st1", "st2"]
    assert set(bricks["volume"]) == {"pfs"}
    assert bricks.loc["st1", "brick_path"] == "/var/lib/spillway/pfs-st1/mnt/pfs/brick"
    assert bricks["write_bytes"].sum() == 96 * MIB
    assert bricks["read_bytes"].sum() == 64 * MIB
    assert (bricks["write_bytes"] > 0).all() and (bricks["read_bytes"] > 0).all()


def test_block_sizes_match_the_bytes(tables):
    blocks, bricks = tables["gluster_block_sizes"], tables["gluster_bricks"].set_index("brick_host")
    # FUSE hands the bricks 128 KiB writes whatever dd's 1 MiB, and the 64 KiB direct reads unchanged.
    assert set(blocks.loc[blocks["writes"] > 0, "block_size_bytes"]) == {128 * 1024}
    assert set(blocks.loc[blocks["reads"] > 0, "block_size_bytes"]) == {64 * 1024}
    for host, rows in blocks.groupby("brick_host"):
        assert (rows["writes"] * rows["block_size_bytes"]).sum() == bricks.loc[host, "write_bytes"]
        assert (rows["reads"] * rows["block_size_bytes"]).sum() == bricks.loc[host, "read_bytes"]


def test_fops_agree_with_the_cli_text(tables):
    """Every (brick, fop) row has the calls and latencies the CLI printed for people in the same recording."""
    text = (FIXTURES / "profile-pfs.txt").read_text()
    printed = {}
    for section in text.split("Brick: ")[1:]:
        host = section.split(":", 1)[0]
        for avg, low, high, calls, fop in re.findall(
                r"^\s+[\d.]+\s+([\d.]+) ns\s+([\d.]+) ns\s+([\d.]+) ns\s+(\d+)\s+(\w+)$", section, re.MULTILINE):
            printed[(host, fop)] = (int(calls), float(avg), float(low), float(high))
    fops = tables["gluster_fops"]
    # The XML leaves out the operations that get no reply and so no latency (FORGET, RELEASE, RELEASEDIR); the text
    # prints them with 0 ns.
    unmeasured = {key for key, (_calls, avg, _low, high) in printed.items() if avg == high == 0}
    assert {fop for _host, fop in unmeasured} == {"FORGET", "RELEASE"}
    assert len(fops) == len(printed) - len(unmeasured) > 20
    for row in fops.itertuples():
        calls, avg, low, high = printed[(row.brick_host, row.fop)]
        assert row.calls == calls
        assert row.latency_avg_s == pytest.approx(avg * 1e-9, rel=1e-6, abs=1e-11)
        assert (row.latency_min_s, row.latency_max_s) == pytest.approx((low * 1e-9, high * 1e-9), abs=1e-11)
    writes = fops[fops["fop"] == "WRITE"].set_index("brick_host")
    assert writes["calls"].sum() == 768
    assert writes.loc["st1", "latency_total_s"] == pytest.approx(writes.loc["st1", "latency_avg_s"] * 352)


def test_a_failed_or_foreign_document_is_refused(tmp_path):
    failed = tmp_path / "failed.xml"
    failed.write_text("<cliOutput><opRet>-1</opRet><opErrstr>Profile on Volume pfs is not started</opErrstr></cliOutput>")
    with pytest.raises(ValueError, match="not started"):
        parse_gluster_profile(failed)
    foreign = tmp_path / "info.xml"
    foreign.write_text((FIXTURES / "volume-info-pfs.xml").read_text())
    with pytest.raises(ValueError, match="no volProfile"):
        parse_gluster_profile(foreign)
