"""The namenode-ops collector's snapshots of the NameNode's operation counters (`namenode.start` / `namenode.stop`,
JSON: `epoch`, `address`, `beans`), and their difference over the workload's window: one row per bean and counter.

The beans are Hadoop's `NameNodeActivity` (cumulative counts since the NameNode started: `CreateFileOps`,
`FilesCreated`, `FilesRenamed`, `GetListingOps`, `FileInfoOps`, `DeleteFileOps`, `AddBlockOps`, ...) and
`RpcDetailedActivityForPort<port>` (per RPC method: `<Method>NumOps`, cumulative calls, and `<Method>AvgTime`, ms, the
mean over the metrics system's last interval). A count's window figure is stop minus start; a mean time does not
difference into a window, so its row keeps the stop's value and `delta` is empty. Hadoop's metrics list
(hadoop-project-dist/hadoop-common/Metrics.html) documents both. A counter that is 0 in both snapshots is left out
(the RPC bean lists every method of the protocol, most never called): a counter without a row did not move.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from .. import safeio

COLUMNS = ["bean", "counter", "unit", "start", "stop", "delta", "window_s"]
# A counter whose name ends so is a mean (ms) of the last metrics interval, not a count.
MEAN_SUFFIX = "AvgTime"


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


def window_deltas(start: Path, stop: Path) -> pd.DataFrame:
    """The window's counters (stop minus start; a mean time as the stop took it), with the window's length."""
    # Both read before either is parsed: a stop the read rules refuse is recorded as refused, whatever the start holds.
    texts = [safeio.read_bytes(path, "namenode-ops") for path in (start, stop)]
    (epoch0, before), (epoch1, after) = _beans(start, texts[0]), _beans(stop, texts[1])
    rows = []
    for bean, counters in sorted(after.items()):
        for counter, value in sorted(counters.items()):
            mean = counter.endswith(MEAN_SUFFIX)
            was = before.get(bean, {}).get(counter, math.nan)
            if value == 0 and was in (0, 0.0):
                continue
            delta = math.nan if mean else value - was
            if not mean and delta < 0:
                raise ValueError(f"{bean}.{counter} went down between start and stop ({was:g} to {value:g}): the "
                                 "NameNode restarted inside the window")
            rows.append({"bean": bean, "counter": counter, "unit": "ms" if mean else "operations", "start": was,
                         "stop": value, "delta": delta, "window_s": epoch1 - epoch0})
    return pd.DataFrame(rows, columns=COLUMNS)
