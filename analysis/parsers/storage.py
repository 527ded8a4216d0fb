"""The storage each host had, as the `devices` table: one row per host and backend.

The storage role writes `<spillway_root>/storage.json` on every worker (docs/storage.md) and the bench fetches it
into `raw/<host>/storage.json`; the runner also copies it into the manifest's `hosts.<host>.storage`. A host's raw
file wins; the manifest's copy stands in for a host whose file was not fetched (a run cut short, or a run
directory that kept only its manifest and tables). A backend the manifest's storage declares that no host lists
has one row with an empty host, so that every backend name of the run has its profile here.

Columns: host, backend, kind (emulated | device | mount | pfs ...), profile (the storage profile it stands for: the
backend's `profile`, else the inventory's, else the backend name itself, e.g. a real mount), device and
lower_device (kernel names such as `loop1`; empty when the backend has none, e.g. a network file system), mount,
rotational (nullable boolean).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import safeio

DEVICE_COLUMNS = ["host", "backend", "kind", "profile", "device", "lower_device", "mount", "rotational"]
TEXT = ("host", "backend", "kind", "profile", "device", "lower_device", "mount")


def read_storage(path: Path) -> dict:
    """One raw/<host>/storage.json; ValueError when it is not the storage role's document."""
    document = safeio.read_json(path, "manifest")
    if not isinstance(document, dict) or not isinstance(document.get("backends", {}), dict):
        raise ValueError(f"{path.name}: not a storage record (an object with a `backends` object)")
    return document


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def devices_table(storage_by_host: dict[str, dict], manifest: dict) -> pd.DataFrame:
    """`storage_by_host`: host -> its storage.json document (read_storage); hosts missing there take the
    manifest's hosts.<host>.storage."""
    declared = (manifest.get("storage") or {}).get("backends") or {}
    hosts = dict(storage_by_host)
    for host, facts in (manifest.get("hosts") or {}).items():
        if host not in hosts and isinstance(facts, dict) and isinstance(facts.get("storage"), dict):
            hosts[host] = facts["storage"]
    rows = []
    for host in sorted(hosts):
        backends = hosts[host].get("backends")
        for backend, facts in sorted((backends if isinstance(backends, dict) else {}).items()):
            if not isinstance(facts, dict):
                continue
            inventory = declared.get(backend) if isinstance(declared.get(backend), dict) else {}
            rotational = facts.get("rotational")
            rows.append({"host": host, "backend": backend, "kind": _text(facts.get("kind") or inventory.get("kind")),
                         "profile": _text(facts.get("profile")) or _text(inventory.get("profile")) or backend,
                         "device": _text(facts.get("device")), "lower_device": _text(facts.get("lower_device")),
                         "mount": _text(facts.get("mount")),
                         "rotational": rotational if isinstance(rotational, bool) else None})
    on_hosts = {row["backend"] for row in rows}
    for backend, inventory in sorted(declared.items()):
        if backend not in on_hosts and isinstance(inventory, dict):
            rows.append({"host": "", "backend": backend, "kind": _text(inventory.get("kind")),
                         "profile": _text(inventory.get("profile")) or backend, "device": "", "lower_device": "",
                         "mount": "", "rotational": None})
    frame = pd.DataFrame(rows, columns=DEVICE_COLUMNS)
    frame["rotational"] = frame["rotational"].astype("boolean")
    for column in TEXT:
        frame[column] = frame[column].astype(str)
    return frame
