"""Balance across nodes and devices (docs/findings.md: `imbalance`): whether one node or device of a backend did
more of the I/O than the others."""
from __future__ import annotations

from typing import Iterable

from ...formatting import format_bytes, number
from ..engine import Finding, Inputs, rule


# ---------------------------------------------------------------- imbalance

@rule("imbalance", needs=(("disk_totals", "read_bytes"), ("devices", "device")))
def imbalance(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    disk = inputs.measured_on_backend_devices("disk_totals")
    for (workload_id, backend), group in disk.groupby(["workload_id", "backend"]):
        moved = group["read_bytes"] + group["write_bytes"]
        if len(group) < 2 or moved.sum() < limits["backend_min_bytes"] or moved.mean() == 0:
            continue
        ratio = moved.max() / moved.mean()
        if ratio < limits["max_over_mean_min"]:
            continue
        top = group.loc[moved.idxmax()]
        yield Finding("imbalance", workload_id, f"backend {backend}",
                      f"{top['device']} on {top['host']} moved {format_bytes(moved.max())}, "
                      f"{number(ratio, 'x', 2)} the mean of the {len(group)} {backend} devices "
                      f"({format_bytes(moved.mean())})",
                      {"max_bytes": float(moved.max()), "mean_bytes": float(moved.mean()),
                       "max_over_mean": float(ratio), "devices": len(group)}, str(top["host"]),
                      place=(("backend", str(backend)),))

