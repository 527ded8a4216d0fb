"""The findings of a comparison's runs against its baseline's (docs/findings.md, "Findings against the baseline"):
by key (engine.finding_key: the rule, the workload configuration, the stage and device), each other run's findings
that the baseline has not (`new`) and the baseline's that the run has not (`resolved`). `make compare` shows them
under the findings and the regression gate prints them; the time rules, which are the comparison's own verdicts
over every run at once, are not part of it."""
from __future__ import annotations

import pandas as pd

NEW, RESOLVED = "new", "resolved"
COLUMNS = ["change", "run", "key", "rule", "evidence"]


def findings_diff(found: pd.DataFrame, baseline: str, others: list[str]) -> pd.DataFrame:
    """`found`: a comparison's findings (a `run` column: the run's label, empty for the comparison's own) with
    their keys; `baseline`: the baseline run's label; `others`: the labels of the runs compared with it."""
    if found.empty or "key" not in found:
        return pd.DataFrame(columns=COLUMNS)
    base = found[found["run"] == baseline].drop_duplicates("key")
    rows = []
    for label in others:
        mine = found[found["run"] == label].drop_duplicates("key")
        for change, side, other in ((NEW, mine, base), (RESOLVED, base, mine)):
            for row in side[~side["key"].isin(other["key"])].itertuples():
                rows.append({"change": change, "run": label, "key": row.key, "rule": row.rule,
                             "evidence": row.evidence})
    return pd.DataFrame(rows, columns=COLUMNS)


def summary_lines(diff: pd.DataFrame, baseline: str) -> list[str]:
    """What the regression gate prints of it: the counts per run, then each new finding's key."""
    if diff.empty:
        return [f"findings against the baseline {baseline}: none new, none resolved"]
    lines = []
    for label, mine in diff.groupby("run", sort=False):
        new, resolved = (mine[mine["change"] == change] for change in (NEW, RESOLVED))
        lines.append(f"findings of {label} against the baseline {baseline}: {len(new)} new, {len(resolved)} resolved")
        lines += [f"  new: {key}" for key in new["key"]] + [f"  resolved: {key}" for key in resolved["key"]]
    return lines
