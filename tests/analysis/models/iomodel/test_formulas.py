"""The I/O-aware paper's worked examples, recomputed from their stated parameters with the model's formulas."""
from __future__ import annotations

import pytest

from analysis.models.iomodel.formulas import io_limit_s, scale_time_s, shuffle_read_request_bytes

MB = 1e6
MiB = 2**20


def test_shuffle_read_request_size_is_30_kb():
    # I/O-aware paper §III-C2: each reducer reads 27 MB from 973 map outputs, "around 30KB"; iostat's
    # 60 sectors of 512 B = 30 KB
    size = shuffle_read_request_bytes(27 * MiB, 973)
    assert size == pytest.approx(60 * 512, rel=0.06)
    # M: the 122 GB input in 128 MB HDFS blocks
    assert 122 * 1024 / 128 == pytest.approx(973, rel=0.005)


def test_hdd_shuffle_read_takes_126_minutes():
    # §III-C3: 334 GB of shuffle read over 3 nodes at the HDD's 15 MB/s for 30 KB requests
    seconds = io_limit_s(334 * 1024 * MB, nodes=3, bandwidth_bytes_per_s=15 * MB)
    assert int(seconds / 60) == 126


def test_scale_term_two_sample_runs():
    # §VI runs 1 and 2: t_avg and delta_scale from P = 1 and P = 2 (any numbers: the model must return them)
    t_avg, delta, tasks, nodes = 4.0, 3.0, 973, 3
    t1 = scale_time_s(tasks, nodes, 1, t_avg, delta)
    t2 = scale_time_s(tasks, nodes, 2, t_avg, delta)
    assert t1 - t2 == pytest.approx(tasks / (2 * nodes) * t_avg)
    assert 2 * t2 - t1 == pytest.approx(delta)
