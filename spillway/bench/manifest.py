"""What a bench's manifest says of its run when the run directory is created: the cluster, the options, the plan
(what a resume finishes), the storage and what of the run was emulated. The steps, the workload runs and the hosts'
facts are added as the bench runs (docs/run-directory.md)."""
from spillway import inventory as inventory_mod
from spillway.run_record import RunDirectory, new_run_id

import scale_model

# Settings of a cluster that change what its runs measure: (the inventory's property, the value that does, the
# limitation the manifest then records).
CHANGING_SETTINGS = (
    ("hdfs_page_cache", "dropped",
     "While each measured run ran, a page of an HDFS block file left the page cache one to two seconds "
     "after it was cached, unless a DataNode held the block open (spillway_hdfs_page_cache: dropped, "
     "docs/cluster.md \"HDFS blocks out of the page cache\"): a table read twice was read from the device "
     "twice, as on a node whose HDFS data is much larger than its memory. A page read again within that "
     "time was still served from the cache, and the kernel's read-ahead of small reads, gone before it was "
     "used, can make the devices read more than the workload asked for; shuffle and spill files kept the "
     "cache as on a real node."),
    ("jvm_jit", "c1",
     "The workloads' JVMs (Spark driver, AM and executors; MapReduce AM and tasks; hadoop jar) compiled with "
     "the client compiler alone (spillway_jvm.jit: c1, docs/cluster.md \"The workloads' JVMs\"): at this "
     "scale the optimising compiler's own work costs more CPU than its code saves, so the runs' CPU time is "
     "smaller than with the JVM's default; a long run's CPU-bound phases would run faster with it."),
)


def create_run_directory(plan):
    """results/<run-id>/ with the manifest's run-level facts and the plan."""
    inv = plan.inventory
    emulation = emulation_record(inv, inventory_mod.storage_profiles(), inv.emulated_profiles())
    return RunDirectory.create(
        new_run_id(inv.name),
        cluster=inv.name,
        inventory={"name": inv.name, "sha256": inv.digest, "files": inv.files, "groups": inv.groups},
        parameters={"workloads": sorted({i.workload.name for i in plan.instances}), "scale": plan.scale,
                    "repeat": plan.repeat, "warmup": plan.warmup, "group_warmups": plan.group_warmups,
                    "drop_caches": plan.drop_caches,
                    "placements": plan.placements, "executor_cores": plan.cores,
                    "spark_versions": plan.spark_versions,
                    "storage_probe": plan.storage_probe,
                    "monitoring": (inv.variables.get("spillway_monitoring") or {}).get("enabled", True),
                    "overrides": plan.overrides},
        plan=[i.id for i in plan.instances],
        storage={"backends": inv.backends, "placement": inv.placement},
        emulation=emulation,
        hosts={})


def emulation_record(inventory, profiles, used):
    """What of the run was emulated: the disk profiles used and, for a cluster of emulated hosts, the nodes."""
    budget = inventory.node_budget
    # a scale-model node's disks deliver its share of the reference's: the profiles as the disks were built
    applied = scale_model.scaled_profiles(profiles["profiles"], budget, used)
    record = {"profiles": {p: applied[p] for p in used},
              "limitations": list(profiles["limitations"]) if used else []}
    scaled = scale_model.description(budget)
    if scaled:
        record["scale_model"] = scaled
        reference = scaled["reference"]
        record["limitations"].append(
            f"A scale model of {reference['name']} ({reference['source']}): {reference['cores']:g} cores there, "
            f"{scaled['emulated_cores']:g} here, k = {scaled['k']:g}; each emulated disk delivered the reference "
            "node's disks of its profile over k (" + ", ".join(
                f"{profile}: {share:g} of one" for profile, share in sorted(scaled["disk_shares"].items()))
            + "; the HDD model's time dilated, a capped profile's caps scaled; docs/cluster.md, \"Scale-model "
            "nodes\"). It preserves the balance of CPU and disk per core, not a reference core's speed; memory, "
            "network and the workloads' data are not scaled yet (issue 43)"
            + "".join(f"; {ratio['says']}" for ratio in scaled["unscaled_ratios"]) + ".")
    if budget:
        record["node_budget"] = dict(budget)
        given = " and ".join(part for part in (
            f"{budget['memory_gib']:g} GiB of memory, page cache included" if "memory_gib" in budget else "",
            f"{budget['cores']:g} cores of CPU time" if "cores" in budget else "") if part)
        record["limitations"].append(
            f"Every node's cluster processes (Hadoop daemons, YARN containers, the workloads' commands) ran within "
            f"{given} (spillway_node: a cgroup v1 memory limit and CFS quota, docs/cluster.md \"Node budgets\"). "
            "The daemons' heaps, the Spark driver, YARN's offer and the executors were sized from the memory "
            "budget, and each measured run started with the node's page cache emptied (what prepare wrote was "
            "read back from the devices). It imitates a node that has that much for its processes and for caching "
            "its data, not that node's memory bandwidth, NUMA layout or core count: the threads run on every CPU "
            "of the host, a quota caps their total time. The harness, monitoring and collectors ran outside the "
            "budget.")
    for setting, value, limitation in CHANGING_SETTINGS:
        if getattr(inventory, setting) == value:
            record[setting] = value
            record["limitations"].append(limitation)
    hosts = inventory.emulation
    if hosts:
        # analysis reads the niceness: the cluster's own processes then count as niced CPU time
        record["nodes"] = {"hosts": inventory.hosts, "nice": int(hosts.get("nice", 0)),
                           "link_rate": str(hosts.get("link_rate", "1gbit")), "link_rates": hosts.get("link_rates") or {}}
        record["limitations"].append(
            f"The {len(inventory.hosts)} hosts are network namespaces on one machine (docs/emulated-cluster.md): they "
            "share its CPUs, memory, page cache and disk; only their links (tc tbf, no latency or loss) and their "
            f"disks' throttles are separate. Every process of the nodes ran at niceness {hosts.get('nice', 0)}.")
        for name, backend in sorted(inventory.backends.items()):
            if backend["kind"] == "pfs" and "glusterfs" in backend:
                servers = ", ".join(inventory.groups.get("pfs_servers", []))
                record["limitations"].append(
                    f"Backend {name} is a GlusterFS volume the harness built over {servers}, emulated hosts whose "
                    "bricks are emulated disks of their own (glusterfs.brick profile, docs/pfs.md): a parallel file "
                    "system's data path (FUSE client, network, striping over servers), not its hardware. Its "
                    "workers have no block device for it: their iostat and block traces are absent; the servers' "
                    "brick disks are traced, and gluster-profile records each brick's file operations.")
    return record
