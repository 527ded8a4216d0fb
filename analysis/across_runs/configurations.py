"""The configurations compared: per-run frames tagged with their run and labelled with what tells their
configuration apart (across_runs' docstring), and the configurations' order, the baseline first."""
from __future__ import annotations

import pandas as pd

from .. import metrics
from .runs import Run


def with_configuration(runs: list[Run], frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate per-run frames that carry placement_hdfs/placement_local/executor_cores, adding `run_id`
    and the column label `configuration` (run label + placement and P where those vary)."""
    tagged = [f.assign(run_id=r.run_id, run_label=r.label,
                       hdfs_profile=f["placement_hdfs"].map(r.profile), local_profile=f["placement_local"].map(r.profile))
              for r, f in zip(runs, frames) if not f.empty]
    if not tagged:
        return pd.DataFrame()
    frame = pd.concat(tagged, ignore_index=True)
    clusters = frame["run_id"].map({r.run_id: str(r.manifest.get("cluster", "?")) for r in runs})
    labels = clusters if clusters.nunique() > 1 else pd.Series("", index=frame.index)
    placement = "HDFS " + frame["hdfs_profile"] + ", local " + frame["local_profile"]
    cores = frame["executor_cores"].map(lambda p: "default P" if pd.isna(p) else f"P={int(p)}")
    for part in (placement, cores):
        # a part joins the label only where the label so far does not already tell the configurations apart
        if part.groupby(labels).nunique().max() > 1:
            labels = (labels + " · " + part).str.strip(" ·")
    # two runs alike in all of these (a rerun, another commit) are told apart by their ids
    ambiguous = labels.eq("") | frame.groupby(labels)["run_id"].transform("nunique").gt(1)
    frame["configuration"] = labels.where(~ambiguous, (labels + " · " + frame["run_id"]).str.strip(" ·"))
    return frame


def configuration_order(frame: pd.DataFrame, runs: list[Run]) -> list[str]:
    """Configurations in RUNS order (the first is the baseline), then placement and P order inside a run."""
    if frame.empty:
        return []
    order = {r.run_id: i for i, r in enumerate(runs)}
    keys = frame.drop_duplicates("configuration").assign(_run=lambda f: f["run_id"].map(order))
    keys = keys.sort_values(["_run", "placement_hdfs", "placement_local", "executor_cores"], na_position="first")
    return keys["configuration"].tolist()


def measured_configurations(runs: list[Run]) -> pd.DataFrame:
    """Every measured workload run of the runs (metrics.measured_runs), labelled with its configuration."""
    return with_configuration(runs, [metrics.measured_runs(r.tables["workloads"]) for r in runs])
