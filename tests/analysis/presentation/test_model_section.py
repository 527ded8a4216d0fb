"""The report's Model section on a recorded placement-matrix run: each placement predicted from the others."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd

from analysis.predict import bandwidths_in, configurations_in
from analysis.presentation.model_section import model_section
from analysis.report_page import write_report
from analysis.tables import TABLE_NAMES

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"


def _run_copy(tmp_path: Path, name: str) -> Path:
    run = tmp_path / name
    shutil.copytree(RUNS / name, run)
    for table in TABLE_NAMES:   # tables newer than the recording: empty, as the analysis writes a source-less table
        path = run / "tables" / f"{table}.parquet"
        if not path.exists():
            pd.DataFrame(columns=["host", "workload_id"]).to_parquet(path)
    return run


def _model_html(run: Path) -> str:
    html = write_report(run).read_text()
    start = html.index('id="model"')
    return html[start:html.index('id="sources"', start)]


def test_model_section_predicts_each_placement_from_the_others(tmp_path):
    # The run has no fio sweep of its own, so the model must use the profiles' caps (a report is a function of its
    # run; another run's sweep is a source only when given).
    section = _model_html(_run_copy(tmp_path, "terasort-matrix"))
    summaries = re.findall(r"<summary><strong>(\S+)</strong> \(hdfs=(\w+) local=(\w+) P=2 N=1\): median \|error\| "
                           r"([\d.]+) %, worst stage (-?[\d.]+) %</summary>", section)
    assert {(s[1], s[2]) for s in summaries} == {("hdd", "hdd"), ("hdd", "ssd"), ("ssd", "hdd"), ("ssd", "ssd")}
    assert all(float(s[3]) < 25 for s in summaries)
    assert section.count("predicted from hdfs=") == 4 and "in-sample" not in section
    # three stages per placement, each with measured time, error and a bottleneck
    rows = re.findall(r"<tr><td>app 1 s(\d)</td>.*?</tr>", section, re.S)
    assert len(rows) == 12
    assert section.count(">disk<") + section.count(">cpu<") == 12
    assert "storage profile caps" in section and "fio sweep of run" not in section


def test_single_configuration_is_an_in_sample_fit():
    run = RUNS / "terasort-hdd"
    section = model_section(configurations_in(run), bandwidths_in([run]))
    [table] = section["tables"]
    assert table["configuration"] == "hdfs=hdd local=hdd P=2 N=1" and table["basis"].startswith("in-sample")
    assert [r["stage"] for r in table["rows"]] == ["app 1 s0", "app 1 s1", "app 1 s2"]
    assert all(r["measured"].endswith(" s") and r["error"].endswith(" %") for r in table["rows"])
