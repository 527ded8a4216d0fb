"""Every source of raw/ the tables are parsed from, one entry each: the folder its collector's outputs are fetched
to, how its files are found (parsers/source.py), the parser, and the tables it yields with their text columns.
analysis/tables.py walks raw/ by this list alone: a new collector's output becomes tables by an entry here
(README.md, "Add a collector"), its tables documented in docs/tables.md.

The order is that of the `sources` table's rows: by source (entries of a source stand together), then host and
workload run, then the source's entries in order.
"""
from __future__ import annotations

from . import (blocktrace, diskstats, eventlog_source, fio, fio_extents, gluster_profile, iostat, jhist, namenode_ops,
               node_budget, pfs_client, prometheus, workload_results)
from .source import Each, First, Source, Whole, Window, missing, none_if_nothing_here, none_unless_error

_BRICK = ("volume", "brick_host", "brick_path")

SOURCES = (
    Source("workload", Each("fio-*.json"), fio.fio_tables,
           {"fio": ("backend", "device", "file", "rw", "direction", "source_file"),
            "fio_latency_bins": ("backend", "device", "rw", "direction", "source_file")}),
    # where the sweep's file lay on each device (workloads/fio-sweep/run-sweep); none from other fio runs
    Source("workload", Each("extents-*.json"), fio_extents.extents_tables,
           {"fio_extents": ("backend", "file", "device", "source_file")}),
    # a workload that wrote no check or result file (TeraSort, fio-sweep) has no row in `sources` for them
    Source("workload", Whole(workload_results.check_files), workload_results.parse_checks,
           {"workload_checks": ("step", "file", "problems", "detail")}),
    Source("workload", Whole(workload_results.sample_files), workload_results.parse_samples,
           {"workload_samples": ("metric", "unit", "metadata")}),
    Source("iostat", First(("iostat.json", "iostat.txt"), none_if_nothing_here), iostat.iostat_tables,
           {"iostat": ("device",), "host_cpu": ()}),
    Source("iostat", Window("diskstats.start"), diskstats.window_totals, {"disk_totals": ("device",)}),
    Source("blocktrace", Each("blocktrace.tsv", none_if_nothing_here), blocktrace.parse_blocktrace,
           {"block_requests": ("device", "op", "rwbs", "comm")}),
    Source("eventlog", eventlog_source.event_logs, eventlog_source.spark_tables, {
        "stages": ("app_id", "name", "status", "job_group", "job_description", "failure_reason"),
        "spark_applications": ("app_id", "app_attempt_id", "app_name", "user", "spark_version", "status",
                               "unknown_event_types", "codec", "log_path"),
        "spark_jobs": ("app_id", "job_group", "job_description", "status", "stage_ids"),
        "spark_tasks": ("app_id", "task_type", "status", "executor_id", "executor_host", "locality"),
        "spark_executors": ("app_id", "executor_id", "executor_host", "removed_reason"),
        "spark_sql": ("app_id", "description", "status", "error_message", "job_ids"),
        "spark_properties": ("app_id", "name", "value")}),
    Source("mr-history", Each("**/*.jhist", none_unless_error, what=".jhist"), jhist.jhist_tables,
           {"mr_jobs": ("job_id", "job_name", "status"), "mr_counters": ("job_id", "scope", "counter_group", "name")},
           row_per_table=True),
    Source("gluster-profile", Each("profile-*.xml"), gluster_profile.gluster_profile_tables,
           {"gluster_fops": (*_BRICK, "fop"), "gluster_bricks": _BRICK, "gluster_block_sizes": _BRICK}),
    Source("pfs-client", Window("client-*.start", none_if_nothing_here, missing, what="client-<backend>.start"),
           pfs_client.window_deltas, {"pfs_client": ("backend", "fstype", "mount", "counter", "unit")}),
    # the NameNode's operation counters over the window (the controller's collector; a note where HDFS is down)
    Source("namenode-ops", Window("namenode.start", missing, missing, what="namenode.start"), namenode_ops.window_deltas,
           {"namenode_ops": ("bean", "counter", "unit")}),
    Source("node-budget", Window("node-budget.start", none_if_nothing_here, missing), node_budget.node_budget_table,
           {"node_budget": ()}),
    # one archive per workload run of the whole cluster, its series carrying their node; its columns are the
    # series' labels, text whatever they are named
    Source("prometheus", Each("*.json"), prometheus.prometheus_tables, {"prometheus_series": None}, cluster_wide=True),
)
