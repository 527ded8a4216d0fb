"""`storage-config` (analysis/findings/rules/spark_config.py) on the real recordings: the quiet default bench
(tests/fixtures/runs/default-bench-quiet) and the emulated cluster's TeraSort (emu-terasort), whose applications ran
with a sane storage configuration: the rule stays quiet unedited, and fires where one setting of a recorded table is
changed (no real recording fires it: docs/findings.md says so)."""
import json

import pandas as pd

from conftest import findings_of, fired_on

RULE = "storage-config"
TERASORT_APP = "application_1795925959843_0004"        # terasort-spark, the default bench's first measured TeraSort


def findings(tables):
    found = findings_of(tables)
    return found[found["rule"] == RULE]


def with_property(tables, app_id, name, value):
    """`tables` with one row added to spark_properties: `name` = `value` for the application `app_id`."""
    properties = tables["spark_properties"]
    row = properties[properties["app_id"] == app_id].iloc[[0]].assign(name=name, value=value)
    return {**tables, "spark_properties": pd.concat([properties, row], ignore_index=True)}


def test_quiet_on_the_real_default_bench_and_the_emulated_cluster(bench, emu):
    assert findings(bench).empty and findings(emu).empty
    # it read them: 16 and 1 applications, each with its local dirs on a backend of their host or the placement's
    assert bench["spark_properties"]["app_id"].nunique() == 16 and emu["spark_properties"]["app_id"].nunique() == 1


def test_shuffle_compression_off_fires_moderate_with_the_value_to_set(bench):
    found = findings(with_property(bench, TERASORT_APP, "spark.shuffle.compress", "false"))
    assert fired_on(found, RULE) == {"terasort-spark"}
    finding = found.iloc[0]
    assert finding["level"] == "moderate"
    assert finding["recommendation"].startswith("spark.shuffle.compress = true (from false")
    assert "103.8 MiB shuffle written uncompressed" in finding["evidence"]
    assert finding["key"] == ("storage-config | terasort engine=spark @ hdfs=hdd local=ssd | application=#1 | "
                              "setting=shuffle-uncompressed")
    assert json.loads(finding["values"])["shuffle_write_bytes"] == 108796887


def test_spill_compression_off_fires_where_it_spilled_and_not_under_the_gate(bench):
    found = findings(with_property(bench, TERASORT_APP, "spark.shuffle.spill.compress", "false"))
    assert fired_on(found, RULE) == {"terasort-spark"} and "60.6 MiB spilled" in found["evidence"].item()
    # TPC-H shuffled 3.4 MiB and spilled nothing: below spill_min_bytes (1 MiB)
    assert findings(with_property(bench, "application_1795925959843_0005", "spark.shuffle.spill.compress",
                                  "false")).empty
    # K-means's second application shuffled 11.5 KiB: below shuffle_min_bytes
    assert findings(with_property(bench, "application_1795925959843_0007", "spark.shuffle.compress", "false")).empty


def test_dynamic_allocation_without_the_shuffle_service_is_severe_and_quiet_with_shuffle_tracking(bench):
    dynamic = with_property(bench, TERASORT_APP, "spark.dynamicAllocation.enabled", "true")
    found = findings(dynamic)
    assert list(found["level"]) == ["severe"]
    assert "spark.shuffle.service.enabled = true (from not set" in found["recommendation"].item()
    tracked = with_property(dynamic, TERASORT_APP, "spark.dynamicAllocation.shuffleTracking.enabled", "true")
    assert findings(tracked).empty


def test_local_dirs_on_one_backend_while_the_other_is_idle(bench):
    """Changed: workloads.placement_hdfs of terasort-spark from hdd to ssd: HDFS and the local dirs on the ssd, the
    hdd idle (as if the inventory put both on the ssd)."""
    workloads = bench["workloads"].copy()
    workloads.loc[workloads["workload_id"] == "terasort-spark", "placement_hdfs"] = "ssd"
    found = findings({**bench, "workloads": workloads})
    assert fired_on(found, RULE) == {"terasort-spark"}
    finding = found.iloc[0]
    # the idle disk is rotational, the local dirs' is not: low, and said
    assert finding["level"] == "low" and "hdd held neither HDFS nor local dirs" in finding["evidence"]
    assert finding["recommendation"].startswith("yarn.nodemanager.local-dirs = /var/lib/spillway/local/mnt/ssd/local/"
                                                "yarn,/var/lib/spillway/local/mnt/hdd/local/yarn")
    assert finding["key"].endswith("setting=local-dirs-one-of-several | node=localhost")


def test_local_dirs_on_the_emulated_workers_come_from_the_placement(emu):
    """The driver's configuration names the master's paths: the workers' local dirs are the placement's. Changed:
    workloads.placement_hdfs from hdd to ssd: each worker's hdd idle."""
    workloads = emu["workloads"].assign(placement_hdfs="ssd")
    found = findings({**emu, "workloads": workloads})
    assert sorted(found["host"]) == ["worker1", "worker2", "worker3"]
    assert set(found["level"]) == {"low"}


def test_local_dirs_on_no_backend_are_severe(bench):
    """Changed: terasort-spark's spark.master from yarn to local[2] and its spark.local.dir to /tmp/spark (a local
    job writing to the system disk)."""
    properties = bench["spark_properties"].copy()
    app = properties["app_id"] == TERASORT_APP
    properties.loc[app & (properties["name"] == "spark.master"), "value"] = "local[2]"
    properties.loc[app & (properties["name"] == "spark.local.dir"), "value"] = "/tmp/spark"
    found = findings({**bench, "spark_properties": properties})
    assert list(found["level"]) == ["severe"] and "are on none of localhost's backends (hdd, ssd)" in \
        found["evidence"].item()
    assert found["recommendation"].item() == ("spark.local.dir = /var/lib/spillway/local/mnt/ssd/local/spark "
                                              "(from /tmp/spark)")
