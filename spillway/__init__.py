"""Spillway harness: inventory validation, the bench runner, run directories and manifests."""
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INVENTORIES = REPO / "inventories"
WORKLOADS = REPO / "workloads"
COLLECTORS = REPO / "collectors"
PLAYBOOKS = REPO / "playbooks"
RESULTS = REPO / "results"
