"""How closely the mechanical HDD model (playbooks/roles/emulated_storage/files/spillway-hdd-model.c, issue 21)
behaves like the 7200 rpm drive whose datasheet it takes its parameters from: fio on a loop device over the
model's FUSE-served image, each point against an expectation computed here from the datasheet's formulas
(docs/storage.md, "The mechanical HDD model"), never from the model's code.

    python -m experiments.benchmarks.hdd_fidelity [--runtime 5] [--floor-runtime 3] [--image-gib 8] [--only TEXT]
                                                  [--tiny] [--json FILE]

It builds the server with gcc (needs libfuse3-dev, fuse3, pkg-config), makes its own sparse image, mount point
and loop device in a fresh folder under /var/tmp, and removes them all at the end, also on failure or Ctrl-C
(loop detached, FUSE unmounted, server stopped, folder deleted). It touches no other loop device or mount.
Every point runs twice: on the server with --no-model (the floor: what the FUSE and loop path alone allows) and
on the model. The table gives expected, floor and measured figures, the error against the expectation, and the
server's CPU share. Root only (losetup, FUSE mounts).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "playbooks/roles/emulated_storage/files/spillway-hdd-model.c"
PROFILES = REPO / "inventories/storage-profiles.yml"
KIB, MIB, GIB = 1024, 1024 ** 2, 1024 ** 3
TOLERANCE = 0.20           # the goal: every point within 20 % of its expectation
CPU_GOAL = 0.05            # the model's CPU under 5 % of a core
SEQUENTIAL_REGION = 2 * GIB  # sequential points loop over the image's first 2 GiB (its outer quarter at 8 GiB)
# --tiny: the points that carry the goals (seek-bound random reads with and without queueing, streaming reads
# and writes, and the 1 MiB read the reply calibration takes), on a 4 GiB image whose outer quarter the sequential
# points loop over (the same share of the stroke as the full run's, so the same sequential expectations). The region
# must outlast a read point: a reader that wraps round finds what the drive's buffer segments kept of its last pass
# (a 256 MiB region gave 1 MiB reads 313 MB/s, +29 %; the model alone on a simulated clock +13 %). Writes keep the full run's 5 s:
# their expectation is the cache filling at QD 1's hit rate, then the media rate, and in 2 s the first part (bound by
# the host path's round trip here) weighs more (-29 % in 2 s, -14 % in 5 s, one run each).
TINY = {"image_gib": 4, "region": GIB, "runtime": 2.0, "write_runtime": 5.0, "floor_runtime": 1.0,
        "points": ("random read 4 KiB QD1", "random read 4 KiB QD32", "sequential read 64 KiB",
                   "sequential read 1 MiB", "sequential write 64 KiB")}


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

    @classmethod
    def from_profile(cls, profiles_file: Path = PROFILES) -> "Drive":
        """The drive of the hdd profile (inventories/storage-profiles.yml, what the harness's disks run with): its
        model's options, named as the server's command line names them."""
        options = yaml.safe_load(profiles_file.read_text())["profiles"]["hdd"]["model"]["options"]
        return cls(**{name.replace("-", "_"): value for name, value in options.items()})

    def server_options(self) -> list[str]:
        return ["--rpm", str(self.rpm), "--read-seek-avg-ms", str(self.read_seek_avg_ms),
                "--read-seek-track-ms", str(self.read_seek_track_ms),
                "--write-seek-avg-ms", str(self.write_seek_avg_ms),
                "--write-seek-track-ms", str(self.write_seek_track_ms), "--outer-rate", str(self.outer_rate),
                "--inner-rate", str(self.inner_rate), "--interface-rate", str(self.interface_rate),
                "--overhead-ms", str(self.overhead_ms), "--hit-overhead-ms", str(self.hit_overhead_ms),
                "--write-cache", str(self.write_cache), "--readahead", str(self.readahead),
                "--segments", str(self.segments), "--min-prefetch", str(self.min_prefetch)]

    # --- the datasheet's formulas ---

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

    def seek_s(self, distance: float, write: bool = False) -> float:
        """Seek over `distance`, a fraction of the stroke (0 = no seek)."""
        if distance <= 0:
            return 0.0
        track = self.write_seek_track_ms if write else self.read_seek_track_ms
        return (track + (self.full_stroke_ms(write) - track) * math.sqrt(distance)) / 1e3

    def radius(self, fraction: float) -> float:
        """r / r_outer at a fraction of the capacity: constant linear density, so the bytes outside radius r
        grow as r_outer^2 - r^2 and the media rate is proportional to r."""
        ratio = self.inner_rate / self.outer_rate
        return math.sqrt(1 - fraction * (1 - ratio ** 2))

    def stroke(self, fraction: float) -> float:
        ratio = self.inner_rate / self.outer_rate
        return (1 - self.radius(fraction)) / (1 - ratio)

    def media_rate(self, fraction: float) -> float:
        return self.outer_rate * self.radius(fraction)

    def streaming_rate(self, start: float, end: float, steps: int = 1000) -> float:
        """Bytes/s reading [start, end) of the capacity (fractions) at the media rate: bytes over summed time."""
        width = (end - start) / steps
        seconds = sum(width / self.media_rate(start + (i + 0.5) * width) for i in range(steps))
        return (end - start) / seconds

    def host_bound_rate(self, size: int) -> float:
        """Bytes/s of back-to-back hits of `size` bytes (QD 1): command overhead plus the link's transfer."""
        return size / (self.hit_overhead_ms / 1e3 + size / self.interface_rate)


def random_read_service_s(drive: Drive, size: int, samples: int = 200_000, seed: int = 21) -> float:
    """Mean service time of a random read (QD 1, offsets uniform over the whole drive): overhead + seek between
    two uniform offsets + half a revolution + transfer at the target's media rate (Monte Carlo over the offsets)."""
    rng = random.Random(seed)
    total = 0.0
    for _ in range(samples):
        a, b = rng.random(), rng.random()
        total += drive.seek_s(abs(drive.stroke(a) - drive.stroke(b))) + size / drive.media_rate(b)
    return drive.overhead_ms / 1e3 + total / samples + drive.revolution_s / 2


def sptf_random_read_iops(drive: Drive, size: int, depth: int, steps: int = 20_000, seed: int = 21) -> float:
    """IOPS of random reads kept `depth` deep, the drive serving the one with the shortest positioning time
    (overhead + seek + rotational wait, the sector's angle uniform and independent of the seek) first."""
    rng = random.Random(seed)
    queue = [rng.random() for _ in range(depth)]
    head, elapsed = rng.random(), 0.0
    for _ in range(steps):
        best, best_time = 0, math.inf
        for i, target in enumerate(queue):
            positioning = drive.seek_s(abs(drive.stroke(head) - drive.stroke(target))) + \
                rng.random() * drive.revolution_s
            if positioning < best_time:
                best, best_time = i, positioning
        target = queue[best]
        elapsed += drive.overhead_ms / 1e3 + best_time + size / drive.media_rate(target)
        head = target
        queue[best] = rng.random()
    return steps / elapsed


def sequential_read_rate(drive: Drive, size: int, region: float) -> float:
    """QD 1 sequential reads of `size` over the first `region` of the capacity: read-ahead streams at the media
    rate, so the drive delivers the slower of the media and of back-to-back buffer hits."""
    return min(drive.streaming_rate(0, region), drive.host_bound_rate(size))


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


@dataclass
class Point:
    name: str
    fio: list[str]
    unit: str                      # "IOPS" or "MB/s"
    expected: float
    writes: bool = False
    runtime: float | None = None   # seconds on the model when not the run's --runtime
    second_job: list[str] = field(default_factory=list)   # fio options of a second job running alongside
    measured: dict = field(default_factory=dict)


def points(drive: Drive, image_bytes: int, runtime: float, region: int = SEQUENTIAL_REGION,
           write_runtime: float | None = None) -> list[Point]:
    write_runtime = write_runtime or runtime
    fraction = region / image_bytes
    chosen = [
        Point("random read 4 KiB QD1", ["--rw=randread", "--bs=4k", "--iodepth=1", "--norandommap"], "IOPS",
              1 / random_read_service_s(drive, 4 * KIB)),
        Point("random read 4 KiB QD32", ["--rw=randread", "--bs=4k", "--iodepth=32", "--norandommap"], "IOPS",
              sptf_random_read_iops(drive, 4 * KIB, 32)),
    ]
    for size, label in ((4 * KIB, "4k"), (64 * KIB, "64k"), (MIB, "1m"), (16 * MIB, "16m")):
        name = label.replace("k", " KiB").replace("m", " MiB")
        chosen.append(Point(f"sequential read {name}", ["--rw=read", f"--bs={label}", "--iodepth=1",
                                                        f"--size={region}"], "MB/s",
                            sequential_read_rate(drive, size, fraction) / 1e6))
    for size, label in ((4 * KIB, "4k"), (64 * KIB, "64k"), (MIB, "1m"), (16 * MIB, "16m")):
        name = label.replace("k", " KiB").replace("m", " MiB")
        chosen.append(Point(f"sequential write {name}", ["--rw=write", f"--bs={label}", "--iodepth=1",
                                                         f"--size={region}"], "MB/s",
                            sequential_write_rate(drive, size, fraction, write_runtime) / 1e6, writes=True,
                            runtime=write_runtime))
    half = image_bytes // 2
    chosen.append(Point("two sequential readers 64 KiB QD1 each",
                        ["--rw=read", "--bs=64k", "--iodepth=1", "--size=1g", "--offset=0"], "MB/s",
                        interleaved_readers_rate(drive, 64 * KIB, 0.0, half / image_bytes) / 1e6,
                        second_job=["--rw=read", "--bs=64k", "--iodepth=1", "--size=1g", f"--offset={half}"]))
    chosen.append(Point("mixed 70 % random read / 30 % write 4 KiB QD1",
                        ["--rw=randrw", "--rwmixread=70", "--bs=4k", "--iodepth=1", "--norandommap"], "IOPS",
                        mixed_iops(drive, 4 * KIB, 0.7), writes=True))
    return chosen


# --- the stack: server, mount, loop device, all in one folder of our own ---

class Stack:
    """The server on a FUSE mount and a loop device over its file; everything it makes, it removes."""

    def __init__(self, work: Path, binary: Path, image: Path):
        self.work, self.binary, self.image = work, binary, image
        self.mountpoint = work / "mnt"
        self.stats = work / "stats.json"
        self.server: subprocess.Popen | None = None
        self.loop: str | None = None

    def up(self, options: list[str]) -> None:
        self.mountpoint.mkdir(exist_ok=True)
        self.server = subprocess.Popen([str(self.binary), "--image", str(self.image), "--mountpoint",
                                        str(self.mountpoint), "--stats", str(self.stats), "--foreground",
                                        *options], stderr=open(self.work / "server.log", "a"),
                                       # its own session: a Ctrl-C must not stop it before the loop is detached
                                       start_new_session=True)
        served = self.mountpoint / "disk"
        for _ in range(100):
            if served.exists():
                break
            if self.server.poll() is not None:
                raise SystemExit(f"the model server exited ({self.work / 'server.log'})")
            time.sleep(0.05)
        else:
            raise SystemExit("the model server did not mount its file in 5 s")
        self.loop = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(served)], check=True,
                                   capture_output=True, text=True).stdout.strip()

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.server.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def counters(self) -> dict:
        self.server.send_signal(signal.SIGUSR1)
        before = self.stats.stat().st_mtime_ns if self.stats.exists() else 0
        for _ in range(50):
            time.sleep(0.05)
            if self.stats.exists() and self.stats.stat().st_mtime_ns != before:
                break
        return json.loads(self.stats.read_text())

    def drain(self, timeout_s: float = 30) -> None:
        """Wait until the model's write cache is empty, so that the next point starts as the expectation says."""
        deadline = time.monotonic() + timeout_s
        while self.counters().get("dirty_bytes", 0) and time.monotonic() < deadline:
            time.sleep(0.2)

    def down(self) -> None:
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop], check=False)
            self.loop = None
        if self.server and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)       # libfuse's handler: leave the loop and unmount
            try:
                self.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        self.server = None
        if os.path.ismount(self.mountpoint):
            subprocess.run(["fusermount3", "-u", str(self.mountpoint)], check=False)


def run_fio(stack: Stack, point: Point, runtime: float) -> dict:
    common = [f"--filename={stack.loop}", "--direct=1", "--ioengine=libaio", f"--runtime={runtime}", "--time_based"]
    second = ["--name=second", *common, *point.second_job] if point.second_job else []
    cpu_before, start = stack.cpu_seconds(), time.monotonic()
    done = subprocess.run(["nice", "-n", "10", "fio", "--output-format=json", "--group_reporting", "--name=point",
                           *common, *point.fio, *second], capture_output=True, text=True)
    wall, cpu = time.monotonic() - start, stack.cpu_seconds() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"fio failed on {point.name}: {done.stderr[-2000:]}")
    job = json.loads(done.stdout[done.stdout.index("{"):])["jobs"][0]
    read, write = job["read"], job["write"]
    iops = read["iops"] + write["iops"]
    value = iops if point.unit == "IOPS" else (read["bw_bytes"] + write["bw_bytes"]) / 1e6
    clat = (read if read["total_ios"] else write)["clat_ns"]
    return {"value": value, "cpu_share": cpu / wall, "cpu_us_per_request": 1e6 * cpu / max(1, iops * runtime),
            "latency_us": clat["mean"] / 1e3,
            "median_latency_us": clat.get("percentile", {}).get("50.000000", clat["mean"]) / 1e3}


def meminfo_cached_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Cached:"):
            return int(line.split()[1])
    return 0


def image_pages_cached(image: Path) -> int:
    done = subprocess.run(["fincore", "--noheadings", "--output", "PAGES", str(image)], capture_output=True,
                          text=True)
    return int(done.stdout.split()[0]) if done.returncode == 0 and done.stdout.split() else -1


def build(work: Path) -> Path:
    binary = work / "spillway-hdd-model"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True, capture_output=True,
                           text=True).stdout.split()
    subprocess.run(["nice", "-n", "10", "gcc", "-O2", "-Wall", "-o", str(binary), str(SOURCE), *flags, "-lm",
                    "-lpthread"], check=True)
    return binary


def print_table(chosen: list[Point], reply_early_us: float, per_mib_us: float) -> None:
    print(f"\n{'point':48} {'unit':5} {'expected':>9} {'floor':>9} {'measured':>9} {'error':>7}  "
          f"{'CPU':>6} {'CPU/req':>8}  verdict")
    for p in chosen:
        model, floor = p.measured.get("model"), p.measured.get("floor")
        if not model:
            print(f"{p.name:48} {p.unit:5} {p.expected:9.1f} {'':>9} {'not run':>9}")
            continue
        error = model["value"] / p.expected - 1
        verdict = "ok" if abs(error) <= TOLERANCE else "OFF"
        if verdict == "OFF" and floor and floor["value"] < (1 - TOLERANCE) * p.expected:
            verdict = "OFF (path-bound: the floor is below the expectation)"
        if model["cpu_share"] > CPU_GOAL:
            verdict += f"; CPU over {100 * CPU_GOAL:.0f} %"
        print(f"{p.name:48} {p.unit:5} {p.expected:9.1f} {floor['value'] if floor else float('nan'):9.1f} "
              f"{model['value']:9.1f} {100 * error:+6.1f}%  {100 * model['cpu_share']:5.1f}% "
              f"{model['cpu_us_per_request']:6.0f}us  {verdict}")
    print(f"\nfloor: the same point on the server with --no-model (FUSE + loop path alone); CPU: the server's share "
          f"of one core during the point (model run), and per request; --reply-early-us {reply_early_us:.0f} "
          f"--reply-early-us-per-mib {per_mib_us:.0f}")


def calibrate(stack: Stack, chosen: list[Point], runtime: float,
              region: int = SEQUENTIAL_REGION) -> tuple[float, float]:
    """(fixed µs, µs per MiB) of the path, from the floor's 4 KiB QD 1 random and 1 MiB sequential reads."""
    floors = {p.name: p.measured["floor"] for p in chosen if "floor" in p.measured}
    small = floors.get("random read 4 KiB QD1") or run_fio(
        stack, Point("calibration 4 KiB", ["--rw=randread", "--bs=4k", "--iodepth=1", "--norandommap"], "IOPS", 0),
        runtime)
    large = floors.get("sequential read 1 MiB") or run_fio(
        stack, Point("calibration 1 MiB", ["--rw=read", "--bs=1m", "--iodepth=1", f"--size={region}"],
                     "MB/s", 0), runtime)
    fixed = small["median_latency_us"]
    return fixed, max(0.0, large["median_latency_us"] - fixed)


def interrupted(signum, frame):
    """SIGTERM as Ctrl-C: the same cleanup."""
    raise KeyboardInterrupt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime", type=float, default=5, help="seconds per point on the model")
    parser.add_argument("--floor-runtime", type=float, default=3, help="seconds per point with --no-model")
    parser.add_argument("--image-gib", type=int, default=8)
    parser.add_argument("--only", help="run only the points whose name contains this text")
    parser.add_argument("--tiny", action="store_true",
                        help=f"{len(TINY['points'])} points on a {TINY['image_gib']} GiB image, {TINY['runtime']:g} s "
                             f"each ({TINY['floor_runtime']:g} s floor): about 30 s")
    parser.add_argument("--json", type=Path, help="also write the points' figures to this file")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("needs root: losetup and FUSE mounts")
    region, write_runtime = SEQUENTIAL_REGION, None
    if args.tiny:
        args.image_gib, args.runtime, args.floor_runtime = TINY["image_gib"], TINY["runtime"], TINY["floor_runtime"]
        region, write_runtime = TINY["region"], TINY["write_runtime"]
    drive = Drive.from_profile()
    image_bytes = args.image_gib * GIB
    chosen = [p for p in points(drive, image_bytes, args.runtime, region, write_runtime)
              if (not args.only or args.only in p.name) and (not args.tiny or p.name in TINY["points"])]
    work = Path(tempfile.mkdtemp(prefix="spillway-hdd-fidelity-", dir="/var/tmp"))
    stack = None
    previous_handler = signal.signal(signal.SIGTERM, interrupted)
    try:
        binary = build(work)
        image = work / "disk.img"
        with open(image, "wb") as f:
            f.truncate(image_bytes)
        stack = Stack(work, binary, image)
        stack.up(["--no-model"])
        # The sequential points read data, not holes, in both runs: write their region once.
        subprocess.run(["nice", "-n", "10", "fio", "--name=fill", f"--filename={stack.loop}", "--direct=1",
                        "--ioengine=libaio", "--rw=write", "--bs=1m", "--iodepth=4", f"--size={region}",
                        "--output-format=terse"], check=True, capture_output=True)
        cached_before = meminfo_cached_kib()
        for p in chosen:
            p.measured["floor"] = run_fio(stack, p, args.floor_runtime)
            print(f"floor  {p.name:48} {p.measured['floor']['value']:9.1f} {p.unit}", flush=True)
        # The kernel path's round trip, taken off each reply so that the host sees the drive's time: a fixed part
        # (a 4 KiB random read) and a part per MiB (the copies: a prefetched 1 MiB read against the 4 KiB one).
        # Medians of the floor's own points: a burst of the machine's other work must not set them.
        reply_early_us, per_mib_us = calibrate(stack, chosen, args.floor_runtime, region)
        stack.down()
        stack.up([*drive.server_options(), "--reply-early-us", f"{reply_early_us:.0f}",
                  "--reply-early-us-per-mib", f"{per_mib_us:.0f}"])
        for p in chosen:
            p.measured["model"] = run_fio(stack, p, p.runtime or args.runtime)
            print(f"model  {p.name:48} {p.measured['model']['value']:9.1f} {p.unit} "
                  f"(expected {p.expected:.1f})", flush=True)
            if p.writes:
                stack.drain()
        counters = stack.counters()
        print_table(chosen, reply_early_us, per_mib_us)
        pages_cached = image_pages_cached(image)
        if args.json:
            args.json.write_text(json.dumps(
                {"reply_early_us": reply_early_us, "reply_early_us_per_mib": per_mib_us, "tolerance": TOLERANCE,
                 "image_pages_cached": pages_cached, "counters": counters,
                 "points": [{"name": p.name, "unit": p.unit, "expected": p.expected, **p.measured}
                            for p in chosen]}, indent=1) + "\n")
        print(f"server counters: {json.dumps(counters)}")
        print(f"largest request reaching the server: read {counters['largest_read_bytes'] / KIB:.0f} KiB, "
              f"write {counters['largest_write_bytes'] / KIB:.0f} KiB")
        print(f"the image's pages in the host page cache after the runs: {pages_cached} "
              f"(direct I/O on both sides: none expected); /proc/meminfo Cached "
              f"{(meminfo_cached_kib() - cached_before) / 1024:+.0f} MiB over the runs (the whole machine's)")
    except KeyboardInterrupt:
        print("\ninterrupted: cleaning up")
        if any(p.measured.get("model") for p in chosen):
            print_table(chosen, 0, 0)
        return 130
    finally:
        if stack:
            stack.down()
        shutil.rmtree(work, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous_handler)
    within = [abs(p.measured["model"]["value"] / p.expected - 1) <= TOLERANCE for p in chosen]
    return 0 if all(within) else 1


if __name__ == "__main__":
    raise SystemExit(main())
