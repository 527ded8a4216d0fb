"""Named groups of workloads that WORKLOADS takes beside workload names. Standard library only: make's checks
(spillway/preflight.py) read it before the virtualenv exists."""

GROUPS = {
    # HiBench's batch workloads that Spillway has, in the order of HiBench's micro and SQL benchmarks
    # (docs/workloads.md, "HiBench's workloads"); its K-means is in the default suite, its streaming one is not here.
    "hibench": ("sort", "wordcount", "terasort", "dfsio", "websql"),
}


def expand(names):
    """`names` with each group's name replaced by its workloads, in order, each workload once."""
    expanded = []
    for name in names:
        for workload in GROUPS.get(name, (name,)):
            if workload not in expanded:
                expanded.append(workload)
    return expanded
