"""The first check of make bench: answers at once, before anything is installed or touched."""
import subprocess
import sys
import time

from spillway import REPO, preflight


def test_unknown_cluster_exits_nonzero_quickly_listing_clusters():
    start = time.monotonic()
    proc = subprocess.run(["make", "-s", "bench", "CLUSTER=nope"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode != 0
    assert time.monotonic() - start < 5
    assert "unknown cluster 'nope'" in proc.stderr and "local" in proc.stderr


def test_unknown_workload_and_scale_are_named():
    problems = preflight.check("local", "terasort,nope", "big")
    assert any("unknown workload 'nope'" in p and "fio-sweep" in p for p in problems)
    assert any("unknown scale 'big'" in p for p in problems)


def test_emulated_storage_without_root_says_so():
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           sys.executable, "-m", "spillway.preflight", "--cluster", "local"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "needs root" in proc.stderr
