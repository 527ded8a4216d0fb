"""fio `--output-format=json` / `json+` results: one row per job and direction that did I/O.

Where the data path (backend) comes from, in order: the job's `description` (the fio-sweep
workload sets it to the backend name), a job name `<backend>-<rw>-<bs>`, the output file name
`fio-<backend>-<rw>-<bs>.json`. rw, bs and iodepth come from the job's options, never from names.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from .. import safeio

_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_DIRECTIONS = ("read", "write", "trim")


def parse_size_bytes(text: str) -> int:
    """fio size strings (`4k`, `1m`, `16M`, `4KiB`, `4096`) in bytes; fio's k/m/g are powers of 2."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(text).lower())
    if m is None:
        raise ValueError(f"unrecognised fio size {text!r}")
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])


_TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
# a week: longer than any sweep runs a point; a bigger runtime option is not one fio ran
_MAX_ISSUE_S = 7 * 86400.0


def issue_seconds(options: dict) -> float:
    """How long fio issued I/O for: its `runtime` option (seconds unless a unit says otherwise) when the job was
    time-based, else NaN (the job ran until it had moved its size). A fio-sweep write point's `runtime_s` is this
    plus the drain of the drive's write cache (end_fsync)."""
    if str(options.get("time_based", "0")) in ("0", "") or "runtime" not in options:
        return float("nan")
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h|d)?\s*", str(options["runtime"]).lower())
    if m is None:
        raise ValueError(f"unrecognised fio runtime {options['runtime']!r} (seconds, or a number with us/ms/s/m/h/d)")
    seconds = float(m.group(1)) * _TIME_UNITS[m.group(2) or ""]
    if not 0 < seconds <= _MAX_ISSUE_S:
        raise ValueError(f"fio runtime {options['runtime']!r} is not between 0 and {_MAX_ISSUE_S:.0f} s")
    return seconds


def _backend(options: dict, jobname: str, rw: str, bs: str, path: Path) -> str:
    if options.get("description"):
        return str(options["description"])
    suffix = f"-{rw}-{bs}"
    if jobname.endswith(suffix) and len(jobname) > len(suffix):
        return jobname[: -len(suffix)]
    stem = path.stem
    if stem.startswith("fio-") and stem.endswith(suffix):
        return stem[len("fio-"): -len(suffix)]
    return jobname


def _directions(path: Path):
    """(identity columns of a job and direction that did I/O, fio's block for that direction)."""
    text = safeio.read_text(path, "fio")
    # fio may print warnings before the JSON document (e.g. "fio: file hash not empty on exit").
    start = text.find("{")
    if start < 0:
        raise ValueError(f"{path}: no JSON document in the fio output")
    doc = safeio.load_json(text[start:], str(path))
    if not isinstance(doc, dict) or not all(isinstance(doc.get(key, default), type(default)) for key, default in
                                            (("global options", {}), ("disk_util", []), ("jobs", []))):
        raise ValueError(f"{path}: not fio's JSON output (an object with `jobs`, `global options`, `disk_util`)")
    global_options = doc.get("global options", {})
    devices = [d.get("name") for d in doc.get("disk_util", []) if d.get("name")]
    for job in doc.get("jobs", []):
        options = {**global_options, **job.get("job options", {})}
        rw = options.get("rw", "read")
        bs = options.get("bs", "4k")
        # A `bs` like `4k,64k` sets read and write sizes apart; the first applies to reads.
        bs_by_direction = dict(zip(_DIRECTIONS, (bs.split(",") + [bs.split(",")[0]] * 2)[:3]))
        for direction in _DIRECTIONS:
            side = job.get(direction) or {}
            if not side.get("io_bytes"):
                continue
            yield job, options, {
                "backend": _backend(options, job.get("jobname", ""), rw, bs, Path(path)),
                "device": ",".join(devices) or None,
                "file": options.get("filename") or options.get("directory"),
                "rw": rw,
                "direction": direction,
                "block_size_bytes": parse_size_bytes(bs_by_direction[direction]),
                "iodepth": int(options.get("iodepth", 1)),
            }, side


def parse_fio_json(path: Path) -> list[dict]:
    """Rows with the `fio` table's columns (docs/tables.md) except host, from one fio JSON file."""
    rows = []
    for job, options, identity, side in _directions(path):
        lat = side.get("lat_ns") or {}
        rows.append({
            **identity,
            "bandwidth_bytes_per_s": float(side.get("bw_bytes", 0.0)),
            "iops": float(side.get("iops", 0.0)),
            "lat_mean_s": float(lat.get("mean", float("nan"))) / 1e9,
            "lat_p99_s": _percentile_s(side, "99.000000"),
            "io_bytes": int(side["io_bytes"]),
            "runtime_s": float(side.get("runtime", job.get("job_runtime", 0))) / 1e3,
            "issue_s": issue_seconds(options),
            "error": int(job.get("error", 0)),
            "source_file": Path(path).name,
        })
    return rows


LATENCY_BIN_COLUMNS = ["backend", "device", "rw", "direction", "block_size_bytes", "iodepth", "clat_s", "count",
                       "source_file"]


def parse_fio_latency_bins(path: Path) -> list[dict]:
    """The completion-latency histogram of `--output-format=json+` (clat_ns.bins): one row per
    non-empty bin, `clat_s` the bin's value as fio reports it; nothing for plain json output."""
    rows = []
    for _job, _options, identity, side in _directions(path):
        bins = (side.get("clat_ns") or {}).get("bins") or {}
        rows += [{**{k: identity[k] for k in LATENCY_BIN_COLUMNS[:6]}, "clat_s": int(ns) / 1e9, "count": int(count),
                  "source_file": Path(path).name}
                 for ns, count in sorted(bins.items(), key=lambda item: int(item[0])) if count]
    return rows


def _percentile_s(side: dict, key: str) -> float:
    pct = (side.get("clat_ns") or {}).get("percentile") or {}
    return float(pct[key]) / 1e9 if key in pct else float("nan")


def fio_tables(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    """The fio and fio_latency_bins tables of one fio JSON output."""
    return {"fio": pd.DataFrame(parse_fio_json(path)),
            "fio_latency_bins": pd.DataFrame(parse_fio_latency_bins(path), columns=LATENCY_BIN_COLUMNS)}, ""
