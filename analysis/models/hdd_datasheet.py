"""What a 7200 rpm drive's datasheet says a request should take: the one copy of the formulas the HDD model
(playbooks/roles/emulated_storage/files/spillway-hdd-model.c) is held to, written from the datasheet, never from
the model's code (docs/storage.md, "The mechanical HDD model").

Two readers: the fidelity benchmark (experiments/benchmarks/hdd_fidelity.py), which runs fio on its own instance of
the model, and the report's fio section, which prints beside each point of a run's hdd sweep what these formulas
give for that point's own region (the file's extent on the stroke), queue depth and block size
(`point_expectation`). Positions are fractions of the drive's capacity (0 = the outer edge, 1 = the inner one).
"""
from __future__ import annotations

import math
from functools import cached_property, lru_cache
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

KIB, MIB, GIB = 1024, 1024 ** 2, 1024 ** 3
PROFILES = Path(__file__).resolve().parents[2] / "inventories/storage-profiles.yml"
# Sequential transfers of at most this size are bound by the loop and FUSE path, not by the drive (docs/storage.md,
# "Feasibility": 30-66 MB/s for 4 KiB where the drive streams about 110): no expectation is held to them.
PATH_BOUND_SEQUENTIAL_BYTES = 4 * KIB
# A full write cache of scattered writes: how many dirty extents the drive keeps apart, and how many of those
# nearest the head it chooses among when it destages (the server's MAX_DIRTY_EXTENTS and destage window: the
# datasheet gives neither, so these are the model's assumptions, named in docs/storage.md).
DIRTY_EXTENTS = 16384
DESTAGE_CHOICES = 256


@dataclass(frozen=True)
class Drive:
    """Western Digital Ultrastar DC HC310 (3.5" SATA, 7200 rpm), "Hard Disk Drive Specifications, Ultrastar DC
    HC310", rev. 1.4, 2018-09-18, section 4.5.1 for the seeks and latency; its datasheet for the sustained rate
    and buffer. Fields marked "assumed" are not on the datasheet (docs/storage.md says why each value)."""
    rpm: float = 7200
    read_seek_avg_ms: float = 7.4          # average read seek, typical
    read_seek_track_ms: float = 0.23       # single-track read seek, typical
    write_seek_avg_ms: float = 8.2
    write_seek_track_ms: float = 0.32
    outer_rate: float = 255e6              # bytes/s, sustained, outer diameter
    inner_rate: float = 127.5e6            # bytes/s, inner diameter: assumed half the outer
    interface_rate: float = 600e6          # bytes/s, SATA 6 Gb/s after 8b/10b coding
    overhead_ms: float = 0.1               # command overhead before a media access: assumed
    hit_overhead_ms: float = 0.03          # command overhead of a buffer or cache hit: assumed (HGST specs: <30 us)
    write_cache: int = 256 * 1000 ** 2     # bytes: the 256 MB buffer, all usable as write cache (assumed)
    readahead: int = 4 * MIB               # bytes read ahead after a read: assumed
    segments: int = 16                     # read buffer segments: assumed
    min_prefetch: int = 512 * KIB          # bytes read on when a stream comes back: assumed
    capacity: float = 0                    # bytes of the drive (a run's image: its size); 0: seeks as a continuum

    @classmethod
    def from_options(cls, options: dict) -> "Drive":
        """A profile's `model.options` (as inventories/storage-profiles.yml and every run's manifest hold them,
        named as the server's command line names them)."""
        return cls(**{name.replace("-", "_"): value for name, value in options.items()})

    @classmethod
    def from_profile(cls, profiles_file: Path = PROFILES) -> "Drive":
        """The drive of the hdd profile of inventories/storage-profiles.yml (what the harness's disks run with)."""
        return cls.from_options(yaml.safe_load(profiles_file.read_text())["profiles"]["hdd"]["model"]["options"])

    @property
    def revolution_s(self) -> float:
        return 60.0 / self.rpm

    def full_stroke_ms(self, write: bool = False) -> float:
        """Datasheets average seek times over all pairs of cylinders (weight max+1-n for an n-track seek, i.e.
        uniform start and end): with seek(d) = track + (full - track) * sqrt(d) over the stroke fraction d,
        E[sqrt(d)] = 8/15, so full = track + (average - track) * 15/8."""
        track = self.write_seek_track_ms if write else self.read_seek_track_ms
        average = self.write_seek_avg_ms if write else self.read_seek_avg_ms
        return track + (average - track) * 15 / 8

    @property
    def tracks(self) -> float:
        """Tracks on the drive: evenly spaced in radius, each one revolution at its media rate, so the capacity is
        the track count times the mean track (NaN without a capacity)."""
        if self.capacity <= 0:
            return math.nan
        return max(2.0, self.capacity / (self.revolution_s * (self.outer_rate + self.inner_rate) / 2))

    def seek_s(self, distance, write: bool = False):
        """Seek over `distance`, a fraction of the stroke (0 = no seek; a number or an array of them). With the
        drive's capacity known, the datasheet's single-track seek is the seek to the next track and the head stays
        put within a track (a destage choosing among extents a few tracks apart moves mostly by those); without it,
        a continuum."""
        track = self.write_seek_track_ms if write else self.read_seek_track_ms
        full = self.full_stroke_ms(write)
        distance = np.asarray(distance, dtype=float)
        if self.capacity <= 0:
            seconds = (track + (full - track) * np.sqrt(np.maximum(distance, 0.0))) / 1e3
            moved = distance > 0
        else:
            tracks = distance * self.tracks
            seconds = (track + (full - track) * np.sqrt((np.maximum(tracks, 1.0) - 1) / (self.tracks - 1))) / 1e3
            moved = tracks >= 0.5
        seconds = np.where(moved, seconds, 0.0)
        return float(seconds) if seconds.ndim == 0 else seconds

    def radius(self, fraction):
        """r / r_outer at a fraction of the capacity (a number or an array): constant linear density, so the bytes
        outside radius r grow as r_outer^2 - r^2 and the media rate is proportional to r."""
        ratio = self.inner_rate / self.outer_rate
        return np.sqrt(1 - np.asarray(fraction, dtype=float) * (1 - ratio ** 2))

    def stroke(self, fraction):
        ratio = self.inner_rate / self.outer_rate
        return (1 - self.radius(fraction)) / (1 - ratio)

    def media_rate(self, fraction):
        return self.outer_rate * self.radius(fraction)

    def streaming_rate(self, start: float, end: float, steps: int = 1000) -> float:
        """Bytes/s reading [start, end) of the capacity (fractions) at the media rate: bytes over summed time."""
        width = (end - start) / steps
        if width <= 0:
            return self.media_rate(start)
        seconds = sum(width / self.media_rate(start + (i + 0.5) * width) for i in range(steps))
        return (end - start) / seconds

    def host_bound_rate(self, size: int, depth: int = 1) -> float:
        """Bytes/s of back-to-back hits of `size` bytes: at QD 1 command overhead plus the link's transfer each;
        deeper queues overlap the overheads, up to the link's rate."""
        return min(depth * size / (self.hit_overhead_ms / 1e3 + size / self.interface_rate), self.interface_rate)


def random_read_service_s(drive: Drive, size: int, samples: int = 200_000, seed: int = 21,
                          start: float = 0.0, end: float = 1.0) -> float:
    """Mean service time of a random read (QD 1, offsets uniform over [start, end) of the capacity): overhead +
    seek between two uniform offsets + half a revolution + transfer at the target's media rate (Monte Carlo)."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(start, end, samples), rng.uniform(start, end, samples)
    total = drive.seek_s(np.abs(drive.stroke(a) - drive.stroke(b))) + size / drive.media_rate(b)
    return drive.overhead_ms / 1e3 + float(total.mean()) + drive.revolution_s / 2


@dataclass(frozen=True)
class Region:
    """Where a file lies on the drive: its extents as [start, end) fractions of the capacity, in the file's order.
    A position in the file (0 its first byte, 1 past its last) maps to one on the drive."""
    extents: tuple[tuple[float, float], ...] = ((0.0, 1.0),)

    @classmethod
    def of_extents(cls, extents: list[tuple[int, int]], device_bytes: int) -> "Region":
        """From (physical byte, length in bytes) pairs in the file's order and the device's size."""
        if device_bytes <= 0 or not extents:
            raise ValueError("a region needs a device of some size and at least one extent")
        return cls(tuple((start / device_bytes, (start + length) / device_bytes) for start, length in extents))

    @property
    def width(self) -> float:
        return sum(end - start for start, end in self.extents)

    @cached_property
    def _layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(each extent's start, its length, the file's width before it), as arrays."""
        starts = np.array([start for start, _ in self.extents])
        lengths = np.array([end - start for start, end in self.extents])
        return starts, lengths, np.concatenate(([0.0], np.cumsum(lengths)))

    def position(self, within):
        """The drive's fraction at a fraction `within` of the file (a number or an array)."""
        starts, lengths, before = self._layout
        left = np.asarray(within, dtype=float) * before[-1]
        index = np.minimum(np.maximum(np.searchsorted(before, left, side="left") - 1, 0), len(starts) - 1)
        drive = np.minimum(starts[index] + left - before[index], starts[index] + lengths[index])
        return float(drive) if drive.ndim == 0 else drive

    def streaming_rate(self, drive: "Drive") -> float:
        """Bytes/s reading the file from start to end at the media rate (bytes over summed time)."""
        return self.width / sum((end - start) / drive.streaming_rate(start, end) for start, end in self.extents)


def sptf_iops(drive: Drive, size: int, depth: int, steps: int = 20_000, seed: int = 21, region: Region = Region(),
              write: bool = False, window: float | None = None) -> float:
    """IOPS of random requests kept `depth` deep over `region`, the drive serving the one with the shortest
    positioning time (overhead + seek + rotational wait, the sector's angle uniform and independent of the seek)
    first. `window`: each new request lands within this fraction of the file around the head (a destage choosing
    among the dirty extents nearest it) instead of anywhere in it."""
    rng = np.random.default_rng(seed)

    def targets(head: float, count: int) -> np.ndarray:
        if window is None:
            return rng.random(count)
        low = min(max(0.0, head - window / 2), 1.0 - window)
        return low + rng.random(count) * window

    head = rng.random()
    queue = targets(0.0 if window is None else head, depth)
    queue_stroke = drive.stroke(region.position(queue))
    here = drive.stroke(region.position(head))
    elapsed = 0.0
    for _ in range(steps):
        positioning = drive.seek_s(np.abs(here - queue_stroke), write) + rng.random(depth) * drive.revolution_s
        best = int(np.argmin(positioning))
        head, here = float(queue[best]), float(queue_stroke[best])
        elapsed += drive.overhead_ms / 1e3 + float(positioning[best]) + size / float(
            drive.media_rate(region.position(head)))
        queue[best] = targets(head, 1)[0]
        queue_stroke[best] = drive.stroke(region.position(queue[best]))
    return steps / elapsed


def sptf_random_read_iops(drive: Drive, size: int, depth: int, steps: int = 20_000, seed: int = 21) -> float:
    """sptf_iops of reads over the whole capacity."""
    return sptf_iops(drive, size, depth, steps, seed)


def cache_extents(drive: Drive, size: int) -> int:
    """How many scattered writes of `size` a full write cache holds apart."""
    return max(1, min(DIRTY_EXTENTS, drive.write_cache // size))


class _DirtyExtents:
    """The write cache's scattered dirty extents, kept in file order, and the destage policy: the drive writes, of
    the DESTAGE_CHOICES extents nearest the head, the one with the shortest positioning time (overhead + seek +
    rotational wait, the sector's angle uniform and independent of the seek)."""

    def __init__(self, drive: Drive, size: int, region: Region, rng: np.random.Generator):
        self.drive, self.size, self.region, self.rng = drive, size, region, rng
        self.within = np.empty(0)      # file fractions, sorted
        self.strokes = np.empty(0)
        self.seconds = np.empty(0)     # each extent's transfer at its media rate
        self.head_within, self.head_stroke = 0.0, float(drive.stroke(region.position(0.0)))

    def __len__(self) -> int:
        return self.within.size

    def add(self, within: np.ndarray) -> None:
        within = np.sort(within)
        at = np.searchsorted(self.within, within)
        on_drive = self.region.position(within)
        self.within = np.insert(self.within, at, within)
        self.strokes = np.insert(self.strokes, at, self.drive.stroke(on_drive))
        self.seconds = np.insert(self.seconds, at, self.size / self.drive.media_rate(on_drive))

    def destage(self) -> float:
        """Write one extent to the platter; the seconds that took."""
        drive, half = self.drive, DESTAGE_CHOICES // 2
        middle = int(np.searchsorted(self.within, self.head_within))
        low = max(0, min(middle - half, len(self) - DESTAGE_CHOICES))
        high = min(len(self), low + DESTAGE_CHOICES)
        positioning = drive.seek_s(np.abs(self.head_stroke - self.strokes[low:high]), write=True) + \
            self.rng.random(high - low) * drive.revolution_s
        best = int(np.argmin(positioning))
        chosen = low + best
        self.head_within, self.head_stroke = float(self.within[chosen]), float(self.strokes[chosen])
        transfer = float(self.seconds[chosen])
        self.within, self.strokes, self.seconds = (np.delete(column, chosen) for column in
                                                   (self.within, self.strokes, self.seconds))
        return drive.overhead_ms / 1e3 + float(positioning[best]) + transfer


@lru_cache(maxsize=64)
def destage_iops(drive: Drive, size: int, region: Region, destages: int = 3_000, seed: int = 21) -> float:
    """Destages per second of scattered writes of `size` over `region` with the write cache full of them (steady
    state: each destage makes room for one more write, anywhere in the region)."""
    rng = np.random.default_rng(seed)
    cache = _DirtyExtents(drive, size, region, rng)
    cache.add(rng.random(cache_extents(drive, size)))
    for _ in range(destages // 5):      # the head settles into the policy's pattern first
        cache.destage()
        cache.add(rng.random(1))
    elapsed = 0.0
    for _ in range(destages):
        elapsed += cache.destage()
        cache.add(rng.random(1))
    return destages / elapsed


@lru_cache(maxsize=64)
def random_write_seconds(drive: Drive, size: int, region: Region, writes: int, issue_s: float,
                         seed: int = 21) -> float:
    """Seconds from the first of `writes` random writes of `size` over `region`, taken into the empty write cache
    evenly over `issue_s` seconds (a write waits for room when the cache is full), until the last of them is on the
    platter: what a sweep's write point times (fio's end_fsync inside its runtime). The drive destages as long as
    any extent is dirty, by the policy of _DirtyExtents."""
    rng = np.random.default_rng(seed)
    cache = _DirtyExtents(drive, size, region, rng)
    full = cache_extents(drive, size)
    positions = rng.random(writes)
    due = np.arange(writes) * (issue_s / writes)
    clock, taken = 0.0, 0
    while taken < writes or len(cache):
        if taken < writes and not len(cache):
            clock = max(clock, float(due[taken]))
        ready = taken + int(np.searchsorted(due[taken:], clock, side="right"))
        ready = min(ready, taken + full - len(cache), writes)
        if ready > taken:
            cache.add(positions[taken:ready])
            taken = ready
        clock += cache.destage()
    return max(clock, issue_s)


def sequential_read_rate(drive: Drive, size: int, region: float, start: float = 0.0, depth: int = 1) -> float:
    """Sequential reads of `size` over [start, region) of the capacity: read-ahead streams at the media rate, so
    the drive delivers the slower of the media and of back-to-back buffer hits."""
    return min(drive.streaming_rate(start, region), drive.host_bound_rate(size, depth))


def sequential_write_rate(drive: Drive, size: int, region: float, seconds: float) -> float:
    """QD 1 sequential writes for `seconds`, the cache empty at the start: writes come in at the hit rate; when
    that is faster than the media, the cache fills at the difference, then writes go at the media rate."""
    incoming = drive.host_bound_rate(size)
    media = drive.streaming_rate(0, region)
    if incoming <= media:
        return incoming
    fill_s = drive.write_cache / (incoming - media)
    if fill_s >= seconds:
        return incoming
    return (incoming * fill_s + media * (seconds - fill_s)) / seconds


def mixed_iops(drive: Drive, size: int, read_share: float) -> float:
    """Random reads and writes at QD 1: reads pay a random access, writes are absorbed by the write cache
    (true while the run writes less than the destage threshold and the cache: here well under 1 MiB)."""
    hit_s = drive.hit_overhead_ms / 1e3 + size / drive.interface_rate
    return 1 / (read_share * random_read_service_s(drive, size) + (1 - read_share) * hit_s)


def interleaved_readers_rate(drive: Drive, size: int, first: float, second: float) -> float:
    """Bytes/s of two sequential readers at QD 1 each, at capacity fractions `first` and `second`: each visit of
    the drive to a reader costs a seek between the two, half a revolution, and the transfer of the request plus
    the minimum prefetch, whose bytes the reader then takes from its segment without the drive."""
    seek = drive.seek_s(abs(drive.stroke(second) - drive.stroke(first)))
    per_visit = size + drive.min_prefetch
    rate = (drive.media_rate(first) + drive.media_rate(second)) / 2
    return per_visit / (drive.overhead_ms / 1e3 + seek + drive.revolution_s / 2 + per_visit / rate)


def point_expectation(drive: Drive, rw: str, size: int, depth: int, region: Region, writes: int = 0,
                      issue_s: float = math.nan) -> tuple[float, str]:
    """(bytes/s, how) the datasheet gives for one point of a fio sweep in steady state: `rw` fio's pattern, `size`
    its block size, `depth` its queue depth, `region` where its file lies on the drive. A write point starts with the
    write cache empty and its time ends when the cache is on the platter (run-sweep): the drive destages from its
    first MiB to its last, so sequential writes come out at the media rate; random ones at the `writes` the host got
    into the cache over the `issue_s` seconds fio issued them, destaged as they came and then drained
    (random_write_seconds; without those two, one destage from a full cache each). NaN with the reason for a point
    the formulas do not hold."""
    if rw not in ("read", "write", "randread", "randwrite"):
        return math.nan, f"no datasheet formula for fio pattern {rw!r} (read, write, randread, randwrite only)"
    if not all(0 <= start < end <= 1 for start, end in region.extents):
        return math.nan, "the file's extents are not all on the drive"
    if not rw.startswith("rand"):
        if size <= PATH_BOUND_SEQUENTIAL_BYTES:
            return math.nan, "path-bound: sequential 4 KiB goes no faster than the loop and FUSE path (docs/storage.md)"
        return min(region.streaming_rate(drive), drive.host_bound_rate(size, depth)), \
            "streaming at the media rate over the file's extents"
    if rw == "randread":
        return sptf_iops(drive, size, depth, steps=5_000, region=region) * size, \
            f"random reads {depth} deep, shortest positioning first, over the file's extents"
    if writes and issue_s and issue_s > 0:
        return writes * size / random_write_seconds(drive, size, region, int(writes), issue_s), \
            (f"{writes:,} random writes taken into the write cache over {issue_s:g} s, destaged shortest positioning "
             "first among the dirty extents, then drained")
    return destage_iops(drive, size, region) * size, \
        "random writes destaged from a full write cache, shortest positioning first"


def sweep_expectations(curves: pd.DataFrame, extents: pd.DataFrame, profile_of: dict[str, str],
                       profiles: dict) -> pd.DataFrame:
    """The expectation beside each point of a run's fio sweep (metrics.fio_curves) on a modelled drive: its profile's
    `model.options` (as the run recorded them), its file's extents on the device (the `fio_extents` table), its
    rw, block size and queue depth. One row per (host, backend, rw, block_size_bytes) of a modelled backend, with
    `expected_bytes_per_s` (NaN when no formula holds or the file's extents were not recorded) and `expectation`."""
    columns = ["host", "backend", "rw", "block_size_bytes", "expected_bytes_per_s", "expectation"]
    rows = []
    for point in curves.itertuples() if not curves.empty else ():
        options = ((profiles.get(profile_of.get(point.backend, point.backend)) or {}).get("model") or {}).get("options")
        if not options:
            continue
        on_host = extents[(extents["host"] == point.host) & (extents["backend"] == point.backend)] \
            if not extents.empty else extents
        if on_host.empty:
            rows.append((point.host, point.backend, point.rw, point.block_size_bytes, math.nan,
                         "no expectation: where the file lay on the drive was not recorded (extents-<backend>.json)"))
            continue
        device_bytes = int(on_host["device_bytes"].iloc[0])
        region = Region.of_extents(list(zip(on_host["physical_bytes"], on_host["length_bytes"])), device_bytes)
        # the image is the drive (the model's default capacity): its size sets the tracks a short seek crosses
        drive = replace(Drive.from_options(options), capacity=device_bytes)
        io_bytes = getattr(point, "io_bytes", math.nan)
        writes = int(io_bytes // point.block_size_bytes) if io_bytes == io_bytes and io_bytes > 0 else 0
        expected, how = point_expectation(drive, point.rw, int(point.block_size_bytes),
                                          int(getattr(point, "iodepth", 1)), region, writes,
                                          float(getattr(point, "issue_s", math.nan)))
        rows.append((point.host, point.backend, point.rw, point.block_size_bytes, expected, how))
    return pd.DataFrame(rows, columns=columns)
