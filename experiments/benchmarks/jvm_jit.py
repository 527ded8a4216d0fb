"""The workloads' JVMs with the JVM's default compilers (tiered) and with the client compiler alone (c1), side by
side: what `spillway_jvm.jit` (docs/cluster.md, "The workloads' JVMs") changes for a small bench.

    python -m experiments.benchmarks.jvm_jit [--rounds 2] [--scale-factor 0.1] [--work /var/tmp/spillway-jvm-jit]

One Spark driver in local mode (`local[2]`, 1 GiB heap, the spark role's Java 17 options) runs the TPC-H job over
all 22 queries on tpchgen-cli's Parquet tables, with and without -XX:TieredStopAtLevel=1, alternating (tiered
first in odd rounds, c1 first in even ones) so that a drift of the machine falls on both. It prints each round's
wall and CPU seconds (the JVM's user + system time) and the median of each. Needs `make setup` (Spark in
/opt/spillway, the workload venv's tpchgen-cli).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from spillway.inventory import role_default

REPO = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(os.environ.get("SPARK_HOME", "/opt/spillway/spark-3.5.6"))
TPCHGEN = Path("/opt/spillway/venv/bin/tpchgen-cli")
BUILD_SCRIPT = REPO / "playbooks/roles/spark/templates/spark-build-job.j2"
C1 = ["-XX:TieredStopAtLevel=1"]


def java17_options() -> list[str]:
    return role_default("spark", "spark_java17_options")


def prepare(work: Path, scale_factor: str) -> tuple[Path, Path]:
    work.mkdir(parents=True, exist_ok=True)
    jar = work / "tpch.jar"
    subprocess.run(["bash", str(BUILD_SCRIPT), str(REPO / "workloads/tpch/spark/src"), str(jar),
                    "spillway.tpch.TpchSpark"], check=True, capture_output=True, text=True)
    tables = work / f"tables-sf{scale_factor}"
    if not tables.is_dir():
        subprocess.run([str(TPCHGEN), "parquet", "--scale-factor", scale_factor, "--parts", "2",
                        "--output-dir", str(tables), "--quiet"], check=True)
    return jar, tables


def run_once(work: Path, jar: Path, tables: Path, jvm_options: list[str],
             jit_options: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one driver over all 22 queries."""
    results = work / "results"
    shutil.rmtree(results, ignore_errors=True)
    queries = sorted(p.stem for p in (REPO / "workloads/tpch/queries").glob("q*.sql"))
    command = ["java", "-Xmx1g", *jit_options, *jvm_options, "-cp", f"{SPARK_HOME}/jars/*",
               "org.apache.spark.deploy.SparkSubmit", "--master", "local[2]",
               "--conf", f"spark.local.dir={work}/spark-local", "--conf", "spark.ui.enabled=false",
               "--conf", "spark.sql.shuffle.partitions=8",
               str(jar), f"file://{tables}", str(REPO / "workloads/tpch/queries"), str(results),
               str(work / "query-times.csv"), *queries]
    before, start = os.times(), time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    wall, after = time.monotonic() - start, os.times()
    if done.returncode != 0:
        raise SystemExit(f"the TPC-H job failed ({' '.join(jit_options) or 'tiered'}):\n{done.stderr[-3000:]}")
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--scale-factor", default="0.1")
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/spillway-jvm-jit"))
    args = parser.parse_args(argv)
    jar, tables = prepare(args.work, args.scale_factor)
    jvm_options = java17_options()
    figures: dict[str, list[tuple[float, float]]] = {"tiered": [], "c1": []}
    for round_number in range(1, args.rounds + 1):
        order = ["tiered", "c1"] if round_number % 2 else ["c1", "tiered"]
        for jit in order:
            wall, cpu = run_once(args.work, jar, tables, jvm_options, C1 if jit == "c1" else [])
            figures[jit].append((wall, cpu))
            print(f"round {round_number}: {jit:6}  wall {wall:6.1f} s  CPU {cpu:6.1f} s", flush=True)
    print(f"\nTPC-H SF {args.scale_factor}, 22 queries, Spark local[2], {args.rounds} round(s), medians:")
    for jit, runs in figures.items():
        print(f"  {jit:6}  wall {statistics.median(w for w, _ in runs):6.1f} s  "
              f"CPU {statistics.median(c for _, c in runs):6.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
