"""What monitoring costs a workload: the tiny Spark TeraSort with monitoring on and off, alternating.

    python -m experiments.benchmarks.monitoring_overhead [--cluster local] [--pairs 3] [--rows 2000000]

Each pair runs the same bench twice on the same cluster, once with Prometheus, node_exporter, the Pushgateway,
the JMX exporters and the Spark metrics servlet running, once with all of them stopped (MONITORING=0 re-provisions
without them). The order inside a pair alternates (on/off, off/on, ...) so that drift of the host (page cache,
JIT, a neighbour's load) does not always count against the same side. The figure is the TeraSort `run` step's
wall time; the ratio per pair is on/off, and the median ratio is compared with the issue's goal (< 2 % slower).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

from spillway.bench.orchestrator import Bench

GOAL_RATIO = 1.02


def run_seconds(run_path, workload_id="terasort"):
    """Wall time of the workload's run step in one bench, from its manifest."""
    manifest = json.loads((run_path / "manifest.json").read_text())
    for record in manifest["workloads"]:
        if record["id"] == workload_id:
            if record["status"] != "ok":
                raise SystemExit(f"error: {workload_id} in {run_path} ended '{record['status']}': "
                                 f"see {run_path / 'manifest.json'}; no figure from a failed run")
            return next(step["duration_s"] for step in record["steps"] if step["name"] == f"{workload_id}: run")
    raise SystemExit(f"error: no workload {workload_id} in {run_path}")


def one_bench(cluster, monitoring, rows):
    bench = Bench.planned(cluster, ["terasort"], "tiny", 1, params=f"engine=spark rows={rows}", monitoring=monitoring)
    bench.execute()
    return bench.run.path, run_seconds(bench.run.path)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="experiments.benchmarks.monitoring_overhead", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", default="local")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=2_000_000, help="TeraGen rows of 100 bytes (tiny: 2 M)")
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error("--pairs must be 1 or more")
    pairs = []
    for index in range(args.pairs):
        order = (True, False) if index % 2 == 0 else (False, True)
        seconds, runs = {}, {}
        for monitoring in order:
            runs[monitoring], seconds[monitoring] = one_bench(args.cluster, monitoring, args.rows)
        pairs.append((seconds[True], seconds[False], runs[True].name, runs[False].name))
    print("\nmonitoring overhead: Spark TeraSort run step, wall time (s)")
    print(f"{'pair':>4}  {'on (s)':>8}  {'off (s)':>8}  {'on/off':>7}  runs (on, off)")
    ratios = []
    for index, (on, off, run_on, run_off) in enumerate(pairs, 1):
        ratios.append(on / off)
        print(f"{index:>4}  {on:>8.1f}  {off:>8.1f}  {on / off:>6.3f}x  {run_on}, {run_off}")
    median = statistics.median(ratios)
    verdict = "meets" if median < GOAL_RATIO else "misses"
    print(f"median on/off ratio: {median:.3f}x over {len(ratios)} pairs ({(median - 1) * 100:+.1f} %); "
          f"goal < {GOAL_RATIO:.2f}x: {verdict} it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
