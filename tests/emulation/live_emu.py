"""The live emulated cluster `emu` for tests: shell helper and the cluster's name (fixture `emu` in conftest.py)."""
import subprocess

from spillway import REPO

CLUSTER = "emu"


def sh(*argv, check=True, timeout=300):
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"{' '.join(argv)}:\n{result.stdout}\n{result.stderr}"
    return result
