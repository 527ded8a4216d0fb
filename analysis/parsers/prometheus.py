"""The bench's Prometheus archive (`raw/prometheus/<workload-id>.json`, written by spillway/monitoring.py):
every dashboard query's range result over one workload's window, as one tidy row per series and time step.

Archive: {"start": s, "end": s, "step_s": n, "queries": {"<id>": {"expr", "unit", "result": <Prometheus matrix
result>, "error"?}}}. Sample values are strings in Prometheus' JSON ("NaN" for 0/0, e.g. the request size of
an idle device): they become floats, NaN kept.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import safeio

FIXED_COLUMNS = ["query_id", "unit"]
# Prometheus' own name label, kept under a name that is a column like the others.
_RENAMED = {"__name__": "metric"}


def parse_archive(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """(query_id, unit, one column per label any series has, time_s, value; the queries that failed as
    `<id>: <error>`)."""
    archive = safeio.read_json(path, "prometheus")
    rows, labels, failed = [], set(), []
    for query_id, query in _object(_object(archive, "the archive").get("queries") or {}, "queries").items():
        query = _object(query, f"query {query_id}")
        if query.get("error"):
            failed.append(f"{query_id}: {query['error']}")
        result = query.get("result") or []
        if not isinstance(result, list):
            raise ValueError(f"{path}: the result of query {query_id} is {type(result).__name__}, not a list")
        for series in result:
            series = _object(series, f"a series of query {query_id}")
            metric = {_RENAMED.get(k, k): v for k, v in _object(series.get("metric") or {}, "its metric").items()}
            if not all(isinstance(value, str) for value in metric.values()):
                raise ValueError(f"{path}: a label of query {query_id} that is not text (Prometheus' are)")
            labels.update(metric)
            # a matrix has `values`; an instant vector (a query archived by hand) has one `value`
            for time_s, value in series.get("values") or ([series["value"]] if "value" in series else []):
                rows.append({"query_id": query_id, "unit": query.get("unit", ""), **metric,
                             "time_s": float(time_s), "value": float(value)})
    columns = [*FIXED_COLUMNS, *sorted(labels), "time_s", "value"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["time_s"] = frame["time_s"].astype("float64")
    frame["value"] = frame["value"].astype("float64")
    return frame, failed


def _object(value, what: str) -> dict:
    """`value` when it is a JSON object as the archive's layout has there; ValueError otherwise."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} is {type(value).__name__}, not a JSON object: not a Prometheus archive")
    return value


def prometheus_tables(path: Path) -> tuple[dict[str, pd.DataFrame], str]:
    """The prometheus_series table of one archive, and a note of the queries that failed when archived."""
    frame, failed = parse_archive(path)
    note = f"{len(failed)} quer(ies) failed when archived: {'; '.join(failed)}"[:500] if failed else ""
    return {"prometheus_series": frame}, note
