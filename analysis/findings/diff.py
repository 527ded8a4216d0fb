"""The findings of a comparison's runs against its baseline's (docs/findings.md, "Findings against the baseline"):
by key (engine.finding_key: the rule, the workload configuration, the stage and device), each other run's findings
that the baseline has not (`new`), the baseline's that the run has not (`resolved`), and those both have at another
level (`changed`: the most severe of a key's findings on each side, engine.LEVELS). `make compare` shows them
under the findings and the regression gate prints them; the time rules, which are the comparison's own verdicts
over every run at once, are not part of it."""
from __future__ import annotations

import pandas as pd

from .engine import LEVELS

NEW, RESOLVED, CHANGED = "new", "resolved", "changed"
COLUMNS = ["change", "run", "key", "rule", "level", "baseline_level", "evidence"]


def findings_diff(found: pd.DataFrame, baseline: str, others: list[str]) -> pd.DataFrame:
    """`found`: a comparison's findings (a `run` column: the run's label, empty for the comparison's own) with
    their keys; `baseline`: the baseline run's label; `others`: the labels of the runs compared with it."""
    if found.empty or "key" not in found:
        return pd.DataFrame(columns=COLUMNS)
    base = _most_severe(found[found["run"] == baseline])
    rows = []
    for label in others:
        mine = _most_severe(found[found["run"] == label])
        for change, side, other in ((NEW, mine, base), (RESOLVED, base, mine)):
            for row in side[~side["key"].isin(other["key"])].to_dict("records"):
                rows.append({"change": change, "run": label, "key": row["key"], "rule": row["rule"],
                             "level": row["level"] if change == NEW else "",
                             "baseline_level": row["level"] if change == RESOLVED else "", "evidence": row["evidence"]})
        both = mine.merge(base[["key", "level"]], on="key", suffixes=("", "_baseline"))
        for row in both[both["level"] != both["level_baseline"]].to_dict("records"):
            rows.append({"change": CHANGED, "run": label, "key": row["key"], "rule": row["rule"], "level": row["level"],
                         "baseline_level": row["level_baseline"], "evidence": row["evidence"]})
    return pd.DataFrame(rows, columns=COLUMNS)


def _most_severe(found: pd.DataFrame) -> pd.DataFrame:
    """One row per key: its most severe finding (repetitions of a configuration share keys); level `low` where the
    findings carry none (a rule fired: at least low)."""
    graded = found.assign(level=found["level"].fillna(LEVELS[1]) if "level" in found else LEVELS[1])
    rank = graded["level"].map(lambda name: LEVELS.index(name) if name in LEVELS else 1)
    return graded.assign(rank=rank).sort_values("rank", ascending=False, kind="stable").drop_duplicates("key")


def summary_lines(diff: pd.DataFrame, baseline: str) -> list[str]:
    """What the regression gate prints of it: the counts per run, then each finding's key (a changed one with its
    levels: `changed: spill | ... (moderate -> severe)`)."""
    if diff.empty:
        return [f"findings against the baseline {baseline}: none new, none resolved, none changed level"]
    lines = []
    for label, mine in diff.groupby("run", sort=False):
        new, resolved, changed = (mine[mine["change"] == change] for change in (NEW, RESOLVED, CHANGED))
        lines.append(f"findings of {label} against the baseline {baseline}: {len(new)} new, {len(resolved)} resolved, "
                     f"{len(changed)} changed level")
        lines += [f"  new: {key}" for key in new["key"]] + [f"  resolved: {key}" for key in resolved["key"]]
        lines += [f"  changed: {r.key} ({r.baseline_level} -> {r.level})" for r in changed.itertuples()]
    return lines
