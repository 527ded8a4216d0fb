"""The storage sensitivity table of both pages (models.sensitivity): a row per workload, a column per placement,
each cell measured or predicted."""
from __future__ import annotations

import pandas as pd

from ...formatting import MISSING, number, spread
from ...models.sensitivity import MODEL_NAMES


def sensitivity_context(table: pd.DataFrame) -> dict:
    """models.sensitivity.storage_sensitivity as a table: one row per workload (and P, N), one column per placement,
    each cell the run step measured (median, range, runs) or predicted (with the model's error), then the model's
    error and the runs it was measured on."""
    if table.empty:
        return {"placements": [], "rows": []}
    placements = list(dict.fromkeys(zip(table["hdfs"], table["local"])))
    rows = []
    for key, group in table.groupby(["workload", "sweep", "cores", "nodes"], sort=False):
        by_placement = {(r["hdfs"], r["local"]): r for r in group.to_dict("records")}
        first = group.iloc[0]
        error = (f"median {number(first['error_median_pct'], '%', 1)}, worst {number(first['error_worst_pct'], '%', 1)}"
                 if not pd.isna(first["error_median_pct"]) else "not measured")
        rows.append({"workload": key[0] + (f" ({key[1]})" if key[1] else ""), "cores": f"P={key[2]}, N={key[3]}",
                     "cells": [_sensitivity_cell(by_placement.get(p)) for p in placements],
                     "model": first["model"], "error": error, "basis": first["error_basis"],
                     "inputs": [f"{h}, local {l}: {r['inputs']}" for (h, l), r in by_placement.items() if r["inputs"]]})
    return {"placements": [f"HDFS {h}, local {l}" for h, l in placements], "rows": rows}


def _sensitivity_cell(row) -> dict:
    if row is None:
        return {"text": MISSING, "how": "", "title": ""}
    if row["how"] == "measured":
        check = "" if pd.isna(row["error_pct"]) else \
            f"the model, from the other placements: {number(row['predicted_s'], 's', 1)} ({row['error_pct']:+.1f} %)"
        return {"text": spread(row["run_s"], row["min_s"], row["max_s"], row["runs"]), "how": "measured",
                "title": check}
    error = "" if pd.isna(row["error_median_pct"]) else f" ± {number(row['error_median_pct'], '%', 0)}"
    inputs = f"; {row['inputs']}" if row["inputs"] else ""
    return {"text": number(row["run_s"], "s", 1) + error, "how": f"predicted ({row['model']})",
            "title": f"predicted by {MODEL_NAMES.get(row['model'], row['model'])}; ± its median error{inputs}",
            "inputs": row["inputs"]}
