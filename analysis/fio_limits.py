"""What a fio point's device class can physically deliver, and the points that went faster (issue 42): the `fio`
table's `class_limit_bytes_per_s` and `over_class_limit` columns (docs/tables.md).

The class limit of a storage profile, as the run recorded it (the manifest's `emulation.profiles`): for a modelled
drive (a profile with `model`, e.g. hdd) its media rate at the outer edge, the fastest any region of its platters
streams; for a capped profile (ssd, nvme) its cap, min(bytes/s, IOPS x block size). A point above its class limit
measured a cache (the drive's buffer, a file smaller than it), not the device: the models leave it out
(analysis/models/iomodel/bandwidths.py) and the report shows why.
"""
from __future__ import annotations

import math

import pandas as pd

# A point counts as faster than its class beyond this share: fio's rate over a few seconds and blk-throttle's own
# slack put capped points up to 2 % over their cap (the recorded ssd sweep: 509 MB/s under a 500 MB/s cap).
TOLERANCE = 0.05
LIMIT_COLUMNS = ["class_limit_bytes_per_s", "over_class_limit"]


def recorded_profiles(manifest: dict) -> dict:
    """Profile name -> the storage profile as the run recorded it (its manifest's `emulation.profiles`)."""
    profiles = (manifest.get("emulation") or {}).get("profiles") if isinstance(manifest, dict) else None
    return {name: p for name, p in (profiles or {}).items() if isinstance(p, dict)}


def class_limit(profile: dict, direction: str, block_size_bytes: float) -> tuple[float, str]:
    """(bytes/s, what it is) a device of `profile` can deliver at most in `direction` at a block size; NaN with
    an empty text for a profile that sets no limit (an uncapped one, a real mount)."""
    options = (profile.get("model") or {}).get("options") or {}
    outer = options.get("outer-rate")
    if isinstance(outer, (int, float)) and outer > 0:
        return float(outer), f"the drive model's media rate at the outer edge, {outer / 1e6:.0f} MB/s"
    bps, iops = profile.get(f"{direction}_bps") or 0, profile.get(f"{direction}_iops") or 0
    caps = [(float(bps), f"the profile's {direction}_bps cap, {bps / 1e6:.0f} MB/s")] if bps > 0 else []
    if iops > 0:
        caps.append((iops * float(block_size_bytes),
                     f"the profile's {direction}_iops cap, {iops} IOPS x {block_size_bytes / 1024:.0f} KiB"))
    return min(caps) if caps else (math.nan, "")


def with_class_limits(fio: pd.DataFrame, profile_of: dict[str, str], profiles: dict) -> pd.DataFrame:
    """The fio table with each point's class limit and, for a point above it by more than TOLERANCE, the cause
    (empty otherwise). `profile_of`: backend -> profile name (devices.backend_profiles); `profiles`: the run's
    recorded profiles (recorded_profiles)."""
    fio = fio.copy()
    if fio.empty or "bandwidth_bytes_per_s" not in fio:
        for column in LIMIT_COLUMNS:
            fio[column] = pd.Series(dtype="float64" if column.endswith("_per_s") else "object")
        return fio
    limits, causes = [], []
    for row in fio.itertuples():
        name = profile_of.get(row.backend, row.backend)
        limit, what = class_limit(profiles.get(name) or {}, row.direction, row.block_size_bytes)
        limits.append(limit)
        over = not math.isnan(limit) and row.bandwidth_bytes_per_s > limit * (1 + TOLERANCE)
        causes.append(f"{row.bandwidth_bytes_per_s / 1e6:.1f} MB/s is over {what} (profile {name}): a cache, not "
                      f"the device" if over else "")
    fio["class_limit_bytes_per_s"] = limits
    fio["over_class_limit"] = causes
    return fio
