"""Balance across nodes and devices (docs/findings.md: `imbalance`): whether one node or device of a backend did
more of the I/O than the others."""
from __future__ import annotations

from typing import Iterable

from ...formatting import format_bytes, number
from ..engine import Finding, Inputs, rule


# ---------------------------------------------------------------- imbalance

@rule(id="imbalance", title="Imbalance across nodes or devices of a backend",
      trigger="in a workload run, the busiest device of a backend moved at least `max_over_mean_min` times the mean "
              "over that backend's devices (two or more), with at least `backend_min_bytes` moved in all",
      thresholds={"max_over_mean_min": 1.5, "backend_min_bytes": 64 * 2 ** 20},
      action="One node or device did more of the I/O than the others and the stage waits for it: look for data "
             "skew (partitioning), HDFS block placement (hdfs balancer) or a slower device on that node.",
      needs=(("disk_totals", "read_bytes"), ("devices", "device")))
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
                       "max_over_mean": float(ratio), "devices": len(group)}, str(top["host"]))

