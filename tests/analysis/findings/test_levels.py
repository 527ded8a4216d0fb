"""Levels (analysis/findings/engine.py `level`, catalog.yml `levels`): every finding at least low, a level more at
each cut-point its measure reaches, rising or falling; the section counts them and puts the most severe first."""
from __future__ import annotations

import pandas as pd
import pytest

from analysis.findings import engine
from analysis.findings.rules import RULES
from analysis.presentation.rows.findings_section import finding_groups

BY_ID = {r.id: r for r in RULES}


@pytest.mark.parametrize("rule, values, expected", [
    ("spill", {"spill_spread_pct": 30.0}, "low"), ("spill", {"spill_spread_pct": 50.0}, "moderate"),
    ("spill", {"spill_spread_pct": 150.0}, "severe"), ("spill", {"spill_spread_pct": 250.0}, "critical"),
    ("page-cache", {"device_share_pct": 8.0}, "low"), ("page-cache", {"device_share_pct": 0.5}, "critical"),
    ("small-shuffle-reads", {"mean_read_bytes": 13_312.0}, "severe"),     # the recorded matrix's 13 KiB reads
    ("storage-sensitive", {"slowdown": 2.4}, "critical"), ("storage-sensitive", {"slowdown": 1.05}, "low"),
    ("spill", {}, "low"), ("spill", {"spill_spread_pct": float("nan")}, "low"),
])
def test_a_finding_is_graded_by_its_rules_cut_points(rule, values, expected):
    assert engine.level(BY_ID[rule], engine.Finding(rule, "w", "s", "e", values)) == expected


def test_every_rule_grades_a_value_its_findings_carry_with_four_ordered_cut_points_and_a_source():
    for r in RULES:
        cuts = r.levels["cut_points"]
        assert len(cuts) == 4 and (cuts == sorted(cuts) or cuts == sorted(cuts, reverse=True)), r.id
        assert r.levels["source"] and r.levels["measure"]


def test_the_section_counts_levels_and_puts_the_most_severe_rule_first():
    statuses = [{"rule": r, "title": r, "action": "a", "status": "fired", "thresholds": BY_ID[r].thresholds}
                for r in ("page-cache", "spill")]
    table = pd.DataFrame({"rule": ["page-cache", "spill", "spill"], "level": ["low", "moderate", "critical"],
                          "workload_id": ["w1", "w2", "w3"], "evidence": ["e1", "e2", "e3"]})
    section = finding_groups(statuses, table)
    assert [g["rule"] for g in section["groups"]] == ["spill", "page-cache"]
    assert section["groups"][0]["level"] == "critical" and section["groups"][0]["lines"][0]["where"] == "w3"
    assert section["counts"] == [("critical", 1), ("moderate", 1), ("low", 1)]


def test_the_section_shows_each_findings_key_under_its_rule():
    statuses = [{"rule": "spill", "title": "Spill", "action": "a", "status": "fired",
                 "thresholds": BY_ID["spill"].thresholds}]
    table = pd.DataFrame({"rule": ["spill"], "level": ["low"], "workload_id": ["w"], "evidence": ["e"],
                          "key": ["spill | terasort @ hdfs=hdd local=ssd | stage=app 1 s #1"]})
    section = finding_groups(statuses, table)
    assert section["groups"][0]["lines"][0]["key"] == "spill | terasort @ hdfs=hdd local=ssd | stage=app 1 s #1"


def test_the_thresholds_of_the_rules_that_fired_are_listed_with_their_units_as_judged():
    spill = dict(BY_ID["spill"].thresholds, spill_share_min_pct=40.0)      # as a thresholds file set it
    statuses = [{"rule": "spill", "title": "t", "action": "a", "status": "fired", "thresholds": spill},
                {"rule": "imbalance", "title": "t", "action": "a", "status": "did not fire",
                 "thresholds": BY_ID["imbalance"].thresholds}]
    table = pd.DataFrame({"rule": ["spill"], "level": ["low"], "workload_id": ["w"], "evidence": ["e"]})
    listed = finding_groups(statuses, table)["fired_thresholds"]
    assert [t["rule"] for t in listed] == ["spill"]                             # only the rules that fired
    assert "spill_share_min_pct = 40 %" in listed[0]["thresholds"]
    assert "spill_min_bytes = 1.0 MiB" in listed[0]["thresholds"]


def test_a_capped_rule_grades_no_higher_than_its_stages_share_of_the_workload():
    throughput = BY_ID["task-throughput"]
    assert throughput.levels["cap"]["measure"] == "stage_share_pct"
    far_below = {"median_share_pct": 2.0}                              # critical by its own measure
    assert engine.level(throughput, engine.Finding("r", "w", "s", "e", {**far_below, "stage_share_pct": 60.0})) == \
        "critical"
    assert engine.level(throughput, engine.Finding("r", "w", "s", "e", {**far_below, "stage_share_pct": 30.0})) == \
        "severe"
    assert engine.level(throughput, engine.Finding("r", "w", "s", "e", {**far_below, "stage_share_pct": 5.0})) == "low"
    # the cap never raises: a finding low by its own measure stays low in a stage that is the whole workload
    assert engine.level(throughput, engine.Finding("r", "w", "s", "e", {"median_share_pct": 40.0,
                                                                       "stage_share_pct": 100.0})) == "low"
