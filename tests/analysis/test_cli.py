"""python -m analysis: tables, report (path, run id, latest), stages CSV."""
import csv
import io
import os
import subprocess
import sys
from pathlib import Path

from analysis.__main__ import main
from conftest import TOOLS

REPO = Path(__file__).resolve().parents[2]


STABLE_STAGE_COLUMNS = ["app_id", "stage_id", "attempt", "name", "num_tasks", "status", "submission_time_ms",
                        "completion_time_ms", "duration_s", "input_bytes", "output_bytes", "shuffle_read_bytes",
                        "shuffle_remote_bytes_read", "shuffle_local_bytes_read", "shuffle_write_bytes",
                        "memory_spilled_bytes", "disk_spilled_bytes", "executor_run_time_s", "executor_cpu_time_s"]


def test_stages_csv_columns(capsys):
    assert main(["stages", str(TOOLS / "spark-eventlog" / "local-1795280525362")]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert list(rows[0])[:len(STABLE_STAGE_COLUMNS)] == STABLE_STAGE_COLUMNS
    assert list(rows[0])[len(STABLE_STAGE_COLUMNS):][:3] == ["job_id", "job_group", "job_description"]
    assert len(rows) == 5 and rows[0]["shuffle_write_bytes"] == "7456"


def test_stages_csv_of_a_job_with_groups_in_a_fresh_process():
    log = TOOLS / "spark-eventlog" / "groups-sql" / "local-1795289462856"
    proc = subprocess.run([sys.executable, "-m", "analysis", "stages", str(log)], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert {row["job_group"] for row in rows} == {"q1", "q2", "retry"}
    assert {row["job_description"] for row in rows if row["job_group"] == "retry"} == {
        "first attempt of partition 0 fails"}


def test_a_path_that_is_no_event_log_exits_2(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty.log").write_text("")
    for path in (TOOLS / "fio" / "fio-tmp-write-4k.json", TOOLS / "iostat", tmp_path / "empty",
                 tmp_path / "empty.log", tmp_path / "missing"):
        proc = subprocess.run([sys.executable, "-m", "analysis", "stages", str(path)], cwd=REPO,
                              capture_output=True, text=True)
        assert proc.returncode == 2, (path, proc.stderr)
        assert proc.stderr.startswith("analysis: ") and str(path.name) in proc.stderr and not proc.stdout


def test_report_of_latest_run_in_a_fresh_process(run_dir):
    env = {**os.environ, "SPILLWAY_RESULTS": str(run_dir.parent)}
    proc = subprocess.run([sys.executable, "-m", "analysis", "report", "latest"], cwd=REPO, capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(run_dir / "report.html")
    assert (run_dir / "tables" / "fio.parquet").exists()


def test_run_id_resolves_under_results(run_dir):
    from run_layout import resolve_run_dir
    assert resolve_run_dir(run_dir.name, results_dir=run_dir.parent) == run_dir.resolve()
    assert resolve_run_dir(str(run_dir)) == run_dir.resolve()


def test_unknown_run_names_existing_ones(tmp_path, capsys):
    import run_layout
    (tmp_path / "20260101-000000-local").mkdir()
    try:
        run_layout.resolve_run_dir("nope", results_dir=tmp_path)
    except FileNotFoundError as error:
        assert "20260101-000000-local" in str(error)
    else:
        raise AssertionError("unknown run id accepted")
    assert main(["stages", str(tmp_path / "missing")]) == 2
    assert "no such event log" in capsys.readouterr().err
