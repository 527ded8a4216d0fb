"""Integration tests share the local default cluster; it is torn down once, after the last of them."""
import subprocess

import pytest

from spillway import REPO


@pytest.fixture(scope="session", autouse=True)
def teardown_local_cluster_at_the_end(require_setup):
    require_setup("local")
    yield
    subprocess.run(["make", "-s", "teardown"], cwd=REPO, stdin=subprocess.DEVNULL, timeout=600)
