"""The regression gate (`make compare RUNS=... BASELINE=<run> MAX_SLOWDOWN=5%`, analysis.gate): its verdicts and
exit codes on runs built from the recorded fixtures (test_compare_page.make_run: the recorded event log, iostat, block
trace and fio outputs of the tools, under a manifest of 3 measured repetitions).

The recorded runs hold one repetition of each workload, and one run a side can be told from noise only with a
known noise level; so each run here repeats spark-tiny 3 times, and the slowed and the noisy runs differ from the
baseline in one field only: the run step's `duration_s` of each repetition in the manifest (what
metrics.run_time_by_placement reads). Their stages share the one recorded event log, so every stage is the same
in every run and must come out "not significant"."""
import shutil

import pandas as pd
import pytest

from analysis import gate
from analysis.__main__ import main
from analysis.tables import write_tables
from conftest import assemble_run
from test_compare_page import HDD_TIMES, make_run

# the baseline's measured repetitions are 10, 14 and 12 s (HDD_TIMES), so the host's noise is their spread, 40 %
SLOWED_TIMES = [(suffix, seconds * 2, status, warmup) for suffix, seconds, status, warmup in HDD_TIMES]
NOISY_TIMES = [("warmup", 1.0, "ok", True), ("r1", 11.0, "ok", False), ("r2", 13.5, "ok", False),
               ("r3", 12.5, "ok", False)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The runs, their tables written once (as `make report` would have), so that each comparison reads them
    instead of parsing raw/ again. The gate reads times only: the fio, iostat, block-trace and MapReduce outputs
    (the figures test_compare_page checks) are left out to keep the comparisons fast."""
    parent = tmp_path_factory.mktemp("gate")
    recorded = assemble_run(parent / "recorded")
    for source in ("workload", "blocktrace", "iostat", "mr-history"):
        shutil.rmtree(recorded / "raw" / "vm" / source)
    runs = {name: make_run(recorded, parent, f"20261121-1{hour}0000-hdd", "hdd", "hdd", times)
            for name, hour, times in (("baseline", 7, HDD_TIMES), ("same", 8, HDD_TIMES),
                                      ("noisy", 9, NOISY_TIMES), ("slowed", 6, SLOWED_TIMES))}
    for run in runs.values():
        write_tables(run)
    return runs


def _gate_table(out) -> pd.DataFrame:
    return pd.read_parquet(out / "tables" / "compare_gate.parquet")


def test_the_same_run_and_a_difference_within_noise_pass(runs, tmp_path, capsys):
    out = tmp_path / "cmp"
    code = main(["compare", str(runs["same"]), str(runs["noisy"]), str(runs["baseline"]), "--out", str(out),
                 "--baseline", str(runs["baseline"]), "--max-slowdown", "5%"])
    printed = capsys.readouterr().out.splitlines()
    assert code == 0
    assert printed[0].startswith(f"regression gate: against the baseline {runs['baseline'].name}")
    assert printed[-2].startswith("regression gate: passed") and printed[-1] == str(out / "compare.html")
    table = _gate_table(out)
    # the baseline, named last, is moved first: every verdict is against it, none of its own rows is gated
    assert set(table["configuration"]) == {runs["same"].name, runs["noisy"].name}
    run_step = table[(table["stage"] == gate.RUN_STEP) & (table["workload"] == "spark-tiny")].set_index("configuration")
    assert run_step.loc[runs["same"].name, "gate"] == "not significant"
    assert run_step.loc[runs["same"].name, "slowdown_pct"] == pytest.approx(0.0)
    noisy = run_step.loc[runs["noisy"].name]
    assert noisy["gate"] == "not significant" and noisy["slowdown_pct"] == pytest.approx(12.5 / 12 * 100 - 100)
    assert (table.loc[table["stage"] != gate.RUN_STEP, "gate"] == "not significant").all()
    assert len(table) > 2
    assert any(line.lstrip().startswith("not significant spark-tiny") for line in printed)
    assert "Regression gate: passed" in (out / "compare.html").read_text()


def test_a_significant_slowdown_beyond_the_allowance_fails(runs, tmp_path, capsys):
    out = tmp_path / "cmp"
    code = main(["compare", str(runs["slowed"]), str(runs["baseline"]), "--out", str(out),
                 "--baseline", runs["baseline"].as_posix(), "--max-slowdown", "5%"])
    printed = capsys.readouterr().out.splitlines()
    assert code == 1
    assert "regression gate: FAILED: 1 significant slowdown beyond MAX_SLOWDOWN" in printed[-2]
    assert printed[-1] == str(out / "compare.html")         # the page is written all the same
    table = _gate_table(out)
    slowed = table[(table["stage"] == gate.RUN_STEP) & (table["workload"] == "spark-tiny")].iloc[0]
    assert slowed["gate"] == "slower" and slowed["statistics_verdict"] == "slower"
    assert slowed["slowdown_pct"] == pytest.approx(100.0)
    assert any(line.lstrip().startswith("slower          spark-tiny") and "100.0 % slower" in line for line in printed)
    assert "Regression gate: FAILED" in (out / "compare.html").read_text()
    # the same slowdown within a larger allowance passes: it is real, but allowed
    allowed = gate.verdicts(pd.read_parquet(out / "tables" / "compare_workloads.parquet"), pd.DataFrame(), 150.0)
    allowed = allowed.set_index("workload")
    assert allowed["gate"].to_dict() == {"fio-sweep": "not significant", "spark-tiny": "pass"}
    assert allowed.loc["spark-tiny", "reason"].endswith("within MAX_SLOWDOWN 150 %")


@pytest.mark.parametrize("text, percent", [("5%", 5.0), ("5", 5.0), (" 2.5 % ", 2.5), ("0", 0.0), (None, 0.0)])
def test_max_slowdown_reads_as_percent(text, percent):
    assert gate.parse_max_slowdown(text) == percent


def test_bad_gate_input_names_the_variable_and_the_fix(runs, tmp_path, capsys):
    two = [str(runs["same"]), str(runs["baseline"])]
    assert main(["compare", *two, "--baseline", "no-such-run", "--out", str(tmp_path / "a")]) == 2
    error = capsys.readouterr().err
    assert "BASELINE='no-such-run' names no run" in error and "give BASELINE a run id under results/" in error
    for bad in ("five", "-5%", "5%%", "5 percent"):
        assert main(["compare", *two, f"--max-slowdown={bad}", "--out", str(tmp_path / "b")]) == 2
        error = capsys.readouterr().err
        assert f"MAX_SLOWDOWN={bad!r} is not a percentage" in error and "MAX_SLOWDOWN=5%" in error
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
