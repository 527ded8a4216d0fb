"""The regression gate (metrics layer): `make compare RUNS="..." BASELINE=<run> MAX_SLOWDOWN=5%` reads the
comparison's verdicts (analysis.statistics, the same ones the page prints) per workload and Spark stage against
the baseline and says whether a CI job guarding an infrastructure change should fail (docs/compare.md, "The
regression gate").

A row fails only when the statistics call it `slower` (significant) *and* its median is more than MAX_SLOWDOWN
slower than the baseline's: noise never fails a build, and a real slowdown within the allowance passes."""
from __future__ import annotations

import math
import re

import pandas as pd

from . import statistics

PASS, FAIL = "pass", "slower"
# What the gate prints per row: a significant slowdown beyond the allowance fails (`slower`); a significant
# speed-up is `faster`; a significant slowdown within the allowance and the baseline-equal rows `pass`; the rest
# keep the statistics' word (`not significant`, `cannot tell`), which passes: only a proven slowdown fails.
GATE_VERDICTS = (PASS, FAIL, statistics.FASTER, statistics.SAME, statistics.CANNOT_TELL)
COLUMNS = ["workload", "sweep", "stage", "configuration", "gate", "baseline_median_s", "median_s", "slowdown_pct",
           "statistics_verdict", "reason"]
RUN_STEP = "run step"


class GateError(ValueError):
    """Bad input for the gate: names the make variable and the fix."""


def parse_max_slowdown(text: str | None) -> float:
    """MAX_SLOWDOWN as a percentage: `5%`, `5` or `2.5 %`; none given is 0 % (any significant slowdown fails)."""
    if text is None or str(text).strip() == "":
        return 0.0
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%?\s*", str(text))
    if not match:
        raise GateError(f"MAX_SLOWDOWN={text!r} is not a percentage: give a number of percent such as "
                        f"MAX_SLOWDOWN=5% (or 5; 0 fails on any significant slowdown)")
    return float(match.group(1))


def _stage_name(row: dict) -> str:
    return f"app {row['app']} stage {row['stage_id']} {row['name']}".strip()


def _rows(table: pd.DataFrame, stage_of, max_slowdown_pct: float) -> list[dict]:
    rows = []
    if table.empty:
        return rows
    for row in table.to_dict("records"):
        verdict = row["verdict"]
        if verdict == statistics.BASELINE:
            continue
        speedup = row["speedup_vs_baseline"]
        slowdown = (1 / speedup - 1) * 100 if speedup and not pd.isna(speedup) else math.nan
        if verdict == statistics.SLOWER:
            gate = FAIL if slowdown > max_slowdown_pct else PASS
            reason = f"{row['verdict_reason']}; {'beyond' if gate == FAIL else 'within'} MAX_SLOWDOWN " \
                     f"{max_slowdown_pct:g} %"
        else:
            gate = verdict
            reason = row["verdict_reason"]
        rows.append({"workload": row["workload"], "sweep": row["sweep"], "stage": stage_of(row),
                     "configuration": str(row["configuration"]), "gate": gate,
                     "baseline_median_s": row["baseline_median_s"], "median_s": row["median_s"],
                     "slowdown_pct": slowdown, "statistics_verdict": verdict, "reason": reason})
    return rows


def verdicts(workloads: pd.DataFrame, stages: pd.DataFrame, max_slowdown_pct: float) -> pd.DataFrame:
    """One row per workload (its run step) and per Spark stage and configuration other than the baseline, with
    the gate's verdict (GATE_VERDICTS); times in s, slowdown in % of the baseline's median (negative: faster)."""
    rows = _rows(workloads, lambda _: RUN_STEP, max_slowdown_pct) + _rows(stages, _stage_name, max_slowdown_pct)
    return pd.DataFrame(rows, columns=COLUMNS)


def failed(table: pd.DataFrame) -> pd.DataFrame:
    """The rows that fail the gate."""
    return table[table["gate"] == FAIL]
