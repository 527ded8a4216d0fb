"""`bench --dry-run` (spillway/bench/dry_run.py): the plan printed, nothing touched."""
import pytest

from spillway.__main__ import main


@pytest.mark.parametrize("argv, probe", [
    ([], True),
    (["--params", "terasort.rows=1000"], True),
    (["--workloads", "fio-sweep,terasort,tpch,kmeans,gatk4"], False),
    (["--placement", "hdfs=hdd,local=ssd"], False),
    (["--repeat", "3"], False),
    (["--cores", "1"], False),
])
def test_make_bench_without_workloads_placements_cores_or_repetitions_runs_the_probe(argv, probe, capsys):
    assert main(["bench", "--dry-run", *argv]) == 0
    out = capsys.readouterr().out
    assert ("storage probe of the default bench: terasort's backends compared" in out) is probe, out
    assert ("terasort-spark-hdfs_ssd-local_hdd: prepare, run, validate (hdfs=ssd, local=hdd)" in out) is probe
    assert ("then the placement switch back to hdfs=hdd, local=ssd" in out) is probe


def test_the_dry_run_prints_the_warm_ups_and_the_stopping_rule(capsys):
    assert main(["bench", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "stopping rule: a fixed number of rounds" in out and "3 of the storage probe" in out
    lines = [line for line in out.splitlines() if line.startswith("  - ")]
    assert lines[0].startswith("  - terasort-spark-warmup: ") and "warm-up after the provisioning" in lines[0]
    assert sum("warm-up after the placement switch, not measured" in line for line in lines) == 3
