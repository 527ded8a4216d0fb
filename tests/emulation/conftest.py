"""The live emulated cluster, shared by the test modules that ask for it (the benches, then the cluster's own
tests): up at its first use, torn down with `make teardown` (the way users remove it) by test_emu_cluster's last
test, or at the end of the session when that test did not run, and checked to leave nothing on the machine. One
cluster for both modules: bringing it up and tearing a provisioned one down again cost minutes of `make test`."""
import pytest

from emulation import cluster
from emulation.config import load
from live_emu import CLUSTER, sh


@pytest.fixture(scope="session")
def emu(require_setup):
    require_setup(CLUSTER)
    emulation = load(CLUSTER)
    assert cluster.leftovers(emulation) == [] or cluster.is_up(emulation), \
        f"a half-built {CLUSTER} is on this machine: make teardown CLUSTER={CLUSTER} first"
    sh("make", "cluster-up", f"CLUSTER={CLUSTER}")
    yield emulation
    sh("make", "teardown", f"CLUSTER={CLUSTER}", timeout=900)
    assert cluster.leftovers(emulation) == []
