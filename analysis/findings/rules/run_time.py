"""Whether the configuration changed the run time: the time rules (docs/findings.md: `storage-sensitive`,
`cannot-tell`), over a run's own configurations and over a comparison's verdicts. Time differences come from
analysis.statistics only: no finding rests on a difference the statistics call noise."""
from __future__ import annotations

from typing import Iterable, Sequence

import pandas as pd

import run_protocol

from ... import metrics, statistics
from ...formatting import number
from ..engine import COLUMNS, FIRED, NO_DATA, QUIET, Finding, Inputs, Rule, evaluate, finding_rows, rule, status


@rule("storage-sensitive", needs=(("workloads", "run_s"),))
def storage_sensitive(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    return [f for f in time_differences(inputs) if f.rule == "storage-sensitive"]


@rule("cannot-tell", needs=(("workloads", "run_s"),))
def cannot_tell(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    return [f for f in time_differences(inputs)
            if f.rule == "cannot-tell" and f.values["fewest_runs"] < limits["runs_min"]]


def placement_label(row) -> str:
    cores = "" if pd.isna(row["executor_cores"]) else f", P={int(row['executor_cores'])}"
    return f"HDFS {row['placement_hdfs']}, local {row['placement_local']}{cores}"


def time_differences(inputs: Inputs) -> list[Finding]:
    """Each workload's configurations against its fastest (by median): significant ones as `storage-sensitive`,
    those the statistics cannot tell as `cannot-tell` (one finding per workload listing them)."""
    spread = metrics.run_time_by_placement(inputs.table("workloads"))
    found = []
    for (workload, sweep), group in spread.groupby(["workload", "sweep"], dropna=False):
        if len(group) < 2:
            continue
        fastest = group.loc[group["median"].idxmin()]
        differ, unknown = [], []
        for row in group.drop(index=fastest.name).to_dict("records"):
            result = statistics.compare(row["samples"], fastest["samples"], inputs.noise)
            text = (f"{placement_label(fastest)} {number(fastest['median'], 's', 1)} vs {placement_label(row)} "
                    f"{number(row['median'], 's', 1)}: {number(result.ratio, 'x', 2)}")
            if result.significant:
                differ.append((text + f" ({result.reason})", result, placement_label(row)))
            elif result.verdict == statistics.CANNOT_TELL:
                unknown.append((placement_label(row), row, result))
        name = f"{workload}{' ' + sweep if isinstance(sweep, str) and sweep else ''}"
        for text, result, against in differ:
            found.append(Finding("storage-sensitive", name, placement_label(fastest), text,
                                 {"ratio": result.ratio, "ci_low": result.low, "ci_high": result.high,
                                  "slowdown": _slowdown(result.ratio)},
                                 place=(("fastest", placement_label(fastest)), ("against", against)),
                                 workload_key=name))
        if unknown:
            runs = sorted({int(r["runs"]) for _, r, _ in unknown} | {int(fastest["runs"])})
            spread_pct = run_protocol.spread_pct(group["median"].tolist())
            found.append(Finding("cannot-tell", name, f"{len(group)} configurations",
                                 f"{len(group)} configurations with {'/'.join(map(str, runs))} run(s) each differ by up "
                                 f"to {number(spread_pct, '%', 0)} ({number(group['median'].min(), 's', 1)}-"
                                 f"{number(group['median'].max(), 's', 1)}); {unknown[0][2].reason}",
                                 {"configurations": len(group), "spread_pct": spread_pct, "fewest_runs": runs[0]},
                                 workload_key=name))
    return found



TIME_RULES = (storage_sensitive.id, cannot_tell.id)


def _slowdown(ratio: float) -> float:
    """The slower of two configurations against the faster, whichever way the ratio was taken (>= 1)."""
    return max(ratio, 1 / ratio) if ratio and ratio > 0 else float("nan")


def comparison_differences(table: pd.DataFrame) -> list[Finding]:
    """The time rules over a comparison's workload table (analysis.across_runs.times.workload_times: each configuration
    against the baseline with its verdict), instead of each run's own configurations."""
    found = []
    if table.empty or "verdict" not in table:
        return found
    for (workload, sweep), group in table.groupby(["workload", "sweep"], dropna=False, observed=True):
        name = f"{workload}{' ' + sweep if isinstance(sweep, str) and sweep else ''}"
        base = group[group["verdict"] == statistics.BASELINE]
        if base.empty:
            continue
        base = base.iloc[0]
        unknown = group[group["verdict"] == statistics.CANNOT_TELL]
        for row in group[group["verdict"].isin([statistics.FASTER, statistics.SLOWER])].to_dict("records"):
            found.append(Finding("storage-sensitive", name, str(row["configuration"]),
                                 f"{row['configuration']} {number(row['median_s'], 's', 1)} against the baseline "
                                 f"{base['configuration']} {number(base['median_s'], 's', 1)}: "
                                 f"{number(row['speedup_vs_baseline'], 'x', 2)} {row['verdict']} ({row['verdict_reason']})",
                                 {"speedup": float(row["speedup_vs_baseline"]), "ci_low": float(row["speedup_ci_low"]),
                                  "ci_high": float(row["speedup_ci_high"]),
                                  "slowdown": _slowdown(float(row["speedup_vs_baseline"]))},
                                 place=(("baseline", str(base["configuration"])), ("against", str(row["configuration"]))),
                                 workload_key=name))
        if not unknown.empty:
            found.append(Finding("cannot-tell", name, f"{len(unknown)} configurations",
                                 f"{', '.join(map(str, unknown['configuration']))} against the baseline "
                                 f"{base['configuration']}: speedups "
                                 f"{', '.join(number(v, 'x', 2) for v in unknown['speedup_vs_baseline'])}; "
                                 f"{unknown.iloc[0]['verdict_reason']}",
                                 {"configurations": int(len(unknown)),
                                  "fewest_runs": int(min(unknown["runs"].min(), base["runs"])) if "runs" in group
                                  else 1},
                                 place=(("baseline", str(base["configuration"])),), workload_key=name))
    return found


def evaluate_comparison(rules: Sequence[Rule], runs: list[tuple[str, dict[str, pd.DataFrame]]],
                        workload_table: pd.DataFrame,
                        noise: statistics.Noise | None = None) -> tuple[list[dict], pd.DataFrame]:
    """A rule set over several runs: every rule but the time rules on each run's tables (`run`: its label), the
    time rules on the comparison's own verdicts (which pair every configuration of every run)."""
    per_rule: dict[str, dict] = {}
    frames = []
    for label, tables in runs:
        statuses, table = evaluate(rules, tables, noise)
        frames.append(table[~table["rule"].isin(TIME_RULES)].assign(run=label))
        for state in statuses:
            if state["rule"] in TIME_RULES:
                continue
            merged = per_rule.setdefault(state["rule"], {**state, "findings": 0, "status": NO_DATA})
            merged["findings"] += state["findings"]
            merged["status"] = FIRED if merged["findings"] else (QUIET if QUIET in (merged["status"], state["status"])
                                                                 else merged["status"])
    time = comparison_differences(workload_table)
    by_id = {r.id: r for r in rules}
    for rule_id in TIME_RULES:
        mine = [f for f in time if f.rule == rule_id and (
            rule_id != cannot_tell.id or f.values["fewest_runs"] < by_id[rule_id].thresholds["runs_min"])]
        per_rule[rule_id] = status(by_id[rule_id], FIRED if mine else QUIET, len(mine))
        frames.append(pd.DataFrame(finding_rows(by_id[rule_id], mine), columns=COLUMNS).assign(run=""))
    statuses = [per_rule[r.id] for r in rules if r.id in per_rule]
    return statuses, pd.concat(frames, ignore_index=True)

