"""The rule set, in the order the pages and findings.json list the rules (docs/findings.md, "The rules"). Every rule
family's module is named here and every rule of it listed: a rule is evaluated because it is in RULES, never because
its module happened to be imported."""
from __future__ import annotations

from . import balance, device_access, run_time, spark_config, spark_data, task_shape, task_time, where_time_goes

RULES = (where_time_goes.page_cache, where_time_goes.cpu_bound, where_time_goes.device_saturated,
         spark_data.spill, spark_data.small_shuffle_reads,
         balance.imbalance,
         where_time_goes.device_underused,
         task_time.shuffle_wait, task_time.unattributed_time, task_time.idle_cores, task_time.driver_time,
         device_access.task_throughput, device_access.small_requests, device_access.random_access,
         device_access.read_write_mix,
         task_shape.skew, task_shape.partition_sizing, task_shape.failed_tasks,
         spark_config.storage_config,
         run_time.storage_sensitive, run_time.cannot_tell)
