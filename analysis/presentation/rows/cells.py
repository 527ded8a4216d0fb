"""Cells several tables share: a median with its spread of repetitions, a ratio as the statistics allow it to
be read, a workload with its sweep point."""
from __future__ import annotations

from ... import metrics, statistics
from ...formatting import MISSING, spread


def spread_cell(row) -> str:
    """median (min–max, n runs) of a metrics spread row, flagged when repetitions disagree by more than
    metrics.SPREAD_LIMIT."""
    text = spread(row["median"], row["min"], row["max"], row["runs"])
    if text != MISSING and row["runs"] > 1 and row["median"] and \
            metrics.wide_spread(row["median"], row["min"], row["max"]):
        text += f" ⚠ spread > {metrics.SPREAD_LIMIT * 100:.0f} %"
    return text


def verdict_cell(ratio_text: str, verdict: str) -> str:
    """A ratio as the statistics allow it to be read: `1.39 x slower` only when significant; otherwise the ratio in
    parentheses with `not significant` or `cannot tell` (analysis.statistics), so that no page ranks noise."""
    if ratio_text == MISSING or verdict == statistics.BASELINE:
        return ratio_text
    if verdict in (statistics.FASTER, statistics.SLOWER):
        return f"{ratio_text} {verdict}"
    return f"({ratio_text}) {verdict}"


def workload_name(workload: str, sweep: str) -> str:
    """`terasort (engine=spark)`: a workload with its sweep point, as the pages' workload filter reads it."""
    return workload + (f" ({sweep})" if sweep else "")
