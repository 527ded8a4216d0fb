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
    with open(path, "r", errors="replace") as handle:
        first = handle.readline()
    if not first.startswith(HEADER_PREFIX):
        return {}
    items = first[len(HEADER_PREFIX):].split()
    meta = {"version": items[0] if items else ""}
    meta.update(item.split("=", 1) for item in items[1:] if "=" in item)
    return meta


def read_events(path: Path) -> pd.DataFrame:
    """The raw events (time_s, device, action, rwbs, sector, bytes, comm); device, action, rwbs as categories.
    Read by Arrow's multithreaded CSV reader: the whole file in one native call."""
    skip = 1 if read_header(path) else 0
    table = pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(skip_rows=skip),
        parse_options=pacsv.ParseOptions(delimiter="\t", invalid_row_handler=lambda _row: "skip"),
        convert_options=pacsv.ConvertOptions(column_types=_ARROW_TYPES, strings_can_be_null=False),
    )
    frame = table.to_pandas()
    for column in ("device", "action", "rwbs"):
        frame[column] = frame[column].astype("category")
    return frame


def op_of_rwbs(rwbs: pd.Series) -> pd.Series:
    """read/write/discard/flush from the kernel's rwbs string (`R`, `WS`, `FWFS`, `FN`, `DS`...).
    The first of R, W, D, N decides: a leading F is a preflush attribute, N a data-less request.
    Computed on the few distinct rwbs values, then spread by category code (no per-row Python)."""
    categories = rwbs.astype("category")
    distinct = pd.Series(categories.cat.categories.astype(str))
    kinds = distinct.str.lstrip("F").str[:1].map(_OPS).fillna("other")
    names = pd.Index(sorted(set(kinds) | {"other"}))
    kind_codes = np.append(names.get_indexer(kinds), names.get_loc("other"))  # code -1 (missing) -> other
    return pd.Series(pd.Categorical.from_codes(kind_codes[categories.cat.codes.to_numpy()], categories=names),
                     index=rwbs.index)


def _time_order(time_s: np.ndarray) -> np.ndarray | None:
    """Row order by time (stable), or None when the rows are in time order already (traces come
    out of the collector so): no sort of millions of rows then."""
    if len(time_s) < 2 or bool((time_s[1:] >= time_s[:-1]).all()):
        return None
    return np.argsort(time_s, kind="stable")


def _order_by_key_then_time(device: np.ndarray, op: np.ndarray, sector: np.ndarray,
                            by_time: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Row order sorted by (device, op, sector), then time; and the sorted (device, op, sector) key.
    `by_time` is the row order by time, None when the rows are in time order already.

    Fast path: pack the key and each row's rank in time order into one uint64 and sort the
    values in place (a SIMD sort, ~10x faster than a stable argsort); the low bits give the row
    back. Arrays are updated in place: on a VM, fresh memory costs as much as the sorting.
    Falls back to lexsort when the bits do not fit (huge devices and traces)."""
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
        packed <<= np.uint64(rank_bits)
        if by_time is None:
            packed |= np.arange(n, dtype=np.uint64)
        else:
            rank = np.empty(n, dtype=np.uint64)
            rank[by_time] = np.arange(n, dtype=np.uint64)
            packed |= rank
            del rank
        packed.sort()
        order = (packed & np.uint64((1 << rank_bits) - 1)).view(np.int64)
        if by_time is not None:
            order = by_time[order]
        packed >>= np.uint64(rank_bits)
        return order, packed
    key = (device << 56) | (op << 48) | (sector + 1)    # 48 bits of sector: 128 PiB devices
    order = np.lexsort((np.arange(n) if by_time is None else np.argsort(by_time), key))
    return order, key[order]


def pair_requests(events: pd.DataFrame) -> pd.DataFrame:
    """One row per issued request with its completion time and latency (columns COLUMNS)."""
    if events.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in COLUMNS})
    op = op_of_rwbs(events["rwbs"])
    op_codes = op.cat.codes.to_numpy(np.int64)
    flush_code = list(op.cat.categories).index("flush") if "flush" in op.cat.categories else -2
    # Flushes have no sector: the kernel prints 0 on issue and 2^64-1 on completion; both become -1.
    sector = np.where(op_codes == flush_code, -1, events["sector"].to_numpy(np.uint64).view(np.int64))
    is_issue = (events["action"].cat.codes == list(events["action"].cat.categories).index("D")).to_numpy() \
        if "D" in list(events["action"].cat.categories) else np.zeros(len(events), dtype=bool)
    time_s = events["time_s"].to_numpy(np.float64)
    device_codes = events["device"].cat.codes.to_numpy(np.int64)
    by_time = _time_order(time_s)
    order, key_s = _order_by_key_then_time(device_codes, op_codes, sector, by_time)
    iss_s = is_issue[order]
    next_same = np.zeros(len(order), dtype=bool)
    next_same[:-1] = key_s[1:] == key_s[:-1]
    next_is_issue = np.zeros(len(order), dtype=bool)
    next_is_issue[:-1] = iss_s[1:]
    # A request the driver sent back (queue full) is dispatched again: two D of the same key
    # before one C. The last dispatch is the one the device served; earlier ones are dropped and
    # the kept one is flagged `redispatched`.
    superseded = iss_s & next_same & next_is_issue
    previous_superseded = np.zeros(len(order), dtype=bool)
    previous_superseded[1:] = superseded[:-1]
    kept = iss_s & ~superseded
    # Back to time order (stable: file order for equal times) by scattering the kept issues to
    # their rows: linear, where sorting them again would cost a second sort.
    completion_of = np.full(len(order), -1, dtype=np.int64)
    completion_of[order[kept]] = np.where(next_same & ~next_is_issue, np.roll(order, -1), -1)[kept]
    is_kept = np.zeros(len(order), dtype=bool)
    is_kept[order[kept]] = True
    redispatched_of = np.zeros(len(order), dtype=bool)
    redispatched_of[order[kept]] = previous_superseded[kept]
    issue_rows = np.flatnonzero(is_kept) if by_time is None else by_time[is_kept[by_time]]
    completion_rows, redispatched = completion_of[issue_rows], redispatched_of[issue_rows]
    issue_time = time_s[issue_rows]
    complete_time = np.where(completion_rows >= 0, time_s[np.maximum(completion_rows, 0)], np.nan)
    out = events[["device", "rwbs", "bytes", "comm"]].take(issue_rows).reset_index(drop=True)
    out.insert(1, "issue_time_s", issue_time)
    out.insert(2, "complete_time_s", complete_time)
    out.insert(3, "latency_s", complete_time - issue_time)
    out.insert(4, "op", op.take(issue_rows).reset_index(drop=True))
    out.insert(6, "sector", sector[issue_rows])
    out["redispatched"] = redispatched
    return out[COLUMNS]


def parse_blocktrace(path: Path) -> pd.DataFrame:
    """Requests of one blocktrace.tsv (see pair_requests)."""
    return pair_requests(read_events(path))
