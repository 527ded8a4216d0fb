"""The §VI cost search over cloud configurations, with TeraSort's stage model fitted on a recorded run."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.models import cost, iomodel

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"


@pytest.fixture(scope="module")
def models():
    bandwidths = iomodel.bandwidths_for([RUNS / "fio-sweep"])
    return iomodel.fit(iomodel.configurations(RUNS / "terasort-hdd"), bandwidths)


def _search(models, deadline_s, **kwargs):
    return cost.search(models, cost.load_prices(), "gcp", deadline_s, cores=[1, 2, 4], disk_kinds=["hdd", "ssd"],
                       sizes_gb=[10, 100, 1000], **kwargs)


def test_every_configuration_priced_from_its_predicted_time(models):
    table = _search(models, deadline_s=60)
    assert len(table) == 3 * 6 * 6
    prices = cost.load_prices()
    for row in table.sample(10, random_state=1).to_dict("records"):
        disks = [cost.CloudDisk(row["hdfs_disk"], row["hdfs_gb"]), cost.CloudDisk(row["local_disk"], row["local_gb"])]
        assert row["hourly_usd"] == pytest.approx(cost.hourly_cost(prices, "gcp", 1, row["cores"], disks))
        assert row["cost_usd"] == pytest.approx(row["hourly_usd"] * row["predicted_s"] / 3600)


def test_bigger_cloud_disks_are_faster_until_cpu_bound(models):
    table = _search(models, deadline_s=60)
    hdd = table[(table["cores"] == 2) & (table["hdfs_disk"] == "hdd") & (table["local_disk"] == "hdd")
                & (table["hdfs_gb"] == table["local_gb"])].sort_values("hdfs_gb")
    times = hdd["predicted_s"].tolist()
    assert times == sorted(times, reverse=True) and times[0] > times[-1]
    # a 10 GB standard disk gives 1.2 MB/s and 7.5 IOPS: the I/O limit dominates
    assert times[0] > 2 * times[-1]


def test_cheapest_meeting_the_deadline(models):
    table = _search(models, deadline_s=12)
    best = cost.cheapest(table)
    assert best is not None and best["predicted_s"] <= 12
    meeting = table[table["predicted_s"] <= 12]
    assert best["cost_usd"] == pytest.approx(meeting["cost_usd"].min())
    # a deadline nothing meets, and disks that must hold 100 GB
    assert cost.cheapest(_search(models, deadline_s=0.1)) is None
    assert (_search(models, deadline_s=12, min_hdfs_gb=100)["hdfs_gb"] >= 100).all()
