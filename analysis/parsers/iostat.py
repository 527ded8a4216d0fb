"""sysstat `iostat -x -o JSON -t <interval> <devices>` output, repaired when iostat was killed.

A killed iostat leaves the document open after the last sample (or in the middle of one): the
samples are decoded one by one and decoding stops at the first incomplete one.
Units: sysstat's kB are 1024 bytes; *_await in ms; util in %; rareq-sz/wareq-sz in kB.
Timestamps: ISO 8601 with offset (S_TIME_FORMAT=ISO, what the collector sets), else sysstat's
locale form `MM/DD/YY HH:MM:SS`, taken as UTC (it carries no zone; documented in docs/tables.md).
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

KIB = 1024
_STATS_OPEN = re.compile(r'"statistics"\s*:\s*\[')
_NODENAME = re.compile(r'"nodename"\s*:\s*"([^"]*)"')

# iostat field -> (column, factor to the column's unit)
_FIELDS = {
    "r/s": ("r_per_s", 1.0),
    "w/s": ("w_per_s", 1.0),
    "d/s": ("d_per_s", 1.0),
    "rkB/s": ("read_bytes_per_s", KIB),
    "wkB/s": ("write_bytes_per_s", KIB),
    "rrqm/s": ("r_merged_per_s", 1.0),
    "wrqm/s": ("w_merged_per_s", 1.0),
    "r_await": ("r_await_ms", 1.0),
    "w_await": ("w_await_ms", 1.0),
    "aqu-sz": ("aqu_sz", 1.0),
    "util": ("util_pct", 1.0),
    "rareq-sz": ("rareq_sz_bytes", KIB),
    "wareq-sz": ("wareq_sz_bytes", KIB),
}
COLUMNS = ["time", "device", *[c for c, _ in _FIELDS.values()], "areq_sz_bytes"]


def parse_timestamp(text: str) -> float:
    """Epoch seconds of an iostat sample timestamp."""
    for fmt in ("%Y-%m-%dT%H:%M:%S%z", "%m/%d/%y %H:%M:%S", "%m/%d/%Y %H:%M:%S", "%Y-%m-%d %H:%M:%S"):
        try:
            parsed = datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return parsed.timestamp()
    # 12-hour locales print e.g. "11/21/26 04:50:44 PM".
    try:
        return datetime.strptime(text.strip(), "%m/%d/%y %I:%M:%S %p").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        raise ValueError(f"unrecognised iostat timestamp {text!r}: run iostat with S_TIME_FORMAT=ISO") from None


def read_samples(text: str) -> tuple[str | None, list[dict], bool]:
    """(nodename, complete samples, whether the document was cut off) of an iostat JSON text."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if doc is not None:
        hosts = doc.get("sysstat", {}).get("hosts", [])
        host = hosts[0] if hosts else {}
        return host.get("nodename"), list(host.get("statistics", [])), False
    match = _STATS_OPEN.search(text)
    if match is None:
        return None, [], True
    nodename = _NODENAME.search(text[: match.start()])
    decoder = json.JSONDecoder()
    samples, pos = [], match.end()
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] != "{":
            break
        try:
            sample, pos = decoder.raw_decode(text, pos)
        except ValueError:
            break  # the sample iostat was printing when it was killed
        samples.append(sample)
    return (nodename.group(1) if nodename else None), samples, True


def parse_iostat_json(path: Path) -> tuple[pd.DataFrame, dict]:
    """(one row per sample and device, info {nodename, truncated, samples}) of one iostat.json."""
    nodename, samples, truncated = read_samples(Path(path).read_text(errors="replace"))
    rows = []
    for sample in samples:
        if "timestamp" not in sample:
            continue
        t = parse_timestamp(sample["timestamp"])
        for disk in sample.get("disk", []):
            row = {"time": t, "device": disk.get("disk_device")}
            for field, (column, factor) in _FIELDS.items():
                value = disk.get(field)
                row[column] = float(value) * factor if value is not None else float("nan")
            rows.append(row)
    frame = pd.DataFrame(rows, columns=COLUMNS[:-1])
    ops = frame["r_per_s"] + frame["w_per_s"]
    # Mean size of the requests completed in the interval, reads and writes together.
    frame["areq_sz_bytes"] = ((frame["read_bytes_per_s"] + frame["write_bytes_per_s"]) / ops).where(ops > 0, 0.0)
    return frame, {"nodename": nodename, "truncated": truncated, "samples": len(samples)}
