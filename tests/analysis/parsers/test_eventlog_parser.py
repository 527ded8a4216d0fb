"""Spark 3.5.6 event logs recorded from a tiny local[2] job (tests/fixtures/tools/spark-eventlog)."""
import pytest

from analysis.parsers.eventlog import STAGE_COLUMNS, event_log_files, parse_event_logs
from conftest import TOOLS, recorded

EVENTS = TOOLS / "spark-eventlog"


def test_plain_log_stage_attempts():
    stages = parse_event_logs(EVENTS / "local-1795280525362")
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
    every = parse_event_logs(EVENTS)
    assert set(every["app_id"]) == {"local-1795280525362", "local-1795280624813", "local-1795280914365"}
    assert len(every) == 5 + 5 + 7


def test_input_and_output_bytes_of_a_job_writing_and_reading_text():
    stages = parse_event_logs(EVENTS / "local-1795280914365").set_index("stage_id")
    written = stages.loc[stages["name"].str.startswith("runJob at SparkHadoopWriter"), "output_bytes"]
    read = stages.loc[stages["name"].str.startswith("count at TinyShuffle.java:21"), "input_bytes"]
    assert written.item() > 1000 and read.item() >= written.item()   # + the _SUCCESS marker and splits


def test_yarn_application_log_and_its_inprogress_copy():
    """Recorded by the eventlog collector on the cluster (YARN client mode)."""
    done = recorded("application_*[0-9]")
    stages = parse_event_logs(done)
    assert set(stages["app_id"]) == {done.name} and set(stages["status"]) == {"succeeded"}
    assert stages["shuffle_write_bytes"].sum() == stages["shuffle_read_bytes"].sum() > 0
    # Copied while the job was starting: jobs announced, no stage submitted yet -> no stage attempt.
    early = parse_event_logs(recorded("application_*.inprogress"))
    assert list(early.columns) == STAGE_COLUMNS and early.empty


def test_zstd_compressed_log():
    pytest.importorskip("zstandard", reason="zstd event logs need the zstandard package")
    stages = parse_event_logs(EVENTS / "compressed" / "local-1795281149329.zstd")
    assert len(stages) == 7 and (stages["output_bytes"] > 0).any() and (stages["input_bytes"] > 0).any()
