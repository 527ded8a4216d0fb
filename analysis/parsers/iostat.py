"""sysstat `iostat -x -o JSON -t <interval> <devices>` output, repaired when iostat was killed.

A killed iostat leaves the document open after the last sample (or in the middle of one): the
samples are decoded one by one and decoding stops at the first incomplete one.
Units: sysstat's kB are 1024 bytes; *_await in ms; util in %; rareq-sz/wareq-sz in kB.
Timestamps: ISO 8601 with offset (S_TIME_FORMAT=ISO, what the collector sets), else sysstat's
locale form `MM/DD/YY HH:MM:SS`, taken as UTC (it carries no zone; documented in docs/tables.md).
"""
from __future__ import annotations

import codecs
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pandas as pd

from .. import safeio

KIB = 1024
_STATS_OPEN = re.compile(r'"statistics"\s*:\s*\[')
_NODENAME = re.compile(r'"nodename"\s*:\s*"([^"]*)"')
_SYSSTAT_OPEN = re.compile(r'\s*\{\s*"sysstat"\s*:')

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


# How much of an iostat.json is held at once: the samples are decoded as they are read, so memory follows what is
# kept (the rows), not the file (up to SIZE_CAPS["iostat"]: a planted sparse file of 2 GiB took 4.2 GB when read whole).
CHUNK_CHARS = 1 << 20
# sysstat's document ends after the last sample's `]` with the host's, the hosts' and the document's braces.
# The longest sample decoded: sysstat writes a few hundred characters per device.
MAX_SAMPLE_CHARS = 8 * CHUNK_CHARS
_DOCUMENT_END = re.compile(r"\s*\}\s*\]\s*\}\s*\}\s*")


class SampleReader:
    """The samples of an iostat JSON report as they are read from `chunks` (text); after `samples()` is exhausted,
    `truncated` says whether the document was cut off (a killed iostat: decoding stops at the first incomplete
    sample). ValueError when it is no iostat report (or not of sysstat's shape), rather than an empty one."""

    def __init__(self, chunks: Iterator[str]):
        self._chunks = chunks
        self._text, self._pos, self._eof = "", 0, False
        self.truncated, self._whole = True, None
        while len(self._text) <= CHUNK_CHARS and self._more():
            pass
        # A report that fits in the first chunk is decoded whole, as sysstat wrote it (a complete one is checked for
        # sysstat's shape and depth as a document); a longer one, or a cut one, sample by sample.
        document = self._whole_document() if self._eof else None
        if document is not None:
            host = _sysstat_host(document)
            self.nodename, self._whole, self.truncated = host.get("nodename"), host["statistics"], False
        else:
            self.nodename = self._read_header()

    def _whole_document(self):
        try:
            return safeio.load_json(self._text, "iostat JSON")
        except ValueError:
            return None

    def _more(self) -> bool:
        """Append the next chunk, dropping what was decoded already; False at the end of the file."""
        if self._eof:
            return False
        chunk = next(self._chunks, None)
        if chunk is None:
            self._eof = True
            return False
        self._text, self._pos = self._text[self._pos:] + chunk, 0
        return True

    def _read_header(self) -> str | None:
        # A cut report still starts as sysstat writes it; anything else is not one, however it ends.
        if not _SYSSTAT_OPEN.match(self._text):
            raise ValueError("not an iostat JSON report (it does not start as sysstat's document does)")
        while (match := _STATS_OPEN.search(self._text)) is None:
            if len(self._text) > CHUNK_CHARS or not self._more():
                self._pos, self._statistics = len(self._text), False   # killed before its first sample
                return None
        header, self._pos, self._statistics = self._text[:match.end()], match.end(), True
        try:        # the header closed as sysstat closes it: the host's fields as JSON decodes them
            host = _sysstat_host(safeio.load_json(header + "]}]}}", "iostat JSON"))
            return host.get("nodename")
        except ValueError:
            nodename = _NODENAME.search(header)
            return nodename.group(1) if nodename else None

    def _skip_separators(self) -> bool:
        """Move past blanks and commas; False when the file ends first."""
        while True:
            while self._pos < len(self._text) and self._text[self._pos] in " \t\r\n,":
                self._pos += 1
            if self._pos < len(self._text) or not self._more():
                return self._pos < len(self._text)

    def samples(self) -> Iterator[dict]:
        if self._whole is not None:
            yield from self._whole
            return
        if not self._statistics:
            return
        decoder = json.JSONDecoder()
        while self._skip_separators() and self._text[self._pos] == "{":
            while True:
                try:
                    sample, end = decoder.raw_decode(self._text, self._pos)
                    break
                except (ValueError, RecursionError):
                    # Cut where the file ends (iostat was killed printing it), or no sample of sysstat's (a few
                    # hundred bytes a device): nothing decodes past it, and reading on would hold the rest of the file.
                    if len(self._text) - self._pos > MAX_SAMPLE_CHARS or not self._more():
                        return
            self._pos = end
            yield safeio.check_depth(sample, "iostat JSON sample")
        if self._pos < len(self._text) and self._text[self._pos] == "]":
            self._pos += 1
            while self._more():
                if len(self._text) - self._pos > 64:
                    return          # more than the document's end after the samples
            self.truncated = not _DOCUMENT_END.fullmatch(self._text, self._pos)


def read_samples(text: str) -> tuple[str | None, list[dict], bool]:
    """(nodename, complete samples, whether the document was cut off) of an iostat JSON text."""
    reader = SampleReader(iter([text]))
    samples = list(reader.samples())
    return reader.nodename, samples, reader.truncated


def _text_chunks(path: Path) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with safeio.open_source(path, "iostat") as source:
        while block := source.read(CHUNK_CHARS):
            yield decoder.decode(block)
    yield decoder.decode(b"", final=True)


def _sysstat_host(doc) -> dict:
    """The one host of a complete sysstat document (`{"sysstat": {"hosts": [{..., "statistics": [...]}]}}`)."""
    sysstat = doc.get("sysstat") if isinstance(doc, dict) else None
    hosts = sysstat.get("hosts") if isinstance(sysstat, dict) else None
    host = hosts[0] if isinstance(hosts, list) and hosts else None
    if not isinstance(host, dict) or not isinstance(host.get("statistics"), list):
        raise ValueError("not an iostat JSON report: expected {\"sysstat\": {\"hosts\": [{\"statistics\": [...]}]}}, "
                         f"got {_shape(doc)}")
    if not isinstance(host.get("nodename"), (str, type(None))):
        raise ValueError(f"iostat JSON: nodename is {type(host['nodename']).__name__}, not text")
    return host


def _shape(value, depth: int = 2) -> str:
    """A short description of a JSON value's outline, for error messages."""
    if isinstance(value, dict) and depth:
        inner = ", ".join(f"{json.dumps(k)}: {_shape(v, depth - 1)}" for k, v in list(value.items())[:3])
        return "{" + inner + (", ..." if len(value) > 3 else "") + "}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return type(value).__name__ if isinstance(value, (dict, list)) else f"{json.dumps(value)[:40]}"


# avg-cpu field -> host_cpu column (% of the host's CPU time in the interval)
CPU_FIELDS = {"user": "user_pct", "nice": "nice_pct", "system": "system_pct", "iowait": "iowait_pct",
              "steal": "steal_pct", "idle": "idle_pct"}
CPU_COLUMNS = ["time", *CPU_FIELDS.values()]


def parse_iostat_json(path: Path) -> tuple[pd.DataFrame, dict]:
    """(one row per sample and device, info {nodename, truncated, samples}) of one iostat.json."""
    disks, _cpu, info = parse_iostat_tables(path)
    return disks, info


def parse_iostat_tables(path: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(one row per sample and device, one row per sample of the host's avg-cpu, info {nodename, truncated,
    samples}) of one iostat.json."""
    reader = SampleReader(_text_chunks(path))
    rows, cpu_rows, number = [], [], -1
    for number, sample in enumerate(reader.samples()):
        if not isinstance(sample, dict) or not isinstance(sample.get("disk", []), list):
            raise ValueError(f"iostat JSON: sample {number} is not a sysstat sample ({_shape(sample, 1)})")
        if "timestamp" not in sample:
            continue
        if not isinstance(sample["timestamp"], str):
            raise ValueError(f"iostat JSON: sample {number} has a timestamp of type {type(sample['timestamp']).__name__}")
        t = parse_timestamp(sample["timestamp"])
        cpu = sample.get("avg-cpu")
        if cpu is not None:
            if not isinstance(cpu, dict) or not all(isinstance(cpu.get(f, 0), (int, float)) for f in CPU_FIELDS):
                raise ValueError(f"iostat JSON: sample {number} has an avg-cpu that is not numbers ({_shape(cpu, 1)})")
            cpu_rows.append({"time": t, **{column: float(cpu.get(field, float("nan")))
                                           for field, column in CPU_FIELDS.items()}})
        for disk in sample.get("disk", []):
            if not isinstance(disk, dict) or not isinstance(disk.get("disk_device"), str):
                raise ValueError(f"iostat JSON: sample {number} has a disk entry without a device name ({_shape(disk, 1)})")
            rows.append(_row(t, disk["disk_device"], disk))
    return (_frame(rows), pd.DataFrame(cpu_rows, columns=CPU_COLUMNS),
            {"nodename": reader.nodename, "truncated": reader.truncated, "samples": number + 1})


def _row(t: float, device: str, fields: dict) -> dict:
    """One table row from iostat's fields (JSON names: `r/s`, `rkB/s`, `util`...) of a device."""
    row = {"time": t, "device": device}
    for field, (column, factor) in _FIELDS.items():
        value = fields.get(field)
        if value is not None and not isinstance(value, (int, float, str)):
            raise ValueError(f"iostat: {field} of {device} is {type(value).__name__}, not a number")
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
    lines = safeio.read_text(path, "iostat", errors="replace").splitlines()
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


def iostat_tables(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    """The iostat and host_cpu tables of an iostat.json, or the iostat table of the text report iostat -x writes
    without JSON output (iostat.txt), and whether the JSON was repaired."""
    if path.suffix == ".txt":
        return {"iostat": parse_iostat_text(path)[0]}, ""
    disks, cpu, info = parse_iostat_tables(path)
    return {"iostat": disks, "host_cpu": cpu}, "repaired: iostat was stopped mid-report" if info["truncated"] else ""
