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


# A bench of TeraSort on Spark under two placements on `local` (2026-11-28, `python -m spillway bench --cluster local
# --workloads terasort --params engine=spark --repeat 1 --warmup 0 --placement "hdfs=hdd,local=ssd;hdfs=ssd,local=hdd"`,
# the cluster's Hadoop daemons stopped first): a full provisioning, then a placement switch.
SWITCH_RUN = REPO / "tests/fixtures/runs/placement-switch"


def test_the_daemons_provisioning_started_and_their_cpu_give_the_floor_under_provisioning(capsys):
    figures = breakdown(SWITCH_RUN)
    starts = figures["daemon_starts"]
    # the five Hadoop daemons of the full provisioning (9.0 s of CPU for the ResourceManager alone), then the
    # switch's four: the readers of hdfs-site.xml and of the local dirs' file, not the ResourceManager
    assert starts["count"] == 5 + 4
    assert starts["cpu_s"] == pytest.approx(4.91 + 5.89 + 5.74 + 6.48 + 9.0 + 5.98 + 5.56 + 8.23 + 6.22)
    assert starts["floor_s"] == pytest.approx(starts["cpu_s"] / 2)  # one host of 2 cores
    assert starts["floor_s"] < figures["kinds"]["provision"]
    assert main([str(SWITCH_RUN)]) == 0
    assert ("of provision: 9 daemon starts spent 58.0 s of CPU by the facts after them, at least 29.0 s of wall on "
            "their hosts' cores (16.8 % of the bench)") in capsys.readouterr().out


def test_a_bench_that_recorded_no_daemon_starts_prints_no_floor(capsys):
    assert breakdown(RUN)["daemon_starts"] is None  # bench-tiny, recorded before the runner kept them
    assert main([str(RUN)]) == 0
    assert "daemon starts" not in capsys.readouterr().out
