"""/proc/diskstats snapshots (`# epoch=<s>` line, then the kernel's text) and their difference.

Fields (Documentation/admin-guide/iostats.rst): reads completed, reads merged, sectors read,
ms reading, writes completed, writes merged, sectors written, ms writing, in flight, ms doing I/O,
weighted ms, then discards completed, merged, sectors, ms (Linux 4.18+) and flushes completed, ms
(5.5+). Sectors are 512 bytes whatever the device.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import safeio

SECTOR_BYTES = 512
_FIELDS = ["reads", "reads_merged", "sectors_read", "read_ms", "writes", "writes_merged",
           "sectors_written", "write_ms", "in_flight", "io_ms", "weighted_io_ms"]
# Linux 4.18 added discard fields, 5.5 flush fields: absent (null) on older kernels.
_NEWER_FIELDS = ["discards", "discards_merged", "sectors_discarded", "discard_ms", "flushes", "flush_ms"]


def parse_diskstats(path: Path) -> tuple[float | None, pd.DataFrame]:
    """(epoch seconds of the snapshot or None, one row per device with the counters above)."""
    epoch, rows = None, []
    for line in safeio.read_text(path, "diskstats").splitlines():
        if line.startswith("#"):
            for token in line[1:].split():
                if token.startswith("epoch="):
                    epoch = float(token.split("=", 1)[1])
            continue
        parts = line.split()
        if len(parts) < 3 + len(_FIELDS):
            continue
        rows.append({"device": parts[2], **{f: int(v) for f, v in zip(_FIELDS + _NEWER_FIELDS, parts[3:])}})
    frame = pd.DataFrame(rows, columns=["device", *_FIELDS, *_NEWER_FIELDS])
    for column in _NEWER_FIELDS:
        frame[column] = frame[column].astype("Int64")
    return epoch, frame


def window_totals(start: Path, stop: Path) -> pd.DataFrame:
    """Per device: what was done between the two snapshots (bytes, requests, busy time)."""
    t0, before = parse_diskstats(start)
    t1, after = parse_diskstats(stop)
    merged = after.merge(before, on="device", suffixes=("", "_start"))
    out = pd.DataFrame({"device": merged["device"]})
    out["window_s"] = (t1 - t0) if (t0 is not None and t1 is not None) else float("nan")
    out["reads"] = merged["reads"] - merged["reads_start"]
    out["writes"] = merged["writes"] - merged["writes_start"]
    out["read_bytes"] = (merged["sectors_read"] - merged["sectors_read_start"]) * SECTOR_BYTES
    out["write_bytes"] = (merged["sectors_written"] - merged["sectors_written_start"]) * SECTOR_BYTES
    out["busy_s"] = (merged["io_ms"] - merged["io_ms_start"]) / 1e3
    out["discards"] = merged["discards"] - merged["discards_start"]
    out["discard_bytes"] = (merged["sectors_discarded"] - merged["sectors_discarded_start"]) * SECTOR_BYTES
    out["flushes"] = merged["flushes"] - merged["flushes_start"]
    return out
