"""blocktrace.tsv recorded by the blocktrace collector (kernel block tracepoints on a loop disk)."""
import time

import numpy as np
import pandas as pd

from analysis.parsers.blocktrace import pair_requests, read_events, read_header
from conftest import recorded


def test_pairs_issues_with_completions():
    path = recorded("blocktrace.tsv")
    assert read_header(path).get("version") == "v1"
    events = read_events(path)
    requests = pair_requests(events)
    issues = (events["action"].astype(str) == "D").sum()
    assert len(requests) == issues
    done = requests.dropna(subset=["latency_s"])
    assert len(done) >= 0.9 * len(requests)
    assert (done["latency_s"] >= 0).all() and (done["latency_s"] < 60).all()
    assert set(requests["op"].astype(str)) <= {"read", "write", "discard", "flush", "other"}
    assert (requests.loc[requests["op"].isin(["read", "write"]), "bytes"] % 512 == 0).all()
    assert requests["issue_time_s"].is_monotonic_increasing and requests["issue_time_s"].min() > 1e9


def test_pairing_is_vectorized_fast_enough(tmp_path):
    """>= 1M requests/s on the recorded trace repeated to ~1M requests (shifted in time)."""
    path = recorded("blocktrace.tsv")
    events = read_events(path)
    repeat = max(1, 2_000_000 // max(len(events), 1))
    span = events["time_s"].max() - events["time_s"].min() + 1
    big = pd.concat([events.assign(time_s=events["time_s"] + i * span) for i in range(repeat)], ignore_index=True)
    big_path = tmp_path / "blocktrace.tsv"
    with open(big_path, "w") as out:
        out.write(path.read_text().split("\n", 1)[0] + "\n")
        big.to_csv(out, sep="\t", index=False, float_format="%.6f")
    start = time.perf_counter()
    requests = pair_requests(read_events(big_path))
    elapsed = time.perf_counter() - start
    assert len(requests) / elapsed >= 1_000_000 or elapsed < 1.0, f"{len(requests)} requests in {elapsed:.2f} s"
    assert np.isfinite(requests["latency_s"]).mean() > 0.9
