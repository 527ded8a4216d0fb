"""The I/O-aware model's terms: the I/O paths a stage moves data on, and the paper's equations (Doppio, §III-IV)
as functions of numbers."""
from __future__ import annotations

# I/O path -> (stage table column, placement role, direction, fio pattern that resembles it). HDFS moves
# whole blocks sequentially; shuffle and spill files are read in pieces scattered over many map outputs.
# Spark's disk spill is written and read back once, so it counts in both directions.
PATHS = {
    "hdfs_read": ("input_bytes", "hdfs", "read", "read"),
    "hdfs_write": ("output_bytes", "hdfs", "write", "write"),
    "shuffle_read": ("shuffle_read_bytes", "local", "read", "randread"),
    "shuffle_write": ("shuffle_write_bytes", "local", "write", "randwrite"),
    "spill_read": ("disk_spilled_bytes", "local", "read", "randread"),
    "spill_write": ("disk_spilled_bytes", "local", "write", "randwrite"),
}
ROLES = ("hdfs", "local")
DIRECTIONS = ("read", "write")


def shuffle_read_request_bytes(per_reducer_bytes: float, map_outputs: int) -> float:
    """Bytes one reducer fetches from one map output (§III-C2: 27 MB per reducer / 973 map outputs ≈ 30 KB)."""
    return per_reducer_bytes / map_outputs


def io_limit_s(data_bytes: float, nodes: int, bandwidth_bytes_per_s: float, delta_s: float = 0.0) -> float:
    """t_io_limit = D / (N * BW) + delta (Eq. 1)."""
    return data_bytes / (nodes * bandwidth_bytes_per_s) + delta_s


def waves(tasks: int, nodes: int, cores: int) -> float:
    """M / (N * P), at least one wave: with fewer tasks than slots a stage still takes one task time."""
    return tasks / min(nodes * cores, tasks) if tasks else 0.0


def scale_time_s(tasks: int, nodes: int, cores: int, t_avg_s: float, delta_scale_s: float) -> float:
    """t_scale = M / (N * P) * t_avg + delta_scale (Eq. 1)."""
    return waves(tasks, nodes, cores) * t_avg_s + delta_scale_s

