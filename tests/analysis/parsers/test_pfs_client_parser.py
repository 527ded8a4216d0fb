"""The pfs-client parser: GlusterFS on snapshots recorded from the emulated volume, Lustre on samples written from
the documented llite stats format (no Lustre recording exists here; tests/fixtures/pfs-client/README.md)."""
import shutil
from pathlib import Path

import pytest

from analysis.parsers.pfs_client import COLUMNS, lustre_llite_counters, read_snapshot, window_deltas

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pfs-client"
MIB = 2**20


def deltas(host: str) -> dict[str, tuple[float, str]]:
    frame = window_deltas(FIXTURES / f"{host}-client-pfs.start", FIXTURES / f"{host}-client-pfs.stop")
    assert list(frame.columns) == COLUMNS
    assert set(frame["backend"]) == {"pfs"} and set(frame["fstype"]) == {"fuse.glusterfs"}
    assert set(frame["mount"]) == {f"/var/lib/spillway/pfs-{host}/pfs/pfs"}
    return {row.counter: (row.value, row.unit) for row in frame.itertuples()}


def test_gluster_window_has_the_bytes_dd_moved():
    worker1 = deltas("worker1")
    assert worker1["bytes_read"] == (32 * MIB, "bytes")
    assert worker1["bytes_written"] == (33 * MIB, "bytes")
    assert 6 < worker1["window"][0] < 7 and worker1["window"][1] == "s"


def test_gluster_block_sizes_are_the_calls_fuse_made():
    worker1 = deltas("worker1")
    assert worker1["reads.65536B+"] == (512, "calls")
    assert worker1["writes.131072B+"] == (256, "calls")
    assert worker1["writes.4096B+"] == (256, "calls")
    sized = {name: value for name, (value, _unit) in worker1.items() if name.startswith(("reads.", "writes."))}
    assert sum(sized.values()) == 1024


def test_gluster_fop_calls_and_latency_in_seconds():
    worker1 = deltas("worker1")
    assert worker1["fop.READ.calls"] == (512, "calls")
    assert worker1["fop.WRITE.calls"] == (512, "calls")
    # 32 MiB read back by dd in 0.27 s: the READ calls' total latency is of that order only if the dump's "us" are ns.
    read_total, unit = worker1["fop.READ.latency_total"]
    assert unit == "s" and 0.05 < read_total < 1.0


def test_gluster_idle_client_moved_no_bytes():
    worker2 = deltas("worker2")
    assert worker2["bytes_read"][0] == 0 and worker2["bytes_written"][0] == 0
    assert worker2["fop.LOOKUP.calls"][0] > 0
    assert "fop.READ.calls" not in worker2


def test_snapshot_header_names_the_backend():
    header, body = read_snapshot(FIXTURES / "worker1-client-pfs.stop")
    assert header["backend"] == "pfs" and header["source"].startswith("trusted.io-stats-dump")
    assert "=== Cumulative stats ===" in body


def test_lustre_sample_window_differences_samples_and_sums():
    sample = FIXTURES / "lustre-sample-client-scratch"
    frame = window_deltas(sample.with_suffix(".start"), sample.with_suffix(".stop"))
    got = {row.counter: (row.value, row.unit) for row in frame.itertuples()}
    assert got["window"] == (60.5, "s")
    assert got["read_bytes.samples"] == (256, "calls")
    assert got["read_bytes.sum"] == (320864256 - 52428800, "bytes")
    assert got["write_bytes.sum"] == (268435456, "bytes")
    assert got["open.samples"] == (8, "calls") and "open.sum" not in got
    assert got["fsync.samples"] == (3, "calls")          # absent at start: it was 0
    assert got["getattr.sum"][1] == "s" and got["getattr.sum"][0] == pytest.approx(0.003)


def test_lustre_instances_are_prefixed_when_several():
    _header, body = read_snapshot(FIXTURES / "lustre-sample-two-instances.stop")
    counters = lustre_llite_counters(body)
    assert counters["scratch-ffff8f0a1b2c3000:read_bytes.sum"] == (320864256, "bytes")
    assert counters["home-ffff8f0a1b2c4000:read_bytes.samples"] == (7, "calls")


def test_counters_that_went_down_are_refused():
    # stop before start: as if the client had been remounted inside the window
    with pytest.raises(ValueError, match="went down"):
        window_deltas(FIXTURES / "worker1-client-pfs.stop", FIXTURES / "worker1-client-pfs.start")


def test_a_file_that_is_not_a_snapshot_is_refused(tmp_path):
    shutil.copy(FIXTURES / "README.md", tmp_path / "client-x.start")
    with pytest.raises(ValueError, match="not a pfs-client snapshot"):
        read_snapshot(tmp_path / "client-x.start")
