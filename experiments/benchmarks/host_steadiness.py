"""How steady this host's CPU is on its own: the same fixed arithmetic, run round after round in one thread, timed
by the wall clock and by the thread's CPU clock, with the hypervisor's steal over each round. The storage
probe's 5 % steadiness target (docs/compare.md, "The measurement protocol") cannot hold for a workload whose own
CPU time spreads more than that for the same work: this measures the floor, without a JVM, a disk or Spark
(docs/findings.md, "How steady a warm run is on this host").

    python -m experiments.benchmarks.host_steadiness [--rounds 12] [--iterations 20000000] [--json FILE]

Run it on a quiet machine; it prints each round and the spread (slowest / fastest - 1) of both clocks.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from run_protocol import spread_pct

MAX_ROUNDS = 1000
MAX_ITERATIONS = 10 ** 10


def steal_ticks(stat: Path = Path("/proc/stat")) -> int:
    """The host's stolen CPU ticks so far (the 8th figure of /proc/stat's `cpu` line), 0 where there is none."""
    fields = stat.read_text().split("\n", 1)[0].split()
    return int(fields[8]) if fields[0] == "cpu" and len(fields) > 8 else 0


def fixed_work(iterations: int) -> int:
    """A linear congruential generator's steps: integer arithmetic only, the same instructions every round."""
    state = 1
    for _ in range(iterations):
        state = (state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
    return state


def measure(rounds: int, iterations: int) -> list[dict]:
    results = []
    for number in range(1, rounds + 1):
        wall, cpu, steal = time.perf_counter(), time.thread_time(), steal_ticks()
        fixed_work(iterations)
        results.append({"round": number, "wall_s": time.perf_counter() - wall, "cpu_s": time.thread_time() - cpu,
                        "steal_ticks": steal_ticks() - steal})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--iterations", type=int, default=20_000_000)
    parser.add_argument("--json", type=Path, help="also write the rounds and spreads to this file")
    args = parser.parse_args(argv)
    if not 2 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--rounds {args.rounds}: between 2 and {MAX_ROUNDS} (a spread needs two rounds)")
    if not 1 <= args.iterations <= MAX_ITERATIONS:
        parser.error(f"--iterations {args.iterations}: between 1 and {MAX_ITERATIONS}")
    results = measure(args.rounds, args.iterations)
    print(f"{'round':>5}  {'wall':>9}  {'thread CPU':>10}  {'steal':>8}")
    for r in results:
        print(f"{r['round']:>5}  {r['wall_s']:>7.3f} s  {r['cpu_s']:>8.3f} s  {r['steal_ticks']:>2} ticks")
    spreads = {"wall_spread_pct": spread_pct([r["wall_s"] for r in results]),
               "cpu_spread_pct": spread_pct([r["cpu_s"] for r in results])}
    print(f"spread (slowest / fastest - 1): wall {spreads['wall_spread_pct']:.1f} %, "
          f"thread CPU {spreads['cpu_spread_pct']:.1f} % over {len(results)} rounds of {args.iterations:,} steps")
    if args.json:
        args.json.write_text(json.dumps({"rounds": results, **spreads}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
