"""Normalization of block traces into blocktrace.tsv (format: docs/collectors.md).

Two sources give the same table:
- `tracepoint`: text of the kernel block tracepoints read from an instance's trace_pipe, e.g.
      fio-9859 [001] .N... 267.390711: block_rq_issue: 7,0 R 4096 () 63240 + 8 be,0,4 [fio]
      ksoftirqd/0-14 [000] ..s.. 267.392201: block_rq_complete: 7,0 R () 63240 + 8 be,0,4 [0]
  (the `be,0,4` I/O priority exists on kernels >= 6.x only, the `4096` byte count on issue only);
- `blktrace`: blkparse output in the format BLKPARSE_FORMAT below.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator, TextIO

FORMAT_VERSION = "v1"
COLUMNS = ("time_s", "device", "action", "rwbs", "sector", "bytes", "comm")
SECTOR_BYTES = 512

_TRACEPOINT_LINE = re.compile(
    r"^\s*(?P<task>.*?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?"
    r"(?P<ts>\d+\.\d+):\s+block_rq_(?P<event>issue|complete):\s+"
    r"(?P<major>\d+),(?P<minor>\d+)\s+(?P<rwbs>\S+)\s+(?:\d+\s+)?\([^)]*\)\s+"
    r"(?P<sector>\d+)\s+\+\s+(?P<nr>\d+)(?:\s+[a-z]+,\d+,\d+)?\s+\[(?P<tail>[^\]]*)\]"
)
_LOST_LINE = re.compile(r"^CPU:\s*\d+\s+\[LOST\s+(?P<n>\d+)\s+EVENTS\]")
_ACTION = {"issue": "D", "complete": "C"}

# blkparse -f: relative seconds.nanoseconds, major, minor, action, RWBS, sector, sectors, command.
BLKPARSE_FORMAT = r"%T.%9t %M %m %a %d %S %n %C\n"


@dataclass(frozen=True)
class Row:
    time_s: float
    device: str
    action: str
    rwbs: str
    sector: int
    bytes: int
    comm: str

    def tsv(self) -> str:
        return (f"{self.time_s:.6f}\t{self.device}\t{self.action}\t{self.rwbs}\t"
                f"{self.sector}\t{self.bytes}\t{self.comm}\n")


@dataclass
class ParseStats:
    events: int = 0
    lost: int = 0          # events the kernel reported as lost in the stream
    unparsed: int = 0      # lines that were neither an event, a lost-marker nor a trace marker


def _device_name(names: dict[tuple[int, int], str], major: int, minor: int) -> str:
    return names.get((major, minor), f"{major},{minor}")


def parse_tracepoint(lines: Iterable[str], names: dict[tuple[int, int], str],
                     wall_minus_trace_clock: float, stats: ParseStats) -> Iterator[Row]:
    """Rows of trace_pipe text; comm = issuing task for D, the task in whose context the
    completion ran for C (the event itself carries no task on completion)."""
    for line in lines:
        m = _TRACEPOINT_LINE.match(line)
        if m is None:
            lost = _LOST_LINE.match(line)
            if lost:
                stats.lost += int(lost["n"])
            elif "tracing_mark_write" not in line and line.strip():
                stats.unparsed += 1
            continue
        stats.events += 1
        action = _ACTION[m["event"]]
        comm = m["tail"] if action == "D" else m["task"].strip()
        yield Row(
            time_s=float(m["ts"]) + wall_minus_trace_clock,
            device=_device_name(names, int(m["major"]), int(m["minor"])),
            action=action, rwbs=m["rwbs"], sector=int(m["sector"]),
            bytes=int(m["nr"]) * SECTOR_BYTES, comm=comm or "-",
        )


def parse_blkparse(lines: Iterable[str], names: dict[tuple[int, int], str],
                   wall_at_trace_start: float, stats: ParseStats) -> Iterator[Row]:
    """Rows of `blkparse -f BLKPARSE_FORMAT` output (D and C actions only)."""
    for line in lines:
        parts = line.split(None, 7)
        if len(parts) < 7 or parts[3] not in ("D", "C"):
            if line.strip():
                stats.unparsed += 1
            continue
        stats.events += 1
        rel, major, minor, action, rwbs, sector, nr = parts[:7]
        yield Row(
            time_s=float(rel) + wall_at_trace_start,
            device=_device_name(names, int(major), int(minor)),
            action=action, rwbs=rwbs, sector=int(sector),
            bytes=int(nr) * SECTOR_BYTES, comm=(parts[7].strip() if len(parts) > 7 else "") or "-",
        )


def count_lost(lines: Iterable[str]) -> int:
    """Events the kernel reported lost in a trace_pipe stream (its `CPU:N [LOST n EVENTS]` lines)."""
    return sum(int(m["n"]) for line in lines if line.startswith("CPU:") and (m := _LOST_LINE.match(line)))


def write_tsv(out: TextIO, rows: Iterable[Row], source: str, meta: dict[str, object]) -> int:
    """First line `# spillway-blocktrace v1 source=<source> key=value...`, then the header."""
    extra = "".join(f" {k}={v}" for k, v in meta.items())
    out.write(f"# spillway-blocktrace {FORMAT_VERSION} source={source}{extra}\n")
    out.write("\t".join(COLUMNS) + "\n")
    count = 0
    for row in rows:
        out.write(row.tsv())
        count += 1
    return count

