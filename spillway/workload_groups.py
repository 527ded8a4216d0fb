"""Named groups of workloads that WORKLOADS takes beside workload names. Standard library only: make's checks
(spillway/cluster_check.py) read it before the virtualenv exists."""

GROUPS = {
    # HiBench's batch workloads that Spillway adds to its default suite, in the order of HiBench's micro and SQL
    # benchmarks (docs/workloads.md). HiBench's TeraSort and K-means are in the default suite (and at SCALE=small
    # TeraSort's 10 GB input and output outgrow the default cluster's 8 GiB disks); its streaming one is not here.
    "hibench": ("sort", "wordcount", "dfsio", "websql"),
}


def expand(names):
    """`names` with each group's name replaced by its workloads, in order, each workload once."""
    expanded = []
    for name in names:
        for workload in GROUPS.get(name, (name,)):
            if workload not in expanded:
                expanded.append(workload)
    return expanded
