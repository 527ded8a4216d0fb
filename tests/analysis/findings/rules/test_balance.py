"""Balance across nodes and devices (analysis/findings/rules/balance.py, docs/findings.md): `imbalance`
on the recorded placement-matrix run (tests/fixtures/runs/terasort-matrix: TeraSort on Spark, HDFS and local dirs
on hdd or ssd, one run each).

The recorded run has one host: the test adds a second worker and says how much it moved."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import findings_of, fired_on

HDD_HDD = "terasort-hdfs_hdd-local_hdd"


def _second_host(matrix_tables, share: float) -> dict:
    """The recorded run as if a second worker had the same devices and moved `share` of the first's bytes."""
    devices = pd.concat([matrix_tables["devices"], matrix_tables["devices"].assign(host="worker2")], ignore_index=True)
    other = matrix_tables["disk_totals"].assign(host="worker2")
    other[["read_bytes", "write_bytes"]] = (other[["read_bytes", "write_bytes"]] * share).round()
    totals = pd.concat([matrix_tables["disk_totals"], other], ignore_index=True)
    return dict(matrix_tables, devices=devices, disk_totals=totals)


def test_imbalance_across_nodes(matrix_tables):
    assert fired_on(findings_of(matrix_tables), "imbalance") == set()   # recorded: one host, one device per backend
    # changed: a second worker whose devices moved a fifth of the first's bytes
    table = findings_of(_second_host(matrix_tables, 0.2))
    assert HDD_HDD in fired_on(table, "imbalance")
    row = table[(table["rule"] == "imbalance") & (table["workload_id"] == HDD_HDD)].iloc[0]
    assert row["host"] == "localhost" and json.loads(row["values"])["max_over_mean"] == pytest.approx(1 / 0.6, rel=1e-3)
    # 1.11 x the mean: balanced enough
    assert fired_on(findings_of(_second_host(matrix_tables, 0.8)), "imbalance") == set()
