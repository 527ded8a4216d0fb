"""A table's content as a few comparable facts: columns, dtypes, rows and a hash of every value as text.

Parquet bytes depend on the pyarrow version; these do not. Used to prove that a redesign of the analysis leaves
the tables of a recorded run unchanged (tests/fixtures/tables/*.json, written before it).
"""
from __future__ import annotations

import hashlib

import pandas as pd


def digest(frame: pd.DataFrame, run_dir: str = "") -> dict:
    """`run_dir`: a prefix taken off the values, so that a path inside the run reads the same wherever it lies."""
    text = frame.to_csv(index=False, lineterminator="\n", float_format="%.17g")
    if run_dir:
        text = text.replace(run_dir.rstrip("/") + "/", "")
    return {"columns": list(map(str, frame.columns)), "dtypes": [str(t) for t in frame.dtypes],
            "rows": len(frame), "sha256": hashlib.sha256(text.encode()).hexdigest()}


def digests(tables: dict[str, pd.DataFrame], run_dir: str = "") -> dict[str, dict]:
    return {name: digest(frame, run_dir) for name, frame in sorted(tables.items())}
