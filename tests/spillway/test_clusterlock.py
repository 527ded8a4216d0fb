"""One bench per cluster: a second holder is refused with the first one named, and the lock goes with the process
that held it, however it ends."""
import os
import subprocess
import sys

import pytest

from spillway import REPO, clusterlock

# /run/lock is the machine's: a name of this process alone, so that two tests of this module on two xdist workers
# (or two pytest sessions) never hold the same lock; the tests of one process run one at a time.
CLUSTER = f"spillway-test-lock-{os.getpid()}"


@pytest.fixture
def holder():
    """Another process holding the test cluster, as a running bench does."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from spillway import clusterlock\n"
                               f"with clusterlock.held({CLUSTER!r}, 'a bench on the test cluster'):\n"
                               "    print('held', flush=True); time.sleep(60)"],
        cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()
    clusterlock.lock_path(CLUSTER).unlink(missing_ok=True)


def check():
    return subprocess.run([sys.executable, "-m", "spillway.clusterlock", "check", CLUSTER], cwd=REPO,
                          capture_output=True, text=True)


def test_a_held_cluster_is_refused_naming_the_holder(holder):
    with pytest.raises(clusterlock.ClusterBusy) as busy:
        with clusterlock.held(CLUSTER, "a second bench"):
            pytest.fail("entered a cluster another process holds")
    assert f"a bench on the test cluster (pid {holder.pid})" in str(busy.value)
    refused = check()
    assert refused.returncode == 2
    assert f"cluster '{CLUSTER}' is in use by a bench on the test cluster (pid {holder.pid})" in refused.stderr


def test_the_lock_goes_with_a_killed_holder(holder):
    holder.kill()
    holder.wait()
    assert check().returncode == 0
    with clusterlock.held(CLUSTER, "the next bench"):
        assert clusterlock.lock_path(CLUSTER).read_text() == f"the next bench (pid {os.getpid()})\n"
    assert clusterlock.lock_path(CLUSTER).read_text() == ""


def test_make_teardown_refuses_while_a_bench_holds_the_cluster(holder):
    # refused before the inventory is even read (this cluster has none): nothing of the cluster was touched
    result = subprocess.run(["make", "--no-print-directory", "teardown", f"CLUSTER={CLUSTER}"], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert f"error: cluster '{CLUSTER}' is in use by a bench on the test cluster" in result.stderr, result.stderr
