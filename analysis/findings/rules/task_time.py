"""Time within and around Spark's tasks (docs/findings.md: `shuffle-wait`, `unattributed-time`, `idle-cores`,
`driver-time`): where a stage's task time went besides the CPU, how much of the executors' cores the tasks used, and
the time the driver spent outside any task."""
from __future__ import annotations

import math
from typing import Iterable

import pandas as pd

from ...formatting import number
from ...stages import stage_summary, with_application_order
from ..engine import Finding, Inputs, rule

# The storage profiles from slowest to fastest: where a rule suggests moving a path, it names the fastest backend of
# the run's devices (a profile not listed here, e.g. a parallel file system, is never suggested: its speed depends on
# its servers, not on its name)
PROFILE_SPEED = ("hdd", "ssd", "nvme")
TASK_TIMES = ["executor_run_time_s", "executor_cpu_time_s", "jvm_gc_time_s", "shuffle_fetch_wait_s",
              "shuffle_write_time_s"]


# ---------------------------------------------------------------- shared: stages and applications from the tasks

def _stage_tasks(inputs: Inputs, by_host: bool = False) -> pd.DataFrame:
    """One row per stage of a measured workload run (per executor host with `by_host`), from its successful task
    attempts: the TASK_TIMES summed, the longest task, the window from the first launch to the last finish
    (`start_ms`, `end_ms`, `stage_s`), and the stage's place (`place`: application order, name and rank among the run's
    stages of that identity, analysis/stages.py) and I/O (`input_bytes`, `shuffle_read_bytes`, `shuffle_write_bytes`)."""
    tasks = inputs.workload_ids(inputs.table("spark_tasks"))
    stages = inputs.workload_ids(inputs.table("stages"))
    if tasks.empty or stages.empty:
        return pd.DataFrame()
    tasks = tasks[tasks["status"] == "Success"]
    keys = ["workload_id", "app_id", "stage_id"] + (["executor_host"] if by_host else [])
    sums = tasks.groupby(keys)[TASK_TIMES].sum()
    spans = tasks.groupby(keys).agg(tasks=("task_id", "size"), start_ms=("launch_time_ms", "min"),
                                    end_ms=("finish_time_ms", "max"), longest_s=("executor_run_time_s", "max"))
    per_stage = sums.join(spans).reset_index()
    per_stage["stage_s"] = (per_stage["end_ms"] - per_stage["start_ms"]) / 1e3
    places = stage_summary(stages)[["workload_id", "app_id", "stage_id", "app", "name", "place", "input_bytes",
                                    "shuffle_read_bytes", "shuffle_write_bytes"]]
    return per_stage.merge(places, on=["workload_id", "app_id", "stage_id"], how="inner")


def _faster_backend(inputs: Inputs, workload_id: str, path: str) -> tuple[str, str] | None:
    """(the backend `path` (`hdfs` or `local`) was on in `workload_id`, the fastest backend of the run's devices) when
    the latter's profile is faster (PROFILE_SPEED); None when the path is already on the fastest or either is unknown."""
    runs = inputs.table("workloads")
    column = f"placement_{path}"
    if column not in runs:
        return None
    on = runs.loc[runs["workload_id"] == workload_id, column]
    backends = inputs.table("devices").get("backend", pd.Series(dtype=str)).dropna().unique()
    ranked = sorted((PROFILE_SPEED.index(inputs.profile(b)), b) for b in backends if inputs.profile(b) in PROFILE_SPEED)
    if on.empty or not ranked or inputs.profile(on.iloc[0]) not in PROFILE_SPEED:
        return None
    current, fastest = on.iloc[0], ranked[-1][1]
    return (current, fastest) if ranked[-1][0] > PROFILE_SPEED.index(inputs.profile(current)) else None


def _move(inputs: Inputs, workload_id: str, path: str, why: str) -> str:
    """`placement local = ssd (from hdd): <why>`, or empty when the path is on the run's fastest backend already."""
    faster = _faster_backend(inputs, workload_id, path)
    return f"placement {path} = {faster[1]} (from {faster[0]}): {why}" if faster else ""


# ---------------------------------------------------------------- shuffle wait

@rule("shuffle-wait", needs=(("spark_tasks", "shuffle_fetch_wait_s"), ("stages", "name")))
def shuffle_wait(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    per_stage = _stage_tasks(inputs)
    for r in per_stage.to_dict("records") if not per_stage.empty else []:
        run_s, fetch_s, write_s = r["executor_run_time_s"], r["shuffle_fetch_wait_s"], r["shuffle_write_time_s"]
        share = 100 * (fetch_s + write_s) / run_s if run_s > 0 else math.nan
        if r["stage_s"] < limits["stage_min_s"] or not share >= limits["wait_share_min_pct"]:
            continue
        reading = fetch_s >= write_s
        why = (f"{number(fetch_s if reading else write_s, 's', 1)} of the tasks' time "
               f"{'waiting for shuffle blocks' if reading else 'writing shuffle files'} on the local dirs")
        recommendation = _move(inputs, r["workload_id"], "local", why) or (
            "spark.reducer.maxSizeInFlight = 96m (from Spark's 48m): fewer, larger fetches per reducer; " + why
            if reading else "spark.shuffle.file.buffer = 1m (from Spark's 32k): fewer, larger shuffle writes; " + why)
        yield Finding("shuffle-wait", r["workload_id"], r["place"],
                      f"{r['place']}: {number(share, '%', 1)} of its tasks' {number(run_s, 's', 1)} run time on the "
                      f"shuffle: fetch wait {number(fetch_s, 's', 2)}, shuffle write {number(write_s, 's', 2)} "
                      f"({r['tasks']} tasks, stage {number(r['stage_s'], 's', 1)})",
                      {"shuffle_wait_pct": share, "fetch_wait_s": fetch_s, "shuffle_write_s": write_s,
                       "run_s": run_s, "stage_s": r["stage_s"],
                       "stage_share_pct": inputs.stage_share_pct(r["workload_id"], r["stage_s"])},
                      place=(("stage", r["place"]),), recommendation=recommendation)


# ---------------------------------------------------------------- unattributed task time, and what the host's CPU says

@rule("unattributed-time", needs=(("spark_tasks", "executor_cpu_time_s"), ("stages", "name")))
def unattributed_time(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    per_stage = _stage_tasks(inputs, by_host=True)
    cpu = inputs.table("host_cpu")
    for r in per_stage.to_dict("records") if not per_stage.empty else []:
        run_s = r["executor_run_time_s"]
        unattributed_s = run_s - sum(r[c] for c in TASK_TIMES[1:])
        share = 100 * unattributed_s / run_s if run_s > 0 else math.nan
        if r["stage_s"] < limits["stage_min_s"] or not share >= limits["unattributed_min_pct"]:
            continue
        host = r["executor_host"]
        busy, iowait, samples = _host_cpu(cpu, host, r["start_ms"] / 1e3, r["end_ms"] / 1e3)
        contended = samples > 0 and busy >= limits["host_busy_min_pct"]
        if contended:
            cause = (f"most likely CPU contention, not storage: {host}'s CPU was {number(busy, '%', 0)} busy "
                     f"(user, system, nice, steal; iowait {number(iowait, '%', 1)}) over the stage's "
                     f"{samples} s, so its runnable task threads waited for a core")
        elif samples > 0 and iowait >= limits["iowait_min_pct"]:
            cause = (f"I/O wait: {host}'s CPU had room ({number(busy, '%', 0)} busy) and iowait was "
                     f"{number(iowait, '%', 1)} over the stage's {samples} s")
        elif samples > 0:
            cause = (f"neither CPU contention nor iowait shows it ({host} {number(busy, '%', 0)} busy, iowait "
                     f"{number(iowait, '%', 1)} over {samples} s): waits the iowait share does not count (the network, "
                     f"locks, a remote HDFS read) or storage, unconfirmed")
        else:
            cause = f"no CPU sample of {host} over the stage: Sparklens' reading (I/O wait), unconfirmed"
        place = (("stage", r["place"]), ("host", host))
        yield Finding("unattributed-time", r["workload_id"], f"{r['place']} on {host}",
                      f"{r['place']} on {host}: {number(unattributed_s, 's', 1)} of its tasks' {number(run_s, 's', 1)} "
                      f"run time ({number(share, '%', 0)}) is neither CPU ({number(r['executor_cpu_time_s'], 's', 1)}), "
                      f"GC, shuffle fetch wait nor shuffle write; {cause}",
                      {"unattributed_pct": share, "unattributed_s": unattributed_s, "run_s": run_s,
                       "cpu_s": float(r["executor_cpu_time_s"]), "stage_s": r["stage_s"],
                       "stage_share_pct": inputs.stage_share_pct(r["workload_id"], r["stage_s"]),
                       "host_busy_pct": busy, "iowait_pct": iowait, "host_cpu_samples": samples,
                       # what the rule lays at storage's door: none of it where the CPU was busy
                       "storage_wait_pct": 0.0 if contended else share},
                      host, place=place,
                      recommendation=_fewer_cores(inputs, r, share) if contended else _move(
                          inputs, r["workload_id"], "hdfs" if r["input_bytes"] > 0 else "local",
                          f"{number(unattributed_s, 's', 1)} of task time unexplained by the CPU, on a stage that "
                          f"{'read its input from HDFS' if r['input_bytes'] > 0 else 'used the local dirs'}"))


def _host_cpu(cpu: pd.DataFrame, host: str, start_s: float, end_s: float) -> tuple[float, float, int]:
    """(% busy: user + system + nice + steal, % iowait, samples) of `host`'s 1 s CPU samples within [start_s, end_s]."""
    if cpu.empty:
        return math.nan, math.nan, 0
    window = cpu[(cpu["host"] == host) & (cpu["time"] >= start_s) & (cpu["time"] <= end_s)]
    if window.empty:
        return math.nan, math.nan, 0
    busy = window[["user_pct", "system_pct", "nice_pct", "steal_pct"]].sum(axis=1).mean()
    return float(busy), float(window["iowait_pct"].mean()), int(len(window))


def _fewer_cores(inputs: Inputs, stage: dict, unattributed_pct: float) -> str:
    """The executor cores on the stage's host that its tasks' CPU share fills (at least 1): cores x (100 % -
    unattributed share), as `spark.executor.cores` (multi-core executors) or `spark.executor.instances` (one-core
    executors on that host); empty when the executors are not known or already that few."""
    executors = _executors(inputs, stage["app_id"])
    up = executors[(executors["added_time_ms"] <= stage["end_ms"]) & ~(executors["removed_time_ms"] < stage["start_ms"])]
    host = stage["executor_host"]
    alive = up[up["executor_host"] == host]
    cores = int(alive["total_cores"].sum())
    fits = max(1, math.floor(cores * (100 - unattributed_pct) / 100))
    if alive.empty or fits >= cores:
        return ""
    why = (f"{host}'s {cores} executor cores ran tasks that were on a CPU "
           f"{number(100 - unattributed_pct, '%', 0)} of their run time")
    per_executor = int(alive["total_cores"].max())
    if per_executor > 1:
        return f"spark.executor.cores = {max(1, math.floor(per_executor * fits / cores))} (from {per_executor}): {why}"
    others = len(up) - len(alive)
    return f"spark.executor.instances = {others + fits} (from {others + len(alive)}): {why}"


def _executors(inputs: Inputs, app_id: str) -> pd.DataFrame:
    """The application's executors (not the driver): host, cores, added and removed (NaN: to the end) times."""
    executors = inputs.table("spark_executors")
    if executors.empty:
        return pd.DataFrame(columns=["executor_id", "executor_host", "total_cores", "added_time_ms", "removed_time_ms"])
    mine = executors[(executors["app_id"] == app_id) & (executors["executor_id"] != "driver")]
    return mine.assign(total_cores=pd.to_numeric(mine["total_cores"]).fillna(1),
                       removed_time_ms=pd.to_numeric(mine["removed_time_ms"]).astype(float))


# ---------------------------------------------------------------- applications: cores used and time outside stages

def _applications(inputs: Inputs) -> list[dict]:
    """Per Spark application of a measured workload run: its wall time, the union of its stages' windows within it
    (`in_stages_s`), the time before its first executor registered (`startup_s`), the driver's time with executors
    up and no stage running before the first stage, between stages and after the last, its task attempts' run time
    (all attempts: a failed one held its core too), the longest task of each stage summed (`critical_path_s`), and the
    most executor cores up at once (`cores`)."""
    apps = inputs.workload_ids(inputs.table("spark_applications"))
    stages = inputs.workload_ids(inputs.table("stages"))
    tasks = inputs.table("spark_tasks")
    if apps.empty or stages.empty:
        return []
    order = with_application_order(stages).drop_duplicates("app_id").set_index("app_id")["app"]
    found = []
    for app in apps.dropna(subset=["start_time_ms", "end_time_ms"]).to_dict("records"):
        start, end = float(app["start_time_ms"]), float(app["end_time_ms"])
        mine = stages[stages["app_id"] == app["app_id"]].dropna(subset=["submission_time_ms", "completion_time_ms"])
        if mine.empty or app["app_id"] not in order:
            continue
        windows = _union([(max(start, s), min(end, e)) for s, e in
                          zip(mine["submission_time_ms"], mine["completion_time_ms"]) if e > s])
        executors = _executors(inputs, app["app_id"])
        registered = float(executors["added_time_ms"].min()) if not executors.empty else start
        first, last = windows[0][0], windows[-1][1]
        in_stages = sum(e - s for s, e in windows)
        run = tasks[tasks["app_id"] == app["app_id"]] if not tasks.empty else tasks
        found.append({
            "workload_id": app["workload_id"], "app_id": app["app_id"],
            "place": f"app {order[app['app_id']]} {app.get('app_name', '')}".strip(),
            "wall_s": (end - start) / 1e3, "in_stages_s": in_stages / 1e3,
            "startup_s": (min(registered, first) - start) / 1e3,
            "before_s": max(0.0, first - max(registered, start)) / 1e3,
            "between_s": (last - first - in_stages) / 1e3, "after_s": (end - last) / 1e3,
            "task_s": float(run["executor_run_time_s"].sum()) if not run.empty else 0.0,
            "critical_path_s": float(run.groupby("stage_id")["executor_run_time_s"].max().sum()) if not run.empty
            else 0.0,
            "cores": _most_cores(executors, end), "stages": len(mine)})
    return found


def _union(windows: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping windows merged, in time order."""
    merged: list[tuple[float, float]] = []
    for s, e in sorted(windows):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def _most_cores(executors: pd.DataFrame, end_ms: float) -> int:
    """The most executor cores up at once (Sparklens' executor cores x most concurrent executors)."""
    changes = sorted([(t, c) for t, c in zip(executors["added_time_ms"], executors["total_cores"])]
                     + [(end_ms if math.isnan(t) else t, -c) for t, c in
                        zip(executors["removed_time_ms"], executors["total_cores"])], key=lambda x: (x[0], x[1]))
    up, most = 0, 0
    for _, change in changes:
        up += change
        most = max(most, up)
    return int(most)


@rule("idle-cores", needs=(("spark_applications", "start_time_ms"), ("spark_executors", "total_cores"),
                           ("spark_tasks", "executor_run_time_s"), ("stages", "submission_time_ms")))
def idle_cores(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    for a in _applications(inputs):
        cores, in_stages_s, task_s = a["cores"], a["in_stages_s"], a["task_s"]
        if cores < 1 or in_stages_s <= 0 or a["wall_s"] < limits["app_min_s"]:
            continue
        use = 100 * task_s / (cores * in_stages_s)
        if not use < limits["core_use_max_pct"]:
            continue
        wasted = cores * in_stages_s - task_s
        perfect_s = task_s / cores
        busy_cores = task_s / in_stages_s
        if a["critical_path_s"] >= 1.5 * perfect_s:   # the longest tasks, not the cores, bound the stages
            partitions = 2 * cores
            recommendation = (f"spark.sql.shuffle.partitions = spark.default.parallelism = {partitions} (2 tasks a "
                              f"core): each stage's longest task, {number(a['critical_path_s'], 's', 1)} summed, "
                              f"bounds the stages, against {number(perfect_s, 's', 1)} with every core busy")
        else:
            per_executor = max(1, int(_executors(inputs, a["app_id"])["total_cores"].max()))
            executors = max(1, math.ceil(busy_cores / per_executor))
            recommendation = (f"spark.executor.instances = {executors} ({per_executor} core"
                              f"{'s' if per_executor > 1 else ''} each; {cores} cores were up): the tasks kept "
                              f"{number(busy_cores, 'cores', 1)} busy on average while a stage ran")
        yield Finding("idle-cores", a["workload_id"], a["place"],
                      f"{a['place']}: its tasks used {number(use, '%', 0)} of {cores} executor cores while its stages "
                      f"ran ({number(task_s, 's', 1)} of task time in {number(in_stages_s, 's', 1)}): "
                      f"{number(wasted, 'core-s', 1)} idle; the driver alone {number(100 * (a['wall_s'] - in_stages_s) / a['wall_s'], '%', 0)} "
                      f"of its {number(a['wall_s'], 's', 1)}; critical path {number(a['critical_path_s'], 's', 1)} "
                      f"against {number(perfect_s, 's', 1)} with perfect parallelism",
                      {"core_use_pct": use, "cores": cores, "task_s": task_s, "in_stages_s": in_stages_s,
                       "wasted_core_s": wasted, "wall_s": a["wall_s"],
                       "driver_share_pct": 100 * (a["wall_s"] - in_stages_s) / a["wall_s"],
                       "critical_path_s": a["critical_path_s"], "perfect_parallel_s": perfect_s},
                      place=(("application", a["place"]),), recommendation=recommendation)


@rule("driver-time", needs=(("spark_applications", "start_time_ms"), ("stages", "submission_time_ms")))
def driver_time(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    for a in _applications(inputs):
        parts = {"before the first stage": a["before_s"], "between stages": a["between_s"],
                 "after the last stage": a["after_s"]}
        driver_s = sum(parts.values())
        after_startup_s = a["wall_s"] - a["startup_s"]
        share = 100 * driver_s / after_startup_s if after_startup_s > 0 else math.nan
        if driver_s < limits["driver_min_s"] or not share >= limits["driver_share_min_pct"]:
            continue
        largest = max(parts, key=parts.get)
        namenode, namenode_said = _namenode_operations(inputs, a["workload_id"])
        yield Finding("driver-time", a["workload_id"], a["place"],
                      f"{a['place']}: {number(driver_s, 's', 1)} ({number(share, '%', 0)} of its "
                      f"{number(after_startup_s, 's', 1)} after its executors registered) with no stage running: "
                      + ", ".join(f"{number(s, 's', 1)} {p}" for p, s in parts.items())
                      + f" ({a['stages']} stages; start-up before that {number(a['startup_s'], 's', 1)})"
                      + namenode_said,
                      {"driver_share_pct": share, "driver_s": driver_s, "before_first_stage_s": a["before_s"],
                       "between_stages_s": a["between_s"], "after_last_stage_s": a["after_s"],
                       "startup_s": a["startup_s"], "wall_s": a["wall_s"], **namenode},
                      place=(("application", a["place"]),),
                      recommendation=DRIVER_REMEDIES[largest] + f" ({number(parts[largest], 's', 1)} {largest})")


# What the NameNode did that the driver waits on (namenode-ops collector: NameNodeActivity's counters), in words
NAMENODE_OPERATIONS = {"FilesCreated": "files created", "FilesRenamed": "renamed", "FilesDeleted": "deleted",
                       "GetListingOps": "directory listings", "FileInfoOps": "file-info lookups",
                       "GetBlockLocations": "block-location lookups"}


def _namenode_operations(inputs: Inputs, workload_id: str) -> tuple[dict, str]:
    """The NameNode's operations in the workload run's window (values `namenode_<counter>`, and the words the
    evidence ends with); none where the run has no namenode-ops snapshot of it."""
    ops = inputs.table("namenode_ops")
    if ops.empty or "workload_id" not in ops:
        return {}, ""
    mine = ops[(ops["workload_id"] == workload_id) & (ops["bean"] == "NameNodeActivity")]
    if mine.empty:
        return {}, ""
    moved = dict(zip(mine["counter"], mine["delta"]))
    counts = {counter: float(moved.get(counter, 0.0)) for counter in NAMENODE_OPERATIONS}
    window_s = float(mine["window_s"].iloc[0])
    said = ", ".join(f"{count:,.0f} {NAMENODE_OPERATIONS[c]}" for c, count in counts.items())
    return ({f"namenode_{c}": count for c, count in counts.items()} | {"namenode_window_s": window_s},
            f"; the NameNode in the workload run's {number(window_s, 's', 0)} (its prepare and validate included): "
            f"{said}")


# What shortens the driver's largest part: listing the input and planning before the first stage, the driver's work
# between jobs, the output's commit (its renames on HDFS) after the last stage
DRIVER_REMEDIES = {
    "before the first stage": "spark.hadoop.mapreduce.input.fileinputformat.list-status.num-threads = 8 (from 1): "
                              "list the input's files in parallel",
    "between stages": "spark.scheduler.mode = FAIR (from FIFO), with the queries submitted from several threads: the "
                      "executors run one query's stages while the driver plans the next",
    "after the last stage": "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version = 2 (from 1): each task "
                            "renames its output into place, the job commit does not rename it again",
}
