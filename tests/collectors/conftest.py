"""The collectors are scripts, not a package: make their modules importable by the tests."""
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
for folder in ("lib", "iostat", "blocktrace"):
    sys.path.insert(0, str(REPO / "collectors" / folder))


@pytest.fixture
def fixtures() -> Path:
    return REPO / "tests" / "fixtures" / "collectors"
