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
    assert ("storage probe of the default bench: terasort-spark-hdfs_ssd-local_hdd" in out) is probe, out
    assert ("terasort-spark-hdfs_ssd-local_hdd: prepare, run, validate (hdfs=ssd, local=hdd)" in out) is probe
