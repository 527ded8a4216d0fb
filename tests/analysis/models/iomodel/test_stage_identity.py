"""Stages are paired across runs by what they are, not by their stage id: TPC-H submits a query's broadcast
scans from concurrent threads, so two runs number the same scans differently."""
from __future__ import annotations

import pandas as pd
import pytest

from analysis.models.iomodel.bandwidths import Bandwidths
from analysis.models.iomodel.configurations import Configuration, stage_rows
from analysis.models.iomodel.evaluation import error_summary, measured_stage_times, stage_label, with_errors
from analysis.models.iomodel.fit_predict import Target, fit, predict
from analysis.stages import STAGE_IDENTITY

# (job group, name, tasks, input bytes, seconds): q02's three concurrent scans, one of them with 2 tasks, then
# two table loads alike in everything (told apart by submission order only).
STAGES = [("load", "parquet at TpchSpark.java:70", 1, 0, 2.0),
          ("load", "parquet at TpchSpark.java:70", 1, 0, 0.2),
          ("q02", "$anonfun$withThreadLocalCaptured$1", 1, 1_736, 0.5),
          ("q02", "$anonfun$withThreadLocalCaptured$1", 1, 2_056, 0.7),
          ("q02", "$anonfun$withThreadLocalCaptured$1", 2, 94_538, 1.3),
          ("q02", "collectAsList at TpchSpark.java:84", 2, 761_322, 1.6)]


def _stage_table(order: list[int]) -> pd.DataFrame:
    """The stages of one run, stage ids given in `order` (stage id i is STAGES[order[i]])."""
    rows = []
    for stage_id, which in enumerate(order):
        group, name, tasks, input_bytes, seconds = STAGES[which]
        rows.append({"app_id": "application_1_0001", "stage_id": stage_id, "name": name, "num_tasks": tasks,
                     "job_group": group, "submission_time_ms": 1_000 + 10 * stage_id, "duration_s": seconds,
                     "executor_run_time_s": seconds * tasks, "executor_cpu_time_s": seconds * tasks / 2,
                     "shuffle_remote_bytes_read": 0, "input_bytes": input_bytes, "output_bytes": 0,
                     "shuffle_read_bytes": 0, "shuffle_write_bytes": 0, "disk_spilled_bytes": 0})
    return pd.DataFrame(rows)


def _configuration(run_id: str, order: list[int]) -> Configuration:
    return Configuration(run_id=run_id, workload_id="tpch-p2", workload="tpch", sweep="", hdfs="ssd",
                                 local="ssd", cores=2, nodes=1, run_s=10.0,
                                 stages=stage_rows(_stage_table(order)), traced=False)


def test_identity_does_not_depend_on_stage_ids():
    first = _configuration("a", [0, 1, 2, 3, 4, 5]).stages
    second = _configuration("b", [0, 1, 4, 3, 2, 5]).stages   # q02's scans submitted in another order
    key = STAGE_IDENTITY
    assert not first[key].duplicated().any()
    paired = first.merge(second, on=key, how="left", suffixes=("", "_b"))
    assert paired["input_bytes"].tolist() == paired["input_bytes_b"].tolist()
    assert paired["duration_s"].tolist() == paired["duration_s_b"].tolist()
    assert paired["stage_id"].tolist() != paired["stage_id_b"].tolist()


def test_prediction_pairs_the_same_stage_in_a_run_with_swapped_ids():
    """Fitted on one run (one P: t_scale reproduces its own stage times) and compared with a run of the same
    configuration whose stage ids are permuted: every stage finds its own measurement, so every error is 0.
    Matched by stage id, the 0.5 s scan would be compared with the 1.3 s one."""
    profile = _configuration("a", [0, 1, 2, 3, 4, 5])
    measured = _configuration("b", [0, 1, 4, 3, 2, 5])
    bandwidths = Bandwidths(caps={"ssd": {"read_bps": 1e9, "write_bps": 1e9}})
    models = fit([profile], bandwidths)
    target = Target("ssd", "ssd", 2, 1)
    joined = with_errors(predict(models, target, bandwidths),
                                 measured_stage_times([measured], target))
    assert joined["measured_s"].notna().all() and len(joined) == len(STAGES)
    assert joined["error_pct"].tolist() == pytest.approx([0.0] * len(STAGES), abs=1e-9)
    moved = joined[joined["stage_id"] != joined["measured_stage_id"]]
    assert sorted(moved["stage_id"]) == [2, 4]
    assert stage_label(moved.iloc[0].to_dict()) == f"app 1 s{int(moved.iloc[0]['measured_stage_id'])}"


def test_error_figures_over_long_stages_and_time_weighted():
    """Every stage counts in `all`; `long` only the stages measured at min_stage_s or longer; the weighted
    error is sum |predicted - measured| / sum measured."""
    joined = pd.DataFrame({"workload": "tpch", "sweep": "", "app": 1, "stage_id": [0, 1, 2], "name": "x",
                           "predicted_s": [0.2, 2.2, 9.0], "measured_s": [0.1, 2.0, 10.0]})
    joined["error_pct"] = 100 * (joined["predicted_s"] - joined["measured_s"]) / joined["measured_s"]
    app = error_summary(joined, min_stage_s=1.0)["workloads"][0]
    assert app["all"]["stages"] == 3 and app["all"]["worst_abs_error_pct"] == pytest.approx(100.0)
    assert app["long"]["stages"] == 2 and app["long"]["median_abs_error_pct"] == pytest.approx(10.0)
    assert app["long"]["worst_abs_error_pct"] == pytest.approx(10.0)
    assert app["long"]["weighted_error_pct"] == pytest.approx(100 * (0.2 + 1.0) / 12.0)
    assert app["all"]["weighted_error_pct"] == pytest.approx(100 * (0.1 + 0.2 + 1.0) / 12.1)
    none = error_summary(joined, min_stage_s=60.0)["workloads"][0]["long"]
    assert none == {"stages": 0, "median_abs_error_pct": None, "worst_abs_error_pct": None, "weighted_error_pct": None}


def test_stage_time_by_cores_pairs_stages_by_identity():
    """metrics.stage_time_by_cores over two P=2 repetitions whose scans got other stage ids: each stage's median
    is over its own two measurements (matched by id, the 0.5 s scan would share a row with the 1.3 s one), and
    it is shown with its id in the first repetition."""
    from analysis import metrics
    from analysis.parsers.manifest import workloads_table

    def repetition(wid: str, rep: int) -> dict:
        return {"id": wid, "workload": "tpch", "repetition": rep, "warmup": False, "scale": "tiny", "status": "ok",
                "parameters": {}, "placement": {"hdfs": "ssd", "local": "ssd"}, "executor_cores": 2,
                "started_at": "2026-11-21T10:00:00Z", "ended_at": "2026-11-21T10:01:00Z",
                "steps": [{"name": f"{wid}: run", "status": "ok", "duration_s": 10.0}]}

    table = workloads_table({"storage": {"placement": {"hdfs": "ssd", "local": "ssd"}},
                             "workloads": [repetition("tpch-p2", 1), repetition("tpch-p2-r2", 2)]})
    first, second = _stage_table([0, 1, 2, 3, 4, 5]), _stage_table([0, 1, 4, 3, 2, 5])
    second = second.assign(duration_s=second["duration_s"] * 1.5)
    stages = pd.concat([first.assign(workload_id="tpch-p2"), second.assign(workload_id="tpch-p2-r2")])
    by_cores = metrics.stage_time_by_cores(stages, table).set_index("stage_id")
    assert len(by_cores) == len(STAGES) and (by_cores["runs"] == 2).all()
    for stage_id, (_group, _name, _tasks, _bytes, seconds) in enumerate(STAGES):
        assert by_cores.loc[stage_id, "median"] == pytest.approx(seconds * 1.25)
        assert (by_cores.loc[stage_id, "min"], by_cores.loc[stage_id, "max"]) == pytest.approx((seconds, seconds * 1.5))
