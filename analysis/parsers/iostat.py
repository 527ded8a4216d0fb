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
        rows += [_row(t, disk.get("disk_device"), disk) for disk in sample.get("disk", [])]
    return _frame(rows), {"nodename": nodename, "truncated": truncated, "samples": len(samples)}


def _row(t: float, device: str, fields: dict) -> dict:
    """One table row from iostat's fields (JSON names: `r/s`, `rkB/s`, `util`...) of a device."""
    row = {"time": t, "device": device}
    for field, (column, factor) in _FIELDS.items():
        value = fields.get(field)
        row[column] = float(value) * factor if value is not None else float("nan")
    return row


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS[:-1])
    ops = frame["r_per_s"] + frame["w_per_s"]
    # Mean size of the requests completed in the interval, reads and writes together.
    frame["areq_sz_bytes"] = ((frame["read_bytes_per_s"] + frame["write_bytes_per_s"]) / ops).where(ops > 0, 0.0)
    return frame


# Text header names -> JSON names: `%util` is `util`; -m prints MB where -k prints kB.
_MB_HEADERS = {"rMB/s": "rkB/s", "wMB/s": "wkB/s", "dMB/s": "dkB/s"}
_SYSSTAT_BANNER = re.compile(r"^Linux \S+ \(([^)]*)\)")


def parse_iostat_text(path: Path) -> tuple[pd.DataFrame, dict]:
    """(rows as parse_iostat_json, info) of iostat's text report `iostat -x [-k|-m] [-y] [-t] ...`.

    With -t every report starts with its timestamp line; without it `time` is NaN. Without -y the
    first report holds averages since boot and nothing in the text says so: run iostat with -y.
    A report cut off by a killed iostat keeps its complete device lines. Info: nodename, reports."""
    lines = Path(path).read_text(errors="replace").splitlines()
    banner = _SYSSTAT_BANNER.match(lines[0]) if lines else None
    if banner is None:
        raise ValueError(f"{path}: not an iostat text report (no `Linux <release> (<host>)` first line)")
    rows, reports, header, t, megabytes = [], 0, None, float("nan"), False
    for line in lines[1:]:
        parts = line.split()
        if not parts:
            header = None
            continue
        if parts[0] in ("Device", "Device:"):
            megabytes = any(name in _MB_HEADERS for name in parts[1:])
            header = [_MB_HEADERS.get(name, name).lstrip("%") for name in parts[1:]]
            reports += 1
            continue
        if header is None:
            if parts[0] != "avg-cpu:" and not _is_number_row(parts):
                t = parse_timestamp(line)
            continue
        if len(parts) != len(header) + 1 or not _is_number_row(parts[1:]):
            continue                          # a line cut by a killed iostat
        values = dict(zip(header, map(float, parts[1:])))
        if megabytes:
            values = {k: v * KIB if k in _MB_HEADERS.values() else v for k, v in values.items()}
        rows.append(_row(t, parts[0], values))
    return _frame(rows), {"nodename": banner.group(1), "reports": reports}


def _is_number_row(parts: list[str]) -> bool:
    try:
        [float(p) for p in parts]
    except ValueError:
        return False
    return True
