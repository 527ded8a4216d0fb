"""The rows of the comparison page's own tables (compare.html): times per configuration with their speedups,
the regression gate's verdicts, fio ratios, throughput and shuffle per configuration."""
from __future__ import annotations

import pandas as pd

from ... import statistics
from ...formatting import MISSING, format_bytes, number, rate, size_label
from .cells import spread_cell, verdict_cell


def pivot_rows(table: pd.DataFrame, keys: list[str], order: list[str]) -> list[dict]:
    """Rows for the page: per key, each configuration's `median (min–max, n runs)` and speedup."""
    rows = []
    if table.empty:
        return rows
    for key, group in table.groupby(keys, dropna=False, sort=False, observed=True):
        by_config = {row["configuration"]: row for row in group.to_dict("records")}
        cells = []
        for config in order:
            row = by_config.get(config)
            if row is None:
                cells.append({"time": "not run", "speedup": MISSING, "reason": "", "flag": False})
                continue
            verdict = row.get("verdict", statistics.BASELINE)
            cells.append({"time": spread_cell({"median": row["median_s"], "min": row["min_s"], "max": row["max_s"],
                                                "runs": row["runs"]}),
                          "speedup": verdict_cell(number(row["speedup_vs_baseline"], "x", 2), verdict),
                          "reason": row.get("verdict_reason", ""), "flag": bool(row["spread_flag"])})
        rows.append({"key": dict(zip(keys, key)), "cells": cells})
    return rows


def gate_rows(table: pd.DataFrame) -> list[dict]:
    """The regression gate's verdicts (analysis.gate), failures first, each time and slowdown with its unit."""
    order = {verdict: rank for rank, verdict in enumerate(("slower", "pass", "faster"))}
    ranked = table.assign(_rank=table["gate"].map(order).fillna(len(order))).sort_values("_rank", kind="stable")
    return [{"gate": r.gate, "workload": r.workload, "sweep": r.sweep, "stage": r.stage,
             "configuration": r.configuration, "median": number(r.median_s, "s", 2),
             "baseline_median": number(r.baseline_median_s, "s", 2),
             "slowdown": _change_text(r.slowdown_pct), "reason": r.reason} for r in ranked.itertuples()]


def _change_text(slowdown_pct) -> str:
    """`12.5 % slower`, `3.0 % faster`, `0.0 %` (no change at this precision)."""
    if pd.isna(slowdown_pct):
        return MISSING
    text = number(abs(slowdown_pct), "%", 1)
    if text == number(0, "%", 1):
        return text
    return f"{text} {'slower' if slowdown_pct > 0 else 'faster'}"


def fio_ratio_rows(ratios: pd.DataFrame) -> list[dict]:
    return [{"series": r.series, "rw": r.rw, "direction": r.direction, "bs": size_label(r.block_size_bytes),
             "bw": rate(r.bandwidth_bytes_per_s, 1), "bw_base": rate(r.bandwidth_bytes_per_s_baseline, 1),
             "bw_ratio": number(r.bandwidth_ratio, "x", 2), "iops_ratio": number(r.iops_ratio, "x", 2)}
            for r in ratios.itertuples()]


def io_rows(throughput: pd.DataFrame) -> list[dict]:
    return [{"workload": r.workload, "sweep": r.sweep, "configuration": r.configuration,
             "result": format_bytes(r.result_bytes), "shuffle": format_bytes(r.shuffle_bytes),
             "run": number(r.run_s, "s", 1), "cluster": rate(r.cluster_bytes_per_s, 2),
             "node": rate(r.node_bytes_per_s, 2), "nodes": int(r.nodes), "runs": int(r.runs)}
            for r in throughput.dropna(subset=["result_bytes", "shuffle_bytes"], how="all").itertuples()]


def shuffle_rows(shuffle: pd.DataFrame) -> list[dict]:
    return [{"workload": r.workload, "sweep": r.sweep, "application": r.application,
             "configuration": r.configuration, "write": format_bytes(r.shuffle_write_bytes),
             "read": format_bytes(r.shuffle_read_bytes), "runs": int(r.runs)} for r in shuffle.itertuples()]
