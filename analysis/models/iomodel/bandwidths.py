"""Device bandwidth against request size, the BW of the model's I/O limits: fio sweeps from the runs' `fio` tables,
else the storage profiles' caps or drive datasheets (as the runs recorded them, else
inventories/storage-profiles.yml)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ... import devices

PROFILES_FILE = Path(__file__).resolve().parents[3] / "inventories" / "storage-profiles.yml"


def _profile_caps() -> dict:
    try:
        return (yaml.safe_load(PROFILES_FILE.read_text()) or {}).get("profiles") or {}
    except OSError:
        return {}


def _drive_datasheet_rate(options: dict, direction: str, random: bool, request_bytes: float) -> float:
    """Bytes/s of a modelled drive (a profile with `model`, e.g. hdd) from its datasheet figures alone, for a
    profile that has no fio sweep: a random request pays the command overhead, the average seek and half a
    revolution before its transfer; a sequential stream runs at the mean of the outer and inner media rates. The
    write cache and queue reordering are left out (a conservative figure; docs/storage.md)."""
    media_rate = (options["outer-rate"] + options["inner-rate"]) / 2
    if not random:
        return float(media_rate)
    seconds = (options["overhead-ms"] + options[f"{direction}-seek-avg-ms"]) / 1e3 + 30.0 / options["rpm"] \
        + request_bytes / media_rate
    return float(request_bytes / seconds)


@dataclass
class Bandwidths:
    """Effective bandwidth of a backend profile at a request size: the fio sweep (log-log interpolation between
    block sizes; below the smallest, IOPS-bound: bandwidth proportional to size), else the profile's caps
    min(bytes/s, IOPS x size)."""

    curves: dict = field(default_factory=dict)   # (profile, fio rw) -> (sizes, bandwidths), sorted
    sources: dict = field(default_factory=dict)  # (profile, fio rw) -> "fio sweep of run X"
    caps: dict = field(default_factory=_profile_caps)
    # the fio points the curves leave out: profile, rw, block size, bandwidth, the sweep and the reason
    left_out: list = field(default_factory=list)

    def add_fio(self, fio: pd.DataFrame, profile_of: dict, label: str) -> None:
        """Curves of a run's fio table; `profile_of` maps its backend names to profiles. A profile already
        known keeps its first sweep (callers add the most relevant run first)."""
        if fio.empty or "block_size_bytes" not in fio:
            return
        ok = fio[(fio["error"] == 0) & (fio["bandwidth_bytes_per_s"] > 0)] if "error" in fio else fio
        # A point faster than its device class measured a cache, not the device (analysis/fio_limits.py).
        over = ok["over_class_limit"].fillna("") != "" if "over_class_limit" in ok else pd.Series(False, ok.index)
        for (backend, rw), points in ok.groupby(["backend", "rw"]):
            key = (profile_of.get(backend, backend), rw)
            if key in self.curves:
                continue
            excluded = points[over[points.index]]
            self.left_out += [{"profile": key[0], "rw": rw, "block_size_bytes": int(p.block_size_bytes),
                               "bandwidth_bytes_per_s": float(p.bandwidth_bytes_per_s), "source": label,
                               "reason": p.over_class_limit} for p in excluded.itertuples()]
            points = points[~over[points.index]]
            if points.empty:
                continue
            mean = points.groupby("block_size_bytes")["bandwidth_bytes_per_s"].mean().sort_index()
            self.curves[key] = (mean.index.to_numpy(np.float64), mean.to_numpy(np.float64))
            self.sources[key] = label

    def at(self, profile: str, pattern: str, request_bytes: float) -> tuple[float, str]:
        """(bytes/s, where the figure comes from)."""
        curve = self.curves.get((profile, pattern))
        if curve is not None:
            sizes, bandwidths = curve
            if request_bytes < sizes[0]:
                return bandwidths[0] * request_bytes / sizes[0], self.sources[(profile, pattern)]
            value = np.exp(np.interp(np.log(request_bytes), np.log(sizes), np.log(bandwidths)))
            return float(value), self.sources[(profile, pattern)]
        caps = self.caps.get(profile)
        if not caps:
            raise KeyError(f"no fio sweep and no storage profile for backend profile {profile!r}")
        direction = "read" if "read" in pattern else "write"
        if caps.get("model"):
            return _drive_datasheet_rate(caps["model"]["options"], direction, "rand" in pattern, request_bytes), \
                "storage profile's drive datasheet (inventories/storage-profiles.yml)"
        bps, iops = caps.get(f"{direction}_bps") or math.inf, caps.get(f"{direction}_iops") or math.inf
        return float(min(bps, iops * request_bytes)), "storage profile caps (inventories/storage-profiles.yml)"

    def speed(self, profile: str) -> float:
        """One figure to rank backends: random-read bandwidth at 64 KiB."""
        return self.at(profile, "randread", 65536)[0]


def bandwidths_of(runs: list[tuple[str, dict, dict[str, pd.DataFrame]]]) -> Bandwidths:
    """The fio curves of the runs given as (name, manifest, tables with `fio` and `devices`), the first run that swept
    a profile first; for the others the storage profiles as the first run that used each recorded it (else as
    inventories/storage-profiles.yml has it). Only the runs given: a prediction is a function of its inputs, never of
    what else lies in results/."""
    bandwidths = Bandwidths()
    recorded = {}
    for name, manifest, tables in runs:
        bandwidths.add_fio(tables["fio"], devices.backend_profiles(tables["devices"]), f"fio sweep of run {name}")
        for profile_name, profile in ((manifest.get("emulation") or {}).get("profiles") or {}).items():
            recorded.setdefault(profile_name, profile)
    # A profile as the runs recorded it: their disks were what they measured (the hdd profile was a blkio cap
    # before it became a drive model, issue 21); today's file only for profiles no run recorded.
    bandwidths.caps = {**bandwidths.caps, **{name: p for name, p in recorded.items() if isinstance(p, dict)}}
    return bandwidths

