"""TeraSort per node with local disks against everything on a parallel file system, as the DataWarp paper compares.

    python -m experiments.benchmarks.pfs_vs_local [--local emu] [--pfs pfs] [--rows 2000000] [--runs LOCAL PFS]

One bench of Spark TeraSort on each cluster at the same scale: `--local` keeps HDFS and the shuffle/spill dirs
on each worker's own (emulated) disks, `--pfs` puts both on the shared GlusterFS volume (per-node directories
on it). The figure is per node: bytes sorted / run-step wall time / workers that ran an executor (the clusters
have different numbers of workers, the same executors). The ratio pfs/local below 1 means the shared file system is slower per node (the DataWarp
paper found it slower for Spark's many small shuffle reads). Per-stage times are printed beside it from each
run's stage table. Both clusters are emulated on this one machine (docs/emulated-cluster.md, docs/pfs.md): the
ratio says what the storage path costs here, not what a real Lustre would.
"""
from __future__ import annotations

import argparse
import sys

import pandas as pd

from analysis.tables import build_tables
from emulation import cluster as emulated_cluster
from emulation.config import load as load_emulation
from spillway import REPO
from experiments.benchmarks.monitoring_overhead import run_seconds
from spillway.inventory import load as load_inventory
from spillway.bench.orchestrator import Bench

ROW_BYTES = 100
RESULTS = REPO / "results"


def one_bench(cluster, rows):
    if load_inventory(cluster).emulation:
        print(f"cluster {cluster}: " + ("; ".join(emulated_cluster.up(load_emulation(cluster))) or "already up"))
    bench = Bench.planned(cluster, ["terasort"], "tiny", 1, params=f"engine=spark rows={rows}")
    bench.execute()
    return bench.run.path


def per_node_mb_s(run_path, tables, cluster, rows):
    """MB/s per node that ran executors: the cluster's spark-defaults give both clusters the same executors,
    so a worker without one would only dilute the figure."""
    workers = set(load_inventory(cluster).groups["workers"])
    executors = tables["spark_executors"]
    nodes = len(set(executors.loc[executors["workload_id"] == "terasort", "executor_host"]) & workers) or len(workers)
    return rows * ROW_BYTES / run_seconds(run_path) / nodes / 1e6, nodes


def stage_seconds(tables) -> pd.Series:
    stages = tables["stages"]
    stages = stages[stages["workload_id"] == "terasort"].sort_values("submission_time_ms")
    return pd.Series(stages["duration_s"].to_numpy(), index=[f"s{s} {n[:34]}" for s, n in
                                                             zip(stages["stage_id"], stages["name"])])


def main(argv=None):
    parser = argparse.ArgumentParser(prog="experiments.benchmarks.pfs_vs_local", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--local", default="emu", help="cluster with HDFS and local dirs on the workers' disks")
    parser.add_argument("--pfs", default="pfs", help="cluster with HDFS and local dirs on the shared file system")
    parser.add_argument("--rows", type=int, default=2_000_000, help="TeraGen rows of 100 bytes (tiny: 2 M)")
    parser.add_argument("--runs", nargs=2, metavar=("LOCAL_RUN", "PFS_RUN"),
                        help="print the figures of two earlier runs of this benchmark instead of running")
    args = parser.parse_args(argv)
    if args.runs:
        runs = {name: RESULTS / run for name, run in zip(("local", "pfs"), args.runs)}
    else:
        runs = {name: one_bench(cluster, args.rows) for name, cluster in (("local", args.local), ("pfs", args.pfs))}
    tables = {name: build_tables(path) for name, path in runs.items()}
    figures = {name: per_node_mb_s(runs[name], tables[name], cluster, args.rows)
               for name, cluster in (("local", args.local), ("pfs", args.pfs))}
    print(f"\nSpark TeraSort, {args.rows * ROW_BYTES / 1e6:.0f} MB, run step per node")
    print(f"{'storage':<8} {'cluster':<8} {'nodes':>7} {'run (s)':>8} {'MB/s per node':>14}  run")
    for name, cluster in (("local", args.local), ("pfs", args.pfs)):
        mb_s, workers = figures[name]
        print(f"{name:<8} {cluster:<8} {workers:>7} {run_seconds(runs[name]):>8.1f} {mb_s:>14.2f}  {runs[name].name}")
    ratio = figures["pfs"][0] / figures["local"][0]
    print(f"per-node throughput pfs/local: {ratio:.2f}x "
          f"({'slower' if ratio < 1 else 'faster'} on the shared file system)")
    table = pd.DataFrame({"local (s)": stage_seconds(tables["local"]), "pfs (s)": stage_seconds(tables["pfs"])})
    table["pfs/local"] = table["pfs (s)"] / table["local (s)"]
    print("\nstage times (same job, same scale; stage names may differ in length only)")
    print(table.round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
