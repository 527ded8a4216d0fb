"""Stage-table build from a large Spark event log: our parser vs a straightforward baseline.

    python -m experiments.benchmarks.eventlog_parsing [--size-mb 1024] [--source <recorded log>] [--keep DIR]

The log is a real recorded one (tests/fixtures/tools/spark-eventlog/groups-sql by default) whose
task-end events are replicated with fresh task ids until the file reaches --size-mb; both builds
then run on the same file in the same run, each in a child process (time, MB/s, peak RSS).
Baseline: json.loads of every line into a list of dicts -> DataFrame -> groupby.
"""
from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path

import pandas as pd

from analysis import safeio
from .parser_measurement import MB, REPO, measure_here, measure_in_child, scratch_dir

DEFAULT_SOURCE = REPO / "tests" / "fixtures" / "tools" / "spark-eventlog" / "groups-sql" / "local-1795289462856"
_TASK_END = b'{"Event":"SparkListenerTaskEnd"'
_TASK_ID = re.compile(rb'("Task Info":\{"Task ID":)(\d+)')
_SUMS = ["input_bytes", "output_bytes", "shuffle_remote_bytes_read", "shuffle_local_bytes_read",
         "shuffle_write_bytes", "memory_spilled_bytes", "disk_spilled_bytes", "executor_run_time_s",
         "executor_cpu_time_s"]


def build_log(source: Path, target: Path, size_mb: float) -> int:
    """Write `source` with its task-end events replicated (fresh task ids) up to size_mb; returns bytes."""
    lines = source.read_bytes().splitlines(keepends=True)
    task_ends = [_TASK_ID.search(line) for line in lines if line.startswith(_TASK_END)]
    templates = [(m.string[:m.end(1)], m.string[m.end(2):]) for m in task_ends if m]
    if not templates:
        raise ValueError(f"{source}: no task-end event to replicate")
    end = next((i for i, line in enumerate(lines) if b'"SparkListenerApplicationEnd"' in line), len(lines))
    task_id = 1 + max(int(m.group(2)) for m in task_ends if m)
    goal = int(size_mb * MB)
    with safeio.replacing(target) as out:
        written = out.write(b"".join(lines[:end]))
        while written < goal:
            batch = []
            for head, tail in templates:
                batch.append(head + str(task_id).encode() + tail)
                task_id += 1
            written += out.write(b"".join(batch))
        written += out.write(b"".join(lines[end:]))
    return written


def stages_by_parser(path: Path) -> pd.DataFrame:
    from analysis.parsers.eventlog import parse_event_logs
    return parse_event_logs(path).stages


def stages_by_baseline(path: Path) -> pd.DataFrame:
    """What one writes first: decode every line, keep successful task ends, flatten, group."""
    rows = []
    with open(path, "rb") as handle:
        for line in handle:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("Event") != "SparkListenerTaskEnd" or event["Task End Reason"]["Reason"] != "Success":
                continue
            metrics = event.get("Task Metrics") or {}
            shuffle_read = metrics.get("Shuffle Read Metrics") or {}
            rows.append({
                "stage_id": event["Stage ID"], "attempt": event.get("Stage Attempt ID", 0),
                "input_bytes": (metrics.get("Input Metrics") or {}).get("Bytes Read", 0),
                "output_bytes": (metrics.get("Output Metrics") or {}).get("Bytes Written", 0),
                "shuffle_remote_bytes_read": shuffle_read.get("Remote Bytes Read", 0),
                "shuffle_local_bytes_read": shuffle_read.get("Local Bytes Read", 0),
                "shuffle_write_bytes": (metrics.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0),
                "memory_spilled_bytes": metrics.get("Memory Bytes Spilled", 0),
                "disk_spilled_bytes": metrics.get("Disk Bytes Spilled", 0),
                "executor_run_time_s": metrics.get("Executor Run Time", 0) / 1e3,
                "executor_cpu_time_s": metrics.get("Executor CPU Time", 0) / 1e9,
            })
    return pd.DataFrame(rows).groupby(["stage_id", "attempt"], as_index=False)[_SUMS].sum()


_BUILDS = {"parser": stages_by_parser, "baseline": stages_by_baseline}


def _checksum(stages: pd.DataFrame) -> list:
    """Byte sums per stage attempt with tasks: both builds must agree."""
    with_tasks = stages[stages["executor_run_time_s"] > 0].sort_values(["stage_id", "attempt"])
    return with_tasks[["stage_id", "attempt", *_SUMS[:7]]].astype("int64").values.tolist()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.benchmarks.eventlog_parsing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=1024, help="size of the event log to build (default 1024)")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="recorded event log to replicate")
    parser.add_argument("--keep", type=Path, help="build the log in this folder and keep it")
    parser.add_argument("--measure", nargs=2, metavar=("BUILD", "LOG"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        build, log = _BUILDS[args.measure[0]], Path(args.measure[1])

        def run() -> int:
            stages = build(log)
            safeio.write_text(Path(f"{log}.{args.measure[0]}.json"), json.dumps(_checksum(stages)))
            return len(stages)
        measure_here(run)
        return 0
    with tempfile.TemporaryDirectory(dir=args.keep or scratch_dir()) as tmp:
        folder = args.keep or Path(tmp)
        log = folder / "local-benchmark"
        size = build_log(args.source, log, args.size_mb)
        print(f"event log: {size / MB:.0f} MB ({args.source.name} with its task-end events replicated)")
        figures = {}
        for name in _BUILDS:
            figures[name] = result = measure_in_child("experiments.benchmarks.eventlog_parsing", name, str(log))
            print(f"{name:>8}: {result['seconds']:7.2f} s ({result['cpu_seconds']:6.2f} s CPU)  "
                  f"{size / MB / result['seconds']:7.1f} MB/s  "
                  f"peak RSS {result['peak_rss_bytes'] / MB:6.0f} MB  ({result['rows']} stage attempts)")
        same = Path(f"{log}.parser.json").read_text() == Path(f"{log}.baseline.json").read_text()
        print(f" speedup: {figures['baseline']['seconds'] / figures['parser']['seconds']:.1f}x "
              f"({figures['baseline']['cpu_seconds'] / figures['parser']['cpu_seconds']:.1f}x in CPU time; "
              f"goal >= 5x); parser peak RSS per GB of log: "
              f"{figures['parser']['peak_rss_bytes'] / MB / (size / (1 << 30)):.0f} MB (goal < 2048); "
              f"same stage sums: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
