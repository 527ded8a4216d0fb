"""Storage-relevant Spark configuration as the applications ran with it (docs/findings.md: `storage-config`)."""
from __future__ import annotations
