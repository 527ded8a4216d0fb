"""The Findings section of both pages (templates/_findings.html.j2): the rules that fired with their evidence,
the quiet ones, those without data, and the noise level a difference had to exceed."""
from __future__ import annotations

import pandas as pd

from ... import statistics
from ...findings.engine import LEVELS
from ...formatting import format_bytes, number


def finding_groups(statuses: list[dict], table: pd.DataFrame, shown: int = 3) -> dict:
    """The findings section: one group per rule that fired (its title, action and evidence lines, the first
    `shown` open and the rest folded), then the rules that did not fire and those the run had no data for."""
    groups = []
    for status in statuses:
        if status["status"] != "fired":
            continue
        mine = table[table["rule"] == status["rule"]]
        if "level" in mine:   # the most severe first, within the rule too
            mine = mine.assign(rank=mine["level"].map(LEVELS.index)).sort_values("rank", ascending=False, kind="stable")
        lines = [{"where": f"{r['workload_id']}" + (f" · {r['run']}" if r.get("run") else ""), "evidence": r["evidence"],
                  "level": r.get("level", ""), "recommendation": r.get("recommendation") or "",
                  "key": r.get("key") or ""} for r in mine.to_dict("records")]
        top = max((LEVELS.index(line["level"]) for line in lines if line["level"] in LEVELS), default=1)
        groups.append({"rule": status["rule"], "title": status["title"], "action": status["action"],
                       "level": LEVELS[top], "lines": lines[:shown], "more": lines[shown:]})
    groups.sort(key=lambda g: LEVELS.index(g["level"]), reverse=True)   # stable: the catalog's order within a level
    fired = [{"rule": g["rule"], "thresholds": thresholds_text(next(s for s in statuses if s["rule"] == g["rule"]))}
             for g in groups]
    counts = table["level"].value_counts() if "level" in table and not table.empty else pd.Series(dtype=int)
    return {"groups": groups, "fired_thresholds": fired,
            "counts": [(name, int(counts.get(name, 0))) for name in reversed(LEVELS[1:]) if counts.get(name, 0)],
            "quiet": [s["rule"] for s in statuses if s["status"] == "did not fire"],
            "no_data": [f"{s['rule']} ({s['why']})" for s in statuses if s["status"] == "no data"]}


def thresholds_text(status: dict) -> str:
    """A rule's thresholds as it was judged by (the catalog's, or a thresholds file's), each with the unit its name
    ends with: `spill_share_min_pct = 25 %, spill_min_bytes = 1.0 MiB`."""
    return ", ".join(f"{name} = {threshold_value(name, value)}" for name, value in status["thresholds"].items())


def threshold_value(name: str, value) -> str:
    if name.endswith("_bytes"):
        return format_bytes(value)
    for suffix, unit in (("_pct", "%"), ("_ms", "ms"), ("_s", "s")):
        if name.endswith(suffix):
            return number(value, unit, 2 if value != int(value) else 0)
    return number(value, "", 2 if value != int(value) else 0)


def noise_text(noise: statistics.Noise | None) -> str:
    if noise is None:
        return ("No noise level of this host is known (no configuration was repeated): a configuration with one run "
                "cannot be told apart from another.")
    return f"Noise of this host: {number(noise.pct, '%', 1)} ({noise.source}); a difference must exceed it to count."


def findings_context(statuses: list[dict], table: pd.DataFrame, noise: statistics.Noise | None,
                     files: str = "") -> dict:
    """The Findings section (templates/_findings.html.j2) of either page."""
    return {**finding_groups(statuses, table), "statistics": statistics.METHOD, "noise": noise_text(noise),
            "files": files, "error": ""}
