"""Spillway block traces (`blocktrace.tsv`, format in collectors/blocktrace/collector.yml) to requests.

The file holds issue (D) and completion (C) events; a request is an issue paired with the next
completion of the same device, operation and start sector. Everything is vectorized (one C-level
CSV read, one sort, shifted comparisons): traces of millions of events take seconds.
`sector` is in 512-byte units, -1 for requests without one (flushes).
Issues without a completion (still in flight at stop, or lost) keep NaN completion and latency;
completions without an issue (issued before the window) are dropped.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from .. import safeio

HEADER_PREFIX = "# spillway-blocktrace"
SECTOR_BYTES = 512
COLUMNS = ["device", "issue_time_s", "complete_time_s", "latency_s", "op", "rwbs", "sector", "bytes", "comm",
           "redispatched"]
_ARROW_TYPES = {"time_s": pa.float64(), "device": pa.dictionary(pa.int32(), pa.string()),
                "action": pa.dictionary(pa.int32(), pa.string()), "rwbs": pa.dictionary(pa.int32(), pa.string()),
                "sector": pa.uint64(), "bytes": pa.int64(),
                # Plain strings: task names are many and only copied through; hashing them costs
                # a fifth of the read.
                "comm": pa.string()}
# After the leading F (preflush) attributes: R/W/D data ops; N or nothing (e.g. `FF`) a pure flush.
_OPS = {"R": "read", "W": "write", "D": "discard", "N": "flush", "": "flush"}


def read_header(path: Path) -> dict[str, str]:
    """The `key=value` items of the first line (source=..., clock offsets); {} without one."""
    with safeio.open_source(path, "blocktrace") as handle:
        first = handle.readline(64 * safeio.KiB).decode("utf-8", "replace")
    if not first.startswith(HEADER_PREFIX):
        return {}
    items = first[len(HEADER_PREFIX):].split()
    meta = {"version": items[0] if items else ""}
    meta.update(item.split("=", 1) for item in items[1:] if "=" in item)
    return meta


def _op_kinds(rwbs_values: pd.Index) -> tuple[pd.Index, np.ndarray]:
    """The op names (sorted, `other` among them) and, per rwbs value, its op's code; one more
    entry at the end, `other`, for a missing rwbs (code -1). The first of R, W, D, N decides: a
    leading F is a preflush attribute, N a data-less request. Computed on the few distinct values."""
    kinds = pd.Series(rwbs_values.astype(str)).str.lstrip("F").str[:1].map(_OPS).fillna("other")
    names = pd.Index(sorted(set(kinds) | {"other"}))
    return names, np.append(names.get_indexer(kinds), names.get_loc("other"))


def _time_order(time_s: np.ndarray) -> np.ndarray | None:
    """Row order by time (stable), or None when the rows are in time order already (traces come
    out of the collector so): no sort of millions of rows then."""
    if len(time_s) < 2 or not bool((time_s[1:] < time_s[:-1]).any()):
        return None
    return np.argsort(time_s, kind="stable")


def _ranks_by_key_then_time(device: np.ndarray, op: np.ndarray, sector: np.ndarray,
                            by_time: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The events' time ranks (position in time order) sorted by (device, op, sector), then time;
    and the sorted key. `by_time` is the row order by time, None when the rows are in time order.

    Fast path: pack the key and each row's time rank into one uint64 and sort the values in
    place (a SIMD sort, ~10x faster than a stable argsort); the low bits give the rank back.
    Arrays are updated in place: on a VM, fresh memory costs as much as the sorting.
    Falls back to a stable argsort when the bits do not fit (huge devices and traces)."""
    n = len(sector)
    rank_bits = max(1, int(n - 1).bit_length())
    sector_bits = max(1, int(sector.max() + 1).bit_length())
    device_bits = max(1, int(device.max()).bit_length())
    op_bits = max(1, int(op.max()).bit_length())
    if device_bits + op_bits + sector_bits + rank_bits <= 64:
        packed = device.astype(np.uint64)
        packed <<= np.uint64(op_bits)
        packed |= op.astype(np.uint64, copy=False)
        packed <<= np.uint64(sector_bits)
        packed |= (sector + 1).view(np.uint64)
        if by_time is not None:
            packed = packed[by_time]
        packed <<= np.uint64(rank_bits)
        packed |= np.arange(n, dtype=np.uint64)
        packed.sort()
        ranks = (packed & np.uint64((1 << rank_bits) - 1)).view(np.int64)
        packed >>= np.uint64(rank_bits)
        return ranks, packed
    key = (device << 56) | (op << 48) | (sector + 1)    # 48 bits of sector: 128 PiB devices
    if by_time is not None:
        key = key[by_time]
    ranks = np.argsort(key, kind="stable")
    return ranks, key[ranks]


def _match(time_s: np.ndarray, is_issue: np.ndarray, device: np.ndarray, op: np.ndarray,
           sector: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each request's issue row (in time order, file order for equal times), its completion row
    (-1 when none) and whether it was redispatched. An issue pairs with the next event of the same
    (device, op, sector) when that one is a completion."""
    n = len(time_s)
    by_time = _time_order(time_s)
    ranks, key = _ranks_by_key_then_time(device, op, sector, by_time)
    issue = is_issue[ranks] if by_time is None else is_issue[by_time][ranks]
    same_as_next = np.zeros(n, dtype=bool)
    np.equal(key[1:], key[:-1], out=same_as_next[:-1])
    del key
    next_is_issue = np.zeros(n, dtype=bool)
    next_is_issue[:-1] = issue[1:]
    # A request the driver sent back (queue full) is dispatched again: two D of the same key
    # before one C. The last dispatch is the one the device served; earlier ones are dropped and
    # the kept one is flagged `redispatched`.
    superseded = issue & same_as_next & next_is_issue
    kept = np.flatnonzero(issue & ~superseded)              # positions in key order
    completed = same_as_next[kept] & ~next_is_issue[kept]
    completion_rank = np.where(completed, ranks[np.minimum(kept + 1, n - 1)], -1)
    redispatched = superseded[np.maximum(kept - 1, 0)] & (kept > 0)
    # Back to time order without a second sort: a rank is its own sorted position, so mark the
    # kept ranks and read them back in order; each one's slot gives its completion and flag.
    issue_rank = ranks[kept]
    del ranks, superseded, same_as_next, next_is_issue, issue
    slot = np.empty(n, dtype=np.int64)
    slot[issue_rank] = np.arange(len(kept))
    marked = np.zeros(n, dtype=bool)
    marked[issue_rank] = True
    issue_rank = np.flatnonzero(marked)
    slot = slot[issue_rank]
    completion_rank, redispatched = completion_rank[slot], redispatched[slot]
    if by_time is None:
        return issue_rank, completion_rank, redispatched
    completion_row = np.where(completion_rank >= 0, by_time[np.maximum(completion_rank, 0)], -1)
    return by_time[issue_rank], completion_row, redispatched


def _requests_frame(rows: np.ndarray, completion_rows: np.ndarray, redispatched: np.ndarray,
                    time_s: np.ndarray, device: tuple[np.ndarray, pd.Index], rwbs: tuple[np.ndarray, pd.Index],
                    op: tuple[np.ndarray, pd.Index], sector: np.ndarray, size_bytes: np.ndarray,
                    comm: pd.Series) -> pd.DataFrame:
    """The request table (COLUMNS) of the issue `rows`; categorical columns given as (codes, categories)
    of every event, `comm` already taken at `rows`."""
    issue_time = time_s[rows]
    complete_time = time_s[np.maximum(completion_rows, 0)]
    complete_time[completion_rows < 0] = np.nan
    latency = complete_time - issue_time
    columns = {"device": device, "issue_time_s": issue_time, "complete_time_s": complete_time,
               "latency_s": latency, "op": op, "rwbs": rwbs, "sector": sector[rows], "bytes": size_bytes[rows],
               "comm": comm, "redispatched": redispatched}
    for name in ("device", "op", "rwbs"):
        codes, categories = columns[name]
        columns[name] = pd.Categorical.from_codes(codes[rows], categories=categories, validate=False)
    return pd.DataFrame(columns, copy=False)


def _sector_of(sector: np.ndarray, op_codes: np.ndarray, ops: pd.Index) -> np.ndarray:
    """Sectors as int64, -1 for flushes: the kernel prints 0 on issue and 2^64-1 on completion."""
    sector = sector.view(np.int64)
    if "flush" in ops:
        sector = np.where(op_codes == ops.get_loc("flush"), -1, sector)
    return sector


def pair_requests(events: pd.DataFrame) -> pd.DataFrame:
    """One row per issued request with its completion time and latency (columns COLUMNS), from
    events as read_events gives them."""
    if events.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in COLUMNS})
    rwbs = events["rwbs"].astype("category")
    ops, kind_codes = _op_kinds(rwbs.cat.categories)
    rwbs_codes = rwbs.cat.codes.to_numpy()
    op_codes = kind_codes[rwbs_codes]
    sector = _sector_of(events["sector"].to_numpy(np.uint64), op_codes, ops)
    action = events["action"].astype("category")
    is_issue = (action.cat.codes == action.cat.categories.get_loc("D")).to_numpy() \
        if "D" in action.cat.categories else np.zeros(len(events), dtype=bool)
    device = events["device"].astype("category")
    device_codes = device.cat.codes.to_numpy()
    time_s = events["time_s"].to_numpy(np.float64)
    rows, completion_rows, redispatched = _match(time_s, is_issue, device_codes.astype(np.int64), op_codes, sector)
    return _requests_frame(rows, completion_rows, redispatched, time_s, (device_codes, device.cat.categories),
                           (rwbs_codes, rwbs.cat.categories), (op_codes, ops), sector,
                           events["bytes"].to_numpy(np.int64), events["comm"].take(rows).reset_index(drop=True))


def _read_table(path: Path) -> pa.Table:
    skip = 1 if read_header(path) else 0
    with safeio.open_source(path, "blocktrace") as handle:
        return pacsv.read_csv(
            handle,
            read_options=pacsv.ReadOptions(skip_rows=skip),
            parse_options=pacsv.ParseOptions(delimiter="\t", invalid_row_handler=lambda _row: "skip"),
            convert_options=pacsv.ConvertOptions(column_types=_ARROW_TYPES, strings_can_be_null=False),
        )


def _dictionary_codes(column: pa.ChunkedArray) -> tuple[np.ndarray, pd.Index]:
    """Codes and categories of a dictionary column whose chunks share one dictionary."""
    if column.num_chunks == 0:
        return np.empty(0, dtype=np.int32), pd.Index([], dtype=str)
    codes = np.concatenate([chunk.indices.to_numpy() for chunk in column.chunks])
    return codes, pd.Index(column.chunk(0).dictionary.to_pandas())


def read_events(path: Path) -> pd.DataFrame:
    """The raw events (time_s, device, action, rwbs, sector, bytes, comm); device, action, rwbs as categories.
    Read by Arrow's multithreaded CSV reader: the whole file in one native call."""
    frame = _read_table(path).to_pandas()
    for column in ("device", "action", "rwbs"):
        frame[column] = frame[column].astype("category")
    return frame


def parse_blocktrace(path: Path) -> pd.DataFrame:
    """Requests of one blocktrace.tsv (see pair_requests), computed on the Arrow columns as read:
    no events frame (that would copy every column and box every task name)."""
    table = _read_table(path).unify_dictionaries()
    if table.num_rows == 0:
        return pair_requests(read_events(path))
    device_codes, devices = _dictionary_codes(table.column("device"))
    rwbs_codes, rwbs_values = _dictionary_codes(table.column("rwbs"))
    action_codes, actions = _dictionary_codes(table.column("action"))
    ops, kind_codes = _op_kinds(rwbs_values)
    op_codes = kind_codes[rwbs_codes]
    sector = _sector_of(table.column("sector").to_numpy(), op_codes, ops)
    is_issue = action_codes == actions.get_loc("D") if "D" in actions else np.zeros(table.num_rows, dtype=bool)
    time_s = table.column("time_s").to_numpy()
    rows, completion_rows, redispatched = _match(time_s, is_issue, device_codes.astype(np.int64), op_codes, sector)
    comm = table.column("comm").take(rows).to_pandas()
    return _requests_frame(rows, completion_rows, redispatched, time_s, (device_codes, devices),
                           (rwbs_codes, rwbs_values), (op_codes, ops), sector, table.column("bytes").to_numpy(), comm)
