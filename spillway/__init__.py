"""Spillway harness: inventory validation, the bench runner, run directories and manifests."""
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INVENTORIES = REPO / "inventories"
WORKLOADS = REPO / "workloads"
COLLECTORS = REPO / "collectors"
PLAYBOOKS = REPO / "playbooks"
# Where runs are written and read: the run-directory layout the harness shares with the analysis.
from run_layout import RESULTS_DIR  # noqa: E402

RESULTS = RESULTS_DIR
