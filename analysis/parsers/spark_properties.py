"""The storage-relevant configuration an application ran with, from its event log's environment update (the
`spark_properties` table, docs/tables.md).

An event log records every Spark and Hadoop property of the driver, secrets included (`spark.hadoop.fs.s3a.secret.key`,
`*.password`, tokens, signed URLs): only the names of ALLOWED are kept, each value bounded (docs/safety.md, "Spark
properties"). A name not listed is never read into a table, whatever it holds.
"""
from __future__ import annotations

import pandas as pd

PROPERTIES_COLUMNS = ["app_id", "name", "value"]

# Spark properties (the environment update's "Spark Properties"), each kept because a storage rule or a reader of
# the run needs it to explain where the bytes went: where the local dirs are and whether shuffle files outlive
# their executor; whether shuffle, spill and cached blocks are compressed and how; how much memory before a spill;
# how many tasks and partitions (the size of each request); the fetch and write buffers.
SPARK_ALLOWED = frozenset({
    "spark.master",                     # only its kind is kept (_master_kind): yarn, local[2], spark, k8s
    "spark.submit.deployMode",
    "spark.local.dir",
    "spark.shuffle.service.enabled",
    "spark.dynamicAllocation.enabled",
    "spark.dynamicAllocation.shuffleTracking.enabled",
    "spark.decommission.enabled",
    "spark.storage.decommission.shuffleBlocks.enabled",
    "spark.shuffle.compress",
    "spark.shuffle.spill.compress",
    "spark.rdd.compress",
    "spark.io.compression.codec",
    "spark.serializer",
    "spark.executor.memory",
    "spark.executor.cores",
    "spark.executor.instances",
    "spark.memory.fraction",
    "spark.memory.storageFraction",
    "spark.sql.shuffle.partitions",
    "spark.default.parallelism",
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.adaptive.enabled",
    "spark.sql.adaptive.coalescePartitions.enabled",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.reducer.maxSizeInFlight",
    "spark.shuffle.file.buffer",
    "spark.shuffle.sort.bypassMergeThreshold",
    "spark.speculation",
})
# Hadoop properties (Spark 3.0 and later log the driver's Hadoop configuration, about a thousand): the HDFS block
# size and replication (the size of an input split, the bytes a write puts on disks), HDFS's and YARN's data and
# local dirs (on YARN the NodeManager's local dirs replace spark.local.dir), the client's I/O buffer.
HADOOP_ALLOWED = frozenset({
    "dfs.blocksize",
    "dfs.replication",
    "dfs.datanode.data.dir",
    "yarn.nodemanager.local-dirs",
    "io.file.buffer.size",
})
ALLOWED = SPARK_ALLOWED | HADOOP_ALLOWED
# The longest value kept: a list of a few dozen local dirs fits; a longer one is not a value Spark or Hadoop
# writes for these names, and is left out (counted) rather than cut, so that no cut list of dirs reads as whole.
MAX_VALUE_CHARS = 1024


def _master_kind(master: str) -> str:
    """What a master URL says of where executors run, without its host, port or anything else a URL may carry
    (`spark://host:7077` -> `spark`, `k8s://https://api:443` -> `k8s`; `yarn` and `local[2]` stay)."""
    return master.split("://", 1)[0] if "://" in master else master


def properties_frame(events: list[dict], app_id: str | None) -> tuple[pd.DataFrame, int]:
    """The allowed properties of the log's environment updates (a later update overriding an earlier one), one row
    each, by name; and how many allowed ones were left out (a value that is not text or longer than
    MAX_VALUE_CHARS)."""
    kept: dict[str, str] = {}
    left_out: set[str] = set()
    for event in events:
        if event.get("Event") != "SparkListenerEnvironmentUpdate":
            continue
        for section, allowed in (("Spark Properties", SPARK_ALLOWED), ("Hadoop Properties", HADOOP_ALLOWED)):
            properties = event.get(section)
            if not isinstance(properties, dict):
                continue
            for name in allowed & properties.keys():
                value = properties[name]
                if not isinstance(value, str) or len(value) > MAX_VALUE_CHARS:
                    left_out.add(name)
                    kept.pop(name, None)
                    continue
                kept[name] = _master_kind(value) if name == "spark.master" else value
                left_out.discard(name)
    rows = [{"app_id": app_id, "name": name, "value": kept[name]} for name in sorted(kept)]
    return pd.DataFrame(rows, columns=PROPERTIES_COLUMNS), len(left_out)
