"""Where a bench's wall time goes: the workloads' own commands against everything the harness does around them.

    python -m experiments.benchmarks.overhead [<run-dir | run-id | latest> ...]

Issue 19's figure: the harness's overhead is every second of the bench not spent inside a workload's prepare, run
or validate command. A command's time is its own task's timing line in the step's Ansible log (the spillway_timing
callback: `timing: 75.77 s  Workload command: tpch run: ./tpch run`; its rows of the workload_commands table,
analysis/parsers/step_logs.py), not the step's duration, which also holds the step's other tasks (the step's
environment, the page-cache steps, role common's checks). The rest is broken down by kind from the manifest's steps:
the step plays around the commands (`step playbook around ...`: a workload run's begin, steps and end are one Ansible
run since stop 43, whose start-up is in the begin), each workload's begin (health check, caches, collectors start)
and end (leftover stop, collectors stop, fetch), provisioning, facts, preflight, report; what no step covers (the
runner itself between steps) is `between steps`. Nothing is run: it reads a run directory the bench wrote (its
manifest.json and logs/), so before/after figures are the same command on two runs; given several, it prints them
side by side.

Below the breakdown, the floor under provisioning: the CPU seconds of the daemons the provisioning steps started
(their `daemon_starts` in the manifest, read by the facts step after each), and the wall time that CPU needs at the
least on their hosts' cores.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import datetime
from pathlib import Path

from analysis.parsers.step_logs import COMMAND_STEPS, workload_commands_table
from run_layout import MANIFEST, resolve_run_dir

GOAL_OVERHEAD_PCT = 5.0


def _epoch_s(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _kind(step_name: str) -> str:
    action = step_name.split(": ", 1)[-1]
    if action in COMMAND_STEPS:
        return action
    if "health check" in action or "start collectors" in action:
        return "workload begin (health check, collectors start)"
    if "stop collectors" in action:
        return "workload end (stop leftovers and collectors, fetch)"
    return f"workload {action}"


def breakdown(run_dir: Path) -> dict:
    """{wall_s, commands_s, overhead_pct, kinds: {kind: seconds}} of a finished bench's run directory."""
    manifest = json.loads((run_dir / MANIFEST).read_text())
    if not manifest.get("ended_at"):
        raise ValueError(f"{run_dir}: the bench has not ended (no ended_at in its manifest)")
    # the report step is recorded after the manifest's ended_at: the bench's wall time ends with its last step
    ends = [manifest["ended_at"], *(s["ended_at"] for s in manifest.get("steps", []) if s.get("ended_at"))]
    wall = max(map(_epoch_s, ends)) - _epoch_s(manifest["started_at"])
    kinds: dict[str, float] = {}

    def add(kind, seconds):
        kinds[kind] = kinds.get(kind, 0.0) + seconds

    for step in manifest.get("steps", []):
        add(re.split(r"[ (]", step["name"], maxsplit=1)[0], step.get("duration_s") or 0.0)
    commands_table, _sources = workload_commands_table(run_dir, manifest)
    own_seconds: dict[tuple[str, str], float] = {}
    for command in commands_table.itertuples(index=False):
        key = (command.workload_id, command.step)
        own_seconds[key] = own_seconds.get(key, 0) + command.duration_s
    commands = 0.0
    for workload in manifest.get("workloads", []):
        for step in workload.get("steps", []):
            kind, took = _kind(step["name"]), step.get("duration_s") or 0.0
            if kind in COMMAND_STEPS:
                own = own_seconds.get((workload["id"], kind), 0.0)
                commands += own
                add(f"workload commands ({kind})", own)
                add(f"step playbook around {kind}", took - own)
            else:
                add(kind, took)
    add("between steps", wall - sum(kinds.values()))
    return {"wall_s": wall, "commands_s": commands, "overhead_pct": 100.0 * (wall - commands) / wall if wall else 0.0,
            "kinds": dict(sorted(kinds.items(), key=lambda kv: -kv[1])), "daemon_starts": daemon_starts(manifest)}


def daemon_starts(manifest: dict) -> dict | None:
    """{count, cpu_s, floor_s} of the daemons the bench's provisioning steps started (their `daemon_starts`, the
    runner's, since 2026-11-28), or None for a bench that recorded none. cpu_s: their CPU seconds by the facts step
    after each provisioning step, most of it JVM start-ups; floor_s: the wall time that CPU needs at the least, each
    step's busiest host's share over its cores (hosts start theirs at once): no provisioning can take less without
    starting fewer daemons or cheaper ones."""
    steps = [s for s in manifest.get("steps", []) if "daemon_starts" in s]
    if not steps:
        return None
    vcpus = {host: (facts or {}).get("vcpus") or 1 for host, facts in (manifest.get("hosts") or {}).items()}
    count, cpu, floor = 0, 0.0, 0.0
    for step in steps:
        per_host: dict[str, float] = {}
        for start in step["daemon_starts"]:
            per_host[start["host"]] = per_host.get(start["host"], 0.0) + start["cpu_s"]
            count += 1
        cpu += sum(per_host.values())
        floor += max((seconds / vcpus.get(host, 1) for host, seconds in per_host.items()), default=0.0)
    return {"count": count, "cpu_s": cpu, "floor_s": floor}


def render(run_dir: Path, figures: dict) -> str:
    wall = figures["wall_s"]
    lines = [f"bench {run_dir.name}: wall {wall:.1f} s, workload commands {figures['commands_s']:.1f} s, "
             f"overhead {figures['overhead_pct']:.1f} % (goal <= {GOAL_OVERHEAD_PCT:g} %)"]
    for kind, seconds in figures["kinds"].items():
        lines.append(f"  {kind:<52} {seconds:8.1f} s {100 * seconds / wall:6.1f} %")
    starts = figures["daemon_starts"]
    if starts:
        lines.append(f"of provision: {starts['count']} daemon starts spent {starts['cpu_s']:.1f} s of CPU by the facts "
                     f"after them, at least {starts['floor_s']:.1f} s of wall on their hosts' cores "
                     f"({100 * starts['floor_s'] / wall:.1f} % of the bench)")
    return "\n".join(lines)


def render_side_by_side(runs: list[tuple[Path, dict]]) -> str:
    """Several benches (e.g. before and after a change) in columns: seconds per kind, then the totals."""
    kinds = list(dict.fromkeys(kind for _, figures in runs for kind in figures["kinds"]))
    width = max(22, *(len(run_dir.name) + 2 for run_dir, _ in runs))
    lines = [f"{'':<52}" + "".join(f"{run_dir.name:>{width}}" for run_dir, _ in runs)]
    for kind in kinds:
        lines.append(f"{kind:<52}" + "".join(f"{figures['kinds'].get(kind, 0.0):>{width - 2}.1f} s"
                                             for _, figures in runs))
    lines.append(f"{'wall':<52}" + "".join(f"{figures['wall_s']:>{width - 2}.1f} s" for _, figures in runs))
    lines.append(f"{'workload commands':<52}" + "".join(f"{figures['commands_s']:>{width - 2}.1f} s"
                                                         for _, figures in runs))
    lines.append(f"{'overhead (goal <= ' + format(GOAL_OVERHEAD_PCT, 'g') + ' %)':<52}"
                 + "".join(f"{figures['overhead_pct']:>{width - 2}.1f} %" for _, figures in runs))
    if any(figures["daemon_starts"] for _, figures in runs):
        lines.append(f"{'daemon starts: wall at least (their CPU / cores)':<52}"
                     + "".join(f"{(figures['daemon_starts'] or {}).get('floor_s', float('nan')):>{width - 2}.1f} s"
                               for _, figures in runs))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.benchmarks.overhead", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", default=["latest"],
                        help="run directories or run ids (default: latest); several are printed side by side")
    args = parser.parse_args(argv)
    try:
        runs = [(run_dir, breakdown(run_dir)) for run_dir in map(resolve_run_dir, args.runs or ["latest"])]
        print(render(*runs[0]) if len(runs) == 1 else render_side_by_side(runs))
    except (FileNotFoundError, ValueError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
