"""Dollar cost of a run and the cheapest configuration that meets a deadline.

Two models:
- the I/O-aware model paper's §VI (`doppio-io-aware-spark-model-gatk4.txt`): Cost = f(P, disk types, disk size for
  HDFS, disk size for the local dirs, time), time from the fitted stage model (iomodel) with each cloud disk's
  bandwidth a function of its size; searched exhaustively over the discrete space (small enough to enumerate,
  so no gradient descent is needed);
- the AWS paper's 2-IO sort (`aws-virtualized-io-100tb-sort.txt`, Eqs. 1-7): I/O-bound map+shuffle and
  sort+reduce passes, cost = hourly price x time.
Prices: analysis/models/prices.yml (format in docs/models.md).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from .iomodel import Bandwidths, Target, predict

PRICES_FILE = Path(__file__).resolve().parent / "prices.yml"


def load_prices(path: Path | None = None) -> dict:
    return yaml.safe_load(Path(path or PRICES_FILE).read_text())


# ---------------------------------------------------------------- the I/O-aware model paper, §VI

@dataclass(frozen=True)
class CloudDisk:
    kind: str        # disk type of the provider (`hdd`, `ssd`)
    size_gb: float

    @property
    def profile(self) -> str:
        """A storage-profile name for the model's bandwidth lookup."""
        return f"{self.kind}-{self.size_gb:g}GB"


def hourly_cost(prices: dict, provider: str, nodes: int, cores: int, disks: list[CloudDisk]) -> float:
    """$ per hour of the cluster: per node, P vCPUs and its disks (GB-month prices spread over the month's hours)."""
    spec = prices["providers"][provider]
    per_disk = sum(d.size_gb * spec["disks"][d.kind]["per_gb_month"] for d in disks) / prices["hours_per_month"]
    return nodes * (cores * spec["vm"]["per_vcpu_hour"] + per_disk)


def run_cost(hourly: float, seconds: float) -> float:
    return hourly * seconds / 3600.0


def disk_caps(prices: dict, provider: str, disk: CloudDisk) -> dict:
    """Size-dependent limits of a cloud disk in the form of a storage profile (bytes/s and IOPS)."""
    spec = prices["providers"][provider]["disks"][disk.kind]
    return {f"{d}_{unit}": spec[f"{d}_{unit}_per_gb"] * disk.size_gb
            for d in ("read", "write") for unit in ("bytes_per_s", "iops")}


def cloud_bandwidths(prices: dict, provider: str, disks: list[CloudDisk]) -> Bandwidths:
    """Bandwidths of cloud disks: min(bytes/s, IOPS x request size), both growing with the disk's size."""
    caps = {}
    for disk in disks:
        limits = disk_caps(prices, provider, disk)
        caps[disk.profile] = {"read_bps": limits["read_bytes_per_s"], "write_bps": limits["write_bytes_per_s"],
                              "read_iops": limits["read_iops"], "write_iops": limits["write_iops"]}
    return Bandwidths(caps=caps)


def search(models: dict, prices: dict, provider: str, deadline_s: float, cores: list[int], disk_kinds: list[str],
           sizes_gb: list[float], nodes: int = 1, min_hdfs_gb: float = 0.0, min_local_gb: float = 0.0) -> pd.DataFrame:
    """Every configuration (P, HDFS disk type and size, local disk type and size) with its predicted time
    (sum of the predicted stage times of all fitted workloads) and cost, cheapest first; `meets_deadline`
    marks those within the deadline. Disks smaller than what they must hold are left out."""
    rows = []
    hdfs_disks = [CloudDisk(k, s) for k in disk_kinds for s in sizes_gb if s >= min_hdfs_gb]
    local_disks = [CloudDisk(k, s) for k in disk_kinds for s in sizes_gb if s >= min_local_gb]
    for p, hdfs, local in itertools.product(cores, hdfs_disks, local_disks):
        bandwidths = cloud_bandwidths(prices, provider, [hdfs, local])
        # separate disks even when of the same kind and size: name them apart
        local_profile = local.profile + ("-local" if local == hdfs else "")
        bandwidths.caps[local_profile] = bandwidths.caps[local.profile]
        seconds = float(predict(models, Target(hdfs.profile, local_profile, p, nodes), bandwidths)["predicted_s"].sum())
        hourly = hourly_cost(prices, provider, nodes, p, [hdfs, local])
        rows.append({"cores": p, "hdfs_disk": hdfs.kind, "hdfs_gb": hdfs.size_gb, "local_disk": local.kind,
                     "local_gb": local.size_gb, "predicted_s": seconds, "hourly_usd": hourly,
                     "cost_usd": run_cost(hourly, seconds), "meets_deadline": seconds <= deadline_s})
    frame = pd.DataFrame(rows)
    return frame.sort_values(["meets_deadline", "cost_usd"], ascending=[False, True], ignore_index=True) \
        if not frame.empty else frame


def cheapest(table: pd.DataFrame) -> dict | None:
    """The cheapest configuration meeting the deadline, None when none does."""
    meeting = table[table["meets_deadline"]] if not table.empty else table
    return None if meeting.empty else meeting.iloc[0].to_dict()


# ---------------------------------------------------------------- the AWS paper's 2-IO sort, Eqs. 1-7

def map_shuffle_s(map_in_bytes: float, map_out_bytes: float, read_bytes_per_s: float, write_bytes_per_s: float,
                  network_bytes_per_s: float = math.inf) -> float:
    """Eq. 1: T1 = max(M_in / B_read, M_out / B_network, M_out / B_write) (per node)."""
    return max(map_in_bytes / read_bytes_per_s, map_out_bytes / network_bytes_per_s, map_out_bytes / write_bytes_per_s)


def sort_reduce_s(map_out_bytes: float, reduce_out_bytes: float, read_bytes_per_s: float,
                  write_bytes_per_s: float) -> float:
    """Eq. 3: T2 = max(M_out / B_read, R_out / B_write) (per node)."""
    return max(map_out_bytes / read_bytes_per_s, reduce_out_bytes / write_bytes_per_s)


def sort_s(data_bytes: float, read_bytes_per_s: float, write_bytes_per_s: float,
           network_bytes_per_s: float = math.inf) -> float:
    """Eqs. 2, 4-6: sorting D bytes per node, B_storage = min(B_read, B_write):
    T = max(D / B_storage, D / B_network) + D / B_storage."""
    storage = min(read_bytes_per_s, write_bytes_per_s)
    return (map_shuffle_s(data_bytes, data_bytes, storage, storage, network_bytes_per_s)
            + sort_reduce_s(data_bytes, data_bytes, storage, storage))


def sort_cost(hourly_usd: float, data_bytes: float, storage_bytes_per_s: float,
              network_bytes_per_s: float = math.inf) -> float:
    """Eq. 7: C = C_hourly x T, for one node sorting D bytes."""
    return run_cost(hourly_usd, sort_s(data_bytes, storage_bytes_per_s, storage_bytes_per_s, network_bytes_per_s))


def cluster_sort(total_bytes: float, instance: dict, network_bytes_per_s: float = math.inf) -> dict:
    """A sort of `total_bytes` on the fewest instances that hold input, intermediate and output (3x, §4.2.3):
    nodes, per-node data, time (Eq. 6) and total cost (nodes x Eq. 7)."""
    nodes = math.ceil(3 * total_bytes / (instance["storage_gb"] * 1e9))
    per_node = total_bytes / nodes
    seconds = sort_s(per_node, instance["storage_bytes_per_s"], instance["storage_bytes_per_s"], network_bytes_per_s)
    return {"nodes": nodes, "per_node_bytes": per_node, "time_s": seconds,
            "cost_usd": nodes * sort_cost(instance["hourly"], per_node, instance["storage_bytes_per_s"],
                                          network_bytes_per_s)}
