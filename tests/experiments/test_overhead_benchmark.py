"""The overhead breakdown of a real recorded bench: the default `make bench` (tiny) of 2026-11-25 on this machine
(tests/fixtures/runs/bench-tiny: its manifest and the logs of its prepare, run and validate steps)."""
import json
import shutil

import pytest

from spillway import REPO
from experiments.benchmarks.overhead import breakdown, main

RUN = REPO / "tests/fixtures/runs/bench-tiny"


def test_every_second_of_the_bench_is_in_one_kind_and_commands_are_their_own_tasks():
    figures = breakdown(RUN)
    manifest = json.loads((RUN / "manifest.json").read_text())
    assert figures["wall_s"] == pytest.approx(711.9, abs=0.1)
    assert sum(figures["kinds"].values()) == pytest.approx(figures["wall_s"])
    assert abs(figures["kinds"]["between steps"]) < 2.0     # the runner itself between its steps
    # a command's time is its task's, less than its step's (which includes the step playbook)
    tpch_run = next(s for w in manifest["workloads"] if w["id"] == "tpch" for s in w["steps"] if s["name"] == "tpch: run")
    # its log's one command line: `timing:   75.77 s  Workload command: tpch run: ./tpch run`
    assert tpch_run["duration_s"] > 75.77
    # grep 'Workload command' logs/*.run.log: fio-sweep, terasort-mapreduce, terasort-spark, tpch, kmeans, gatk4
    assert figures["kinds"]["workload commands (run)"] == pytest.approx(88.04 + 30.04 + 31.47 + 75.77 + 26.26 + 81.34)
    commands = sum(v for k, v in figures["kinds"].items() if k.startswith("workload commands"))
    assert figures["commands_s"] == pytest.approx(commands)
    assert figures["overhead_pct"] == pytest.approx(100 * (1 - commands / figures["wall_s"]))
    assert {"provision", "facts", "preflight", "report", "workload begin (health check, collectors start)",
            "workload end (stop leftovers and collectors, fetch)", "step playbook around run"} <= set(figures["kinds"])


def test_a_bench_still_running_is_refused(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["ended_at"] = None
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert main([str(run)]) == 2
    assert "has not ended" in capsys.readouterr().err


def test_several_runs_print_side_by_side_one_column_each(tmp_path, capsys):
    after = tmp_path / "after"
    shutil.copytree(RUN, after)
    assert main([str(RUN), str(after)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["bench-tiny", "after"]
    overhead = next(line for line in lines if line.startswith("overhead"))
    assert overhead.split()[-4:] == ["38.7", "%", "38.7", "%"]
    provision = next(line for line in lines if line.startswith("provision"))
    assert provision.split()[1:] == ["56.1", "s", "56.1", "s"]
