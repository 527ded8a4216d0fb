"""The disk model's mechanics in its own C code (playbooks/roles/emulated_storage/files/spillway-hdd-model.c)
against figures worked out by hand from the HC310 datasheet values (its defaults, the hdd profile's options).

A small driver #includes the server's source (so that its static functions are reachable; its main is renamed),
sets the geometry of a drive of 1e12 bytes, and prints what the model's functions answer; no FUSE mount, no I/O.
Needs gcc and libfuse3-dev (make setup). About 2 s."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "playbooks/roles/emulated_storage/files/spillway-hdd-model.c"
CAPACITY = 10 ** 12

DRIVER = r"""
#define main spillway_hdd_model_main
#include "%(source)s"
#undef main
int main(void)
{
    P.capacity = %(capacity)dULL;
    derive_geometry();
    double one_track = 1.0 / G.tracks;
    printf("{\"revolution_s\": %%.9f, \"tracks\": %%.3f, \"read_full_ms\": %%.6f, \"write_full_ms\": %%.6f,\n",
           G.revolution_s, G.tracks, G.read_full_ms, G.write_full_ms);
    printf(" \"rate_outer\": %%.1f, \"rate_middle\": %%.1f, \"rate_inner\": %%.1f,\n",
           media_rate(0), media_rate(P.capacity / 2), media_rate(P.capacity));
    printf(" \"stroke_outer\": %%.9f, \"stroke_inner\": %%.9f,\n", stroke_of(0), stroke_of(P.capacity));
    printf(" \"seek_none\": %%.9f, \"seek_one_track\": %%.9f, \"seek_full_read\": %%.9f, \"seek_full_write\": %%.9f,"
           " \"seek_quarter_read\": %%.9f,\n",
           seek_seconds(0.5, 0.5, 0), seek_seconds(0.5, 0.5 + one_track, 0), seek_seconds(0, 1, 0),
           seek_seconds(0, 1, 1), seek_seconds(0, 0.25 + one_track, 0));
    head_stroke = 0;
    /* A sector at angle 0 under a head on its track at time 0: overhead, then nearly a whole revolution, since the
       platter has moved on by the overhead's share of a revolution. */
    printf(" \"position_same_track_angle0\": %%.9f,\n", positioning_seconds(0, 0, 0));
    /* Write cache bookkeeping: adjacent and overlapping writes merge into one extent and count once. */
    dirty_insert(0, 4096); dirty_insert(4096, 4096); dirty_insert(2048, 4096); dirty_insert(1 << 20, 4096);
    printf(" \"dirty_count\": %%d, \"dirty_bytes\": %%llu, \"first_extent\": [%%llu, %%llu],"
           " \"covers_inside\": %%d, \"covers_gap\": %%d}\n",
           dirty_count, (unsigned long long)dirty_bytes, (unsigned long long)dirty[0].offset,
           (unsigned long long)dirty[0].length, dirty_covers(1024, 4096), dirty_covers(8000, 4096));
    return 0;
}
"""


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    if not shutil.which("gcc") or subprocess.run(["pkg-config", "--exists", "fuse3"]).returncode != 0:
        pytest.fail("gcc and libfuse3-dev are needed (make setup installs them)")
    work = tmp_path_factory.mktemp("hdd-model")
    (work / "driver.c").write_text(DRIVER % {"source": SOURCE, "capacity": CAPACITY})
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True, text=True,
                           check=True).stdout.split()
    subprocess.run(["gcc", "-O1", "-w", "-o", str(work / "driver"), str(work / "driver.c"), *flags, "-lm",
                    "-lpthread"], check=True, capture_output=True, text=True)
    return json.loads(subprocess.run([str(work / "driver")], capture_output=True, text=True, check=True).stdout)


def test_rotation_and_tracks_follow_the_spindle_and_the_capacity(answers):
    assert answers["revolution_s"] == pytest.approx(60 / 7200)                 # 8.33 ms at 7200 rpm
    # tracks evenly spaced in radius, each holding rate x revolution bytes: mean track = 8.333 ms x 191.25 MB/s
    assert answers["tracks"] == pytest.approx(CAPACITY / (60 / 7200 * (255e6 + 127.5e6) / 2), rel=1e-6)


def test_the_full_stroke_seek_makes_the_curve_average_to_the_datasheet(answers):
    # track + (average - track) x 15/8: 0.23 + 7.17 x 1.875 = 13.67375 ms; write 0.32 + 7.88 x 1.875 = 15.095 ms
    assert answers["read_full_ms"] == pytest.approx(13.67375)
    assert answers["write_full_ms"] == pytest.approx(15.095)
    assert answers["seek_full_read"] == pytest.approx(0.01367375)
    assert answers["seek_full_write"] == pytest.approx(0.015095)


def test_seeks_grow_as_the_square_root_of_the_distance_from_the_track_to_track_time(answers):
    assert answers["seek_none"] == 0
    assert answers["seek_one_track"] == pytest.approx(0.00023)                 # single-track read seek
    # a quarter of the stroke (plus the one track the curve starts after): 0.23 + 13.44375 x sqrt(1/4) ms
    assert answers["seek_quarter_read"] == pytest.approx((0.23 + 13.44375 * 0.5) / 1e3, rel=1e-4)


def test_the_media_rate_falls_from_the_outer_to_the_inner_edge_with_constant_density(answers):
    assert answers["rate_outer"] == pytest.approx(255e6)
    assert answers["rate_inner"] == pytest.approx(127.5e6)
    # half the bytes lie outside radius r with r^2 = 1 - 0.5 x (1 - 0.5^2): 255 x sqrt(0.625) = 201.6 MB/s
    assert answers["rate_middle"] == pytest.approx(255e6 * 0.625 ** 0.5)
    assert (answers["stroke_outer"], answers["stroke_inner"]) == (0, pytest.approx(1))


def test_a_sector_just_passed_costs_the_overhead_and_the_rest_of_a_revolution(answers):
    # overhead 0.1 ms; the sector at angle 0 has moved 0.1 / 8.333 of a turn away: wait 1 - 0.012 turns
    revolution = 60 / 7200
    assert answers["position_same_track_angle0"] == pytest.approx(0.0001 + revolution * (1 - 0.0001 / revolution))


def test_the_write_cache_merges_adjacent_and_overlapping_writes(answers):
    # [0, 4096) + [4096, 8192) + [2048, 6144) = one extent [0, 8192); [1 MiB, +4096) apart: 12 KiB dirty in all
    assert answers["dirty_count"] == 2 and answers["dirty_bytes"] == 8192 + 4096
    assert answers["first_extent"] == [0, 8192]
    assert answers["covers_inside"] == 1 and answers["covers_gap"] == 0
