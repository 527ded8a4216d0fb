from __future__ import annotations

from pathlib import Path

import pytest

from analysis.models import iomodel

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"


@pytest.fixture(scope="session")
def bandwidths() -> iomodel.Bandwidths:
    """fio curves of the recorded sweep (hdd, ssd); nvme falls back to its profile caps."""
    return iomodel.bandwidths_for([RUNS / "fio-sweep"], search_results=False)
