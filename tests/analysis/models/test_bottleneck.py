"""The Monotasks paper's worked example, recomputed from its stated parameters with the bottleneck model."""
from __future__ import annotations

import pytest

from analysis.models import bottleneck

MB, GB = 1e6, 1e9


def test_monotasks_ideal_times():
    # Monotasks §6.1: 20 minutes of compute monotasks on 80 cores -> 15 s; 20 GB over ten 100 MB/s disks -> 20 s
    assert bottleneck.ideal_cpu_s(20 * 60, nodes=10, cores=8) == pytest.approx(15)
    assert bottleneck.ideal_io_s(20 * GB, 10 * 100 * MB) == pytest.approx(20)
    ideal = {"cpu": 15.0, "disk": 20.0, "network": 5.0}
    # disk is the bottleneck: infinitely fast disk leaves CPU; twice as fast disk (10 s) leaves CPU (15 s)
    assert bottleneck.what_if(ideal, 40.0, "disk") == pytest.approx(40 * 15 / 20)
    assert bottleneck.what_if(ideal, 40.0, "disk", 2) == pytest.approx(40 * 15 / 20)
    assert bottleneck.what_if(ideal, 40.0, "network") == pytest.approx(40.0)
