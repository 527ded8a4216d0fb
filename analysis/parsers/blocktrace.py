"""Spillway block traces (`blocktrace.tsv`, format in collectors/blocktrace/collector.yml) to requests.

The file holds issue (D) and completion (C) events; a request is an issue paired with the next
completion of the same device, operation and start sector. Everything is vectorized (one C-level
CSV read, one sort, shifted comparisons): traces of millions of events take seconds.
Issues without a completion (still in flight at stop, or lost) keep NaN completion and latency;
completions without an issue (issued before the window) are dropped.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HEADER_PREFIX = "# spillway-blocktrace"
SECTOR_BYTES = 512
COLUMNS = ["device", "issue_time_s", "complete_time_s", "latency_s", "op", "rwbs", "sector", "bytes", "comm"]
_DTYPES = {"time_s": "float64", "device": "category", "action": "category", "rwbs": "category",
           "sector": "int64", "bytes": "int64", "comm": "string"}
_OPS = {"R": "read", "W": "write", "D": "discard", "N": "flush"}


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
    """The raw events (time_s, device, action, rwbs, sector, bytes, comm)."""
    skip = 1 if read_header(path) else 0
    return pd.read_csv(path, sep="\t", skiprows=skip, dtype=_DTYPES, engine="c",
                       na_filter=False, on_bad_lines="skip")


def op_of_rwbs(rwbs: pd.Series) -> pd.Series:
    """read/write/discard/flush from the kernel's rwbs string (`R`, `WS`, `FWFS`, `FN`, `DS`...).
    The first of R, W, D, N decides: a leading F is a preflush attribute, N a data-less request.
    Computed on the few distinct rwbs values, then spread by category code (no per-row Python)."""
    categories = rwbs.astype("category")
    distinct = pd.Series(categories.cat.categories.astype(str))
    kinds = distinct.str.lstrip("F").str[:1].map(_OPS).fillna("other").to_numpy(dtype=object)
    codes = categories.cat.codes.to_numpy()
    values = np.where(codes >= 0, kinds[np.maximum(codes, 0)] if len(kinds) else "other", "other")
    return pd.Series(pd.Categorical(values), index=rwbs.index)


def pair_requests(events: pd.DataFrame) -> pd.DataFrame:
    """One row per issued request with its completion time and latency (columns COLUMNS)."""
    if events.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in COLUMNS})
    op = op_of_rwbs(events["rwbs"])
    device_codes = events["device"].astype("category").cat.codes.to_numpy(np.int64)
    op_codes = op.cat.codes.to_numpy(np.int64)
    sector = events["sector"].to_numpy(np.int64)
    is_issue = (events["action"].astype(str) == "D").to_numpy()
    time_s = events["time_s"].to_numpy(np.float64)
    # Sort by (device, op, sector, time, issue before completion): a completion then directly
    # follows the issue it belongs to.
    order = np.lexsort((~is_issue, time_s, sector, op_codes, device_codes))
    same_key = np.zeros(len(order), dtype=bool)
    dev_s, op_s, sec_s, iss_s = device_codes[order], op_codes[order], sector[order], is_issue[order]
    same_key[1:] = (dev_s[1:] == dev_s[:-1]) & (op_s[1:] == op_s[:-1]) & (sec_s[1:] == sec_s[:-1])
    issue_rows = order[iss_s]
    # The completion of the issue at sorted position i is at i+1 when it is a C of the same key.
    next_is_completion = np.zeros(len(order), dtype=bool)
    next_is_completion[:-1] = same_key[1:] & ~iss_s[1:]
    completion_rows = np.full(len(order), -1, dtype=np.int64)
    completion_rows[:-1] = np.where(next_is_completion[:-1], order[1:], -1)
    completion_of_issue = completion_rows[iss_s]
    complete_time = np.where(completion_of_issue >= 0, time_s[np.maximum(completion_of_issue, 0)], np.nan)
    issue_time = time_s[issue_rows]
    out = pd.DataFrame({
        "device": events["device"].to_numpy()[issue_rows],
        "issue_time_s": issue_time,
        "complete_time_s": complete_time,
        "latency_s": complete_time - issue_time,
        "op": op.to_numpy()[issue_rows],
        "rwbs": events["rwbs"].to_numpy()[issue_rows],
        "sector": sector[issue_rows],
        "bytes": events["bytes"].to_numpy(np.int64)[issue_rows],
        "comm": events["comm"].to_numpy()[issue_rows],
    })
    out = out.sort_values("issue_time_s", kind="stable", ignore_index=True)
    for column in ("device", "op", "rwbs"):
        out[column] = out[column].astype("category")
    return out


def parse_blocktrace(path: Path) -> pd.DataFrame:
    """Requests of one blocktrace.tsv (see pair_requests)."""
    return pair_requests(read_events(path))
