"""WORKLOADS=hibench: a group name stands for its workloads, in order, each once, in the bench, its resume check and
make's own check before anything is installed."""
import pytest

from spillway import cluster_check
from spillway.__main__ import main
from spillway.workload_groups import GROUPS, expand
from spillway.workloads import available


def test_every_workload_of_a_group_exists_and_no_group_is_named_as_a_workload():
    for name, members in GROUPS.items():
        assert name not in available()
        assert set(members) <= set(available()), name


def test_a_group_expands_in_place_and_each_workload_runs_once():
    assert expand(["kmeans", "hibench", "sort"]) == ["kmeans", "sort", "wordcount", "dfsio", "websql"]
    assert expand(["tpch"]) == ["tpch"]


def test_the_bench_plans_the_hibench_group_without_the_default_benchs_probe(capsys):
    assert main(["bench", "--dry-run", "--workloads", "hibench"]) == 0
    out = capsys.readouterr().out
    planned = [line.split(":")[0].strip("- ") for line in out.splitlines()
               if line.startswith("  - ") and "not measured" not in line]
    assert [wid.split("-")[0] for wid in planned] == ["sort", "wordcount", "dfsio", "dfsio", "websql", "websql",
                                                      "websql"]
    assert "storage probe" not in out


@pytest.mark.parametrize("workloads", ["hibench,nope", "nope"])
def test_an_unknown_name_is_refused_listing_the_groups_too(workloads):
    problems = cluster_check.check("local", workloads)
    assert problems and "unknown workload 'nope'" in problems[0] and "groups: hibench" in problems[0]
