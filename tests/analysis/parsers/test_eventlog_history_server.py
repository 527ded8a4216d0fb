"""Spark's own History Server as an oracle for the event log parser's tables: the event logs of Spark's
HistoryServerSuite and the REST API answers it expects for them (`HistoryServerExpectations/`), both from the
spark-core tests jars of Spark 3.5.6 and 4.2.0 on Maven Central (tests/fixtures/tools/README.md). The 3.5 and 4.x
History Servers read the same 2015 log (local-1422981780767) and must agree with our stages, jobs and executors; the
4.x one also lists a rolling (`eventlog_v2_`) log written by Spark 4.2.0 itself, whose application row must agree.

Where the History Server and the tables count differently, the test says so and checks both: a stage's summed
task metrics (executorRunTime, ...) count every task attempt in the History Server, and only the successful ones in
our stages table (the failed ones are in the tasks table)."""
import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from analysis.parsers.eventlog import parse_event_logs

ORACLE = Path(__file__).resolve().parents[2] / "fixtures" / "tools" / "spark-history-oracle"
SPARK_LINES = ["3.5.6", "4.2.0"]
APP = "local-1422981780767"   # HistoryServerSuite's "stage list json", "job list json", "executor list json"
SPARK4_ROLLING = "local-1766844910796"


def expected(release, name):
    return json.loads((ORACLE / "expectations" / release / f"{name}_expectation.json").read_text())


def epoch_ms(text):
    """The History Server's dates, e.g. 2015-02-03T16:43:04.228GMT, as epoch milliseconds."""
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fGMT").replace(tzinfo=timezone.utc).timestamp() * 1000)


def paired(frame, index, release, name, key):
    """(the History Server's row, ours) for every row of its answer `name`, once both list the same rows."""
    ours = frame.set_index(index)
    oracle = expected(release, name)
    assert sorted(key(want) for want in oracle) == sorted(ours.index)
    return [(want, ours.loc[key(want)]) for want in oracle]


@pytest.fixture(scope="module")
def log():
    return parse_event_logs(ORACLE / "spark-events" / APP)


def test_the_oracle_is_in_place():
    for release in SPARK_LINES:
        for name in ("stage_list_json", "job_list_json", "executor_list_json", "application_list_json"):
            assert (ORACLE / "expectations" / release / f"{name}_expectation.json").is_file(), (release, name)
    assert (ORACLE / "spark-events" / f"eventlog_v2_{SPARK4_ROLLING}" / f"events_1_{SPARK4_ROLLING}").is_file()


@pytest.mark.parametrize("release", SPARK_LINES)
def test_stages_agree_with_the_history_server(release, log):
    tasks = log.tasks
    for want, ours in paired(log.stages, ["stage_id", "attempt"], release, "stage_list_json",
                             lambda stage: (stage["stageId"], stage["attemptId"])):
        key = (want["stageId"], want["attemptId"])
        assert ours["num_tasks"] == want["numTasks"], key
        assert ours["status"] == {"COMPLETE": "succeeded", "FAILED": "failed"}[want["status"]], key
        assert ours["submission_time_ms"] == epoch_ms(want["submissionTime"]), key
        assert ours["completion_time_ms"] == epoch_ms(want["completionTime"]), key
        for column, field in (("input_bytes", "inputBytes"), ("output_bytes", "outputBytes"),
                              ("shuffle_read_bytes", "shuffleReadBytes"), ("shuffle_write_bytes", "shuffleWriteBytes"),
                              ("memory_spilled_bytes", "memoryBytesSpilled"),
                              ("disk_spilled_bytes", "diskBytesSpilled")):
            assert ours[column] == want[field], (key, column)
        # every attempt's run time in the History Server (ms), the successful ones' in ours (s)
        attempts = tasks[(tasks["stage_id"] == key[0]) & (tasks["attempt"] == key[1])]
        assert round(attempts["executor_run_time_s"].sum() * 1000) == want["executorRunTime"], key
        succeeded = attempts[attempts["status"] == "Success"]
        assert ours["executor_run_time_s"] == pytest.approx(succeeded["executor_run_time_s"].sum()), key
        assert ours["failed_tasks"] == len(attempts) - len(succeeded) == want["numFailedTasks"], key


def test_a_failed_task_is_where_the_two_stage_sums_part(log):
    """Stage 2 of the oracle's log: 7 successful tasks (242 ms) and one ExceptionFailure (36 ms)."""
    stage = log.stages.set_index(["stage_id", "attempt"]).loc[(2, 0)]
    assert stage["executor_run_time_s"] == pytest.approx(0.242)
    assert {s["stageId"]: s["executorRunTime"] for s in expected("4.2.0", "stage_list_json")}[2] == 278


@pytest.mark.parametrize("release", SPARK_LINES)
def test_jobs_agree_with_the_history_server(release, log):
    for want, ours in paired(log.jobs, "job_id", release, "job_list_json", lambda job: job["jobId"]):
        assert ours["status"] == want["status"].lower(), want["jobId"]
        assert [int(s) for s in str(ours["stage_ids"]).split(",")] == sorted(want["stageIds"]), want["jobId"]
        assert ours["num_stages"] == len(want["stageIds"]), want["jobId"]


@pytest.mark.parametrize("release", SPARK_LINES)
def test_executors_agree_with_the_history_server(release, log):
    pairs = paired(log.executors, "executor_id", release, "executor_list_json", lambda executor: executor["id"])
    for want, ours in pairs:
        assert ours["max_memory_bytes"] == want["maxMemory"], want["id"]
        assert ours["added_time_ms"] == epoch_ms(want["addTime"]), want["id"]
        assert want["hostPort"].startswith(f"{ours['executor_host']}:"), want["id"]
    tasks = log.tasks
    ((driver, _),) = pairs
    assert len(tasks) == driver["totalTasks"] and (tasks["status"] == "Success").sum() == driver["completedTasks"]
    assert tasks["input_bytes"].sum() == driver["totalInputBytes"]
    assert tasks["shuffle_write_bytes"].sum() == driver["totalShuffleWrite"]


@pytest.mark.parametrize("release, app_id, log_name", [
    ("3.5.6", APP, APP), ("4.2.0", APP, APP),
    ("4.2.0", SPARK4_ROLLING, f"eventlog_v2_{SPARK4_ROLLING}"),  # rolling, written by Spark 4.2.0
])
def test_applications_agree_with_the_history_server(release, app_id, log_name):
    app = parse_event_logs(ORACLE / "spark-events" / log_name).applications.iloc[0]
    (want,) = [a for a in expected(release, "application_list_json") if a["id"] == app_id]
    (attempt,) = want["attempts"]
    assert app["app_id"] == app_id and app["app_name"] == want["name"]
    assert app["user"] == attempt["sparkUser"]
    assert app["start_time_ms"] == attempt["startTimeEpoch"] and app["end_time_ms"] == attempt["endTimeEpoch"]
    assert round(app["duration_s"] * 1000) == attempt["duration"]
    assert app["status"] == ("finished" if attempt["completed"] else "running")
    assert (app["spark_version"] or None) == (attempt.get("appSparkVersion") or None) or pd.isna(app["spark_version"])
