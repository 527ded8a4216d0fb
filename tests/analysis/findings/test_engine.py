"""The findings engine (analysis/findings/engine.py): a rule whose tables the run lacks says `no data` and names
what it needed, and the other rules are evaluated all the same (the recorded placement matrix,
tests/fixtures/runs/terasort-matrix)."""
from __future__ import annotations

import pandas as pd

from analysis.findings import engine
from analysis.findings.rules import RULES


def test_a_rule_without_its_tables_says_no_data(matrix_tables):
    statuses, _ = engine.evaluate(RULES, dict(matrix_tables, iostat=pd.DataFrame(columns=["host", "workload_id"])))
    status = {s["rule"]: s for s in statuses}
    assert status["device-saturated"]["status"] == engine.NO_DATA
    assert "iostat.util_pct" in status["device-saturated"]["why"]
    assert status["page-cache"]["status"] == engine.FIRED and status["spill"]["status"] == engine.QUIET
