"""A prediction as JSON (`python -m analysis predict --json`)."""
from __future__ import annotations

import json

import pandas as pd

from .fit_predict import Target


def to_json(predicted: pd.DataFrame, summary: dict, target: Target, models: dict, profile_runs: list[str]) -> str:
    """JSON with units in every key (`_s` seconds, `_bytes` bytes, `_bytes_per_s` bytes/s, `_pct` percent)."""
    stages = json.loads(predicted.to_json(orient="records"))
    return json.dumps({"target": {"hdfs": target.hdfs, "local": target.local, "executor_cores_per_node": target.cores,
                                  "nodes": target.nodes},
                       "profile_runs": profile_runs,
                       "units": {"_s": "seconds", "_bytes": "bytes", "_bytes_per_s": "bytes per second",
                                 "_pct": "percent", "tasks": "tasks"},
                       "stages": stages,
                       "application": {"predicted_s": float(predicted["predicted_s"].sum()) if len(predicted) else 0.0},
                       "errors": summary,
                       "fitted": [m.as_dict() for stage_models in models.values() for m in stage_models]}, indent=1)
