"""Thresholds from a file (analysis/findings/thresholds.py; make report/compare THRESHOLDS=): every key and value
checked against the rule set before a rule runs, the rules judged by the file's values, findings.json recording
them beside the catalog's. End to end on unedited recorded runs (tests/fixtures/runs/kmeans-cores: a rule that fires
there, `cannot-tell`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.findings import engine, thresholds
from analysis.findings.rules import RULES
from conftest import FIXTURES, fired_on

REPO = Path(__file__).resolve().parents[3]
SPILL_20MB = 20_000_000


def test_a_raised_threshold_silences_the_finding_it_judged(matrix_tables):
    # changed, as in test_spark_data: one placement's reduce stage spilled 20 MB of a 27 MB shuffle (74 %)
    stages = matrix_tables["stages"].copy()
    stages.loc[(stages["shuffle_read_bytes"] > 0) & (stages["workload_id"] == "terasort-hdfs_hdd-local_hdd"),
               "disk_spilled_bytes"] = SPILL_20MB
    tables = dict(matrix_tables, stages=stages)
    assert fired_on(engine.evaluate(RULES, tables)[1], "spill") == {"terasort-hdfs_hdd-local_hdd"}
    raised = thresholds.apply(RULES, thresholds.parse('{"spill": {"spill_share_min_pct": 80}}', RULES))
    statuses, found = engine.evaluate(raised, tables)
    assert fired_on(found, "spill") == set()
    assert next(s for s in statuses if s["rule"] == "spill")["thresholds"] == {"spill_share_min_pct": 80.0,
                                                                              "spill_min_bytes": 1048576}
    assert next(r for r in RULES if r.id == "spill").thresholds["spill_share_min_pct"] == 25.0   # catalog unchanged


@pytest.mark.parametrize("text, says", [
    ('{"spil": {"spill_share_min_pct": 40}}', "'spil' is no rule; did you mean 'spill'? the rules are page-cache"),
    ('{"spill": {"spill_share_pct": 40}}', "spill.spill_share_pct: no threshold of that rule; did you mean "
                                           "'spill_share_min_pct'?"),
    ('{"spill": {"spill_share_min_pct": NaN}}', "NaN is no finite number"),
    ('{"spill": {"spill_share_min_pct": Infinity}}', "Infinity is no finite number"),
    ('{"spill": {"spill_share_min_pct": "/etc/passwd"}}', '"/etc/passwd" is no number from 0 to 1e+15'),
    ('{"spill": {"spill_share_min_pct": true}}', "true is no number"),
    ('{"spill": {"spill_share_min_pct": -1}}', "-1 is no number from 0"),
    ('{"spill": {"spill_share_min_pct": 1e300}}', "is no number from 0 to 1e+15"),
    ('{"spill": {}}', "spill: must be an object of its thresholds"),
    ('{"storage-sensitive": {"confidence_pct": 90}}', "confidence_pct: not set by a file: the time verdicts'"),
    ('["spill"]', "must be one JSON object of rule ids"),
    ("spill_share_min_pct = 40", "not JSON"),
])
def test_a_file_that_cannot_be_used_is_refused_naming_what_is_wrong(text, says):
    with pytest.raises(thresholds.ThresholdError, match="^thresholds file: "):
        thresholds.parse(text, RULES)
    with pytest.raises(thresholds.ThresholdError) as error:
        thresholds.parse(text, RULES)
    assert says in str(error.value)


def test_a_file_that_is_no_regular_file_or_too_large_is_not_read(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(thresholds.ThresholdError, match="not a regular file"):
        thresholds.load(fifo, RULES)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (thresholds.MAX_BYTES + 1))
    with pytest.raises(thresholds.ThresholdError, match="over the 1 MiB cap for thresholds files: not read"):
        thresholds.load(big, RULES)
    with pytest.raises(thresholds.ThresholdError, match="No such file"):
        thresholds.load(tmp_path / "missing.json", RULES)


def _report(results: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", "report", *args], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "SPILLWAY_RESULTS": str(results)}, timeout=300)


def test_the_report_judges_by_the_file_and_records_it_and_a_bad_file_writes_nothing(tmp_path):
    run = tmp_path / "20261123-000000-local"
    shutil.copytree(FIXTURES / "runs" / "kmeans-cores", run)
    done = _report(tmp_path, run.name)
    assert done.returncode == 0, done.stderr
    before = json.loads((run / "findings.json").read_text())
    assert [f["rule"] for f in before["findings"]] == ["cannot-tell"] and before["thresholds_file"] is None
    given = tmp_path / "site.json"
    given.write_text('{"cannot-tell": {"runs_min": 1}}')
    done = _report(tmp_path, run.name, "--thresholds", str(given))
    assert done.returncode == 0, done.stderr
    after = json.loads((run / "findings.json").read_text())
    assert after["findings"] == []
    assert after["thresholds_file"] == {"file": str(given), "overridden": {
        "cannot-tell": {"runs_min": {"value": 1.0, "catalog": 2}}}}
    assert next(r for r in after["rules"] if r["rule"] == "cannot-tell")["thresholds"] == {"runs_min": 1.0}
    written = (run / "findings.json").stat().st_mtime_ns
    given.write_text('{"cannot-tell": {"runs_minimum": 1}}')
    refused = _report(tmp_path, run.name, "--thresholds", str(given))
    assert refused.returncode == 2 and "cannot-tell.runs_minimum: no threshold of that rule" in refused.stderr
    assert (run / "findings.json").stat().st_mtime_ns == written


def test_a_comparison_judges_by_the_file_and_refuses_a_bad_one_before_reading_a_run(tmp_path):
    for name, run_id in (("kmeans-cores", "20261123-000000-local"), ("placement-switch", "20261123-000100-local")):
        shutil.copytree(FIXTURES / "runs" / name, tmp_path / run_id)
    given = tmp_path / "site.json"
    given.write_text('{"device-saturated": {"util_min_pct": 95}}')
    env = {**os.environ, "SPILLWAY_RESULTS": str(tmp_path)}
    out = tmp_path / "cmp"
    done = subprocess.run([sys.executable, "-m", "analysis", "compare", "20261123-000000-local",
                           "20261123-000100-local", "--out", str(out), "--thresholds", str(given)],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    recorded = json.loads((out / "findings.json").read_text())
    assert recorded["thresholds_file"]["overridden"] == {"device-saturated": {"util_min_pct": {"value": 95.0,
                                                                                               "catalog": 90.0}}}
    given.write_text('{"device-saturated": {"util_min_pct": "95%"}}')
    refused = subprocess.run([sys.executable, "-m", "analysis", "compare", "20261123-000000-local", "no-such-run",
                              "--thresholds", str(given)], cwd=REPO, capture_output=True, text=True, env=env,
                             timeout=120)
    assert refused.returncode == 2 and 'device-saturated.util_min_pct: "95%" is no number' in refused.stderr
