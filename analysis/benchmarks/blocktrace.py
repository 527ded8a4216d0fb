"""Block trace to request table: requests per second of analysis.parsers.blocktrace.

    python -m analysis.benchmarks.blocktrace [--events 4000000] [--source <recorded blocktrace.tsv>]

The trace is a real recorded one (tests/fixtures/tools/blocktrace by default) repeated, shifted in
time, up to --events events; the parse (read + pairing) runs in a child process (time, peak RSS),
once in a fresh process (cold) and once after a first parse in the same process (warm).
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from . import MB, REPO, measure_here, measure_in_child, scratch_dir

DEFAULT_SOURCE = REPO / "tests" / "fixtures" / "tools" / "blocktrace" / "blocktrace.tsv"


def build_trace(source: Path, target: Path, events: int) -> int:
    """Write `source` repeated (each copy after the previous one in time) up to `events` events."""
    from ..parsers.blocktrace import read_events
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
    with open(target, "wb") as out:
        out.write(header.encode())
        pacsv.write_csv(table, out, write_options=pacsv.WriteOptions(delimiter="\t", quoting_style="none"))
    return table.num_rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.benchmarks.blocktrace", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=4_000_000, help="trace events to build (default 4M)")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="recorded blocktrace.tsv to repeat")
    parser.add_argument("--measure", metavar="TRACE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        from ..parsers.blocktrace import parse_blocktrace
        trace, warm = args.measure.split("#")
        if warm == "warm":      # once before: the measured run reuses memory the process has
            parse_blocktrace(Path(trace))
        measure_here(lambda: len(parse_blocktrace(Path(trace))))
        return 0
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as tmp:
        trace = Path(tmp) / "blocktrace.tsv"
        events = build_trace(args.source, trace, args.events)
        size = trace.stat().st_size
        print(f"block trace: {events:,} events, {size / MB:.0f} MB ({args.source.name} repeated)")
        # Cold: a fresh process, as `python -m analysis tables` parses one trace. Warm: the same
        # process parses it a second time (a VM charges much for first-touched memory).
        for run in ("cold", "warm"):
            result = measure_in_child("analysis.benchmarks.blocktrace", f"{trace}#{run}")
            print(f"request table ({run}): {result['rows']:,} requests in {result['seconds']:.2f} s "
                  f"({result['cpu_seconds']:.2f} s CPU) = {result['rows'] / result['seconds']:,.0f} requests/s "
                  f"({result['rows'] / max(result['cpu_seconds'], 1e-9):,.0f} per CPU s; goal >= 1,000,000), "
                  f"peak RSS {result['peak_rss_bytes'] / MB:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
