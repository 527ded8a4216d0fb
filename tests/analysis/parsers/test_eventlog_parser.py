"""Spark 3.5.6 event logs recorded from a tiny local[2] job (tests/fixtures/tools/spark-eventlog)."""
import pandas as pd
import pytest

from analysis.parsers.eventlog import STAGE_COLUMNS, MissingCodec, event_log_files, parse_event_logs
from conftest import TOOLS, recorded

EVENTS = TOOLS / "spark-eventlog"


def test_plain_log_stage_attempts():
    stages = parse_event_logs(EVENTS / "local-1795280525362").stages
    assert list(stages.columns) == STAGE_COLUMNS
    assert list(stages["stage_id"]) == [0, 1, 3, 5, 6]        # 2 and 4 were skipped (shuffle reused)
    assert set(stages["status"]) == {"succeeded"} and set(stages["app_id"]) == {"local-1795280525362"}
    first = stages.iloc[0]
    assert first["name"].startswith("mapToPair") and first["num_tasks"] == 4
    assert first["shuffle_write_bytes"] == 7456
    assert first["duration_s"] == pytest.approx((first["completion_time_ms"] - first["submission_time_ms"]) / 1e3)
    # Map output written once, read by each later stage over the same shuffle: local reads only in local mode.
    assert (stages["shuffle_read_bytes"] == stages["shuffle_local_bytes_read"] + stages["shuffle_remote_bytes_read"]).all()
    assert stages.loc[stages["stage_id"] == 1, "shuffle_read_bytes"].item() == 7456
    assert (stages["executor_cpu_time_s"] > 0).all()
    assert (stages["executor_cpu_time_s"] <= stages["executor_run_time_s"] * 1.05).all()


def test_rolling_folder_and_folder_of_logs():
    rolling = EVENTS / "eventlog_v2_local-1795280624813"
    assert [[p.name for p in files] for files in event_log_files(rolling)] == [["events_1_local-1795280624813"]]
    every = parse_event_logs(EVENTS).stages
    assert set(every["app_id"]) == {"local-1795280525362", "local-1795280624813", "local-1795280914365"}
    assert len(every) == 5 + 5 + 7


def test_input_and_output_bytes_of_a_job_writing_and_reading_text():
    stages = parse_event_logs(EVENTS / "local-1795280914365").stages.set_index("stage_id")
    written = stages.loc[stages["name"].str.startswith("runJob at SparkHadoopWriter"), "output_bytes"]
    read = stages.loc[stages["name"].str.startswith("count at TinyShuffle.java:21"), "input_bytes"]
    assert written.item() > 1000 and read.item() >= written.item()   # + the _SUCCESS marker and splits


def test_yarn_application_log_and_its_inprogress_copy():
    """Recorded by the eventlog collector on the cluster (YARN client mode)."""
    done = recorded("application_*[0-9]")
    stages = parse_event_logs(done).stages
    assert set(stages["app_id"]) == {done.name} and set(stages["status"]) == {"succeeded"}
    assert stages["shuffle_write_bytes"].sum() == stages["shuffle_read_bytes"].sum() > 0
    # Copied while the job was starting: jobs announced, no stage submitted yet -> no stage attempt.
    early = parse_event_logs(recorded("application_*.inprogress")).stages
    assert list(early.columns) == STAGE_COLUMNS and early.empty


def test_zstd_compressed_log():
    pytest.importorskip("zstandard", reason="zstd event logs need the zstandard package")
    stages = parse_event_logs(EVENTS / "compressed" / "local-1795281149329.zstd").stages
    assert len(stages) == 7 and (stages["output_bytes"] > 0).any() and (stages["input_bytes"] > 0).any()


# The fixture job with job groups, SQL executions and a planted task failure, run once per codec.
GROUPS = EVENTS / "groups-sql" / "local-1795289462856"
SAME_JOB_COMPRESSED = ["local-1795289487918.lz4", "local-1795289518987.snappy", "local-1795289571835.zstd"]


def _shape(log):
    """What does not change between two runs of the same job: stages, names, tasks, groups, failures."""
    stages = log.stages
    return (list(zip(stages["stage_id"], stages["name"], stages["num_tasks"], stages["status"],
                     stages["job_group"], stages["failed_tasks"])),
            len(log.tasks), list(log.jobs["stage_ids"]), list(log.sql_executions["job_ids"]))


def test_job_groups_sql_executions_and_a_failed_task():
    log = parse_event_logs(GROUPS)
    app = log.applications.iloc[0]
    assert (app["app_id"], app["spark_version"], app["status"]) == ("local-1795289462856", "3.5.6", "finished")
    assert app["events"] == len(GROUPS.read_text().splitlines()) and app["skipped_lines"] == app["unknown_events"] == 0
    stages = log.stages
    assert list(stages.columns[:len(STAGE_COLUMNS)]) == STAGE_COLUMNS
    assert set(stages["job_group"]) == {"q1", "q2", "retry"}
    retry = stages[stages["job_group"] == "retry"]
    # The planted failure: one failed attempt of partition 0, its retry succeeded; sums count successes only.
    assert retry["failed_tasks"].sum() == 1 and (retry["status"] == "succeeded").all()
    failed_task = log.tasks[log.tasks["status"] != "Success"]
    assert len(failed_task) == 1 and failed_task["index"].item() == 0 and failed_task["task_attempt"].item() == 0
    retried = log.tasks[(log.tasks["stage_id"] == failed_task["stage_id"].item()) & (log.tasks["index"] == 0)]
    assert sorted(retried["task_attempt"]) == [0, 1]
    success = log.tasks[log.tasks["status"] == "Success"].groupby("stage_id")["shuffle_write_bytes"].sum()
    assert (stages.set_index("stage_id")["shuffle_write_bytes"] == success.reindex(stages["stage_id"]).fillna(0)).all()
    # Parquet written by the q2 group and read back.
    q2 = stages[stages["job_group"] == "q2"]
    assert q2["output_bytes"].sum() > 0 and q2["input_bytes"].sum() > 0
    sql = log.sql_executions
    assert list(sql["status"]) == ["succeeded"] * 3 and set(sql["description"]) <= set(stages["job_description"])
    assert (sql["duration_s"] > 0).all()
    jobs = log.jobs
    assert (jobs["status"] == "succeeded").all() and jobs["sql_execution_id"].notna().sum() == 8
    assert list(log.executors["executor_id"]) == ["driver"] and log.executors["total_cores"].item() == 2


@pytest.mark.parametrize("name", SAME_JOB_COMPRESSED)
def test_compressed_logs_of_the_same_job(name):
    """lz4 (LZ4BlockOutputStream framing), snappy (snappy-java framing), zstd (frames): Spark 3.5's own codecs."""
    log = parse_event_logs(EVENTS / "compressed" / name)
    assert log.applications["codec"].item() == name.rsplit(".", 1)[1]
    assert log.applications["status"].item() == "finished" and not log.applications["truncated"].item()
    assert _shape(log) == _shape(parse_event_logs(GROUPS))


def test_inprogress_log_cut_mid_line():
    """Copied while the job ran: the last line is cut; it is skipped and counted, the rest kept."""
    log = parse_event_logs(GROUPS.with_name(GROUPS.name + ".inprogress"))
    app = log.applications.iloc[0]
    assert app["status"] == "incomplete" and pd.isna(app["end_time_ms"]) and app["skipped_lines"] == 1
    complete = parse_event_logs(GROUPS)
    assert 0 < len(log.tasks) < len(complete.tasks)
    assert set(log.tasks["task_id"]) < set(complete.tasks["task_id"])
    assert "running" in set(log.stages["status"]) or len(log.stages) < len(complete.stages)


def test_compressed_inprogress_log():
    log = parse_event_logs(EVENTS / "compressed" / "local-1795289518987.snappy.inprogress")
    app = log.applications.iloc[0]
    assert (app["app_id"], app["status"], app["codec"]) == ("local-1795289518987", "incomplete", "snappy")
    assert log.stages.empty and list(log.stages.columns) == STAGE_COLUMNS


def test_log_cut_anywhere_parses_what_is_complete(tmp_path):
    """A crash can cut a log at any byte: never an error, at most the cut line skipped."""
    data = GROUPS.read_bytes()
    complete_tasks = len(parse_event_logs(GROUPS).tasks)
    previous = -1
    for cut in range(len(data) // 7, len(data), len(data) // 7):
        part = tmp_path / f"local-1.cut{cut}"
        part.write_bytes(data[:cut])
        log = parse_event_logs(part)
        assert log.applications["skipped_lines"].item() <= 1
        assert previous <= len(log.tasks) <= complete_tasks
        previous = len(log.tasks)


def test_missing_codec_package_fails_clearly(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def without_cramjam(name, *args, **kwargs):
        if name == "cramjam":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_cramjam)
    with pytest.raises(MissingCodec, match="cramjam"):
        parse_event_logs(EVENTS / "compressed" / "local-1795289518987.snappy")


def test_unknown_event_type_is_counted_and_reported():
    """The fixture job posted an event class of its own; Spark logged it under its class name."""
    log = parse_event_logs(EVENTS / "custom-event" / "local-1795289780122")
    app = log.applications.iloc[0]
    assert app["unknown_events"] == 1 and app["unknown_event_types"] == "spillway.fixture.CustomEvent=1"
    assert app["status"] == "finished" and _shape(log) == _shape(parse_event_logs(GROUPS))


def test_without_msgspec_the_json_decoder_gives_the_same_tables(monkeypatch):
    """Also the line-by-line path the whole-chunk decoder falls back to."""
    from analysis.parsers import eventlog
    fast = parse_event_logs(GROUPS)
    assert len(fast.tasks) == 25
    monkeypatch.setattr(eventlog, "_TASK_END_DECODER", None)
    monkeypatch.setattr(eventlog, "_CHUNK_DECODER", None)
    slow = parse_event_logs(GROUPS)
    pd.testing.assert_frame_equal(fast.stages, slow.stages)
    pd.testing.assert_frame_equal(fast.tasks, slow.tasks)


# Logs of older Spark versions, recorded by others (origins in tests/fixtures/tools/README.md).
# Spark 1.2 wrote a folder with EVENT_LOG_1 and no log-start event (so no version in the log).
OLD = {"event_log_1": "1.5.1", "local-1532512550423": "2.3.0", "local-1426533911241": None}


@pytest.mark.parametrize("name", sorted(OLD))
def test_older_spark_versions(name):
    import json
    path = EVENTS / "old-versions" / name
    text = (path / "EVENT_LOG_1" if path.is_dir() else path).read_text()
    events = [json.loads(line) for line in text.splitlines()]
    task_ends = [e for e in events if e["Event"] == "SparkListenerTaskEnd"]
    log = parse_event_logs(path)
    app = log.applications.iloc[0]
    assert (app["status"], app["events"], app["log_path"]) == ("finished", len(events), str(path))
    assert app["spark_version"] == OLD[name] or (OLD[name] is None and pd.isna(app["spark_version"]))
    assert app["skipped_lines"] == app["unknown_events"] == 0
    assert len(log.tasks) == len(task_ends) and (log.tasks["status"] == "Success").all()
    run_ms = sum(e["Task Metrics"]["Executor Run Time"] for e in task_ends)
    assert log.stages["executor_run_time_s"].sum() == pytest.approx(run_ms / 1e3)
    assert set(log.stages["status"]) == {"succeeded"} and (log.stages["duration_s"] > 0).all()
    assert log.stages["num_tasks"].sum() == len(task_ends)
    cpu = log.stages["executor_cpu_time_s"]
    assert (cpu == 0).all() if (OLD[name] or "1") < "2.1" else (cpu > 0).all()      # recorded since Spark 2.1
    added = [e["Executor ID"] for e in events if e["Event"] == "SparkListenerExecutorAdded"]
    assert set(added) <= set(log.executors["executor_id"]) and "driver" in set(log.executors["executor_id"])


def test_rolling_log_of_two_parts(tmp_path):
    """A real rolling log: Spark's 10 MiB minimum part size makes it big, so it is kept as a tar.gz."""
    import tarfile
    with tarfile.open(EVENTS / "eventlog_v2_local-1795290587932.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    folder = tmp_path / "eventlog_v2_local-1795290587932"
    [parts] = event_log_files(folder)
    assert [p.name for p in parts] == ["events_1_local-1795290587932", "events_2_local-1795290587932"]
    log = parse_event_logs(folder)
    app = log.applications.iloc[0]
    assert app["status"] == "finished" and app["skipped_lines"] == 0
    lines = sum(len(p.read_bytes().splitlines()) for p in parts)
    assert app["events"] == lines
    # 2500 map tasks, 250 reduce tasks, spread over both parts.
    assert list(log.stages["num_tasks"]) == [2500, 250] and len(log.tasks) == 2750
    assert log.stages["shuffle_write_bytes"].iloc[0] == log.stages["shuffle_read_bytes"].iloc[1] > 0
    first_part = parse_event_logs(parts[0])
    assert first_part.applications["status"].item() == "incomplete" and len(first_part.tasks) < 2750


def test_line_by_line_reading_gives_the_same_tables(monkeypatch):
    """What a chunk with a line of an unknown type or a cut line falls back to."""
    from analysis.parsers import eventlog
    whole = parse_event_logs(GROUPS)
    assert len(whole.tasks) == 25
    monkeypatch.setattr(eventlog, "_CHUNK_DECODER", None)
    by_line = parse_event_logs(GROUPS)
    for table in ("applications", "jobs", "stages", "tasks", "executors", "sql_executions"):
        pd.testing.assert_frame_equal(getattr(whole, table), getattr(by_line, table))


SPARK4 = EVENTS / "spark4" / "eventlog_v2_application_1795772001100_0011"


def test_a_spark_4_log_rolled_and_zstd_compressed_by_default():
    """Spark 4.2.0 on the local YARN cluster with no event log settings beyond spark-defaults.conf's: Spark 4 rolls and
    compresses (zstd) by default. Its task ends carry fields 3.5 did not write (peak execution memory, concurrent GC),
    and a YARN client-mode run writes SparkListenerMiscellaneousProcessAdded under its class name: no unknown event."""
    assert [[p.name for p in files] for files in event_log_files(SPARK4)] == [
        ["events_1_application_1795772001100_0011.zstd"]]
    log = parse_event_logs(SPARK4)
    (app,) = log.applications.to_dict("records")
    assert (app["app_id"], app["app_name"], app["spark_version"], app["codec"]) == (
        "application_1795772001100_0011", "two-stages", "4.2.0", "zstd")
    assert app["status"] == "finished" and app["events"] == 25
    assert app["unknown_events"] == app["skipped_lines"] == 0 and not app["truncated"]
    stages = log.stages
    assert list(stages["stage_id"]) == [0, 1] and set(stages["status"]) == {"succeeded"}
    # reduceByKey over 2 partitions: what stage 0 wrote, stage 1 read, on two executors of one node
    assert stages["shuffle_write_bytes"].tolist() == [634, 0] and stages["shuffle_read_bytes"].tolist() == [0, 634]
    assert len(log.tasks) == 4 and set(log.tasks["executor_id"]) == {"1", "2"}
    assert sorted(log.executors["executor_id"]) == ["1", "2", "driver"]


def test_the_3_5_yarn_log_has_no_unknown_event_either():
    app = parse_event_logs(recorded("application_1795280718534_0006")).applications.iloc[0]
    assert app["spark_version"] == "3.5.6" and app["unknown_events"] == 0
