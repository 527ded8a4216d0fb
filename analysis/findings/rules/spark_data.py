"""Spark's data on disk: rules on what Spark wrote and read on the local dirs beyond its shuffle's own bytes
(docs/findings.md: `spill`, `small-shuffle-reads`)."""
from __future__ import annotations

from typing import Iterable

import math

import pandas as pd

from ... import devices, metrics
from ...formatting import count, format_bytes, number
from ..engine import Finding, Inputs, rule


# ---------------------------------------------------------------- spill

@rule("spill", needs=(("stages", "disk_spilled_bytes"),))
def spill(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    stages = inputs.workload_ids(inputs.table("stages"))
    sums = stages.groupby("workload_id")[["disk_spilled_bytes", "shuffle_write_bytes"]].sum()
    for workload_id, row in sums.iterrows():
        spilled, shuffled = float(row["disk_spilled_bytes"]), float(row["shuffle_write_bytes"])
        if spilled < limits["spill_min_bytes"] or spilled < shuffled * limits["spill_share_min_pct"] / 100:
            continue
        share = 100 * spilled / shuffled if shuffled else math.inf
        yield Finding("spill", workload_id, "Spark stages",
                      f"spilled {format_bytes(spilled)} to disk against {format_bytes(shuffled)} shuffle "
                      f"written ({number(share, '%', 0)})",
                      {"disk_spilled_bytes": spilled, "shuffle_write_bytes": shuffled, "spill_share_pct": share})


# ---------------------------------------------------------------- small shuffle reads on a rotational device

@rule("small-shuffle-reads",
      needs=(("block_requests", "bytes"), ("stages", "shuffle_read_bytes"), ("devices", "rotational")))
def small_shuffle_reads(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    stages = inputs.workload_ids(inputs.table("stages"))
    local = devices.local_devices(inputs.table("workloads"), inputs.table("devices"))
    model = metrics.shuffle_request_size_model(inputs.table("block_requests"), stages, local)
    rotational = inputs.rotational()
    backend_of = inputs.backend_devices()
    if not model.empty:   # the rank among the workload run's shuffle readers of that name: no stage or app id
        model = model.assign(rank=model.groupby(["workload_id", "host", "stage_name"], dropna=False).cumcount() + 1)
    for r in model.to_dict("records"):
        spinning = rotational.get((r["host"], r["device"]))
        if spinning is None or pd.isna(spinning) or not bool(spinning) or r["measured_reads"] < limits["reads_min"] \
                or not r["measured_bytes"] < limits["mean_max_bytes"]:
            continue
        yield Finding("small-shuffle-reads", r["workload_id"], f"{r['stage']} on {r['device']}",
                      f"{r['stage']} read {count(r['measured_reads'], 'request')} of {format_bytes(r['measured_bytes'])} "
                      f"on average from {r['device']} (rotational) for {format_bytes(r['shuffle_read_bytes'])} of "
                      f"shuffle (expected block per map output {format_bytes(r['expected_bytes'])})",
                      {"reads": int(r["measured_reads"]), "mean_read_bytes": float(r["measured_bytes"]),
                       "expected_bytes": float(r["expected_bytes"])}, r["host"],
                      place=(("stage", f"{r['stage_name']} #{r['rank']}"),
                             ("device", f"{r['host']}:{backend_of.get((r['host'], r['device']), r['device'])}")))

