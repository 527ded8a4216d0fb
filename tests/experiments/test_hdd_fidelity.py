"""The expectations of the HDD fidelity benchmark (experiments/benchmarks/hdd_fidelity.py): the datasheet's
formulas, checked on their own, without the model server or any device."""
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.benchmarks.hdd_fidelity import (
    GIB, KIB, MIB, REPO, SEQUENTIAL_REGION, TINY, Drive, interleaved_readers_rate, mixed_iops, points,
    random_read_service_s, sequential_read_rate, sequential_write_rate, server_options, sptf_random_read_iops,
)

DRIVE = Drive()


def test_the_seek_curve_averages_to_the_datasheet_over_uniform_cylinder_pairs():
    # Datasheets weight an n-track seek by (max + 1 - n): uniform start and end cylinders.
    assert DRIVE.full_stroke_ms() == pytest.approx(0.23 + (7.4 - 0.23) * 15 / 8)
    rng = random.Random(1)
    pairs = [(rng.random(), rng.random()) for _ in range(100_000)]
    for write, average_ms in ((False, 7.4), (True, 8.2)):
        mean_ms = 1e3 * sum(DRIVE.seek_s(abs(a - b), write) for a, b in pairs) / len(pairs)
        assert mean_ms == pytest.approx(average_ms, rel=0.01)
    assert DRIVE.seek_s(0) == 0
    assert DRIVE.seek_s(1) * 1e3 == pytest.approx(DRIVE.full_stroke_ms())


def test_zones_run_from_the_outer_rate_to_the_inner_one_with_more_bytes_outside():
    assert DRIVE.media_rate(0) == pytest.approx(255e6)
    assert DRIVE.media_rate(1) == pytest.approx(127.5e6)
    assert DRIVE.stroke(0) == 0 and DRIVE.stroke(1) == pytest.approx(1)
    # Constant linear density: the outer half of the bytes takes less than half of the stroke.
    assert DRIVE.stroke(0.5) < 0.5
    whole = DRIVE.streaming_rate(0, 1)
    assert 127.5e6 < whole < 255e6
    assert DRIVE.streaming_rate(0, 0.25) == pytest.approx(242.4e6, rel=0.01)


def test_random_reads_are_seek_bound_and_queueing_reorders_them():
    service_s = random_read_service_s(DRIVE, 4 * KIB, samples=50_000)
    # overhead + a seek a bit under the datasheet's (more bytes on outer tracks) + half a revolution
    assert 0.0105 < service_s < 0.0125
    qd1 = 1 / service_s
    qd32 = sptf_random_read_iops(DRIVE, 4 * KIB, 32, steps=3_000)
    assert 80 < qd1 < 95
    assert 2 * qd1 < qd32 < 400


def test_sequential_reads_stream_at_the_media_rate_unless_hits_are_slower():
    region = 2 * GIB / (8 * GIB)
    assert sequential_read_rate(DRIVE, MIB, region) == pytest.approx(DRIVE.streaming_rate(0, region))
    four_kib = sequential_read_rate(DRIVE, 4 * KIB, region)
    assert four_kib == pytest.approx(4096 / (30e-6 + 4096 / 600e6))
    assert four_kib < DRIVE.streaming_rate(0, region)


def test_sequential_writes_fill_the_cache_then_go_at_the_media_rate():
    region = 0.25
    media = DRIVE.streaming_rate(0, region)
    incoming = DRIVE.host_bound_rate(MIB)
    fill_s = DRIVE.write_cache / (incoming - media)
    assert sequential_write_rate(DRIVE, MIB, region, fill_s / 2) == pytest.approx(incoming)
    five = sequential_write_rate(DRIVE, MIB, region, 5)
    assert five == pytest.approx((incoming * fill_s + media * (5 - fill_s)) / 5)
    assert media < five < incoming
    assert sequential_write_rate(Drive(hit_overhead_ms=1.0), 4 * KIB, region, 5) == pytest.approx(
        4096 / (1e-3 + 4096 / 600e6))


def test_mixed_stream_pays_random_reads_and_cache_hits():
    read_s = random_read_service_s(DRIVE, 4 * KIB)
    assert mixed_iops(DRIVE, 4 * KIB, 1.0) == pytest.approx(1 / read_s)
    assert mixed_iops(DRIVE, 4 * KIB, 0.7) > mixed_iops(DRIVE, 4 * KIB, 1.0)


def test_two_readers_pay_a_seek_and_half_a_revolution_per_request_and_prefetch():
    rate = interleaved_readers_rate(DRIVE, 64 * KIB, 0.0, 0.5)
    seek = DRIVE.seek_s(DRIVE.stroke(0.5))
    per_visit = 64 * KIB + 512 * KIB
    media = (DRIVE.media_rate(0) + DRIVE.media_rate(0.5)) / 2
    assert rate == pytest.approx(per_visit / (0.1e-3 + seek + 60 / 7200 / 2 + per_visit / media))
    assert 30e6 < rate < 45e6
    # without the prefetch every request would pay the positioning alone
    assert interleaved_readers_rate(Drive(min_prefetch=0), 64 * KIB, 0.0, 0.5) < rate / 5
    assert interleaved_readers_rate(DRIVE, MIB, 0.0, 0.5) > rate


def test_the_points_cover_the_issue():
    chosen = points(DRIVE, 8 * GIB, 5)
    names = [p.name for p in chosen]
    assert "random read 4 KiB QD1" in names and "random read 4 KiB QD32" in names
    for size in ("4 KiB", "64 KiB", "1 MiB", "16 MiB"):
        assert f"sequential read {size}" in names and f"sequential write {size}" in names
    assert any(name.startswith("mixed") for name in names)
    two = next(p for p in chosen if p.name.startswith("two sequential readers"))
    assert two.second_job and "--offset=0" in two.fio and f"--offset={4 * GIB}" in two.second_job
    assert {p.unit for p in chosen} == {"IOPS", "MB/s"}


def test_the_server_gets_every_drive_figure():
    options = server_options(DRIVE)
    for flag in ("--rpm", "--read-seek-avg-ms", "--read-seek-track-ms", "--write-seek-avg-ms",
                 "--write-seek-track-ms", "--outer-rate", "--inner-rate", "--interface-rate", "--overhead-ms",
                 "--hit-overhead-ms", "--write-cache", "--readahead", "--segments", "--min-prefetch"):
        assert flag in options


def test_the_benchmarked_drive_is_the_hdd_profiles():
    """The benchmark runs the server with the hdd profile's options (the harness's disks run with them), and its
    datasheet figures written out here agree with them: a profile edited alone would fail here."""
    assert Drive.from_profile() == Drive()


def test_the_tiny_points_are_the_full_runs_with_the_same_expectations_but_writes():
    full = {p.name: p for p in points(DRIVE, 8 * GIB, 5)}
    tiny = {p.name: p for p in points(DRIVE, TINY["image_gib"] * GIB, TINY["runtime"], TINY["region"],
                                      TINY["write_runtime"])}
    assert set(TINY["points"]) <= set(full)
    # the same share of the stroke for the sequential points, so the same expectations (the writes' too: 5 s)
    assert TINY["region"] / (TINY["image_gib"] * GIB) == SEQUENTIAL_REGION / (8 * GIB)
    for name in TINY["points"]:
        assert tiny[name].expected == pytest.approx(full[name].expected), name
    assert tiny["sequential write 64 KiB"].runtime == 5.0 and tiny["sequential read 64 KiB"].runtime is None
    # a read point must not wrap round its region (it would read what the buffer segments kept): 2 s at the outer rate
    assert TINY["runtime"] * DRIVE.outer_rate < TINY["region"]


@pytest.mark.integration
@pytest.mark.skipif(os.geteuid() != 0, reason="loop devices and FUSE mounts need root")
def test_the_tiny_benchmark_runs_for_real_and_shows_the_issues_shape(tmp_path):
    """The tiny mode for real (about 30 s): server built, image, FUSE mount and loop device made and removed, every
    point measured on the floor and the model. Asserted: the issue's shape (64 KiB sequential reads at 100 MB/s or
    more, random 4 KiB reads tens to a few hundred IOPS, the reordering's gain at QD 32: 2.7 times by the
    expectations, none in FIFO order), no page of the image in the host page cache, nothing left behind. The points'
    20 % verdicts are the benchmark's own (its table and exit status, printed here), not asserted: the host's load
    moves them (QD 1 random reads -8 % to -22 % over eight tiny runs at load 3.5-6 on 2026-11-27; replies leave late
    when the server waits for a core)."""
    folders_before = set(Path("/var/tmp").glob("spillway-hdd-fidelity-*"))

    def tiny_run(attempt):
        out = tmp_path / f"tiny-{attempt}.json"
        done = subprocess.run([sys.executable, "-m", "experiments.benchmarks.hdd_fidelity", "--tiny", "--json",
                               str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
        print(done.stdout[-3000:], done.stderr[-2000:])
        assert done.returncode in (0, 1), done.stderr[-2000:]
        assert "point" in done.stdout and "verdict" in done.stdout      # the table
        result = json.loads(out.read_text())
        measured = {p["name"]: p for p in result["points"]}
        assert set(measured) == set(TINY["points"])
        assert all("floor" in p and "model" in p for p in measured.values())
        assert result["image_pages_cached"] == 0
        qd1, qd32 = (measured[f"random read 4 KiB QD{d}"]["model"]["value"] for d in (1, 32))
        return measured["sequential read 64 KiB"]["model"]["value"], qd1, qd32

    # The shape, from one of two runs: a burst of load on the host (seen once in make test on 2026-11-28, as the
    # emulated clusters' tests handed over: 64 KiB reads at 55 MB/s, 237 MB/s on the next run) slows one point of a
    # run; a model that is wrong fails both.
    shapes = [tiny_run(1)]
    if not (shapes[0][0] >= 100 and 30 <= shapes[0][1] <= 300 and shapes[0][2] > 1.5 * shapes[0][1]):
        shapes.append(tiny_run(2))
    sequential, qd1, qd32 = shapes[-1]
    assert sequential >= 100, shapes                                                            # MB/s
    assert 30 <= qd1 <= 300 and qd32 > 1.5 * qd1, shapes                                      # IOPS
    # everything it made is gone: its folder (with the image and mount point), so no loop or mount over it is left
    assert set(Path("/var/tmp").glob("spillway-hdd-fidelity-*")) == folders_before
    mounts = subprocess.run(["findmnt", "-rn", "-t", "fuse.spillway-hdd-model", "-o", "TARGET"], capture_output=True,
                            text=True).stdout
    assert "spillway-hdd-fidelity-" not in mounts
