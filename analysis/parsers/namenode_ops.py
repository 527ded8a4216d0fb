"""The namenode-ops collector's snapshots of the NameNode's operation counters (`namenode.start` / `namenode.stop`,
JSON: `epoch`, `address`, `beans`), and their difference over the workload's window: one row per bean and counter.

The beans are Hadoop's `NameNodeActivity` and `RpcDetailedActivityForPort<port>` (Hadoop's metrics list,
hadoop-project-dist/hadoop-common/Metrics.html). Their attributes are of three kinds, told apart by name:
- **counts** since the NameNode started (`CreateFileOps`, `FilesCreated`, `FilesRenamed`, `GetListingOps`,
  `FileInfoOps`, `GetBlockLocations`, every `<Method>NumOps`, ...): the window's figure is stop minus start, and a
  count that went down means the NameNode restarted inside the window, which is refused rather than guessed;
- **mean times** (`<Method>AvgTime`, ms, the mean over the metrics system's last interval) and
- **gauges** (`BlockOpsQueued`, `DeleteBlocksQueued`, `PendingDeleteBlocksCount`, `PendingEditsCount`,
  `SafeModeTime`, `FsImageLoadTime`, ...: a level, not a total; the blocks queued for deletion fall as they go):
  neither differences into a window, so their rows keep the stop's value and `delta` is empty.
An attribute that is 0 in both snapshots is left out (the RPC bean lists every method of the protocol, most never
called): a count without a row did not move.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from .. import safeio

COLUMNS = ["bean", "counter", "unit", "start", "stop", "delta", "window_s"]
# A counter whose name ends so is a mean (ms) of the last metrics interval, not a count.
MEAN_SUFFIX = "AvgTime"
# Counts: NameNodeMetrics' operation counters (`...Ops`, `Files...`, the RPC methods' `...NumOps`) and the counters
# named otherwise; every other attribute is a gauge.
COUNT_SUFFIX, COUNT_PREFIX = "Ops", "Files"
COUNTS = frozenset({"GetBlockLocations", "SuccessfulReReplications", "NumTimesReReplicationNotScheduled",
                    "TimeoutReReplications", "TransactionsBatchedInSync"})


def kind(counter: str) -> str:
    """`count`, `mean` (ms) or `gauge`, by the attribute's name (module docstring)."""
    if counter.endswith(MEAN_SUFFIX):
        return "mean"
    if counter.endswith(COUNT_SUFFIX) or counter.startswith(COUNT_PREFIX) or counter in COUNTS:
        return "count"
    return "gauge"


def _beans(path: Path, text: bytes) -> tuple[float, dict[str, dict[str, float]]]:
    """(the snapshot's epoch, {bean: {counter: value}}) with the bean's short name (`NameNodeActivity`)."""
    document = safeio.load_json(text, str(path))
    if not isinstance(document, dict) or not isinstance(document.get("beans"), list):
        raise ValueError(f"{path.name}: not a namenode-ops snapshot (a JSON object with `epoch` and `beans`)")
    epoch = document.get("epoch")
    if isinstance(epoch, bool) or not isinstance(epoch, (int, float)) or not math.isfinite(epoch):
        raise ValueError(f"{path.name}: `epoch` is no finite number")
    beans = {}
    for bean in document["beans"]:
        if not isinstance(bean, dict):
            continue
        name = str(bean.get("name", "")).rsplit("name=", 1)[-1]
        beans[name] = {key: float(value) for key, value in bean.items() if key != "name"
                       and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)}
    return float(epoch), beans


UNITS = {"count": "operations", "mean": "ms", "gauge": "value"}


def window_deltas(start: Path, stop: Path) -> pd.DataFrame:
    """The window's counts (stop minus start; a mean time or a gauge as the stop took it), with its length."""
    # Both read before either is parsed: a stop the read rules refuse is recorded as refused, whatever the start holds.
    texts = [safeio.read_bytes(path, "namenode-ops") for path in (start, stop)]
    (epoch0, before), (epoch1, after) = _beans(start, texts[0]), _beans(stop, texts[1])
    rows = []
    for bean, counters in sorted(after.items()):
        for counter, value in sorted(counters.items()):
            was = before.get(bean, {}).get(counter, math.nan)
            if value == 0 and was in (0, 0.0):
                continue
            counted = kind(counter)
            delta = value - was if counted == "count" else math.nan
            if delta < 0:
                raise ValueError(f"{bean}.{counter} went down between start and stop ({was:g} to {value:g}): the "
                                 "NameNode restarted inside the window")
            rows.append({"bean": bean, "counter": counter, "unit": UNITS[counted], "start": was,
                         "stop": value, "delta": delta, "window_s": epoch1 - epoch0})
    return pd.DataFrame(rows, columns=COLUMNS)
