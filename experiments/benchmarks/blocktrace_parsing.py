"""Block trace to request table: requests per second of analysis.parsers.blocktrace.

    python -m experiments.benchmarks.blocktrace_parsing [--events 4000000] [--source <recorded blocktrace.tsv>]
                                             [--text-events 1000000]

The trace is a real recorded one (tests/fixtures/tools/blocktrace by default) repeated, shifted in
time, up to --events events; the parse (read + pairing) runs in a child process (time, peak RSS),
once in a fresh process (cold) and once after a first parse in the same process (warm).
Then the same for the text form (analysis.parsers.blkparse): the kernel blk tracer's trace_pipe
recording in tests/fixtures/tools/blkparse repeated, shifted in time, up to --text-events lines.
"""
from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from analysis import safeio
from .parser_measurement import MB, REPO, measure_here, measure_in_child, scratch_dir

DEFAULT_SOURCE = REPO / "tests" / "fixtures" / "tools" / "blocktrace" / "blocktrace.tsv"
TEXT_SOURCE = REPO / "tests" / "fixtures" / "tools" / "blkparse" / "blk-issue-complete.trace_pipe.txt"
_STAMP = re.compile(r"(?<= )(\d+\.\d+)(?=: )")


def shifted_copies(source: Path, lines: int, span_s: float = 1000.0) -> str:
    """The event lines of a recorded blk tracer trace_pipe repeated up to `lines` lines, each copy
    `span_s` later than the one before (a longer trace of the same I/O)."""
    parts = [(line[:m.start()], float(m.group()), line[m.end():])
             for line in source.read_text().splitlines(keepends=True) if (m := _STAMP.search(line))]
    copies = max(1, lines // len(parts))
    return "".join(f"{head}{t + k * span_s:.6f}{tail}" for k in range(copies) for head, t, tail in parts)


def build_trace(source: Path, target: Path, events: int) -> int:
    """Write `source` repeated (each copy after the previous one in time) up to `events` events."""
    from analysis.parsers.blocktrace import read_events
    recorded = read_events(source)
    copies = max(1, -(-events // len(recorded)))
    span = recorded["time_s"].max() - recorded["time_s"].min() + 1.0
    shift = np.repeat(np.arange(copies) * span, len(recorded))
    table = pa.table({
        "time_s": np.tile(recorded["time_s"].to_numpy(), copies) + shift,
        **{column: pa.array(np.tile(recorded[column].astype(str).to_numpy(), copies))
           for column in ("device", "action", "rwbs")},
        "sector": np.tile(recorded["sector"].to_numpy(), copies),
        "bytes": np.tile(recorded["bytes"].to_numpy(), copies),
        "comm": pa.array(np.tile(recorded["comm"].astype(str).to_numpy(), copies)),
    })
    header = source.read_text(errors="replace").split("\n", 1)[0] + "\n"
    with safeio.replacing(target) as out:
        out.write(header.encode())
        pacsv.write_csv(table, out, write_options=pacsv.WriteOptions(delimiter="\t", quoting_style="none"))
    return table.num_rows


def measure_runs(trace: Path) -> None:
    # Cold: a fresh process, as `python -m analysis tables` parses one trace. Warm: the same
    # process parses it a second time (a VM charges much for first-touched memory).
    for run in ("cold", "warm"):
        result = measure_in_child("experiments.benchmarks.blocktrace_parsing", f"{trace}#{run}")
        print(f"request table ({run}): {result['rows']:,} requests in {result['seconds']:.2f} s "
              f"({result['cpu_seconds']:.2f} s CPU) = {result['rows'] / result['seconds']:,.0f} requests/s "
              f"({result['rows'] / max(result['cpu_seconds'], 1e-9):,.0f} per CPU s; goal >= 1,000,000), "
              f"peak RSS {result['peak_rss_bytes'] / MB:.0f} MB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.benchmarks.blocktrace_parsing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=4_000_000, help="trace events to build (default 4M)")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="recorded blocktrace.tsv to repeat")
    parser.add_argument("--text-events", type=int, default=1_000_000,
                        help="lines of the blk tracer text form to build (default 1M; 0 skips it)")
    parser.add_argument("--measure", metavar="TRACE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        from analysis.parsers.blkparse import parse_blkparse
        from analysis.parsers.blocktrace import parse_blocktrace
        trace, warm = args.measure.split("#")
        parse = parse_blkparse if trace.endswith(".txt") else parse_blocktrace
        if warm == "warm":      # once before: the measured run reuses memory the process has
            parse(Path(trace))
        measure_here(lambda: len(parse(Path(trace))))
        return 0
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as tmp:
        trace = Path(tmp) / "blocktrace.tsv"
        events = build_trace(args.source, trace, args.events)
        size = trace.stat().st_size
        print(f"block trace: {events:,} events, {size / MB:.0f} MB ({args.source.name} repeated)")
        measure_runs(trace)
        if args.text_events:
            text = Path(tmp) / "blk.trace_pipe.txt"
            safeio.write_text(text, shifted_copies(TEXT_SOURCE, args.text_events))
            print(f"blk tracer text: {text.stat().st_size / MB:.0f} MB ({TEXT_SOURCE.name} repeated)")
            measure_runs(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
