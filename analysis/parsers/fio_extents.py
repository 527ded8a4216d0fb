"""Where the fio sweep's file lay on its device: `extents-<backend>.json`, written by workloads/fio-sweep/run-sweep
before the data path's points (filefrag's extents in bytes, the device's size). One row per extent, so that the
analysis can place the file on the drive's stroke (a point's expectation, analysis/models/hdd_datasheet.py)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import safeio

COLUMNS = ["backend", "file", "device", "device_bytes", "file_bytes", "logical_bytes", "physical_bytes",
           "length_bytes", "source_file"]
_COUNTS = ("logical_bytes", "physical_bytes", "length_bytes")


def _count(value, what: str, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{path.name}: {what} is {value!r}, not a byte count (an integer of at least 0)")
    return value


def parse_extents(path: Path) -> list[dict]:
    """Rows with the `fio_extents` table's columns (docs/tables.md) except host and workload_id; ValueError for a
    document that is not run-sweep's record or an extent that does not lie on the device."""
    document = safeio.read_json(path, "manifest")
    if not isinstance(document, dict) or not isinstance(document.get("extents"), list):
        raise ValueError(f"{path.name}: not a fio-sweep extents record (an object with an `extents` list)")
    device_bytes = _count(document.get("device_bytes"), "device_bytes", path)
    file_bytes = _count(document.get("file_bytes"), "file_bytes", path)
    rows = []
    for extent in document["extents"]:
        if not isinstance(extent, dict):
            raise ValueError(f"{path.name}: an extent is {extent!r}, not an object")
        counts = {name: _count(extent.get(name), name, path) for name in _COUNTS}
        if counts["physical_bytes"] + counts["length_bytes"] > device_bytes:
            raise ValueError(f"{path.name}: an extent ends at byte {counts['physical_bytes'] + counts['length_bytes']}, "
                             f"past the device's {device_bytes}")
        rows.append({"backend": str(document.get("backend", "")), "file": str(document.get("file", "")),
                     "device": str(document.get("device", "")), "device_bytes": device_bytes,
                     "file_bytes": file_bytes, **counts, "source_file": path.name})
    return rows


def extents_tables(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    return {"fio_extents": pd.DataFrame(parse_extents(path), columns=COLUMNS)}, ""
