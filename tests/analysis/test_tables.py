"""tables: a run directory assembled from recorded fixtures -> tables/*.parquet."""
import shutil

import pandas as pd

from analysis.tables import TABLE_NAMES, build_tables, read_tables, write_tables
from conftest import FIXTURES, add_pfs_recordings


def test_tables_of_a_run(run_dir):
    paths = write_tables(run_dir)
    assert set(paths) == set(TABLE_NAMES) and all(p.exists() for p in paths.values())
    tables = read_tables(run_dir)
    fio = tables["fio"]
    assert len(fio) == 4 and set(fio["backend"]) == {"tmp"} and set(fio["host"]) == {"vm"}
    assert set(fio["block_size_bytes"]) == {4096, 1 << 20}
    iostat = tables["iostat"]
    assert set(iostat["workload_id"]) == {"fio-sweep", "spark-tiny"} and iostat["time"].min() > 1.7e9
    stages = tables["stages"]
    assert len(stages) == 5 and set(stages["workload_id"]) == {"spark-tiny"}
    assert stages["shuffle_write_bytes"].sum() > 0
    assert set(tables["steps"]["status"]) == {"ok", "failed", "running"}
    sources = tables["sources"].set_index("file")
    assert sources.loc["vm/iostat/fio-sweep/iostat.json", "message"].startswith("repaired")
    assert tables["disk_totals"].query("device == 'vda'")["read_bytes"].gt(0).all()


def test_a_broken_file_is_reported_not_fatal(run_dir):
    (run_dir / "raw" / "vm" / "workload" / "fio-sweep" / "fio-bad-read-4k.json").write_text("fio: engine libaio not loadable\n")
    (run_dir / "raw" / "vm" / "blocktrace" / "spark-tiny").mkdir(parents=True)
    tables = build_tables(run_dir)
    sources = tables["sources"]
    bad = sources[sources["file"].str.endswith("fio-bad-read-4k.json")].iloc[0]
    assert bad["status"] == "error" and "no JSON document" in bad["message"]
    missing = sources[(sources["source"] == "blocktrace") & (sources["workload_id"] == "spark-tiny")].iloc[0]
    assert missing["status"] == "missing" and "blocktrace.tsv" in missing["message"]
    assert len(tables["fio"]) == 4


def test_a_run_without_manifest_or_raw(tmp_path):
    run = tmp_path / "empty-run"
    (run / "raw").mkdir(parents=True)
    tables = build_tables(run)
    assert all(isinstance(t, pd.DataFrame) for t in tables.values())
    assert tables["steps"].empty and tables["fio"].empty


def test_a_gluster_profile_becomes_per_brick_tables_with_host_and_workload(run_dir):
    add_pfs_recordings(run_dir)
    tables = build_tables(run_dir)
    bricks = tables["gluster_bricks"]
    assert set(bricks["host"]) == {"st1"} and set(bricks["workload_id"]) == {"fio-sweep"}
    assert len(bricks) == 2 and bricks["write_bytes"].gt(0).all()
    writes = tables["gluster_fops"].query("fop == 'WRITE'")
    assert len(writes) == 2 and writes["calls"].gt(0).all() and writes["latency_avg_s"].between(1e-6, 10).all()
    assert set(tables["gluster_block_sizes"]["block_size_bytes"]) <= {1 << k for k in range(31)}
    profiles = tables["sources"].query("source == 'gluster-profile'")
    assert list(profiles["status"]) == ["ok"], profiles


def test_a_host_with_no_device_to_observe_is_none_not_missing(run_dir):
    for collector in ("iostat", "blocktrace"):
        out = run_dir / "raw" / "worker1" / collector / "fio-sweep"
        out.mkdir(parents=True)
        (out / "nothing-here.txt").write_text("no block device under this host's data paths: backends pfs ...\n")
    sources = build_tables(run_dir)["sources"].query("host == 'worker1'")
    assert sorted(sources["source"]) == ["blocktrace", "iostat"]
    assert set(sources["status"]) == {"none"} and sources["message"].str.contains("backends pfs").all()


def test_pfs_client_counters_become_the_windows_deltas(run_dir):
    add_pfs_recordings(run_dir)
    counters = build_tables(run_dir)["pfs_client"].set_index("counter")
    assert set(counters["host"]) == {"worker1"} and set(counters["fstype"]) == {"fuse.glusterfs"}
    assert counters.loc["bytes_read", "value"] > 0 and counters.loc["bytes_written", "value"] > 0
    assert counters.loc["bytes_read", "unit"] == "bytes" and counters.loc["window", "unit"] == "s"


def test_a_node_budget_is_one_row_per_node_and_window_and_none_without_a_budget(run_dir):
    shutil.copytree(FIXTURES / "node-budget" / "terasort-localhost", run_dir / "raw" / "vm" / "node-budget" / "spark-tiny")
    unbudgeted = run_dir / "raw" / "master" / "node-budget" / "spark-tiny"
    unbudgeted.mkdir(parents=True)
    (unbudgeted / "nothing-here.txt").write_text("no /var/lib/spillway/x/run/node-cgroups: this node has no budget\n")
    tables = build_tables(run_dir)
    (budget,) = tables["node_budget"].itertuples()
    assert (budget.host, budget.workload_id, budget.memory_limit_bytes, budget.oom_kills) == ("vm", "spark-tiny", 6 << 30, 0)
    sources = tables["sources"].query("source == 'node-budget'").set_index("host")
    assert sources.loc["vm", "status"] == "ok" and sources.loc["master", "status"] == "none"
    assert "no budget" in sources.loc["master", "message"]


def test_missing_data_carries_the_collectors_own_reason(run_dir):
    out = run_dir / "raw" / "worker1" / "pfs-client" / "fio-sweep"
    out.mkdir(parents=True)
    (out / "collector-notes.txt").write_text("2026-11-22T05:16:00+0000 pfs: no Lustre client here\n")
    (source,) = build_tables(run_dir)["sources"].query("host == 'worker1'").itertuples()
    assert source.status == "missing"
    assert source.message == "no client-<backend>.start: 2026-11-22T05:16:00+0000 pfs: no Lustre client here"


def test_workload_checks_and_samples_are_tables_of_every_workload_run(run_dir):
    """The workloads' own check files and results (tests/fixtures/workload-results/, real runs) become the
    workload_checks and workload_samples tables, one set of rows per workload run, with host and workload id;
    a malformed one is a `sources` row and the others still count."""
    recorded = FIXTURES / "workload-results"
    for name in ("tpch", "kmeans", "gatk4-invalid"):
        shutil.copytree(recorded / name, run_dir / "raw" / "vm" / "workload" / f"{name}-r1")
    broken = run_dir / "raw" / "vm" / "workload" / "tpch-r2"
    broken.mkdir()
    (broken / "validation.json").write_text((recorded / "tpch" / "validation.json").read_text()[:40])
    tables = build_tables(run_dir)
    checks = tables["workload_checks"]
    assert set(checks["workload_id"]) == {"tpch-r1", "kmeans-r1", "gatk4-invalid-r1"}
    validate = checks[checks["step"] == "validate"].set_index("workload_id")
    assert validate.loc["tpch-r1", "ok"] and not validate.loc["gatk4-invalid-r1", "ok"]
    assert validate.loc["gatk4-invalid-r1", "problems"] != ""
    samples = tables["workload_samples"]
    tpch = samples[(samples["workload_id"] == "tpch-r1") & (samples["metric"] == "spark_query_time")]
    assert len(tpch) > 1 and set(tpch["unit"]) == {"s"} and (tpch["value"] > 0).all()
    assert set(samples["host"]) == {"vm"}
    sources = tables["sources"].set_index(["workload_id", "file"])
    # one row for the checks and one for the samples it should have given
    assert sources.loc[("tpch-r2", "vm/workload/tpch-r2/validation.json"), "status"].tolist() == ["error", "error"]
    assert "validation.json" in " ".join(sources.loc[("tpch-r2", "vm/workload/tpch-r2/validation.json"), "message"])


def test_workload_commands_come_from_the_step_logs_with_their_sources(tmp_path):
    """The recorded default bench (manifest.json and logs/, no raw/): its commands' own times are written as
    tables/workload_commands.parquet, and each log read is a `sources` row."""
    run = shutil.copytree(FIXTURES / "runs" / "bench-tiny", tmp_path / "bench-tiny")
    write_tables(run)
    commands = read_tables(run)["workload_commands"]
    assert list(commands.columns) == ["workload_id", "step", "task", "duration_s"] and len(commands) == 17
    tpch_run = commands[(commands["workload_id"] == "tpch") & (commands["step"] == "run")]
    assert tpch_run[["task", "duration_s"]].values.tolist() == [["Workload command: tpch run: ./tpch run", 75.77]]
    sources = read_tables(run)["sources"].query("source == 'step-log'")
    assert len(sources) == 16 and set(sources["status"]) == {"ok"} and sources["rows"].sum() == 17
    assert "logs/tpch.run.log" in set(sources["file"])
