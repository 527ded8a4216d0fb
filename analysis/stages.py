"""Stage identity: which Spark stage of one run is which stage of another (metrics layer, takes tables).

Stage ids are not deterministic: TPC-H submits a query's broadcast stages from concurrent threads, so the same
scan gets another id in another run. What the stage is does not change: its application (by start order within
the workload run), job group (TPC-H's query), call site, task count, and among stages equal in all of these, its
rank by what it read and wrote (ties: submission order). Every page and model that matches stages across runs,
or names an application by its order, uses this module.
"""
from __future__ import annotations

import pandas as pd

# A stage attempt's rows within one run (attempts are summed under it).
STAGE_KEY = ["app", "stage_id", "name"]
# A stage across runs.
STAGE_IDENTITY = ["app", "job_group", "name", "num_tasks", "ordinal"]
IDENTITY_ORDER = ["input_bytes", "shuffle_read_bytes", "shuffle_write_bytes", "output_bytes", "submitted_ms"]


def application_order(stages: pd.DataFrame) -> pd.DataFrame:
    """workload_id, app_id, app: each Spark application's rank (1, 2, ...) by its first stage's submission within
    its workload run (GATK4 and K-means run several applications one after the other)."""
    if stages.empty or "submission_time_ms" not in stages:
        return pd.DataFrame({"workload_id": pd.Series(dtype=str), "app_id": pd.Series(dtype=str),
                             "app": pd.Series(dtype=int)})
    first = stages.groupby(["workload_id", "app_id"])["submission_time_ms"].min().reset_index()
    first["app"] = first.groupby("workload_id")["submission_time_ms"].rank(method="dense").astype(int)
    return first[["workload_id", "app_id", "app"]]


def with_application_order(stages: pd.DataFrame) -> pd.DataFrame:
    """`stages` (index kept) with the `app` column of application_order; stages without a workload_id column are
    one workload run's."""
    keyed = stages if "workload_id" in stages else stages.assign(workload_id="")
    order = application_order(keyed).set_index(["workload_id", "app_id"])["app"]
    app = order.reindex(pd.MultiIndex.from_frame(keyed[["workload_id", "app_id"]])).to_numpy()
    return stages.assign(app=app.astype(int) if len(app) and not pd.isna(app).any() else app)


def with_identity(rows: pd.DataFrame) -> pd.DataFrame:
    """`ordinal`: the rank of each stage among the stages of its run with the same application, job group,
    name and task count, ordered by IDENTITY_ORDER (so the identity does not depend on stage ids). `rows`: one
    workload run's stages, attempts summed (STAGE_KEY plus job_group, num_tasks and the IDENTITY_ORDER columns)."""
    rows = rows.assign(num_tasks=rows["num_tasks"].fillna(0).astype(int), job_group=rows["job_group"].fillna(""))
    ranked = rows.sort_values(IDENTITY_ORDER + ["stage_id"], kind="stable")
    ordinal = ranked.groupby(["app", "job_group", "name", "num_tasks"], dropna=False).cumcount()
    return rows.assign(ordinal=ordinal.reindex(rows.index).astype(int))


# Columns a stage's attempts add up to, where the stages table has them.
SUMMED_COLUMNS = ["duration_s", "input_bytes", "output_bytes", "shuffle_read_bytes", "shuffle_write_bytes",
                  "memory_spilled_bytes", "disk_spilled_bytes", "executor_run_time_s", "executor_cpu_time_s",
                  "failed_tasks"]


def stage_summary(stages: pd.DataFrame) -> pd.DataFrame:
    """One row per stage of each workload run, its attempts summed (SUMMED_COLUMNS; `attempts`; `sql`: a Spark SQL
    stage), with its application's order (`app`), its identity (`ordinal`, with_identity) and `place`, the stage as
    a finding or a page names it: `app 1 sortByKey at TeraSortSpark.java:115 #1` (never a stage or application id)."""
    if stages.empty:
        return pd.DataFrame()
    stages = stages.assign(sql=stages["sql_execution_id"].notna() if "sql_execution_id" in stages else False)
    rows = with_application_order(stages).groupby(["workload_id", "app_id", "app", "stage_id", "name"],
                                                  dropna=False).agg(
        num_tasks=("num_tasks", "max"), job_group=("job_group", "first"), submitted_ms=("submission_time_ms", "min"),
        attempts=("attempt", "nunique"), sql=("sql", "any"),
        **{column: (column, "sum") for column in SUMMED_COLUMNS if column in stages}).reset_index()
    rows = pd.concat([with_identity(run) for _, run in rows.groupby("workload_id")], ignore_index=True)
    return rows.assign(place=[f"app {a} {n} #{o + 1}" for a, n, o in zip(rows["app"], rows["name"], rows["ordinal"])])
