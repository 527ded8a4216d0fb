"""Numbers as the pages, the command line and the notebooks print them: always with their unit, `-` for a
missing value. The one place that decides how a number reads, so that every layer of the analysis can format
and two pages never print the same quantity two ways. Imports nothing of the analysis."""
from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd

# Decimal megabytes: bandwidths and throughputs read as MB/s, as fio and iostat print them.
MB = 1e6
MISSING = "-"
_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def missing(value) -> bool:
    return value is None or bool(pd.isna(value))


def number(value, unit: str = "", digits: int = 2) -> str:
    """`1,234.50 s`: thousands separated, `digits` decimals, the unit after a space."""
    if missing(value):
        return MISSING
    return f"{float(value):,.{digits}f}{(' ' + unit) if unit else ''}"


def count(value, noun: str) -> str:
    """`1 request`, `1,234 requests`: a whole count and its noun, plural unless the count is one."""
    if missing(value):
        return MISSING
    whole = int(round(float(value)))
    return f"{whole:,} {noun if whole == 1 else noun + 's'}"


def rate(bytes_per_s, digits: int = 1) -> str:
    """A bandwidth in MB/s (10^6 bytes)."""
    return MISSING if missing(bytes_per_s) else number(float(bytes_per_s) / MB, "MB/s", digits)


def format_bytes(value) -> str:
    """`123.4 MiB` style (powers of 1024); whole bytes below 1 KiB."""
    if missing(value):
        return MISSING
    value, unit = float(value), 0
    while abs(value) >= 1024 and unit < len(_BINARY_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.0f} {_BINARY_UNITS[unit]}" if unit == 0 else f"{value:.1f} {_BINARY_UNITS[unit]}"


def size_label(size_bytes) -> str:
    """Block-size label without decimals for powers of two: 4 KiB, 1 MiB."""
    value, unit = float(size_bytes), 0
    while value >= 1024 and unit < len(_BINARY_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:g} {_BINARY_UNITS[unit]}"


def exact_size(size_bytes) -> str:
    """A request size as size_label gives it where that is the exact size (`8 KiB`, `1.25 MiB`), else with its bytes
    (`1.00098 MiB (1,049,600 B)`): a size is read as a label, never mistaken for a rounded one."""
    label = size_label(size_bytes)
    value, unit = label.split(" ")
    if float(value) * 1024 ** _BINARY_UNITS.index(unit) == float(size_bytes):
        return label
    return f"{label} ({number(size_bytes, 'B', 0)})"


def utc(epoch_s) -> str:
    """`2026-11-21 16:50:00 UTC`: a moment readable the same on every host, whatever its time zone."""
    if missing(epoch_s):
        return MISSING
    return datetime.fromtimestamp(float(epoch_s), tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def now_utc() -> str:
    return utc(datetime.now(timezone.utc).timestamp())


def spread(median, low, high, runs, unit: str = "s", digits: int = 1) -> str:
    """`12.0 s (10.0–14.0 s, 3 runs)`: a median over repetitions with their range; the median alone for one run."""
    if missing(median):
        return MISSING
    text = number(median, unit, digits)
    if runs > 1:
        text += f" ({number(low, '', digits)}–{number(high, unit, digits)}, {int(runs)} runs)"
    return text
