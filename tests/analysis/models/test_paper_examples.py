"""The papers' worked examples, recomputed from their stated parameters with the models' own functions."""
from __future__ import annotations

import pytest

from analysis.models import bottleneck, iomodel

MB, GB, TB = 1e6, 1e9, 1e12
MiB, GiB = 2**20, 2**30


def test_shuffle_read_request_size_is_30_kb():
    # I/O-aware paper §III-C2: each reducer reads 27 MB from 973 map outputs, "around 30KB"; iostat's
    # 60 sectors of 512 B = 30 KB
    size = iomodel.shuffle_read_request_bytes(27 * MiB, 973)
    assert size == pytest.approx(60 * 512, rel=0.06)
    # M: the 122 GB input in 128 MB HDFS blocks
    assert 122 * 1024 / 128 == pytest.approx(973, rel=0.005)


def test_hdd_shuffle_read_takes_126_minutes():
    # §III-C3: 334 GB of shuffle read over 3 nodes at the HDD's 15 MB/s for 30 KB requests
    seconds = iomodel.io_limit_s(334 * 1024 * MB, nodes=3, bandwidth_bytes_per_s=15 * MB)
    assert int(seconds / 60) == 126


def test_scale_term_two_sample_runs():
    # §VI runs 1 and 2: t_avg and delta_scale from P = 1 and P = 2 (any numbers: the model must return them)
    t_avg, delta, tasks, nodes = 4.0, 3.0, 973, 3
    t1 = iomodel.scale_time_s(tasks, nodes, 1, t_avg, delta)
    t2 = iomodel.scale_time_s(tasks, nodes, 2, t_avg, delta)
    assert t1 - t2 == pytest.approx(tasks / (2 * nodes) * t_avg)
    assert 2 * t2 - t1 == pytest.approx(delta)


def test_monotasks_ideal_times():
    # Monotasks §6.1: 20 minutes of compute monotasks on 80 cores -> 15 s; 20 GB over ten 100 MB/s disks -> 20 s
    assert bottleneck.ideal_cpu_s(20 * 60, nodes=10, cores=8) == pytest.approx(15)
    assert bottleneck.ideal_io_s(20 * GB, 10 * 100 * MB) == pytest.approx(20)
    ideal = {"cpu": 15.0, "disk": 20.0, "network": 5.0}
    # disk is the bottleneck: infinitely fast disk leaves CPU; twice as fast disk (10 s) leaves CPU (15 s)
    assert bottleneck.what_if(ideal, 40.0, "disk") == pytest.approx(40 * 15 / 20)
    assert bottleneck.what_if(ideal, 40.0, "disk", 2) == pytest.approx(40 * 15 / 20)
    assert bottleneck.what_if(ideal, 40.0, "network") == pytest.approx(40.0)
