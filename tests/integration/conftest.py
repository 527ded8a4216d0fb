"""Integration tests share the local default cluster; it is torn down once, after the last of them."""
import subprocess
from pathlib import Path

import pytest

from spillway import REPO


@pytest.fixture(scope="session", autouse=True)
def teardown_local_cluster_at_the_end(require_setup):
    require_setup("local")
    yield
    subprocess.run(["make", "-s", "teardown"], cwd=REPO, stdin=subprocess.DEVNULL, timeout=600)


# The one bench of local that leaves the cluster on a placement of its own (test_experiments.py: the local dirs moved
# to the hdd) runs after every other: run before them, it cost the next bench a placement switch back (31 s here on
# 2026-11-27, up to 50 s in CI). A stable sort: every other test keeps its place.
LEAVES_ANOTHER_PLACEMENT = Path(__file__).with_name("test_experiments.py")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.path == LEAVES_ANOTHER_PLACEMENT)
