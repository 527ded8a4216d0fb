"""Block traces as text of the kernel's blk tracer or of blkparse, to the `block_requests` table.

Two layouts of the same per-event fields (device, action, RWBS, sector + sectors, [command]):
- blkparse's default output (`%D %2c %8s %5T.%9t %5p %2a %3d ...`), e.g.
      7,5    1       12     0.001234567  4321  D  WS 223490 + 8 [java]
  followed by blkparse's per-CPU and total summary block (skipped);
- the kernel `blk` tracer read from tracefs `trace_pipe` (ftrace prefix, then the same fields), e.g.
      dd-21387   [001] d..1. 17835.982662:   7,4    D  RS 3072 + 512 [dd]
A file is one layout or the other (decided on its first event line). Only issues (D) and
completions (C) become events; other actions (Q, G, P, U, M...) and the summary are skipped. Flush
issues print no sector (`D FN [task]`) and zero-length completions no `+ n`: both are read.

Times are as the tool printed them (blkparse: seconds since the trace started; trace_pipe: the
trace clock) plus `clock_to_wall_s`. A completion's command is the traced task for trace_pipe (as
in the tracepoint form) and `-` for blkparse, which prints the error code there instead.

Vectorized: Arrow reads the lines and RE2 (Arrow's extract_regex) splits them in native code,
then analysis.parsers.blocktrace pairs issues with completions exactly as for blocktrace.tsv.
Lines that look like an event but are cut or malformed, and lines of no known kind, are skipped
and counted (BlkparseStats), never fatal.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .. import safeio
from .blocktrace import SECTOR_BYTES, pair_requests

# After the prefix: the action, then (optional for cut lines, which the check below counts) the
# request: RWBS, sector (absent for a flush issue), `+ sectors` (absent at zero length), [command].
_REQUEST = (r"\s+(?P<action>[A-Za-z]{1,2})"
            r"(?:\s+(?P<rwbs>[A-Z]+)\s+(?:(?P<sector>\d+)(?:\s+\+\s+(?P<nr>\d+))?\s+)?\[(?P<comm>[^\]]*)(?P<end>\]))?")
_BLKPARSE = (r"^\s*(?P<major>\d+),(?P<minor>\d+)\s+\d+\s+\d+\s+(?P<time>\d+\.\d+)\s+\d+" + _REQUEST)
_TRACE_PIPE = (r"^\s*(?P<task>.*?)-\d+\s+(?:\(\s*[-\d]+\)\s+)?\[\d+\]\s+(?:\S+\s+)?(?P<time>\d+\.\d+):\s+"
               r"(?P<major>\d+),(?P<minor>\d+)" + _REQUEST)
# Lines that are not events and not damage: blank, comments of the `trace` file, blkparse's
# summary block (`CPU0 (7,4):`, indented `Reads Queued: ...`, `Total`, `Throughput`, `Events`,
# `Skips`), trace markers, and ftrace's lost-event notes (counted apart).
_NOT_EVENT = (r"^\s*$|^#|^CPU\d+ \(|^Total \(|^\s+[A-Z][A-Za-z ]+:|^Throughput|^Events \(|^Skips:"
              r"|tracing_mark_write:")
_LOST = r"^CPU:\s*\d+\s+\[LOST\s+(?P<lost>\d+)\s+EVENTS\]"


@dataclass
class BlkparseStats:
    layout: str = ""        # `blkparse` or `trace_pipe`
    events: int = 0         # issue and completion lines read
    other_actions: int = 0  # event lines of other actions (queue, merge, plug...), not needed
    skipped_lines: int = 0  # cut or malformed lines, and lines of no known kind
    lost: int = 0           # events ftrace reported lost (`CPU:N [LOST n EVENTS]`)


def _lines(path: Path) -> pa.Array:
    """Every non-empty line as one string column, read by Arrow's multithreaded reader."""
    skipped = []

    def skip(_row) -> str:          # a line holding the (unused) delimiter byte: damage
        skipped.append(1)
        return "skip"
    options = dict(read_options=pacsv.ReadOptions(column_names=["line"], block_size=16 << 20),
                   parse_options=pacsv.ParseOptions(delimiter="\x1f", quote_char=False, escape_char=False,
                                                    invalid_row_handler=skip),
                   convert_options=pacsv.ConvertOptions(column_types={"line": pa.string()},
                                                        strings_can_be_null=False, quoted_strings_can_be_null=False))
    try:
        with safeio.open_source(path, "blocktrace") as handle:
            table = pacsv.read_csv(handle, **options)
    except pa.ArrowInvalid:         # bytes that are not UTF-8 (a damaged file): read them replaced
        text = safeio.read_bytes(path, "blocktrace").decode("utf-8", errors="replace").encode()
        skipped.clear()
        table = pacsv.read_csv(io.BytesIO(text), **options)
    lines = table.column("line").combine_chunks() if table.num_rows else pa.array([], pa.string())
    return lines, len(skipped)


def _layout(lines: pa.Array) -> str:
    head = lines.slice(0, 200)
    trace_pipe = pc.sum(pc.match_substring_regex(head, _TRACE_PIPE.split("(?P<major>")[0])).as_py() or 0
    return "trace_pipe" if trace_pipe else "blkparse"


def _number(digits: pa.Array, kind: pa.DataType) -> np.ndarray:
    """An optional group of digits as numbers; absent (RE2's "") is 0."""
    return pc.cast(pc.if_else(pc.equal(digits, ""), "0", digits), kind).to_numpy(zero_copy_only=False)


def read_blkparse_events(path: Path, names: dict[tuple[int, int], str] | None = None,
                         clock_to_wall_s: float = 0.0) -> tuple[pd.DataFrame, BlkparseStats]:
    """Issue and completion events (the columns of blocktrace.read_events) and what was skipped.
    `names` maps (major, minor) to a device name; without one the device is `major,minor`."""
    lines, undecodable = _lines(path)
    stats = BlkparseStats(layout=_layout(lines))
    fields = pc.extract_regex(lines, _TRACE_PIPE if stats.layout == "trace_pipe" else _BLKPARSE)
    matched = fields.is_valid()
    action = fields.field("action")
    is_request_action = pc.fill_null(pc.is_in(action, pa.array(["D", "C"])), False)
    # RE2 gives "" (not null) for a group that took no part: the closing bracket tells a whole line.
    complete = pc.equal(fields.field("end"), "]")
    events = pc.and_(is_request_action, complete)
    stats.events = pc.sum(events).as_py() or 0
    stats.other_actions = pc.sum(pc.and_(matched, pc.invert(is_request_action))).as_py() or 0
    # Damage: a D/C line whose request part is cut, and any line that is neither an event nor known.
    unmatched = lines.filter(pc.invert(matched))
    lost = pc.struct_field(pc.extract_regex(unmatched, _LOST), "lost")   # null where no match
    stats.lost = pc.sum(pc.cast(lost, pa.int64())).as_py() or 0
    known = pc.or_(pc.match_substring_regex(unmatched, _NOT_EVENT), lost.is_valid())
    stats.skipped_lines = (undecodable + (pc.sum(pc.and_(is_request_action, pc.invert(complete))).as_py() or 0)
                           + len(unmatched) - (pc.sum(known).as_py() or 0))
    fields = fields.filter(events)
    device = pc.binary_join_element_wise(fields.field("major"), fields.field("minor"), ",").dictionary_encode()
    if names:
        by_number = {f"{major},{minor}": name for (major, minor), name in names.items()}
        device = pa.DictionaryArray.from_arrays(
            device.indices, pa.array([by_number.get(d, d) for d in device.dictionary.to_pylist()]))
    action = fields.field("action")
    comm = fields.field("comm")
    if stats.layout == "trace_pipe":
        comm = pc.if_else(pc.equal(action, "C"), pc.utf8_trim_whitespace(fields.field("task")), comm)
    else:
        comm = pc.if_else(pc.equal(action, "C"), "-", comm)
    # blkparse prints `(null)` for a task whose name the trace did not record.
    comm = pc.if_else(pc.is_in(comm, pa.array(["", "(null)"])), "-", comm)
    frame = pd.DataFrame({
        "time_s": pc.cast(fields.field("time"), pa.float64()).to_numpy(zero_copy_only=False) + clock_to_wall_s,
        "device": device.to_pandas(),
        "action": action.dictionary_encode().to_pandas(),
        "rwbs": fields.field("rwbs").dictionary_encode().to_pandas(),
        "sector": _number(fields.field("sector"), pa.uint64()),
        "bytes": _number(fields.field("nr"), pa.int64()) * np.int64(SECTOR_BYTES),
        "comm": comm.to_pandas(),
    })
    return frame, stats


def parse_blkparse(path: Path, names: dict[tuple[int, int], str] | None = None,
                   clock_to_wall_s: float = 0.0) -> pd.DataFrame:
    """The `block_requests` table of a blkparse or blk-tracer text file; the BlkparseStats are in
    `.attrs["blkparse"]` (a dict)."""
    events, stats = read_blkparse_events(path, names, clock_to_wall_s)
    requests = pair_requests(events)
    requests.attrs["blkparse"] = vars(stats)
    return requests
