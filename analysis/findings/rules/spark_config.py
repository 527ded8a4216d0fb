"""Storage-relevant Spark configuration as the applications ran with it (docs/findings.md: `storage-config`).

One finding per application and misconfiguration, from the `spark_properties` table (the driver's environment
update): a setting that makes shuffle or spill bytes larger, lost, or land on fewer or other disks than the node
has. A setting is graded by what it costs, not by how many bytes moved (those gate it): `SEVERITY` says each one's
level and why, as the finding's `config_severity` (the catalog's cut-points 1 to 4: low to critical).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import pandas as pd

from ...formatting import format_bytes
from ..engine import Finding, Inputs, rule

RULE = "storage-config"
# Level of each misconfiguration (1 low, 2 moderate, 3 severe, 4 critical) and why; docs/findings.md repeats it.
SEVERITY = {
    # an executor removed while idle takes its shuffle files with it: fetch failures, its map stages run again
    # (input read again, shuffle written again); Spark 3 refuses to start this way unless a Spark default lets it
    "dynamic-allocation-without-shuffle-service": 3,
    # the local dirs hold shuffle files uncompressed (TeraSort's random keys compress little, text and columns
    # several times): more bytes written and read on the local dirs' device and over the network
    "shuffle-uncompressed": 2,
    "spill-uncompressed": 2,
    # shuffle and spill go to a disk that is none of the node's backends (e.g. /tmp on the system disk): the
    # storage the run measures is not the storage Spark's local I/O used
    "local-dirs-off-backends": 3,
    # every local dir on one backend while another the node has holds neither HDFS nor local dirs: a disk idle
    # while the local I/O queues on one; moderate where the idle one is no slower, low where it is (rotational
    # against a non-rotational one: Spark spreads its files evenly over its dirs, so the slower disk would pace it)
    "local-dirs-one-of-several": 2,
}


@dataclass(frozen=True)
class _App:
    host: str
    workload_id: str
    app_id: str
    rank: int                   # among its workload run's applications, by start: stable where the app id is not
    said: dict                  # property -> value as logged
    shuffle_write_bytes: float
    disk_spilled_bytes: float


def _is_true(value) -> bool:
    return str(value).strip().lower() == "true"


def _shown(said: dict, name: str) -> str:
    return said.get(name, "not set")


@rule(RULE, needs=(("spark_properties", "name"), ("stages", "shuffle_write_bytes")))
def storage_config(inputs: Inputs, limits: dict) -> Iterable[Finding]:
    for app in _applications(inputs):
        local_bytes = app.shuffle_write_bytes + app.disk_spilled_bytes
        yield from _shuffle_service(app, limits)
        yield from _compression(app, limits)
        if local_bytes >= limits["local_min_bytes"]:
            yield from _local_dirs(app, inputs, local_bytes)


def _applications(inputs: Inputs) -> list[_App]:
    properties = inputs.workload_ids(inputs.table("spark_properties"))
    stages = inputs.table("stages")
    moved = stages.groupby("app_id")[["shuffle_write_bytes", "disk_spilled_bytes"]].sum() if not stages.empty \
        else pd.DataFrame(columns=["shuffle_write_bytes", "disk_spilled_bytes"])
    started = inputs.table("spark_applications")
    start = dict(zip(started["app_id"], started["start_time_ms"])) if "start_time_ms" in started else {}
    apps = []
    for (host, workload_id), of_run in properties.groupby(["host", "workload_id"], sort=True):
        ids = sorted(of_run["app_id"].unique(), key=lambda app_id: (start.get(app_id, 0), app_id))
        for rank, app_id in enumerate(ids, 1):
            rows = of_run[of_run["app_id"] == app_id]
            sums = moved.loc[app_id] if app_id in moved.index else {"shuffle_write_bytes": 0, "disk_spilled_bytes": 0}
            apps.append(_App(str(host), str(workload_id), str(app_id), rank, dict(zip(rows["name"], rows["value"])),
                             float(sums["shuffle_write_bytes"]), float(sums["disk_spilled_bytes"])))
    return apps


def _finding(app: _App, setting: str, evidence: str, recommendation: str, node: str = "", **values) -> Finding:
    """`node`: the host a finding about one node's disks is about (in its place), else the driver's."""
    return Finding(RULE, app.workload_id, f"application #{app.rank} ({app.app_id})" + (f" on {node}" if node else ""),
                   evidence,
                   {"config_severity": values.pop("severity", SEVERITY[setting]),
                    "shuffle_write_bytes": app.shuffle_write_bytes, "disk_spilled_bytes": app.disk_spilled_bytes,
                    **values},
                   node or app.host,
                   place=(("application", f"#{app.rank}"), ("setting", setting), *((("node", node),) if node else ())),
                   recommendation=recommendation)


def _shuffle_service(app: _App, limits: dict) -> Iterable[Finding]:
    said = app.said
    kept_by = ("spark.shuffle.service.enabled", "spark.dynamicAllocation.shuffleTracking.enabled")
    migrated = _is_true(said.get("spark.decommission.enabled")) and _is_true(
        said.get("spark.storage.decommission.shuffleBlocks.enabled"))
    if not _is_true(said.get("spark.dynamicAllocation.enabled")) or any(_is_true(said.get(n)) for n in kept_by) \
            or migrated or app.shuffle_write_bytes < limits["shuffle_min_bytes"]:
        return
    yield _finding(app, "dynamic-allocation-without-shuffle-service",
                   f"dynamic allocation on with the external shuffle service off "
                   f"(spark.shuffle.service.enabled {_shown(said, kept_by[0])}, shuffle tracking "
                   f"{_shown(said, kept_by[1])}): the {format_bytes(app.shuffle_write_bytes)} of shuffle it wrote "
                   "is lost with each executor removed",
                   f"spark.shuffle.service.enabled = true (from {_shown(said, kept_by[0])}; the NodeManagers' "
                   "spark_shuffle aux service), or spark.dynamicAllocation.shuffleTracking.enabled = true")


def _compression(app: _App, limits: dict) -> Iterable[Finding]:
    for setting, name, moved, gate, what in (
            ("shuffle-uncompressed", "spark.shuffle.compress", app.shuffle_write_bytes, "shuffle_min_bytes",
             "shuffle written"),
            ("spill-uncompressed", "spark.shuffle.spill.compress", app.disk_spilled_bytes, "spill_min_bytes",
             "spilled to disk")):
        value = app.said.get(name)
        if value is None or _is_true(value) or moved < limits[gate]:     # absent: Spark's default, true
            continue
        yield _finding(app, setting, f"{name} = {value}: {format_bytes(moved)} {what} uncompressed on the local dirs",
                       f"{name} = true (from {value}; codec spark.io.compression.codec = "
                       f"{app.said.get('spark.io.compression.codec', 'lz4')})")


def _local_dirs(app: _App, inputs: Inputs, local_bytes: float) -> Iterable[Finding]:
    """Where the local dirs were against the node's backends. On YARN the NodeManagers' local dirs replace
    spark.local.dir (Spark's docs, spark.local.dir); the driver logs its own configuration, which names the workers'
    paths only where they share it: where no dir lies under a backend's mount of any host, the harness's record of
    where it put them (workloads.placement_local) stands for them."""
    said = app.said
    name = "yarn.nodemanager.local-dirs" if said.get("spark.master") == "yarn" and \
        "yarn.nodemanager.local-dirs" in said else "spark.local.dir"
    dirs = [d.strip().removeprefix("file://") for d in said.get(name, "/tmp").split(",") if d.strip()]
    devices = inputs.table("devices")
    if devices.empty or "mount" not in devices:
        return
    devices = devices[devices["device"].astype(str) != ""]
    mounts = [(str(m).rstrip("/"), b) for m, b in zip(devices["mount"], devices["backend"]) if isinstance(m, str) and m]
    on = {max(((m, b) for m, b in mounts if d == m or d.startswith(m + "/")), default=(None, None),
              key=lambda mb: len(mb[0]))[1] for d in dirs} - {None}
    run = inputs.table("workloads")
    row = run[run["workload_id"] == app.workload_id].iloc[0] if "workload_id" in run and (
        run["workload_id"] == app.workload_id).any() else {}
    values = dict(local_dirs=len(dirs), local_bytes=local_bytes)
    if not on and app.host in set(devices["host"]) and name == "spark.local.dir":
        target = devices[devices["backend"] == row.get("placement_local")] if len(row) else devices.iloc[:0]
        mount = (target if not target.empty else devices)["mount"].iloc[0]
        yield _finding(app, "local-dirs-off-backends",
                       f"its local dirs ({', '.join(dirs)}) are on none of {app.host}'s backends "
                       f"({', '.join(sorted(set(devices[devices['host'] == app.host]['backend'])))}): "
                       f"{format_bytes(local_bytes)} of shuffle and spill went to another disk",
                       f"spark.local.dir = {mount}/local/spark (from {said.get(name, '/tmp, the default')})", **values)
        return
    local = on or ({row["placement_local"]} if len(row) and isinstance(row.get("placement_local"), str) else set())
    if len(local) != 1:
        return
    (backend,) = local
    used = local | ({row["placement_hdfs"]} if len(row) and isinstance(row.get("placement_hdfs"), str) else set())
    for host, of_host in devices.groupby("host", sort=True):
        spare = of_host[~of_host["backend"].isin(used)]
        mine = of_host[of_host["backend"] == backend]
        if spare.empty or mine.empty:
            continue
        slower = bool(spare["rotational"].fillna(True).all()) and not bool(mine["rotational"].fillna(True).any())
        suffix = dirs[0][len(str(mine["mount"].iloc[0]).rstrip("/")):] if on else "/local/yarn"
        proposed = ",".join([*dirs, *(str(m).rstrip("/") + suffix for m in spare["mount"])]) if on else \
            f"<{backend}'s local dir>,{','.join(str(m).rstrip('/') + suffix for m in spare['mount'])}"
        yield _finding(app, "local-dirs-one-of-several",
                       f"every local dir on {host}'s {backend} while its {', '.join(spare['backend'])} held neither "
                       f"HDFS nor local dirs: {format_bytes(local_bytes)} of shuffle and spill on one of "
                       f"{len(of_host)} backends",
                       f"{name} = {proposed}" + (" (the idle backend is rotational, the local dirs' is not: "
                                                 "measure before keeping it)" if slower else ""),
                       node=str(host), severity=SEVERITY["local-dirs-one-of-several"] - slower,
                       idle_backends=len(spare), **values)
