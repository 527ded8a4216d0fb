"""findings.json, the findings for machines (docs/findings.md, "findings.json"): the rules' statuses and findings
(analysis/findings), the page's overview and its storage sensitivity, every number with its unit in its key.
A presentation of what the findings, the metrics and the models computed, as the pages are."""
from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pandas as pd

from .. import metrics, statistics
from ..models import bottleneck
from ..models.iomodel.bandwidths import Bandwidths
from ..models.iomodel.configurations import Configuration


# findings.json's overview and sensitivity: every number's unit is its key's suffix (docs/findings.md).
UNITS = {"_seconds": "seconds", "_bytes": "bytes", "_share": "a fraction of a whole, 0..1",
         "_pct": "percent; a model error is signed: (predicted - measured) / measured", "_count": "a count"}


def overview_frames(tables: dict[str, pd.DataFrame], configs: list[Configuration],
                    bandwidths: Bandwidths) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """What the report's overview shows, as tables: per measured workload run its bytes and reads
    (metrics.workload_overview), per run and backend its devices' bytes, per run and bottleneck its share of the
    stage time (models.bottleneck.time_shares; each run modeled on its own bytes)."""
    overview, per_backend = metrics.workload_overview(tables)
    shares = bottleneck.time_shares(configs, bandwidths) if configs else pd.DataFrame(columns=["workload_id"])
    return overview, per_backend, shares


def _number(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def overview_records(run_id: str, overview: pd.DataFrame, per_backend: pd.DataFrame,
                     shares: pd.DataFrame) -> list[dict]:
    """One object per measured workload run of overview_frames: the overview's figures with their units."""
    records = []
    for run in overview.to_dict("records"):
        mine = shares[shares["workload_id"] == run["workload_id"]] if not shares.empty else shares
        backends = per_backend[per_backend["workload_id"] == run["workload_id"]]
        device_share = _number(run["device_read_share_pct"] / 100 if pd.notna(run["device_read_share_pct"]) else None)
        records.append({
            "run_id": run_id, "workload_id": run["workload_id"], "workload": run["workload"],
            "sweep": run["sweep"] or "",
            "placement": {"hdfs": run["placement_hdfs"], "local": run["placement_local"]},
            "executor_cores": None if pd.isna(run["executor_cores"]) else int(run["executor_cores"]),
            "run_seconds": _number(run["run_s"]),
            "stage_time": None if mine.empty else {
                "stages_seconds": float(mine["stages_s"].iloc[0]), "stage_count": int(mine["stages"].iloc[0]),
                "bottlenecks": [{"resource": r["resource"], "backend": r["backend"] or None,
                                 "stages_seconds": float(r["stage_s"]), "share": _number(r["share_pct"] / 100)}
                                for r in mine.to_dict("records")]},
            "bytes_by_path": {path: _number(run[path]) for path in metrics.PATH_COLUMNS},
            "device_bytes_by_backend": [{"backend": d["backend"], "read_bytes": float(d["read_bytes"]),
                                         "write_bytes": float(d["write_bytes"])} for d in backends.to_dict("records")],
            "reads": {"app_read_bytes": _number(run["app_read_bytes"]),
                      "device_read_bytes": _number(run["device_read_bytes"]),
                      "device_write_bytes": _number(run["device_write_bytes"]),
                      "device_share": device_share,
                      "page_cache_share": None if device_share is None else max(0.0, 1 - device_share)}})
    return records


def sensitivity_records(table: pd.DataFrame) -> list[dict]:
    """One object per workload group of models.sensitivity.storage_sensitivity (workload, sweep, P, N): the model that
    predicted (`model`: sensitivity.FIT or FIO), its error on these runs, and every placement's run step, measured or
    predicted (with the model and, for the fio model, its inputs), with its units."""
    records = []
    if table.empty:
        return records
    for (workload, sweep, cores, nodes), group in table.groupby(["workload", "sweep", "cores", "nodes"], sort=False):
        first = group.iloc[0]
        records.append({
            "workload": workload, "sweep": sweep or "", "cores_per_node": int(cores), "nodes": int(nodes),
            "model": first["model"],
            "model_error": {"median_abs_pct": _number(first["error_median_pct"]),
                            "worst_abs_pct": _number(first["error_worst_pct"]), "basis": first["error_basis"]},
            "placements": [{"hdfs": r["hdfs"], "local": r["local"], "how": r["how"], "run_seconds": _number(r["run_s"]),
                            "min_seconds": _number(r["min_s"]), "max_seconds": _number(r["max_s"]),
                            "run_count": int(r["runs"]), "predicted_seconds": _number(r["predicted_s"]),
                            "error_pct": _number(r["error_pct"]),
                            "model": r["model"] if pd.notna(r["predicted_s"]) else None,
                            "inputs": r["inputs"] or None}
                           for r in group.to_dict("records")]})
    return records


def section(records: list[dict] | None = None, error: str = "") -> dict:
    """findings.json's form of a page section: its objects, or why it could not be built (shown on the page too)."""
    return {"error": error or None, "items": records or []}


def as_json(run_id: str, statuses: list[dict], table: pd.DataFrame, noise: statistics.Noise | None,
            overview: dict | None = None, storage_sensitivity: dict | None = None,
            thresholds: dict | None = None, against_baseline: list[dict] | None = None) -> str:
    """findings.json: the rules with their status (each with the thresholds it was judged by), then the findings
    (numbers with units in their keys), then the page's overview and storage sensitivity (`section`s of
    overview_records and sensitivity_records); `thresholds_file`: the file of thresholds given, each overridden one
    beside the catalog's value (null: the catalog's thresholds throughout); `against_baseline`: a comparison's
    findings new and resolved against its baseline run (findings.diff; absent from a run's own findings.json)."""
    findings = [{**{k: v for k, v in row.items() if k != "values"}, "values": json.loads(row["values"])}
                for row in table.to_dict("records")]
    return json.dumps({"run_id": run_id, "noise": asdict(noise) if noise else None, "statistics": statistics.METHOD,
                       "thresholds_file": thresholds, "rules": statuses, "findings": findings, "units": UNITS,
                       "overview": overview or section(error="not evaluated"),
                       "sensitivity": storage_sensitivity or section(error="not evaluated"),
                       **({} if against_baseline is None else {"against_baseline": against_baseline})},
                      indent=2, sort_keys=False, default=_plain) + "\n"


def _plain(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")
