"""The live emulated cluster, one per test module that asks for it: up at the module's first use, torn down with
`make teardown` (the way users remove it) after its last test, and checked to leave nothing on the machine."""
import pytest

from emulation import cluster
from emulation.config import load
from live_emu import CLUSTER, sh


@pytest.fixture(scope="module")
def emu(require_setup):
    require_setup(CLUSTER)
    emulation = load(CLUSTER)
    assert cluster.leftovers(emulation) == [] or cluster.is_up(emulation), \
        f"a half-built {CLUSTER} is on this machine: make teardown CLUSTER={CLUSTER} first"
    sh("make", "cluster-up", f"CLUSTER={CLUSTER}")
    yield emulation
    sh("make", "teardown", f"CLUSTER={CLUSTER}", timeout=900)
    assert cluster.leftovers(emulation) == []
