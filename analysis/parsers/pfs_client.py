"""The pfs-client collector's snapshots of a parallel file system client's own counters, and their difference over
the workload's window: one tidy row per counter (backend, fstype, mount, counter, value, unit).

A snapshot (`client-<backend>.start` / `.stop`) is a line `# spillway-pfs-client <JSON header>` (`epoch`,
`backend`, `fstype`, `mount`, `source`) followed by the client's counters verbatim. Both sources are cumulative
(since mount, or since an `lctl set_param llite.*.stats=clear`), so the window's figure is stop minus start; a
counter absent from the start snapshot was 0 then (both clients omit counters that never moved). A counter that
went down means the client was remounted or cleared inside the window: that is refused rather than guessed.

GlusterFS FUSE (`fstype` fuse.glusterfs), the client io-stats translator's text dump (trusted.io-stats-dump);
only its `=== Cumulative stats ===` section is read:
- `BytesRead`, `BytesWritten` -> `bytes_read`, `bytes_written` (bytes): what the applications read and wrote
  through the mount, counted above the client's caches.
- `Block Size : 4096B+ ...` with `Read Count` / `Write Count` rows (several such groups) -> `reads.<N>B+`,
  `writes.<N>B+` (calls): read and write calls of N to 2N-1 bytes.
- The FOP table -> `fop.<FOP>.calls` (calls) and `fop.<FOP>.latency_total` (s; the window's average latency of
  that operation is latency_total / calls). The dump labels latencies "us", but GlusterFS 10 measures them in
  nanoseconds (as `gluster volume profile` says in its XML): in the recorded fixture the window's 512 WRITE calls
  (256 of 128 KiB, the pieces of 32 direct 1 MiB writes that took 0.28 s in all, and 256 buffered 4 KiB ones)
  add up to 1.39e9 "us" - 1.39 s as nanoseconds, 23 minutes as microseconds in a 6.4 s window. FOP calls and
  latencies are counted only while the volume's `diagnostics.count-fop-hits` / `diagnostics.latency-measurement`
  are on (the gluster-profile collector turns them on for the window; a FOP counted before shows up with its
  earlier calls in both snapshots, which the difference removes). Bytes and block sizes are always counted.

Lustre (`fstype` lustre), `lctl get_param llite.<fsname>-<instance>.stats` (or the llite `stats` files, which the
collector lays out the same way): per instance a line `llite.<instance>.stats=`, then `snapshot_time`,
`start_time`, `elapsed_time` lines (ignored: the header's epoch is the snapshot's time) and counter lines
`<name> <count> samples [<unit>] [<min> <max> <sum> [<sumsq>]]` as documented on the Lustre wiki ("Lustre IO
Monitoring") and in the Lustre manual: `<name>.samples` (calls: read_bytes' samples are read() calls) and, when
the line has them, `<name>.sum` in its unit (bytes; usecs converted to s; other units as Lustre names them). min,
max and sumsq do not difference into a window and are dropped. With more than one llite instance in a snapshot
the counters are prefixed `<instance>:`. **No real Lustre recording was available** (no Lustre client where this
was written): this part is written from the documented format and tested on a sample written from it
(tests/fixtures/pfs-client/README.md), not on a recorded output.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from .. import safeio

HEADER_PREFIX = "# spillway-pfs-client "
COLUMNS = ["backend", "fstype", "mount", "counter", "value", "unit"]
GLUSTER_LATENCY_S = 1e-9
_LUSTRE_UNIT_SCALE = {"usecs": (1e-6, "s"), "usec": (1e-6, "s"), "bytes": (1, "bytes")}
_LUSTRE_COUNTER = re.compile(r"^(\S+)\s+(\d+)\s+samples\s+\[([^\]]*)\](?:\s+(\d+)\s+(\d+)\s+(\d+)(?:\s+(\d+))?)?\s*$")
_LUSTRE_INSTANCE = re.compile(r"^llite\.(.+)\.stats=\s*$")
_GLUSTER_FOP = re.compile(r"^([A-Z_]+)\s+(\d+)\s+([\d.]+) us\s+([\d.]+) us\s+([\d.]+) us\s*$")

Counters = dict[str, tuple[float, str]]


def read_snapshot(path: Path) -> tuple[dict, str]:
    """(header: epoch, backend, fstype, mount, source; the counters' text)."""
    return parse_snapshot(safeio.read_text(path, "pfs-client", errors="replace"), path)


def parse_snapshot(text: str, path: Path) -> tuple[dict, str]:
    first, _, body = text.partition("\n")
    if not first.startswith(HEADER_PREFIX):
        raise ValueError(f"{path}: not a pfs-client snapshot (line 1 does not start with {HEADER_PREFIX.strip()!r})")
    header = safeio.load_json(first[len(HEADER_PREFIX):], f"{path} (header)")
    if not isinstance(header, dict):
        raise ValueError(f"{path}: its header is {type(header).__name__}, not a JSON object")
    return header, body


def lustre_llite_counters(text: str) -> Counters:
    """counter -> (value, unit) of `lctl get_param llite.*.stats` output (format in the module docstring)."""
    per_instance: dict[str, Counters] = {}
    current = per_instance.setdefault("", {})
    for line in text.splitlines():
        if instance := _LUSTRE_INSTANCE.match(line.strip()):
            current = per_instance.setdefault(instance.group(1), {})
            continue
        counter = _LUSTRE_COUNTER.match(line.strip())
        if not counter:
            continue
        name, samples, unit, _min, _max, total, _sumsq = counter.groups()
        current[f"{name}.samples"] = (float(samples), "calls")
        if total is not None:
            scale, unit = _LUSTRE_UNIT_SCALE.get(unit, (1, unit))
            current[f"{name}.sum"] = (float(total) * scale, unit)
    filled = {instance: counters for instance, counters in per_instance.items() if counters}
    if len(filled) <= 1:
        return next(iter(filled.values()), {})
    return {f"{instance}:{name}": value for instance, counters in filled.items() for name, value in counters.items()}


def gluster_io_stats_counters(text: str) -> Counters:
    """counter -> (value, unit) of the cumulative section of a GlusterFS io-stats text dump."""
    lines = text.splitlines()
    try:
        first = next(i for i, line in enumerate(lines) if line.strip() == "=== Cumulative stats ===")
    except StopIteration:
        raise ValueError("no '=== Cumulative stats ===' section in the io-stats dump") from None
    counters: Counters = {}
    sizes: list[str] = []
    for line in lines[first + 1:]:
        stripped = line.strip()
        if stripped.startswith("===") or stripped.startswith("Current open fd"):
            break
        label, colon, rest = stripped.partition(":")
        label = label.strip()
        if colon and label == "BytesRead":
            counters["bytes_read"] = (float(rest), "bytes")
        elif colon and label == "BytesWritten":
            counters["bytes_written"] = (float(rest), "bytes")
        elif colon and label == "Block Size":
            sizes = rest.split()
        elif colon and label in ("Read Count", "Write Count"):
            kind = "reads" if label == "Read Count" else "writes"
            for size, calls in zip(sizes, rest.split(), strict=True):
                counters[f"{kind}.{size}"] = (float(calls), "calls")
        elif fop := _GLUSTER_FOP.match(stripped):
            name, calls, average = fop.group(1), int(fop.group(2)), float(fop.group(3))
            counters[f"fop.{name}.calls"] = (float(calls), "calls")
            counters[f"fop.{name}.latency_total"] = (calls * average * GLUSTER_LATENCY_S, "s")
    return counters


COUNTER_READERS = {"lustre": lustre_llite_counters, "fuse.glusterfs": gluster_io_stats_counters}


def window_deltas(start: Path, stop: Path) -> pd.DataFrame:
    """The window's counters of one backend (stop minus start), plus `window` (s between the snapshots)."""
    # Both read before either is parsed: a stop the read rules refuse is recorded as refused, whatever the start holds.
    texts = [safeio.read_text(path, "pfs-client", errors="replace") for path in (start, stop)]
    (head0, body0), (head1, body1) = parse_snapshot(texts[0], start), parse_snapshot(texts[1], stop)
    fstype = head1.get("fstype", "")
    if head0.get("fstype") != fstype or head0.get("backend") != head1.get("backend"):
        raise ValueError(f"{start} and {stop} are snapshots of different backends")
    read = COUNTER_READERS.get(fstype)
    if read is None:
        raise ValueError(f"no parser for the client counters of file system type {fstype!r}")
    before, after = read(body0), read(body1)
    went_down = [name for name, (value, _unit) in before.items() if after.get(name, (0.0, ""))[0] < value]
    if went_down:
        raise ValueError(f"counters went down between start and stop ({', '.join(sorted(went_down)[:5])}): "
                         "the client was remounted or its counters cleared inside the window")
    rows = [{"counter": "window", "value": float(head1["epoch"]) - float(head0["epoch"]), "unit": "s"}]
    rows += [{"counter": name, "value": value - before.get(name, (0.0, unit))[0], "unit": unit}
             for name, (value, unit) in sorted(after.items())]
    frame = pd.DataFrame(rows)
    frame.insert(0, "mount", head1.get("mount", ""))
    frame.insert(0, "fstype", fstype)
    frame.insert(0, "backend", head1.get("backend", ""))
    return frame[COLUMNS]
