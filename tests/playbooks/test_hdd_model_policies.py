"""The disk model's policies (read-ahead and the track buffer, buffer segments and prefetch, the write cache and its
destaging, command queueing with reordering and aging) in the server's own C code, on a simulated clock.

tests/playbooks/hdd_model_simulator.c #includes playbooks/roles/emulated_storage/files/spillway-hdd-model.c and
feeds the policy functions its threads call (arrive_at, drive_advance, drive_next_event) requests at given
times; no FUSE mount, no I/O, no root. Every expectation is computed here from docs/storage.md's formulas (the
fidelity benchmark's Drive, written from the datasheet, not from the model's code). Needs gcc and libfuse3-dev
(make setup): a missing compiler fails. About 2 s."""
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from experiments.benchmarks.hdd_fidelity import KIB, MIB, GIB, Drive, random_read_service_s, sptf_random_read_iops

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "playbooks/roles/emulated_storage/files/spillway-hdd-model.c"
SIMULATOR = Path(__file__).resolve().parent / "hdd_model_simulator.c"
DRIVE = Drive.from_profile()
CAPACITY = 8 * GIB
# The server's defaults for what the Drive does not carry (docs/storage.md, "The model": write cache, queueing).
DESTAGE_MIN, DESTAGE_IDLE_MS, MAX_WAIT_MS = MIB, 10.0, 1000.0
MS = 1_000_000  # ns


@pytest.fixture(scope="module")
def simulator(tmp_path_factory):
    if not shutil.which("gcc") or subprocess.run(["pkg-config", "--exists", "fuse3"]).returncode != 0:
        pytest.fail("gcc and libfuse3-dev are needed (make setup installs them)")
    binary = tmp_path_factory.mktemp("hdd-policies") / "simulator"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True, text=True,
                           check=True).stdout.split()
    subprocess.run(["gcc", "-O1", "-w", f'-DSPILLWAY_HDD_MODEL_SOURCE="{SOURCE}"', "-o", str(binary),
                    str(SIMULATOR), *flags, "-lm", "-lpthread"], check=True, capture_output=True, text=True)
    return binary


def simulate(simulator, *lines, **overrides):
    """Runs a script on the model with the hdd profile's drive; returns (requests, states, stats)."""
    params = {name: getattr(DRIVE, name) for name in (
        "rpm", "read_seek_avg_ms", "read_seek_track_ms", "write_seek_avg_ms", "write_seek_track_ms", "outer_rate",
        "inner_rate", "interface_rate", "overhead_ms", "hit_overhead_ms", "write_cache", "readahead", "segments",
        "min_prefetch")}
    params.update(capacity=CAPACITY, destage_min=DESTAGE_MIN, destage_idle_ms=DESTAGE_IDLE_MS,
                  max_wait_ms=MAX_WAIT_MS)
    params.update(overrides)
    script = [f"param {name} {value}" for name, value in params.items()] + list(lines)
    out = subprocess.run([str(simulator)], input="\n".join(script) + "\n", capture_output=True, text=True,
                         check=True, timeout=60).stdout
    records = [json.loads(line) for line in out.splitlines()]
    return ([r for r in records if "id" in r], [r["state"] for r in records if "state" in r],
            next(r["stats"] for r in records if "stats" in r))


def seconds(request):
    return (request["reply"] - request["arrival"]) / 1e9


# --- the datasheet's geometry, as docs/storage.md writes it ---

def fraction(offset):
    return offset / CAPACITY


def tracks():
    ratio = DRIVE.inner_rate / DRIVE.outer_rate
    return CAPACITY / (DRIVE.revolution_s * DRIVE.outer_rate * (1 + ratio) / 2)


def angle(offset):
    """A sector's angle in revolutions: the fractional part of its track number (one spiral)."""
    track = DRIVE.stroke(fraction(offset)) * tracks()
    return track - math.floor(track)


def rotational_wait_s(at_s, offset):
    """From time at_s (the head on the sector's track) until the sector comes round."""
    platter = at_s / DRIVE.revolution_s
    return ((angle(offset) - (platter - math.floor(platter))) % 1.0) * DRIVE.revolution_s


def hit_s(size):
    return DRIVE.hit_overhead_ms / 1e3 + size / DRIVE.interface_rate


def worst_access_s(size, write=False):
    """Overhead + full-stroke seek + a whole revolution + the transfer at the inner rate: no access takes longer."""
    return DRIVE.overhead_ms / 1e3 + DRIVE.full_stroke_ms(write) / 1e3 + DRIVE.revolution_s + size / DRIVE.inner_rate


# --- read-ahead and the track buffer ---

def test_a_read_the_read_ahead_already_fetched_is_a_buffer_hit(simulator):
    first, = simulate(simulator, "read 0 0 65536")[0]
    later = first["reply"] + 10 * MS            # 10 ms of read-ahead: 2.5 MB past the first read
    requests, _, stats = simulate(simulator, "read 0 0 65536", f"read {later} 65536 65536")
    assert seconds(requests[1]) == pytest.approx(hit_s(64 * KIB), abs=2e-6)   # 0.03 ms + 64 KiB / 600 MB/s
    assert stats["buffer_hits"] == 1


def test_without_read_ahead_the_next_read_waits_for_its_sector_to_come_round(simulator):
    first, = simulate(simulator, "read 0 0 65536", readahead=0)[0]
    later = first["reply"] + 10 * MS
    requests, _, stats = simulate(simulator, "read 0 0 65536", f"read {later} 65536 65536", readahead=0)
    # Same track, no seek: overhead, the rotational wait from where the platter is then, the transfer.
    at = later / 1e9 + DRIVE.overhead_ms / 1e3
    expected = DRIVE.overhead_ms / 1e3 + rotational_wait_s(at, 65536) + 64 * KIB / DRIVE.media_rate(fraction(65536))
    assert seconds(requests[1]) == pytest.approx(expected, abs=2e-6)
    assert stats["buffer_hits"] == 0


def test_a_read_ahead_of_the_stream_inside_the_window_completes_when_the_stream_reaches_it(simulator):
    first, = simulate(simulator, "read 0 0 65536")[0]
    later = first["reply"] + 10 * MS
    offset = 65536 + 3 * MIB                    # inside the 4 MiB window, beyond what 10 ms streamed
    requests, _, stats = simulate(simulator, "read 0 0 65536", f"read {later} {offset} 65536")
    # No seek, no rotation: the stream goes on from the first read's end at the media rate.
    expected_end = first["reply"] / 1e9 + (offset + 65536 - 65536) / DRIVE.media_rate(fraction(65536))
    assert requests[1]["reply"] / 1e9 == pytest.approx(expected_end, rel=1e-4)
    assert stats["stream_continuations"] == 1


def test_read_ahead_stops_at_its_window(simulator):
    first, = simulate(simulator, "read 0 0 65536")[0]
    later = first["reply"] + 1000 * MS          # long idle: the stream stopped at 64 KiB + 4 MiB
    edge = 65536 + DRIVE.readahead
    requests, _, _ = simulate(simulator, "read 0 0 65536", f"read {later} {edge - 65536} 65536",
                              f"read {later + 10 * MS} {edge} 65536")
    assert seconds(requests[1]) == pytest.approx(hit_s(64 * KIB), abs=2e-6)   # the window's last 64 KiB: a hit
    at = (later + 10 * MS) / 1e9 + DRIVE.overhead_ms / 1e3
    past = DRIVE.overhead_ms / 1e3 + rotational_wait_s(at, edge) + 64 * KIB / DRIVE.media_rate(fraction(edge))
    assert seconds(requests[2]) == pytest.approx(past, abs=2e-6)              # past it: the platter again


# --- buffer segments and the minimum prefetch ---

def two_streams(simulator, **overrides):
    """Stream A reads at 0 and reads ahead; B reads at half the capacity (the drive leaves A); A comes back."""
    first, = simulate(simulator, "read 0 0 65536", **overrides)[0]
    b_at = first["reply"] + 20 * MS
    b, = simulate(simulator, "read 0 0 65536", f"read {b_at} {CAPACITY // 2} 65536", **overrides)[0][1:]
    a_again = b["reply"] + 1 * MS
    return simulate(simulator, "read 0 0 65536", f"read {b_at} {CAPACITY // 2} 65536",
                    f"read {a_again} 65536 65536", **overrides)


def test_a_kept_segment_serves_a_stream_the_drive_left(simulator):
    requests, _, stats = two_streams(simulator)
    assert seconds(requests[2]) == pytest.approx(hit_s(64 * KIB), abs=2e-6)
    assert stats["buffer_hits"] == 1


def test_with_one_segment_the_left_stream_pays_the_seek_back(simulator):
    requests, _, stats = two_streams(simulator, segments=1)
    # From at least B's track back to A's: overhead + that seek + the transfer, at the least.
    seek = DRIVE.seek_s(DRIVE.stroke(0.5) - DRIVE.stroke(fraction(65536)))
    assert seconds(requests[2]) >= DRIVE.overhead_ms / 1e3 + seek + 64 * KIB / DRIVE.outer_rate
    assert stats["buffer_hits"] == 0


def prefetch_then_other(simulator, **overrides):
    """A and B as above with A's segment full; A resumes at its segment's end while a far read C waits."""
    requests, _, _ = two_streams(simulator, **overrides)
    resume_at = requests[2]["reply"] + 1 * MS
    edge = 65536 + DRIVE.readahead              # the end of A's kept segment
    far = CAPACITY - MIB
    return simulate(simulator, "read 0 0 65536", f"read {requests[1]['arrival']} {CAPACITY // 2} 65536",
                    f"read {requests[2]['arrival']} 65536 65536", f"read {resume_at} {edge} 65536",
                    f"read {resume_at + 1000} {far} 4096", **overrides)


def test_a_returning_stream_gets_the_minimum_prefetch_before_other_work(simulator):
    requests, _, stats = prefetch_then_other(simulator)
    resumed, far = requests[3], requests[4]
    edge = resumed["offset"] + resumed["size"]
    prefetch = DRIVE.min_prefetch / DRIVE.media_rate(fraction(edge))           # 512 KiB at ~255 MB/s: 2.1 ms
    seek = DRIVE.seek_s(DRIVE.stroke(fraction(far["offset"])) - DRIVE.stroke(fraction(edge + DRIVE.min_prefetch)))
    assert (far["reply"] - resumed["reply"]) / 1e9 >= prefetch + DRIVE.overhead_ms / 1e3 + seek
    assert stats["min_prefetches"] == 1


def test_without_minimum_prefetch_the_far_read_follows_at_once(simulator):
    requests, _, stats = prefetch_then_other(simulator, min_prefetch=0)
    resumed, far = requests[3], requests[4]
    edge = resumed["offset"] + resumed["size"]
    seek = DRIVE.seek_s(DRIVE.stroke(fraction(far["offset"])) - DRIVE.stroke(fraction(edge)))
    gap = (far["reply"] - resumed["reply"]) / 1e9
    # overhead + seek + at most a revolution + 4 KiB: no prefetch in between
    assert gap <= DRIVE.overhead_ms / 1e3 + seek * 1.01 + DRIVE.revolution_s + 4096 / DRIVE.inner_rate
    assert stats["min_prefetches"] == 0


# --- the write cache ---

def test_a_write_into_the_cache_is_acknowledged_at_the_link_rate(simulator):
    requests, _, stats = simulate(simulator, "write 0 1000000 65536")
    assert seconds(requests[0]) == pytest.approx(hit_s(64 * KIB), abs=2e-6)
    assert stats["cache_absorbed"] == 1


def test_without_a_write_cache_a_write_goes_to_the_platter(simulator):
    requests, _, stats = simulate(simulator, "write 0 0 65536", write_cache=0)
    # Head on track 0 at time 0: overhead, then sector 0 comes round, then the transfer.
    at = DRIVE.overhead_ms / 1e3
    expected = at + rotational_wait_s(at, 0) + 64 * KIB / DRIVE.media_rate(0)
    assert seconds(requests[0]) == pytest.approx(expected, abs=2e-6)
    assert stats["write_throughs"] == 1 and stats["cache_absorbed"] == 0


def test_queued_cache_hits_share_the_one_link(simulator):
    requests, _, _ = simulate(simulator, *(f"write 0 {k * 4 * MIB} {MIB}" for k in range(4)))
    for k, request in enumerate(requests, start=1):   # 0.03 ms, then one 1 MiB transfer after the other
        assert seconds(request) == pytest.approx(DRIVE.hit_overhead_ms / 1e3 + k * MIB / DRIVE.interface_rate,
                                                 abs=2e-6)


def test_a_small_dirty_amount_waits_for_the_idle_time_before_destaging(simulator):
    _, states, _ = simulate(simulator, "write 0 0 4096", f"run {int(DESTAGE_IDLE_MS * MS) - 100_000}",
                            f"run {int((DESTAGE_IDLE_MS / 1e3 + worst_access_s(4096, write=True)) * 1e9)}")
    assert states[0]["dirty_bytes"] == 4096 and states[0]["destages"] == 0   # 9.9 ms: still in the cache
    assert states[1]["dirty_bytes"] == 0 and states[1]["destages"] == 1


def test_the_destage_threshold_starts_destaging_at_once(simulator):
    # 1 MiB at offset 0, head on track 0: overhead + at most a revolution + 1 MiB at 255 MB/s = 12.5 ms, before
    # the 10 ms idle time plus the transfer alone (14.2 ms) could have emptied it.
    done_by = DRIVE.overhead_ms / 1e3 + DRIVE.revolution_s + MIB / DRIVE.media_rate(0)
    _, states, _ = simulate(simulator, f"write 0 0 {MIB}", f"run {int(done_by * 1e9) + 1000}")
    assert done_by < DESTAGE_IDLE_MS / 1e3 + DRIVE.overhead_ms / 1e3 + MIB / DRIVE.outer_rate
    assert states[0]["dirty_bytes"] == 0


def test_a_read_goes_before_the_rest_of_the_destaging(simulator):
    # 2 MiB dirty: the first 1 MiB piece starts at once; a read arriving meanwhile goes before the second piece.
    requests, _, stats = simulate(simulator, f"write 0 0 {2 * MIB}", f"read 1000 {CAPACITY // 2} 4096")
    assert requests[1]["dirty_at_reply"] == MIB
    assert stats["dirty_bytes"] == 0 and stats["destages"] == 2


def test_a_full_cache_makes_a_write_wait_for_the_destage(simulator):
    requests, _, stats = simulate(simulator, f"write 0 0 {MIB}", f"write 1000 {4 * MIB} 65536", write_cache=MIB)
    waited = seconds(requests[1])
    # the 1 MiB piece on the platter first: at least its overhead and transfer, at most the worst access
    assert DRIVE.overhead_ms / 1e3 + MIB / DRIVE.outer_rate <= waited <= worst_access_s(MIB, write=True) + \
        hit_s(64 * KIB)
    assert stats["cache_full_waits"] == 1


def test_a_flush_waits_for_the_cache_to_drain(simulator):
    requests, _, _ = simulate(simulator, "write 0 0 65536", "fsync 10000", "fsync 500000000")
    assert DRIVE.overhead_ms / 1e3 + 64 * KIB / DRIVE.outer_rate <= seconds(requests[1]) <= \
        worst_access_s(64 * KIB, write=True)
    assert seconds(requests[2]) == 0                # nothing dirty: at once


# --- command queueing ---

def test_queued_random_reads_at_qd1_pay_a_random_access_each(simulator):
    requests, _, _ = simulate(simulator, f"closed read rand 3000 1 4096 {CAPACITY} 7")
    iops = len(requests) / (requests[-1]["reply"] / 1e9)
    assert iops == pytest.approx(1 / random_read_service_s(DRIVE, 4 * KIB), rel=0.05)   # 86 IOPS


def test_queueing_reorders_32_random_reads_to_the_shortest_positioning_time(simulator):
    requests, _, stats = simulate(simulator, f"closed read rand 3000 32 4096 {CAPACITY} 7")
    iops = len(requests) / (requests[-1]["reply"] / 1e9)
    # The expectation's Monte Carlo draws the rotational wait independently of the seek; the model's angles
    # follow the sectors, which lands within a few per cent of it (233 IOPS; FIFO would make 86).
    assert iops == pytest.approx(sptf_random_read_iops(DRIVE, 4 * KIB, 32), rel=0.10)
    assert stats["reordered"] > len(requests) / 2


def aging(simulator, max_wait_ms):
    # The drive is busy with a read at the outer edge until about 8.4 ms; far (inner edge) arrives first, near
    # (64 MiB in) second. Near is the shorter positioning (at most 0.1 + 1.6 + 8.3 ms, far's seek alone is 13 ms).
    requests, _, stats = simulate(simulator, "read 0 0 4096", f"read 500000 {CAPACITY - MIB} 4096",
                                  f"read 1000000 {64 * MIB} 4096", max_wait_ms=max_wait_ms, readahead=0)
    return requests[1]["reply"], requests[2]["reply"], stats


def test_the_drive_serves_the_shortest_positioning_time_first(simulator):
    far, near, stats = aging(simulator, MAX_WAIT_MS)
    assert near < far and stats["reordered"] == 1


def test_a_request_waiting_longer_than_max_wait_goes_first(simulator):
    far, near, stats = aging(simulator, 5.0)        # far has waited ~8 ms when the drive frees
    assert far < near and stats["aged"] >= 1
